r"""Prepared data of the pairwise worker model: the links, the number of clusters and the priors.

The user's judgements arrive as a :class:`~pyromodels.data.pairwise.PairwiseAnnotations` (or
a DataFrame that :meth:`~pyromodels.data.pairwise.PairwiseAnnotations.from_dataframe` reads
with its default column names). They are checked there, once; this module resolves the
model's arguments against them and keeps what every coordinate-ascent step reuses:

* ``pi_prior`` ``(K,)``: :math:`\pi \sim \mathrm{Dir}(\alpha_0 1_K)`;
* ``alpha_prior``, ``beta_prior`` ``(2,)``: :math:`\alpha_m \sim \mathrm{Beta}(a, b)` and
  :math:`\beta_m \sim \mathrm{Beta}(a, b)` for every worker;
* ``link_totals`` ``(M, 2)``: each worker's must links and cannot links (the part of the
  link log-likelihood that does not depend on the clusters, see :mod:`.pairwise_cavi`);
* ``graph``: the distinct pairs as a sparse structure (:mod:`.pair_graph`), built once.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from ..checks import as_float_tensor
from ..data.pairwise import PairwiseAnnotations
from ..data.tensors import on_device
from .pair_graph import PairGraph

__all__ = ["PairwiseData", "prepare_pairwise", "check_num_clusters", "check_beta_prior"]


def check_num_clusters(value) -> int:
    """``value`` as an int ``K >= 2`` (clusters of one would make every pair "same")."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"num_clusters must be an int >= 2, got {type(value).__name__} {value!r}")
    if value < 2:
        raise ValueError(f"num_clusters must be >= 2 (one cluster leaves nothing to learn), "
                         f"got {value}")
    return value


def check_beta_prior(value, name: str) -> tuple[float, float]:
    """``value`` as the two positive concentrations ``(a, b)`` of a Beta prior."""
    t = as_float_tensor(value, name, ndim=1, dtype=torch.float64)
    if t.shape != (2,) or not bool((t > 0).all()) or not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be two finite positive concentrations (a, b), "
                         f"got {value!r}")
    return float(t[0]), float(t[1])


@dataclass(frozen=True, eq=False)
class PairwiseData:
    """Validated links with the model's resolved sizes and priors.

    Attributes:
        pairs: the judgements (``L`` links over ``N`` items and ``M`` workers).
        num_clusters: ``K``.
        pi_prior: ``(K,)`` Dirichlet concentration of the cluster weights.
        alpha_prior, beta_prior: ``(2,)`` Beta concentrations of every worker's sensitivity
            and specificity.
        link_totals: ``(M, 2)`` each worker's counts of must links (column 0) and cannot
            links (column 1).
        dtype: the floating dtype of the fit.
        graph: the links' distinct pairs as a sparse structure (:class:`PairGraph`).
    """

    pairs: PairwiseAnnotations
    num_clusters: int
    pi_prior: torch.Tensor
    alpha_prior: torch.Tensor
    beta_prior: torch.Tensor
    link_totals: torch.Tensor
    dtype: torch.dtype
    graph: PairGraph

    @property
    def device(self) -> torch.device:
        """Device of the links."""
        return self.pairs.device

    @property
    def num_items(self) -> int:
        """``N``."""
        return self.pairs.num_items

    @property
    def num_workers(self) -> int:
        """``M``."""
        return self.pairs.num_workers

    @property
    def num_links(self) -> int:
        """``L``."""
        return self.pairs.num_pairs

    def to(self, device) -> PairwiseData:
        """The same data on ``device``."""
        return prepare_pairwise(on_device(self.pairs, device), self.num_clusters,
                                float(self.pi_prior[0]), tuple(self.alpha_prior.tolist()),
                                tuple(self.beta_prior.tolist()), dtype=self.dtype)


def as_pairs(data) -> PairwiseAnnotations:
    """``data`` as :class:`PairwiseAnnotations` (a DataFrame is read with the default column
    names of :meth:`PairwiseAnnotations.from_dataframe`)."""
    if isinstance(data, PairwiseAnnotations):
        return data
    if isinstance(data, pd.DataFrame):
        return PairwiseAnnotations.from_dataframe(data)
    raise TypeError("data must be PairwiseAnnotations or a pandas DataFrame of pairwise "
                    f"judgements, got {type(data).__name__}")


def prepare_pairwise(data, num_clusters: int, pi_concentration: float,
                     alpha_prior=(1.0, 1.0), beta_prior=(1.0, 1.0), *, device=None,
                     dtype: torch.dtype | None = None) -> PairwiseData:
    """Check ``data`` and resolve the model's arguments against it.

    Args:
        data: :class:`PairwiseAnnotations` or a DataFrame of judgements.
        num_clusters: ``K >= 2``.
        pi_concentration: :math:`\\alpha_0 > 0` of the symmetric Dirichlet on the weights.
        alpha_prior, beta_prior: ``(a, b)`` of the Beta priors on the two coins.
        device: where to fit (``None``: where the links are).
        dtype: floating dtype (``None``: torch's default).

    Returns:
        :class:`PairwiseData`.
    """
    pairs = on_device(as_pairs(data), device)
    if pairs.num_pairs == 0:
        raise ValueError("data holds no judgements: at least one link is needed")
    K = check_num_clusters(num_clusters)
    dtype = torch.get_default_dtype() if dtype is None else dtype
    dev = pairs.device
    a0 = as_float_tensor(pi_concentration, "pi_concentration", ndim=0, dtype=dtype)
    if not bool(a0 > 0) or not bool(torch.isfinite(a0)):
        raise ValueError(f"pi_concentration must be a finite number > 0, got {pi_concentration!r}")
    pa = torch.tensor(check_beta_prior(alpha_prior, "alpha_prior"), dtype=dtype, device=dev)
    pb = torch.tensor(check_beta_prior(beta_prior, "beta_prior"), dtype=dtype, device=dev)
    link = pairs.link.to(dtype)
    totals = torch.zeros(pairs.num_workers, 2, dtype=dtype, device=dev)
    totals.index_add_(0, pairs.worker_idx, torch.stack([link, 1 - link], -1))
    graph = PairGraph.from_links(pairs.i_idx, pairs.j_idx, pairs.worker_idx, pairs.link,
                                 pairs.num_items, pairs.num_workers, dtype)
    return PairwiseData(pairs, K, a0.to(dev).expand(K).clone(), pa, pb, totals, dtype, graph)
