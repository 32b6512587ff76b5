r"""BayesSCDC with the features observed: a Bayesian Gaussian mixture plus the two-coin workers.

This is the conjugate sub-model of BayesSCDC (paper §3.1, eqs. 5-7) with :math:`x` observed
instead of produced by a deep generative model; its Gibbs sampler (spec §3.3,
:mod:`.observed_gibbs`) is the reference posterior the variational fixed point of BayesSCDC
is checked against. Generative story (``N`` items in ``d`` dimensions, ``K`` clusters, ``M``
workers, ``L`` judged pairs)::

    weights            ~ Dirichlet(alpha0 1_K)                                  (eq. 5)
    precisions_k       ~ Wishart(nu, S^-1)                       k = 1..K
    locs_k | prec_k    ~ Normal(m, (kappa precisions_k)^-1)      k = 1..K
    alpha_m            ~ Beta(tau_alpha)                          m = 1..M      (eq. 6)
    beta_m             ~ Beta(tau_beta)                           m = 1..M
    z_n | weights      ~ Categorical(weights)                     n = 1..N
    x_n | z_n          ~ Normal(locs_{z_n}, precisions_{z_n}^-1)
    links_l | z, coins ~ Bernoulli(alpha_m if z_i = z_j else 1 - beta_m)        (eqs. 1-2)

The pair :math:`(\mu_k, \Sigma_k) \sim \mathrm{NIW}(m, \kappa, S, \nu)` of the paper is the same
family written on the precision :math:`\Lambda_k = \Sigma_k^{-1}`: :math:`\Sigma_k \sim
\mathrm{InvWishart}(S, \nu)` is :math:`\Lambda_k \sim \mathrm{Wishart}(\nu, S^{-1})`, and
:math:`\mu_k \mid \Sigma_k \sim N(m, \Sigma_k / \kappa)`; the program samples the precision,
as :class:`~pyromodels.conjugate.NormalWishart` does.

Sample sites:

============  ==========================  ==========  =========================================
site          support                     shape       meaning
============  ==========================  ==========  =========================================
weights       simplex                     (K,)        mixing proportions :math:`\pi`
precisions    positive definite           (K, d, d)   :math:`\Lambda_k = \Sigma_k^{-1}`
locs          real                        (K, d)      :math:`\mu_k`
alpha         (0, 1)                      (M,)        sensitivities, P(must link | same)
beta          (0, 1)                      (M,)        specificities, P(cannot link | different)
z             {0, ..., K-1}               (N,)        cluster of each item
x             real (observed)             (N, d)      the features
links         {0, 1} (observed)           (L,)        the judgements (:func:`.links.observe_links`)
============  ==========================  ==========  =========================================

``z`` is not marked for enumeration: the links couple the items (a pairwise Markov random
field), whose exact sum is exponential in ``N`` (spec §3.3). The only engine is ``gibbs``.

Label switching: ``weights``, ``locs``, ``precisions`` and ``z`` change with the names of the
clusters, which a mixing sampler permutes; their per-chain traces and R-hat are meaningless.
The fit therefore names ``alpha`` and ``beta`` in ``attrs["label_invariant_sites"]``, the sites
its :class:`~pyromodels.core.SamplingWarning` judges; :func:`label_invariant_draws` adds the
workers' weights :math:`\mathrm{logit}\,\alpha_m + \mathrm{logit}\,\beta_m` and the number of
occupied clusters, :func:`label_invariant_summary` gives their R-hat and ESS, and
:func:`coclustering_probabilities` the posterior co-clustering matrix.
"""

from __future__ import annotations

import numpy as np
import pyro
import pyro.distributions as dist
import torch
from pyro.ops.indexing import Vindex

from ..checks import as_float_tensor, check_bool, check_in, check_int
from ..conjugate import data_units
from ..conjugate.random import sample_wishart
from ..core.diagnostic_warnings import warn_sampling_problems
from ..core.model import Model
from ..core.posterior import Posterior, check_posterior, summary
from . import observed_gibbs
from .data import id_coords
from .links import coins_on_plate, observe_links, worker_weights
from .observed_data import ObservedData, prepare_observed_data

__all__ = ["ObservedBayesSCDC", "LABEL_INVARIANT_SITES", "initial_assignments", "label_invariant_draws",
           "label_invariant_summary", "coclustering_probabilities"]

#: the sites of a fit that do not depend on the clusters' names (diagnose these)
LABEL_INVARIANT_SITES = ("alpha", "beta", "worker_weights", "occupied_clusters",
                         "largest_cluster_fraction")


class _Wishart(dist.Wishart):
    """Pyro's Wishart whose draws come from :func:`~pyromodels.conjugate.sample_wishart` (the
    Bartlett decomposition on torch's global generator, as every Pyro sample statement uses),
    without torch's spurious "Singular sample detected" redraws."""

    def rsample(self, sample_shape=()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        return sample_wishart(self.df.expand(shape[:-2]), self._unbroadcasted_scale_tril)


class ObservedBayesSCDC(Model):
    r"""BayesSCDC's conjugate sub-model with observed features, fitted by Gibbs sampling.

    Args:
        num_clusters: ``K >= 1``.
        weight_concentration: :math:`\alpha_0` of the Dirichlet on the weights (default
            :math:`0.05/K`, the paper's sparse prior that empties unneeded clusters).
        mean_prior: :math:`m`, ``(d,)`` (default: the data's mean; paper: 0).
        mean_precision: :math:`\kappa` (default 0.5, the paper's).
        degrees_of_freedom: :math:`\nu > d - 1` (default :math:`d + \kappa`, the paper's).
        covariance_scale: :math:`S`, the inverse-Wishart scale ``(d, d)`` (default
            :math:`(d + \kappa) s^2 I` with :math:`s` the data's spread; paper:
            :math:`(d + \kappa) I`).
        alpha_prior: Beta concentrations ``(a, b)`` of every sensitivity (default ``(1, 1)``).
        beta_prior: Beta concentrations of every specificity (default ``(1, 1)``).
        backend: the sequential scan of the clusters: ``"auto"`` (default: numba where it is
            installed), ``"numba"`` or ``"numpy"``; both give the same draws
            (:mod:`.assign_kernel`).

    The defaults are the paper's (Appendix B, spec §2.3) written in the data's units
    (:func:`~.observed_data.resolve_observed_prior`), so the fit is scale-free: ``x * 1e-8``
    and ``x + 1e6`` give the clustering of ``x``. The resolved prior travels with the
    prepared data (``posterior.data.prior``).

    Example:
        >>> import torch
        >>> from pyromodels.data import PairwiseAnnotations
        >>> x = torch.cat([torch.randn(6, 2) - 4, torch.randn(6, 2) + 4]).double()
        >>> pairs = PairwiseAnnotations.from_arrays([0, 0, 6], [1, 6, 7], [0, 0, 1], [1, 0, 1],
        ...                                         num_items=12)
        >>> post = ObservedBayesSCDC(2).fit(x, pairs, num_chains=1, num_samples=20,
        ...                                 num_warmup=20, seed=0, progress=False,
        ...                                 diagnostic_warnings=False)
        >>> label_invariant_draws(post)["worker_weights"].shape
        torch.Size([1, 20, 2])
    """

    discrete_sites: tuple[str, ...] = ()
    max_plate_nesting = 1
    engines = ("gibbs",)
    #: component axis of each site, counted in the site's own shape (for relabelling)
    component_sites = {"weights": 0, "locs": 0, "precisions": 0}
    #: names of each site's axes in ArviZ groups
    site_dims = {
        "weights": ("cluster",),
        "locs": ("cluster", "feature"),
        "precisions": ("cluster", "feature", "feature_bis"),
        "alpha": ("worker",),
        "beta": ("worker",),
        "worker_weights": ("worker",),
        "z": ("item",),
        "x": ("item", "feature"),
        "links": ("link",),
    }

    def __init__(self, num_clusters: int, weight_concentration: float | None = None,
                 mean_prior=None, mean_precision: float | None = None,
                 degrees_of_freedom: float | None = None, covariance_scale=None,
                 alpha_prior=(1.0, 1.0), beta_prior=(1.0, 1.0), backend: str = "auto"):
        self.num_clusters = check_int(num_clusters, "num_clusters", minimum=1)
        self.backend = check_in(backend, "backend", ("auto", "numba", "numpy"))
        self.weight_concentration = weight_concentration
        self.mean_prior = mean_prior
        self.mean_precision = mean_precision
        self.degrees_of_freedom = degrees_of_freedom
        self.covariance_scale = covariance_scale
        self.alpha_prior = alpha_prior
        self.beta_prior = beta_prior

    # ----------------------------------------------------------------- data
    def prepare(self, data, device=None) -> ObservedData:
        """``data`` as :class:`~.observed_data.ObservedData` on ``device``: prepared data pass
        through; a pair ``(x, pairs)`` is checked and the prior resolved against ``x``."""
        if isinstance(data, ObservedData):
            return data if device is None or data.device == torch.device(device) else data.to(device)
        if not isinstance(data, tuple) or len(data) != 2:
            raise TypeError("data must be ObservedData or a pair (x, pairs), got "
                            f"{type(data).__name__}")
        prior_args = {"weight_concentration": self.weight_concentration,
                      "mean_prior": self.mean_prior, "mean_precision": self.mean_precision,
                      "degrees_of_freedom": self.degrees_of_freedom,
                      "covariance_scale": self.covariance_scale,
                      "alpha_prior": self.alpha_prior, "beta_prior": self.beta_prior}
        return prepare_observed_data(data[0], data[1], prior_args, self.num_clusters, device)

    def observed_data(self, data) -> dict:
        """``{"x": (N, d), "links": (L,)}`` for ArviZ's ``observed_data`` group."""
        data = self.prepare(data)
        return {"x": data.x.detach().cpu().numpy(), "links": data.link.detach().cpu().numpy()}

    # -------------------------------------------------------------- program
    def model(self, data):
        """The generative story (see the module docstring)."""
        data = self.prepare(data)
        p, K, M = data.prior, self.num_clusters, data.num_workers
        weights = pyro.sample("weights", dist.Dirichlet(p.weight_concentration.expand(K)))
        nw = p.normal_wishart
        precisions = pyro.sample(
            "precisions", _Wishart(nw.nu, scale_tril=nw.scale_tril).expand([K]).to_event(1))
        locs = pyro.sample(
            "locs", dist.MultivariateNormal(p.mean_prior,
                                            precision_matrix=p.mean_precision * precisions).to_event(1))
        alpha = pyro.sample("alpha", dist.Beta(p.alpha_prior[0], p.alpha_prior[1]).expand([M]).to_event(1))
        beta = pyro.sample("beta", dist.Beta(p.beta_prior[0], p.beta_prior[1]).expand([M]).to_event(1))
        with pyro.plate("items", data.num_items, dim=-1):
            z = pyro.sample("z", dist.Categorical(weights))
            pyro.sample("x", dist.MultivariateNormal(
                Vindex(locs)[..., z, :], precision_matrix=Vindex(precisions)[..., z, :, :]), obs=data.x)
        observe_links(z, data.i_idx, data.j_idx, data.worker_idx, data.link, coins_on_plate(alpha),
                      coins_on_plate(beta))

    # ------------------------------------------------------------------ engines
    def init_state(self, data, generator) -> dict:
        """A Gibbs start: k-means clusters of the standardised features
        (:func:`initial_assignments`), then the weights, components and coins at their
        conditional means given them (nothing here depends on the data's units)."""
        data = self.prepare(data)
        K = self.num_clusters
        z = initial_assignments(data.x, K, generator)
        shape_only = torch.empty(K, dtype=data.x.dtype, device=data.device)  # gives K
        conc = observed_gibbs.weights_concentration({"z": z, "weights": shape_only}, data)
        state = {"z": z, "weights": conc / conc.sum()}
        locs, precisions = observed_gibbs.components_posterior(z, data, K).mean()
        a, b = observed_gibbs.worker_concentrations(state, data)
        return {**state, "locs": locs, "precisions": precisions,
                "alpha": a[:, 0] / a.sum(-1), "beta": b[:, 0] / b.sum(-1)}

    def gibbs_sweep(self, data):
        """The sweep of :mod:`.observed_gibbs`, its scan on the resolved ``backend``."""
        from .assign_kernel import resolve_backend

        return observed_gibbs.sweep(backend=resolve_backend(self.backend))

    def fit(self, x, pairs=None, *, method: str = "gibbs", diagnostic_warnings: bool = True,
            **settings):
        """Gibbs sampling of the posterior (:func:`~pyromodels.core.run_gibbs`).

        Args:
            x: ``(N, d)`` features, or already prepared :class:`~.observed_data.ObservedData`
                (then ``pairs`` is ``None``).
            pairs: :class:`~pyromodels.data.PairwiseAnnotations` over the same ``N`` items.
            method: ``"gibbs"``, the only engine.
            diagnostic_warnings: emit a :class:`~pyromodels.core.SamplingWarning` when R-hat
                or ESS of the label-invariant sites say the draws are not reliable yet.
            **settings: :func:`~pyromodels.core.run_gibbs`'s settings (``num_chains``,
                ``num_samples``, ``num_warmup``, ``seed``, ``progress``, ...).

        Returns:
            A :class:`~pyromodels.core.Posterior` of the program's sites, whose
            ``attrs["label_invariant_sites"]`` (``alpha``, ``beta``) are the sites its
            diagnostics read (see :func:`label_invariant_draws` for the rest).
        """
        check_in(method, "method", self.engines)
        diagnostic_warnings = check_bool(diagnostic_warnings, "diagnostic_warnings")
        data = x if isinstance(x, ObservedData) and pairs is None else self.prepare(
            (x, pairs), device=settings.get("device"))
        post = super().fit(data, method=method, diagnostic_warnings=False, **settings)
        post.attrs["label_invariant_sites"] = ["alpha", "beta"]
        return warn_sampling_problems(post, diagnostic_warnings)

    # -------------------------------------------------------------- results
    def site_coords(self, data) -> dict:
        """Labels of the ``worker`` and ``item`` axes in ArviZ groups: the users' ids of the
        judgements (their ``workers``; their ``items``, one per row of ``x``)."""
        pairs = self.prepare(data).pairs
        return id_coords(workers=pairs.workers, items=pairs.items)

    def predict_proba(self, posterior, x) -> torch.Tensor:
        r"""``(n, K)`` cluster probabilities of points ``x`` from their features alone,
        :math:`p(z = k \mid x) \propto \pi_k N(x; \mu_k, \Lambda_k^{-1})` at each draw,
        averaged over the draws.

        Links are not used: for the fitted items themselves, the draws of ``z`` (which do use
        them) give :func:`coclustering_probabilities`. As for any mixture, averaging over draws
        is meaningful only when the draws share one labelling of the clusters (one chain that
        did not switch labels, or draws relabelled by :func:`pyromodels.diagnostics.relabel`).
        """
        s = check_posterior(posterior).samples
        missing = [k for k in ("weights", "locs", "precisions") if k not in s]
        if missing:
            raise ValueError(f"posterior must be a fit of ObservedBayesSCDC; it lacks the "
                             f"sites {missing}")
        locs = s["locs"]
        x = as_float_tensor(x, "x", ndim=2, dtype=locs.dtype, device=locs.device)
        if x.shape[1] != locs.shape[-1]:
            raise ValueError(f"x must have {locs.shape[-1]} columns, as the fitted features, "
                             f"got {x.shape[1]}")
        with torch.no_grad():
            comps = dist.MultivariateNormal(locs, precision_matrix=s["precisions"])
            log_dens = comps.log_prob(x.reshape(x.shape[0], 1, 1, 1, -1))  # (n, chain, draw, K)
            logits = log_dens + s["weights"].log()
            return torch.softmax(logits, -1).mean(dim=(1, 2))

    def predict(self, posterior, x) -> torch.Tensor:
        """``(n,)`` long: each point's most probable cluster under :meth:`predict_proba`."""
        return self.predict_proba(posterior, x).argmax(-1)


def initial_assignments(x: torch.Tensor, num_clusters: int, generator: torch.Generator) -> torch.Tensor:
    """Starting clusters ``(N,)``: scikit-learn's k-means (k-means++ seeding, one start, its
    seed drawn from ``generator``) on ``x`` in its own units (:func:`~pyromodels.conjugate.data_units`),
    so ``c x + b`` starts from the clusters of ``x``."""
    from sklearn.cluster import KMeans  # loaded on use: importing the family stays light

    loc, scale = data_units(x, "x")
    seed = int(torch.randint(2**31 - 1, (), generator=generator, device=generator.device))
    units = ((x.detach() - loc) / scale).cpu().numpy()
    labels = KMeans(num_clusters, n_init=1, random_state=seed).fit_predict(units)
    return torch.as_tensor(labels, dtype=torch.long, device=x.device)


def label_invariant_draws(posterior) -> dict[str, torch.Tensor]:
    """The draws of a fit that do not depend on the clusters' names.

    Returns:
        ``{"alpha": (chain, draw, M), "beta": ..., "worker_weights": ...,
        "occupied_clusters": (chain, draw), "largest_cluster_fraction": (chain, draw)}``;
        ``worker_weights`` is :func:`~.links.worker_weights` of each draw (0 at chance, 4.39
        for a worker right 90% of the time on both kinds of pair), the cluster statistics are
        :func:`~pyromodels.diagnostics.label_invariant_stats`'.
    """
    posterior = check_posterior(posterior)
    s = posterior.samples
    missing = [k for k in ("alpha", "beta", "z") if k not in s]
    if missing:
        raise ValueError(f"posterior must be a fit of ObservedBayesSCDC; it lacks the sites {missing}")
    from ..diagnostics import label_invariant_stats  # loaded on use (it loads ArviZ)

    stats = label_invariant_stats(posterior, "z")
    return {"alpha": s["alpha"], "beta": s["beta"],
            "worker_weights": worker_weights(s["alpha"], s["beta"]),
            "occupied_clusters": stats["occupied_clusters"],
            "largest_cluster_fraction": stats["largest_cluster_fraction"]}


def label_invariant_summary(posterior, **kwargs):
    """ArviZ's summary (means, sd, MCSE, ESS, R-hat) of :func:`label_invariant_draws`.

    ``kwargs`` go to :func:`~pyromodels.core.summary` (``hdi_prob``, ``round_to``). A
    statistic that is the same in every draw (one number of occupied clusters throughout) has
    an undefined R-hat, shown as NaN.
    """
    draws = Posterior(samples=label_invariant_draws(posterior), method=posterior.method,
                      attrs=dict(posterior.attrs))
    with np.errstate(divide="ignore", invalid="ignore"):  # NaN R-hat of a constant statistic
        return summary(draws, **kwargs)


def coclustering_probabilities(posterior) -> torch.Tensor:
    """``P(z_i = z_j | x, links)`` averaged over every chain and draw, ``(N, N)`` float64
    (:func:`~pyromodels.diagnostics.coclustering`; label-invariant, so chains pool)."""
    from ..diagnostics import coclustering  # loaded on use (it loads ArviZ)

    posterior = check_posterior(posterior)
    return coclustering(posterior.samples["z"])
