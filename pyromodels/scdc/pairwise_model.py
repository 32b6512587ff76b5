r"""The two-coin pairwise worker model on its own: items clustered from crowd links alone.

Generative story (``N`` items, ``M`` workers, ``K`` clusters, ``L`` links; the paper's
eqs. 1-2 and 5-6 without the features)::

    pi               ~ Dirichlet(alpha0 1_K)                          (K,)
    alpha_m, beta_m  ~ Beta(a, b) each                   m = 1..M     (M,), (M,)
    z_n | pi         ~ Categorical(pi)                   n = 1..N     (N,)
    L_l | z, coins   ~ Bernoulli(alpha_m)      if z_i = z_j           for each link l = (i, j, m)
                       Bernoulli(1 - beta_m)   otherwise

``alpha_m`` is worker ``m``'s sensitivity (it says "same" for a pair that shares a cluster)
and ``beta_m`` its specificity (it says "different" for a pair that does not); the paper's
reliability weight is :math:`\mathrm{logit}\,\alpha_m + \mathrm{logit}\,\beta_m`.

Sample sites:

=====  ==========================  =====  ===========================================
site   support                     shape  meaning
=====  ==========================  =====  ===========================================
pi     simplex                     (K,)   cluster weights
alpha  (0, 1)                      (M,)   each worker's sensitivity
beta   (0, 1)                      (M,)   each worker's specificity
z      {0, ..., K-1}               (N,)   each item's cluster
links  {0, 1} (observed)           (L,)   the judgements (:func:`.links.observe_links`)
=====  ==========================  =====  ===========================================

**Inference.** The links couple every pair of items they join, so ``z`` cannot be summed out
item by item (exact enumeration is ``K^N``; :mod:`.exact` does it for tiny problems). The
engine is mean-field variational Bayes by coordinate ascent (:mod:`.pairwise_cavi`), run by
:func:`~pyromodels.core.run_em` (``method="em"``) with the evidence lower bound as the
objective: restarts (``n_init``) from one seed, a convergence monitor, a warning if the bound
ever decreases. Each restart starts from the links' spectrum (:mod:`.pairwise_start`; the
uniform clustering with every worker at chance is a fixed point that random starts can fall
into), and the restart with the highest bound is kept.

**Defaults.** ``Beta(1, 1)`` on both coins (the paper's, App. B). The Dirichlet defaults to
``alpha0 = 1``, flat on the simplex, and not to the paper's sparse ``0.05 / K``: that prior
empties clusters the data do not support, which suits a model whose features can seed a
cluster again, but links alone never pull items into an emptied cluster, and with
:math:`\mathbb{E}\ln\pi_k \to -\infty` for an empty cluster a mean-field start that leaves
one nearly empty loses it for good. With ``alpha0 = 1`` the number of clusters is what the
user asks for; pass a small ``pi_concentration`` to let the fit prune instead.

**Identifiability.** The links depend on ``z`` only through whether two items share a
cluster, and the prior is symmetric, so the clusters' labels are arbitrary: any permutation
of them fits equally well, and different seeds return permuted labels (compare clusterings
with a permutation-invariant score such as
:func:`~pyromodels.metrics.clustering_accuracy`). Items appear only through the pairs they
are in: items of two parts of the link graph that no link connects have no relation at all,
so their labels are arbitrary relative to each other, part by part. An item in no link keeps
the prior.

Example:
    >>> import torch
    >>> from pyromodels.data.pairwise import PairwiseAnnotations
    >>> i, j = torch.tensor([0, 0, 1, 2, 3]), torch.tensor([1, 2, 2, 3, 4])
    >>> pairs = PairwiseAnnotations.from_arrays(i, j, torch.zeros(5, dtype=torch.long),
    ...                                         torch.tensor([1, 1, 1, 0, 1]))
    >>> post = PairwiseDawidSkene(2).fit(pairs, seed=0, progress=False)
    >>> post.params["probas"].shape, post.samples["alpha"].shape
    (torch.Size([5, 2]), torch.Size([1, 1, 1]))
"""

from __future__ import annotations

import math

import pandas as pd
import pyro
import pyro.distributions as dist
import torch

from ..checks import check_positive
from ..core.model import Model
from ..data.idmaps import encode_ids
from ..data.pairwise import PairwiseAnnotations
from . import pairwise_cavi as cavi
from .data import id_coords
from .links import observe_links, worker_weights
from .pairwise_data import PairwiseData, check_beta_prior, check_num_clusters, prepare_pairwise
from .pairwise_start import START_KINDS, make_start

__all__ = ["PairwiseDawidSkene"]


class PairwiseDawidSkene(Model):
    """Two-coin workers judging pairs of items, the items' clusters latent.

    Args:
        num_clusters: ``K >= 2``.
        pi_concentration: ``alpha0 > 0`` of the symmetric Dirichlet on the cluster weights
            (default 1, flat; see the module docstring).
        alpha_prior, beta_prior: ``(a, b)`` of the Beta priors on every worker's
            sensitivity and specificity (default ``(1, 1)``, uniform).
        start: how each restart begins: ``"links"`` (default) clusters the leading
            eigenvectors of the signed must-link minus cannot-link matrix
            (:func:`.pairwise_start.spectral_start`); ``"random"`` draws random cluster
            probabilities and settles them by annealing (:func:`.pairwise_cavi.init_params`,
            the earlier default; in float32 on stratified links it can stop at the
            uniform clustering with every worker weight 0). Either way the restart with the
            highest bound is kept.

    The data are :class:`~pyromodels.data.pairwise.PairwiseAnnotations` or a DataFrame that
    its ``from_dataframe`` reads with the default column names.

    ``fit(data, seed=..., n_init=..., max_iter=..., tol=...)`` runs coordinate ascent
    (:func:`~pyromodels.core.run_em`'s settings) and returns a
    :class:`~pyromodels.core.Posterior` whose samples hold the posterior means of ``pi``,
    ``alpha`` and ``beta`` and whose ``params`` hold the variational factors (``q``,
    ``pi_concentration``, ``alpha_concentration``, ``beta_concentration``) and the outputs
    ``probas`` ``(N, K)``, ``labels`` ``(N,)``, ``weights`` ``(M,)`` and ``elbo``.
    """

    discrete_sites = ("z",)
    max_plate_nesting = 1
    engines = ("em",)
    em_sites = ("pi", "alpha", "beta")
    site_dims = {"pi": ("cluster",), "alpha": ("worker",), "beta": ("worker",),
                 "z": ("item",), "links": ("link",)}

    def __init__(self, num_clusters: int, pi_concentration: float = 1.0,
                 alpha_prior=(1.0, 1.0), beta_prior=(1.0, 1.0), start: str = "links"):
        if not isinstance(start, str) or start not in START_KINDS:
            raise ValueError(f"start must be one of {START_KINDS}, got {start!r}")
        self.start = start
        self.num_clusters = check_num_clusters(num_clusters)
        self.pi_concentration = check_positive(pi_concentration, "pi_concentration")
        self.alpha_prior = check_beta_prior(alpha_prior, "alpha_prior")
        self.beta_prior = check_beta_prior(beta_prior, "beta_prior")

    def fit(self, data, method: str = "em", **kwargs):
        """Fit by coordinate ascent (``method="em"``, the only engine); the keyword arguments
        are :func:`~pyromodels.core.run_em`'s."""
        return Model.fit(self, data, method=method, **kwargs)

    # ----------------------------------------------------------------- data
    def prepare(self, data, device=None) -> PairwiseData:
        """Check ``data`` and resolve the priors (:func:`.pairwise_data.prepare_pairwise`);
        prepared data pass through (moved to ``device`` if needed)."""
        if isinstance(data, PairwiseData):
            theirs = [float(data.pi_prior[0]), *data.alpha_prior.tolist(),
                      *data.beta_prior.tolist()]
            ours = [self.pi_concentration, *self.alpha_prior, *self.beta_prior]
            # the priors were stored in the data's dtype (float32 rounds 1.3)
            if data.num_clusters != self.num_clusters or not all(
                    math.isclose(a, b, rel_tol=1e-6) for a, b in zip(theirs, ours)):
                raise ValueError(
                    f"data were prepared for another model: {data.num_clusters} clusters and "
                    f"priors (pi_concentration, alpha_prior, beta_prior) {theirs}, this model "
                    f"has num_clusters={self.num_clusters} and {ours}; pass the judgements "
                    "themselves")
            same = device is None or data.device == torch.device(device)
            return data if same else data.to(device)
        return prepare_pairwise(data, self.num_clusters, self.pi_concentration,
                                self.alpha_prior, self.beta_prior, device=device)

    def _prepared(self, data) -> PairwiseData:
        return data if isinstance(data, PairwiseData) else self.prepare(data)

    # -------------------------------------------------------------- program
    def model(self, data):
        """The generative story (see the module docstring)."""
        d = self._prepared(data)
        p = d.pairs
        pi = pyro.sample("pi", dist.Dirichlet(d.pi_prior))
        with pyro.plate("workers", d.num_workers, dim=-1):
            alpha = pyro.sample("alpha", dist.Beta(d.alpha_prior[0], d.alpha_prior[1]))
            beta = pyro.sample("beta", dist.Beta(d.beta_prior[0], d.beta_prior[1]))
        with pyro.plate("items", d.num_items, dim=-1):
            z = pyro.sample("z", dist.Categorical(pi))
        observe_links(z, p.i_idx, p.j_idx, p.worker_idx, p.link, alpha, beta)

    # ------------------------------------------------------------------ engine
    def em_init(self, data: PairwiseData, generator) -> dict:
        """A start settled on the links, as ``start`` says
        (:func:`.pairwise_start.make_start`)."""
        return make_start(self.start, data, generator)

    def em_step(self, data: PairwiseData, params) -> dict:
        """One coordinate-ascent step (:func:`.pairwise_cavi.cavi_step`)."""
        return cavi.cavi_step(data, params)[0]

    def em_step_with_objective(self, data: PairwiseData, params) -> tuple[dict, float]:
        """:meth:`em_step` and the bound of ``params`` from the same passes."""
        new, value, _ = cavi.cavi_step(data, params)
        return new, float(value)

    def em_objective(self, data: PairwiseData, params) -> float:
        """The evidence lower bound of ``params`` (:func:`.pairwise_cavi.elbo`)."""
        return float(cavi.elbo(data, params))

    def em_outputs(self, data: PairwiseData, params) -> dict:
        """Cluster probabilities and labels, the workers' weights (at the posterior means)
        and the bound."""
        q = params["q"]
        return {"probas": q, "labels": q.argmax(-1),
                "weights": worker_weights(params["alpha"], params["beta"]),
                "elbo": torch.as_tensor(self.em_objective(data, params), dtype=torch.float64)}

    # -------------------------------------------------------------- results
    def site_coords(self, data) -> dict:
        """Labels of the ``worker`` and ``item`` axes in ArviZ groups: the users' ids of the
        judgements (:class:`~pyromodels.data.pairwise.PairwiseAnnotations`' ``workers`` and
        ``items``)."""
        pairs = self._prepared(data).pairs
        return id_coords(workers=pairs.workers, items=pairs.items)

    def predict_proba(self, posterior, new_data=None) -> torch.Tensor:
        """``(n, K)`` mean-field cluster probabilities ``q(z)`` of fitted items.

        The model clusters the items it was fitted to (their clusters come from the links
        between them, so an item outside the fit has none): ``new_data`` lists item ids of
        the fit (``None``: every item, in the order of the fit's ``items``).

        Raises:
            ValueError: ``posterior`` holds no cluster probabilities (not a fit of this model)
                or an id is not an item of the fit.
        """
        probas = posterior.params.get("probas")
        if not isinstance(probas, torch.Tensor):
            raise ValueError("posterior must be a fit of PairwiseDawidSkene: its params hold no "
                             "'probas'")
        if new_data is None:
            return probas
        if not isinstance(posterior.data, PairwiseData):
            raise ValueError("posterior.data must be the fit's prepared data to look up item ids "
                             "(pass data=posterior.data to Posterior.load)")
        if isinstance(new_data, (PairwiseAnnotations, pd.DataFrame)):
            raise TypeError("new_data must be None or a list of item ids of the fit, got "
                            f"{type(new_data).__name__}: the model clusters the items of its "
                            "fit only (fit again with the new judgements)")
        rows = encode_ids(posterior.data.pairs.items, new_data, "new_data", "the fitted items")
        return probas[torch.from_numpy(rows).to(probas.device)]

    def predict(self, posterior, new_data=None) -> torch.Tensor:
        """``(n,)`` long: the most probable cluster of each item of :meth:`predict_proba`."""
        return self.predict_proba(posterior, new_data).argmax(-1)
