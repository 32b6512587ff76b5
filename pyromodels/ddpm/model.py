"""The DP mixture of isotropic Gaussians on flow features: the generative story of DDPM.

Generative story (Deep Dirichlet Process Mixture Models, eqs. 1-8), in its Chinese-restaurant
form: ``N`` points in ``d`` dimensions, clusters opened as the points are seated::

    c_i | c_<i         ~ CRP:  P(c_i = k) = n_k / (i + alpha),  P(new) = alpha / (i + alpha)
    lam_k              ~ Gamma(alpha0, rate beta0)                 when cluster k opens
    mu_k | lam_k       ~ N(mu0, (kappa0 lam_k)^-1 I_d)             when cluster k opens
    z_i | c, mu, lam   ~ N(mu_{c_i}, lam_{c_i}^-1 I_d)
    y_i                = f^-1(z_i)                                  (optional flow f)

With a flow ``f`` (any invertible ``torch.distributions.Transform`` from ``y`` to ``z``), ``y``
is the observed site and its density is ``N(f(y) | mu_c, lam_c^-1 I) |det df/dy|`` (eqs. 3,
17), a ``TransformedDistribution`` of the Gaussian through ``f^-1``.

Sample sites (labels in order of first appearance, so ``c_0 = 0``):

=================  ==================  =========  ==========================================
site               support             shape      meaning
=================  ==================  =========  ==========================================
``c_0..c_{N-1}``   ``{0, .., K_i}``    ``()``     cluster of point ``i`` (``K_i`` opened so far)
``lam_0..``        positive            ``()``     precision of cluster ``k``, one per opened cluster
``mu_0..``         real                ``(d,)``   mean of cluster ``k``
``z``              real                ``(N, d)`` transformed points (observed without a flow)
``y``              real                ``(N, d)`` features (observed, only with a flow)
=================  ==================  =========  ==========================================

Scoring a full state with ``poutine.condition`` and ``trace().log_prob_sum()`` gives exactly
the CRP's partition probability plus the Normal-Gamma and Gaussian log densities (see
:mod:`pyromodels.ddpm.joint`); :func:`state_values` turns a state ``(labels, mu, lam)`` into
the site values, relabelling clusters in order of first appearance.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyro
import pyro.distributions as dist
import torch
from torch.distributions import Transform

from ..bnp import canonical_labels, sample_crp
from ..checks import as_float_tensor, as_label_tensor, check_in, check_int
from ..core.model import Model
from .joint import complete_log_joint
from .prior import EMPIRICAL, DPMixturePrior, resolve_prior

__all__ = ["dp_mixture_crp", "state_values", "DPMixture", "DPMixtureSample"]


def _check_flow(flow):
    if flow is not None and not isinstance(flow, Transform):
        raise TypeError(f"flow must be a torch.distributions.Transform (y -> z) or None, "
                        f"got {type(flow).__name__}")
    return flow


def _observation(loc, scale, flow):
    base = dist.Normal(loc, scale).to_event(1)
    if flow is None:
        return base
    return dist.TransformedDistribution(base, [flow.inv])


def dp_mixture_crp(num_points: int, dim: int, prior: DPMixturePrior, z=None, *, y=None, flow=None):
    """The DP mixture as a Pyro program, with sequential CRP seating.

    Args:
        num_points: ``N >= 1``.
        dim: ``d >= 1``.
        prior: the hyperparameters; ``mu0 = "empirical"`` resolves to the mean of ``z`` (or of
            ``f(y)`` with a flow), which must then be observed.
        z: ``(N, d)`` observed transformed points, or ``None`` to sample them. Only without a
            flow.
        y: ``(N, d)`` observed features, or ``None`` to sample them. Only with a flow.
        flow: a ``torch.distributions.Transform`` ``f`` from features ``y`` to ``z``, or ``None``.

    Returns:
        ``z`` (no flow) or ``y`` (flow), ``(N, d)``.

    Raises:
        ValueError / TypeError: sizes that are not positive integers; ``z`` with a flow or
            ``y`` without one; observations of the wrong shape; a flow that is not a Transform.

    Example:
        >>> import torch
        >>> from pyro import poutine
        >>> from pyromodels.ddpm import DPMixturePrior
        >>> tr = poutine.trace(dp_mixture_crp).get_trace(3, 2, DPMixturePrior(), torch.zeros(3, 2))
        >>> tr.nodes["c_0"]["value"].item(), tr.nodes["z"]["value"].shape
        (0, torch.Size([3, 2]))
    """
    num = check_int(num_points, "num_points", minimum=1)
    d = check_int(dim, "dim", minimum=1)
    flow = _check_flow(flow)
    if flow is None and y is not None:
        raise ValueError("y is observed only through a flow; without a flow pass z")
    if flow is not None and z is not None:
        raise ValueError("with a flow the observed site is y (features); pass y, not z")
    obs = z if flow is None else y
    name = "z" if flow is None else "y"
    if obs is not None:
        obs = as_float_tensor(obs, name, ndim=2)
        if tuple(obs.shape) != (num, d):
            raise ValueError(f"{name} must have shape ({num}, {d}), got {tuple(obs.shape)}")
    opts = {"dtype": obs.dtype if obs is not None else torch.get_default_dtype(),
            "device": obs.device if obs is not None else None}
    reference = None
    if prior.mu0 == EMPIRICAL and obs is not None:
        with torch.no_grad():
            reference = obs if flow is None else flow(obs)
    loc = prior.loc(d, reference, **opts)
    kappa0, alpha0, beta0 = (torch.tensor(v, **opts) for v in (prior.kappa0, prior.alpha0, prior.beta0))
    alpha = torch.tensor(prior.alpha, **opts)

    counts: list[float] = []
    labels, mus, lams = [], [], []
    for i in range(num):
        probs = torch.tensor(counts + [prior.alpha], **opts) / (i + alpha)
        c_i = pyro.sample(f"c_{i}", dist.Categorical(probs))
        k = int(c_i)
        if k == len(counts):
            lam_k = pyro.sample(f"lam_{k}", dist.Gamma(alpha0, beta0))
            mus.append(pyro.sample(f"mu_{k}", dist.Normal(loc, torch.rsqrt(kappa0 * lam_k)).to_event(1)))
            lams.append(lam_k)
            counts.append(0.0)
        counts[k] += 1.0
        labels.append(k)
    c = torch.tensor(labels, dtype=torch.long, device=opts["device"])
    mu = torch.stack(mus)
    lam = torch.stack(lams)
    scale = torch.rsqrt(lam)[c].unsqueeze(-1).expand(num, d)
    with pyro.plate("data", num, dim=-1):
        return pyro.sample(name, _observation(mu[c], scale, flow), obs=obs)


def _canonical_labels_and_order(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`pyromodels.bnp.canonical_labels` of ``labels`` and ``order``, the old label of
    each new one (``order[j]`` is the ``j``-th distinct old label met), so that
    ``old_param[order]`` reorders per-cluster parameters."""
    new = canonical_labels(labels)
    order = torch.empty(int(new.max()) + 1, dtype=torch.long).scatter_(0, new, labels.cpu())
    return new, order


def state_values(labels, mu, lam) -> dict:
    """Site values of :func:`dp_mixture_crp` for the state ``(labels, mu, lam)``.

    Args:
        labels: ``(N,)`` labels ``0..K-1`` (any order of first appearance; every value used).
        mu: ``(K, d)`` cluster means; row ``k`` belongs to label ``k``.
        lam: ``(K,)`` cluster precisions.

    Returns:
        ``{"c_i": ..., "lam_k": ..., "mu_k": ...}`` with clusters renumbered in order of first
        appearance, for ``poutine.condition``.
    """
    mu = as_float_tensor(mu, "mu", ndim=2)
    lam = as_float_tensor(lam, "lam", ndim=1, dtype=mu.dtype)
    c = as_label_tensor(labels, "labels", num_classes=mu.shape[0])
    if lam.shape[0] != mu.shape[0]:
        raise ValueError(f"lam must have one entry per row of mu ({mu.shape[0]}), got {lam.shape[0]}")
    new, order = _canonical_labels_and_order(c)
    if order.shape[0] != mu.shape[0]:
        raise ValueError(f"labels must use every value in 0..{mu.shape[0] - 1} (no empty cluster)")
    values = {f"c_{i}": new[i] for i in range(new.shape[0])}
    for k, old in enumerate(order.tolist()):
        values[f"lam_{k}"] = lam[old]
        values[f"mu_{k}"] = mu[old]
    return values


@dataclass(frozen=True)
class DPMixtureSample:
    """A draw of the generative story.

    Attributes:
        z: ``(N, d)`` transformed points.
        labels: ``(N,)`` cluster labels, in order of first appearance.
        mu: ``(K, d)`` cluster means.
        lam: ``(K,)`` cluster precisions.
        y: ``(N, d)`` features ``f^-1(z)`` when the model has a flow, else ``None``.
    """

    z: torch.Tensor
    labels: torch.Tensor
    mu: torch.Tensor
    lam: torch.Tensor
    y: torch.Tensor | None = None

    @property
    def num_clusters(self) -> int:
        return int(self.mu.shape[0])


class DPMixture(Model):
    """Dirichlet-process mixture of isotropic Gaussians with a Normal-Gamma base measure,
    optionally observed through an invertible flow (the model of DPM and DDPM).

    Args:
        prior: the hyperparameters, used as given; ``None`` (default) resolves, for each data
            set the model meets, to :func:`~pyromodels.ddpm.prior.default_prior` of the points
            ``z`` (``DPMixturePrior()`` in the data's units: ``mu0`` the column means,
            ``beta0`` the squared root mean variance), so that the clustering of ``c z + b``
            is that of ``z`` (:meth:`simulate`, without data, uses ``DPMixturePrior()``).
        flow: a ``torch.distributions.Transform`` ``f`` from features ``y`` to ``z`` (the
            NICE flow of DDPM), or ``None`` for the plain DP mixture on ``z`` (DPM).

    The data of :meth:`model` are the observed points: ``z`` without a flow, ``y`` with one.
    A CRP with unbounded ``K`` is out of reach of SVI, NUTS and enumeration; the engines are
    Gibbs sampling (``method="gibbs"``, :func:`~pyromodels.ddpm.gibbs.fit_gibbs`) and Monte
    Carlo EM (``method="mcem"``, :func:`~pyromodels.ddpm.mcem.fit_mcem`).

    Example:
        >>> import torch
        >>> model = DPMixture(DPMixturePrior(alpha=1.0, alpha0=5.0, beta0=5.0))
        >>> draw = model.simulate(20, torch.Generator().manual_seed(0), dim=2)
        >>> draw.z.shape, int(draw.labels[0])
        (torch.Size([20, 2]), 0)
        >>> lj = model.log_joint(draw.z, state_values(draw.labels, draw.mu, draw.lam))
        >>> bool(torch.isclose(lj, model.complete_log_joint(draw.z, draw.labels, draw.mu, draw.lam)))
        True
    """

    discrete_sites: tuple[str, ...] = ()
    max_plate_nesting = 1
    engines: tuple[str, ...] = ("mcem", "gibbs")
    site_dims = {"c": ("point",)}

    def __init__(self, prior: DPMixturePrior | None = None, flow=None):
        if prior is not None and not isinstance(prior, DPMixturePrior):
            raise TypeError(f"prior must be a DPMixturePrior or None, got {type(prior).__name__}")
        self.prior = prior
        self.flow = _check_flow(flow)

    def prior_for(self, z: torch.Tensor) -> DPMixturePrior:
        """The prior a fit on the transformed points ``z`` ``(N, d)`` uses: the model's
        ``prior``, or with ``prior=None`` the data-dependent default (class docstring)."""
        return resolve_prior(self.prior, z.detach())

    def _start_features(self, x: torch.Tensor) -> torch.Tensor:
        """``f(x)`` under the starting flow (``x`` without one), ``x`` read in the flow's dtype
        and device as Monte Carlo EM reads it."""
        if self.flow is None:
            return x
        weight = next(iter(self.flow.parameters()), None) if hasattr(self.flow, "parameters") else None
        with torch.no_grad():
            return self.flow(x if weight is None else x.to(dtype=weight.dtype, device=weight.device))

    def prepare(self, data, device=None) -> torch.Tensor:
        """The observed points as a finite ``(N, d)`` float tensor."""
        return as_float_tensor(data, "data", ndim=2, device=device)

    def model(self, data):
        """The generative story (module docstring) with ``data`` observed (``z``, or ``y``
        with a flow)."""
        x = self.prepare(data)
        if self.flow is None:
            return dp_mixture_crp(x.shape[0], x.shape[1], self.prior_for(x), x)
        with torch.no_grad():
            prior = self.prior_for(self.flow(x))
        return dp_mixture_crp(x.shape[0], x.shape[1], prior, y=x, flow=self.flow)

    def transform(self, data) -> tuple[torch.Tensor, torch.Tensor]:
        """``(z, log|det df/dy|)`` for observed ``data``: ``(data, 0)`` without a flow."""
        x = self.prepare(data)
        if self.flow is None:
            return x, torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
        z = self.flow(x)
        log_det = self.flow.log_abs_det_jacobian(x, z)
        if self.flow.domain.event_dim == 0:  # an elementwise transform: sum over coordinates
            log_det = log_det.sum(-1)
        return z, log_det.expand(x.shape[0])

    def complete_log_joint(self, data, labels, mu, lam) -> torch.Tensor:
        """Closed-form log joint (eqs. 16-19) of the state ``(labels, mu, lam)`` and ``data``,
        with the flow's ``log|det df/dy|`` added (see :func:`pyromodels.ddpm.complete_log_joint`)."""
        z, log_det = self.transform(data)
        return complete_log_joint(z, labels, mu, lam, self.prior_for(z), log_det)

    @torch.no_grad()
    def simulate(self, num_points: int, generator: torch.Generator, *, dim: int | None = None,
                 dtype: torch.dtype = torch.float64) -> DPMixtureSample:
        """Draw ``(z, labels, mu, lam)`` (and ``y = f^-1(z)`` with a flow) from the story.

        Args:
            num_points: ``N >= 1``.
            generator: a ``torch.Generator``, the only source of randomness.
            dim: ``d``; may be left out when ``mu0`` is a vector.
            dtype: floating dtype of the draws.

        Raises:
            ValueError: ``mu0 = "empirical"`` (there is no data to take a mean of), no ``dim``
                with a scalar ``mu0``.
        """
        num = check_int(num_points, "num_points", minimum=1)
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        prior = DPMixturePrior() if self.prior is None else self.prior
        if dim is None:
            if not isinstance(prior.mu0, tuple):
                raise ValueError("dim is needed unless mu0 is a vector")
            dim = len(prior.mu0)
        ng = prior.normal_gamma(dim, dtype=dtype)
        c = sample_crp(num, prior.alpha, generator)
        mu, lam = ng.sample(generator, (int(c.max()) + 1,))
        noise = torch.randn(num, ng.dim, dtype=dtype, generator=generator)
        z = mu[c] + torch.rsqrt(lam)[c].unsqueeze(-1) * noise
        y = None if self.flow is None else self.flow.inv(z)
        return DPMixtureSample(z=z, labels=c, mu=mu, lam=lam, y=y)

    def fit(self, data, method: str = "mcem", **kwargs):
        """Fit by Gibbs sampling or by Monte Carlo EM.

        ``method="gibbs"`` (:func:`~pyromodels.ddpm.gibbs.fit_gibbs`): chains of Neal's
        Algorithm 3 (``algorithm=3``, collapsed), Algorithm 2 (``algorithm=2``) or the blocked
        sampler of the truncated model (``algorithm="blocked"``), on ``z`` (or ``f(y)`` with
        the flow held fixed); draws of the canonical labels ``c``.

        ``method="mcem"`` (:func:`~pyromodels.ddpm.mcem.fit_mcem`, the paper's Algorithm 1):
        Gibbs sweeps of the DP mixture on ``z = f(y)`` and, with a trainable flow, Adam steps
        on the flow between them; without one, the rounds are the Gibbs sampler alone (DPM).

        With ``prior=None`` either engine resolves the prior once, against the starting ``z``
        (:meth:`prior_for`); the prior used is recorded in ``attrs["prior"]``.

        Args:
            data: ``(N, d)`` observed points (``y`` with a flow, ``z`` without).
            method: ``"mcem"`` or ``"gibbs"``.
            **kwargs: for ``"gibbs"``: ``algorithm``, ``num_samples``, ``num_warmup``,
                ``num_chains``, ``thin``, ``seed``, ``init``, ``truncation``,
                ``alpha_prior``, ``backend``, ``paper_literal``, ``progress``,
                ``diagnostic_warnings`` (``False`` silences the
                :class:`~pyromodels.core.SamplingWarning` after the chains); for
                ``"mcem"``: ``settings`` (:class:`~pyromodels.ddpm.mcem.MCEMSettings`),
                ``seed``, ``progress``, ``checkpoint``, ``checkpoint_every``, ``resume``; for
                both: ``n_jobs``, the chains or restarts run at once (joblib's meaning, see
                :mod:`pyromodels.core.parallel`).

        Returns:
            A :class:`~pyromodels.core.Posterior` (see the engine's function).
        """
        from .gibbs import fit_gibbs
        from .mcem import fit_mcem

        check_in(method, "method", self.engines)
        x = self.prepare(data)
        if x.shape[0] < 2:
            raise ValueError(f"data must hold at least 2 points, got {x.shape[0]}")
        if method == "gibbs":
            return fit_gibbs(self, x, **kwargs)
        prior = self.prior if self.prior is not None else self.prior_for(self._start_features(x))
        posterior = fit_mcem(self, x, prior, self.flow, **kwargs)
        posterior.attrs["prior"] = repr(prior)
        return posterior
