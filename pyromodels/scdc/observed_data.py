r"""Prepared data of the semi-crowdsourced mixture with observed features: points, links, prior.

:class:`ObservedPrior` holds the hyperparameters of spec §2.2-2.3 once resolved against the
data, :class:`LinkAdjacency` each item's links in compressed sparse row (CSR) form (built once,
read by every sequential cluster update) and :class:`ObservedData` everything a fit's hooks
receive. :func:`resolve_observed_prior` writes the default prior in the data's units
(:func:`~pyromodels.conjugate.data_units`), so that ``c x + b`` gives the clustering of ``x``.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch

from ..checks import as_float_tensor, check_positive
from ..conjugate import NormalWishart, data_units, niw_to_normal_wishart
from ..data.pairwise import PairwiseAnnotations

__all__ = ["ObservedPrior", "LinkAdjacency", "ObservedData", "resolve_observed_prior",
           "link_adjacency", "prepare_observed_data"]


@dataclass(frozen=True, eq=False)
class ObservedPrior:
    r"""Resolved hyperparameters (tensors on the data's device and dtype).

    Attributes:
        weight_concentration: :math:`\alpha_0`, the symmetric Dirichlet concentration (scalar).
        mean_prior: :math:`m`, ``(d,)``.
        mean_precision: :math:`\kappa` (scalar).
        degrees_of_freedom: :math:`\nu` (scalar, ``> d - 1``).
        covariance_scale: :math:`S`, the inverse-Wishart scale of :math:`\Sigma_k`, ``(d, d)``
            (so :math:`\mathbb{E}[\Sigma_k^{-1}] = \nu S^{-1}`).
        alpha_prior: ``(2,)`` Beta concentrations :math:`(\tau^1_\alpha, \tau^2_\alpha)` of each
            worker's sensitivity.
        beta_prior: ``(2,)`` the same for each worker's specificity.
    """

    weight_concentration: torch.Tensor
    mean_prior: torch.Tensor
    mean_precision: torch.Tensor
    degrees_of_freedom: torch.Tensor
    covariance_scale: torch.Tensor
    alpha_prior: torch.Tensor
    beta_prior: torch.Tensor

    @functools.cached_property
    def normal_wishart(self) -> NormalWishart:
        r"""The component prior as the precision-form :class:`~pyromodels.conjugate.NormalWishart`:
        :math:`\Lambda \sim \mathrm{Wishart}(\nu, S^{-1})`, :math:`\mu \mid \Lambda \sim
        N(m, (\kappa\Lambda)^{-1})`, which is :math:`\mathrm{NIW}(m, \kappa, S, \nu)` on
        :math:`(\mu, \Sigma = \Lambda^{-1})` (:func:`~pyromodels.conjugate.niw_to_normal_wishart`)."""
        return niw_to_normal_wishart(self.mean_prior, self.mean_precision, self.covariance_scale,
                                     self.degrees_of_freedom)

    def to(self, device) -> ObservedPrior:
        """A copy on ``device``."""
        return dataclasses.replace(self, **{f.name: getattr(self, f.name).to(device)
                                            for f in dataclasses.fields(self)})


@dataclass(frozen=True, eq=False)
class LinkAdjacency:
    """Each item's links in CSR form: the entries of item ``n`` are ``indptr[n]:indptr[n + 1]``.

    Every link ``l`` between items ``i`` and ``j`` has two entries, one under ``i`` (partner
    ``j``) and one under ``j`` (partner ``i``), both pointing back at ``l``.

    Attributes:
        indptr: ``(N + 1,)`` long offsets.
        partner: ``(2 L,)`` long, the other item of each entry.
        link_of: ``(2 L,)`` long, the link each entry belongs to.
    """

    indptr: torch.Tensor
    partner: torch.Tensor
    link_of: torch.Tensor

    def entries(self, n: int) -> slice:
        """The slice of item ``n``'s entries."""
        return slice(int(self.indptr[n]), int(self.indptr[n + 1]))

    def to(self, device) -> LinkAdjacency:
        """A copy on ``device``."""
        return LinkAdjacency(self.indptr.to(device), self.partner.to(device), self.link_of.to(device))


def link_adjacency(i_idx: torch.Tensor, j_idx: torch.Tensor, num_items: int) -> LinkAdjacency:
    """The CSR adjacency of the links ``(i_idx[l], j_idx[l])`` over ``num_items`` items.

    Example:
        >>> adj = link_adjacency(torch.tensor([0, 2]), torch.tensor([1, 0]), 3)
        >>> adj.indptr.tolist(), adj.partner.tolist(), adj.link_of.tolist()
        ([0, 2, 3, 4], [1, 2, 0, 0], [0, 1, 0, 1])
    """
    owner = torch.cat([i_idx, j_idx])
    partner = torch.cat([j_idx, i_idx])
    link_of = torch.arange(len(i_idx), device=i_idx.device).repeat(2)
    order = torch.argsort(owner, stable=True)
    counts = torch.bincount(owner, minlength=num_items)
    indptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    return LinkAdjacency(indptr, partner[order], link_of[order])


@dataclass(frozen=True, eq=False)
class ObservedData:
    """Validated points, links and the resolved prior of one fit.

    Attributes:
        x: ``(N, d)`` floating points.
        pairs: the :class:`~pyromodels.data.pairwise.PairwiseAnnotations` (ids of items and
            workers); item code ``n`` is row ``n`` of ``x``.
        link: ``(L,)`` links in ``x``'s dtype (the observed values of the ``links`` site).
        prior: the :class:`ObservedPrior`.
        adjacency: the :class:`LinkAdjacency` of the links.
    """

    x: torch.Tensor
    pairs: PairwiseAnnotations
    link: torch.Tensor
    prior: ObservedPrior
    adjacency: LinkAdjacency

    @property
    def device(self) -> torch.device:
        return self.x.device

    @property
    def num_items(self) -> int:
        return self.x.shape[0]

    @property
    def dim(self) -> int:
        return self.x.shape[1]

    @property
    def num_workers(self) -> int:
        return self.pairs.num_workers

    @property
    def i_idx(self) -> torch.Tensor:
        return self.pairs.i_idx

    @property
    def j_idx(self) -> torch.Tensor:
        return self.pairs.j_idx

    @property
    def worker_idx(self) -> torch.Tensor:
        return self.pairs.worker_idx

    def with_observations(self, x: torch.Tensor, link: torch.Tensor) -> ObservedData:
        """The same items, links, workers and prior with new observed values (for simulation
        checks such as the Geweke test); ``x`` ``(N, d)`` and ``link`` ``(L,)`` are used as given."""
        return dataclasses.replace(self, x=x, link=link.to(self.x.dtype))

    def to(self, device) -> ObservedData:
        """A copy on ``device``."""
        return ObservedData(self.x.to(device), self.pairs.to(device), self.link.to(device),
                            self.prior.to(device), self.adjacency.to(device))


def _beta_pair(value, name: str, opts: dict) -> torch.Tensor:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise TypeError(f"{name} must be a pair (a, b) of Beta concentrations, got {value!r}")
    a, b = (check_positive(v, f"{name}[{k}]") for k, v in enumerate(value))
    return torch.tensor([a, b], **opts)


def resolve_observed_prior(x: torch.Tensor, num_clusters: int, weight_concentration=None,
                           mean_prior=None, mean_precision=None, degrees_of_freedom=None,
                           covariance_scale=None, alpha_prior=(1.0, 1.0),
                           beta_prior=(1.0, 1.0)) -> ObservedPrior:
    r"""Fill ``None`` hyperparameters with the paper's defaults (spec §2.3) in the data's units.

    With :math:`(c, s)` the column means and spread of ``x``
    (:func:`~pyromodels.conjugate.data_units`), the defaults are

    ==========================  =====================  ==========================
    hyperparameter              default here           paper (Appendix B)
    ==========================  =====================  ==========================
    :math:`\alpha_0`            :math:`0.05 / K`       :math:`0.05 / K`
    :math:`m`                   :math:`c`              :math:`0`
    :math:`\kappa`              :math:`0.5`            :math:`0.5`
    :math:`\nu`                 :math:`d + \kappa`     :math:`d + \kappa`
    :math:`S`                   :math:`(d + \kappa) s^2 I_d`  :math:`(d + \kappa) I_d`
    :math:`\tau_\alpha, \tau_\beta`  :math:`(1, 1)`    :math:`(1, 1)`
    ==========================  =====================  ==========================

    so on standardised data (:math:`c = 0`, :math:`s = 1`) they are the paper's. The released
    code uses a Dirichlet concentration of 1.05 instead of :math:`0.05/K` (spec §9, item 6):
    pass ``weight_concentration=1.05`` for it. Given values are taken as they are (in the
    data's own units).

    Raises:
        ValueError: hyperparameters out of their support, or default ``m``/``S`` for data
            whose points are all identical.
    """
    d = x.shape[1]
    opts = {"dtype": x.dtype, "device": x.device}
    alpha0 = 0.05 / num_clusters if weight_concentration is None else weight_concentration
    alpha0 = check_positive(alpha0, "weight_concentration")
    kappa = check_positive(0.5 if mean_precision is None else mean_precision, "mean_precision")
    nu = check_positive(d + kappa if degrees_of_freedom is None else degrees_of_freedom,
                        "degrees_of_freedom")
    if nu <= d - 1:
        raise ValueError(f"degrees_of_freedom must be > d - 1 = {d - 1}, got {nu}")
    centre = scale = None
    if mean_prior is None or covariance_scale is None:
        centre, scale = data_units(x, "x")
    if mean_prior is None:
        m = centre.to(**opts)
    else:
        m = as_float_tensor(mean_prior, "mean_prior", ndim=1).to(**opts)
        if m.shape[0] != d:
            raise ValueError(f"mean_prior must have length {d} (the data's dimension), got {m.shape[0]}")
    if covariance_scale is None:
        S = (d + kappa) * scale**2 * torch.eye(d, **opts)
    else:
        S = as_float_tensor(covariance_scale, "covariance_scale", ndim=2).to(**opts)
        if S.shape != (d, d):
            raise ValueError(f"covariance_scale must have shape ({d}, {d}), got {tuple(S.shape)}")
        if not bool(((S - S.T).abs() <= 1e-8 * S.abs().amax()).all()) or \
                torch.linalg.cholesky_ex(S).info != 0:
            raise ValueError("covariance_scale must be symmetric positive definite")
    return ObservedPrior(torch.tensor(alpha0, **opts), m, torch.tensor(kappa, **opts),
                         torch.tensor(nu, **opts), S, _beta_pair(alpha_prior, "alpha_prior", opts),
                         _beta_pair(beta_prior, "beta_prior", opts))


def prepare_observed_data(x, pairs, prior_args: dict, num_clusters: int,
                          device=None) -> ObservedData:
    """Check ``x`` and ``pairs`` once and build the :class:`ObservedData` of a fit.

    Args:
        x: ``(N, d)`` finite points.
        pairs: :class:`~pyromodels.data.pairwise.PairwiseAnnotations` over the same ``N``
            items (item code ``n`` is row ``n`` of ``x``).
        prior_args: keyword arguments of :func:`resolve_observed_prior`.
        num_clusters: ``K``.
        device: where the fit runs (default ``x``'s device).

    Raises:
        TypeError: ``pairs`` is not a ``PairwiseAnnotations``.
        ValueError: ``x`` is not a finite ``(N, d)`` array with ``N >= K``, or ``pairs`` does
            not cover exactly ``N`` items.
    """
    x = as_float_tensor(x, "x", ndim=2, device=device)
    if not isinstance(pairs, PairwiseAnnotations):
        raise TypeError(
            "pairs must be a pyromodels.data.PairwiseAnnotations (for points without links use "
            f"pyromodels.mixture.GaussianMixtureModel), got {type(pairs).__name__}")
    n = x.shape[0]
    if n < num_clusters:
        raise ValueError(f"x must have at least num_clusters={num_clusters} rows, got {n}")
    if pairs.num_items != n:
        raise ValueError(
            f"pairs must cover the {n} items of x (item code n is row n of x), but it has "
            f"{pairs.num_items} items; build it with items= the row ids "
            "(PairwiseAnnotations.from_dataframe(df, items=...) or from_arrays(..., num_items=N))")
    pairs = pairs.to(x.device) if pairs.device != x.device else pairs
    prior = resolve_observed_prior(x, num_clusters, **prior_args)
    adjacency = link_adjacency(pairs.i_idx, pairs.j_idx, n)
    return ObservedData(x, pairs, pairs.link.to(x.dtype), prior, adjacency)
