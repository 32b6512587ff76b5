"""The DP mixture of isotropic Gaussians in truncated stick-breaking form, fitted by SVI or by
blocked Gibbs sampling.

The Chinese-restaurant form (:class:`~pyromodels.ddpm.DPMixture`) has an unbounded number of
clusters, which neither SVI nor enumeration can handle. Truncating the stick-breaking
construction of ``G ~ DP(G0, alpha)`` (DDPM paper, eqs. 4-7; Ishwaran and James 2001)
at ``T`` sticks gives a finite model with the same base measure
``G0 = NG(mu0, kappa0, alpha0, beta0)``:

.. math::

    v_k &\\sim \\mathrm{Beta}(1, \\alpha), \\quad k < T - 1, \\qquad v_{T-1} = 1, \\qquad
    \\pi_k = v_k \\prod_{j<k} (1 - v_j), \\\\
    \\lambda_k &\\sim \\mathrm{Gamma}(\\alpha_0, \\text{rate } \\beta_0), \\qquad
    \\mu_k \\mid \\lambda_k \\sim N(\\mu_0, (\\kappa_0 \\lambda_k)^{-1} I_d), \\\\
    c_i &\\sim \\mathrm{Categorical}(\\pi), \\qquad
    z_i \\mid c_i \\sim N(\\mu_{c_i}, \\lambda_{c_i}^{-1} I_d).

Sample sites (components numbered ``0..T-1``):

======  ==============  ==========  ===================================================
site    support         shape       plate
======  ==============  ==========  ===================================================
``v``   ``(0, 1)``      ``(T-1,)``  ``"sticks"`` (absent when ``T == 1``)
``lam`` positive        ``(T,)``    ``"components"``
``mu``  real            ``(T, d)``  ``"components"``, the feature axis an event axis
``c``   ``{0..T-1}``    ``(N,)``    ``"data"``; enumerated in parallel
``z``   real, observed  ``(N, d)``  ``"data"``
======  ==============  ==========  ===================================================

The program is :func:`pyromodels.bnp.truncated_dp_mixture` with ``c`` marked for parallel
enumeration; it broadcasts over an enumeration dimension of ``c`` and a batch dimension of
draws (components are indexed with ``Vindex``), and conditioned on a full state its
``log_prob_sum()`` is :func:`pyromodels.bnp.blocked_log_joint`.

Engines (the variational one is the alternative the paper leaves to future work):

* ``"svi"``: ``c`` is summed out exactly by ``TraceEnum_ELBO``; the guide is the default
  mean-field ``AutoNormal`` over ``v``, ``lam`` and ``mu`` (``c`` hidden), one independent
  Normal per coordinate in unconstrained space (logit of ``v``, log of ``lam``). The start
  (:meth:`TruncatedDPMixture.init_values`) is the conjugate posterior mean given k-means
  labels with ``min(T, N)`` clusters; surplus components empty out during the fit (each
  occupied component pays the KL of its parameters, the Occam factor of the ELBO).
* ``"gibbs"``: the blocked Gibbs sampler as two blocks, ``(v, mu, lam) | c`` (DDPM paper, eq. 22 and
  ``v_k | c ~ Beta(1 + n_k, alpha + sum_{j>k} n_j)``) and ``c | v, mu, lam``. The blocks
  call the one blocked implementation, :func:`pyromodels.bnp.draw_blocked_parameters` and
  :func:`pyromodels.bnp.draw_blocked_labels`, so a chain from a state draws what
  :func:`pyromodels.bnp.blocked_sweep` draws from it with the same generator.

Caveat on tiny concentrations. The paper's ``alpha = 1e-5`` (Appendix B) makes
``Beta(1, alpha)`` numerically extreme: ``P(1 - v_k < 2^-53) = 2^(-53 alpha) = 1 - 3.7e-4``,
so a prior draw of a stick is 1 to double precision (torch's Beta sampler returns the largest
double below 1) and the truncated prior is, to machine precision, a one-cluster prior; the data
still move the occupied sticks (their posterior is ``Beta(1 + n_k, alpha + ...)``). Where a
stick is exactly 1 the program's ``Beta`` density is ``+inf``. The SVI guide never gets there
(its sigmoid is clipped below 1, so sticks behind the last occupied component sit at the clip
and their weights below ``eps`` are what the truncation can represent in floating point), but
the Gibbs blocks draw ``v_k`` in log space and round it to exactly 1, and then the log joint
reported per draw (``sample_stats["lp"]``) is ``inf``; :func:`pyromodels.bnp.blocked_sweep`,
which keeps ``log(1 - v_k)``, is the sampler for that regime. Treat the truncated model at
such ``alpha`` as a deviation from the paper's CRP model.

Example:
    >>> import torch
    >>> from pyromodels.ddpm import DPMixturePrior, TruncatedDPMixture
    >>> g = torch.Generator().manual_seed(0)
    >>> z = torch.cat([torch.randn(20, 2, dtype=torch.float64, generator=g) * 0.3 + 3,
    ...                torch.randn(20, 2, dtype=torch.float64, generator=g) * 0.3 - 3])
    >>> model = TruncatedDPMixture(DPMixturePrior(kappa0=0.1, alpha0=2.0, beta0=1.0), truncation=4)
    >>> post = model.fit(z, method="gibbs", num_warmup=20, num_samples=20, num_chains=1,
    ...                  seed=0, progress=False)
    >>> post["mu"].shape, post["c"].dtype
    (torch.Size([1, 20, 4, 2]), torch.int64)
    >>> labels = model.predict(post, z).labels
    >>> bool((labels[:20] == labels[0]).all() and (labels[20:] != labels[0]).all())
    True
"""

from __future__ import annotations

from typing import NamedTuple

import pyro.distributions as dist
import torch
from pyro.infer import config_enumerate

from ..bnp import (
    BlockedState,
    assignment_logits,
    component_posterior,
    draw_blocked_labels,
    draw_blocked_parameters,
    stick_log_weights,
    stick_posterior,
    truncated_dp_mixture,
)
from ..checks import as_float_tensor, check_int
from ..conjugate import NormalGamma
from ..core.gibbs import GibbsBlock, GibbsSweep
from ..core.model import Model
from .baselines import kmeans
from .joint import isotropic_log_densities
from .prior import DPMixturePrior, resolve_prior

__all__ = ["TruncatedDPMixture", "TruncatedAssignment"]

_BLOCK_ENTRIES = 1 << 22  # entries of one (draws, N, T, d) block of the pointwise likelihood


class TruncatedAssignment(NamedTuple):
    """Cluster assignments of points under a fitted :class:`TruncatedDPMixture`.

    Attributes:
        responsibilities: ``(N, T)`` ``p(c_i = k | z_i)`` at the posterior means.
        labels: ``(N,)`` int64 ``argmax_k`` of the responsibilities.
    """

    responsibilities: torch.Tensor
    labels: torch.Tensor


def _full_sticks(v: torch.Tensor) -> torch.Tensor:
    """``(..., T-1)`` sticks with the last stick ``v_{T-1} = 1`` appended: ``(..., T)``."""
    return torch.cat([v, v.new_ones(v.shape[:-1] + (1,))], dim=-1)


class TruncatedDPMixture(Model):
    """DP mixture of isotropic Gaussians with a Normal-Gamma base measure, truncated at ``T``
    sticks (the module docstring has the model, its sites and the caveat on tiny ``alpha``).

    Args:
        prior: the hyperparameters ``(mu0, kappa0, alpha0, beta0, alpha)``, used as given
            (``mu0 = "empirical"`` resolves to the mean of the data); ``None`` (default)
            resolves, for each data set, to :func:`~pyromodels.ddpm.prior.default_prior` of
            the data (``DPMixturePrior()`` in the data's units), so that Gibbs gives the
            clustering of ``z`` for ``c z + b`` (SVI's optimiser steps are not in the data's
            units: scale the data or the learning rate for it).
        truncation: number of sticks ``T >= 1`` (components the model can use).

    Raises:
        TypeError: ``prior`` not a :class:`~pyromodels.ddpm.DPMixturePrior`; ``truncation``
            not an integer.
        ValueError: ``truncation < 1``.

    ``fit(z, method="svi" | "gibbs", ...)`` passes its keywords to
    :func:`~pyromodels.core.run_svi` or :func:`~pyromodels.core.run_gibbs`. SVI starts from
    an over-split k-means partition and merges it; a learning rate that decays to about 1e-3
    lets the means settle (with ``run_svi``'s constant ``lr = 0.01`` they stay about half a
    posterior sd away after 2000 steps on three 2-d blobs): pass, for example,
    ``optim=pyro.optim.ClippedAdam({"lr": 0.1, "lrd": 0.01 ** (1 / num_steps)})``.

    Example:
        >>> import pyro
        >>> g = torch.Generator().manual_seed(0)
        >>> z = torch.randn(30, 2, dtype=torch.float64, generator=g) * 0.3
        >>> z[15:] += 4.0
        >>> model = TruncatedDPMixture(DPMixturePrior(kappa0=0.1, alpha0=2.0, beta0=1.0), truncation=3)
        >>> optim = pyro.optim.ClippedAdam({"lr": 0.1, "lrd": 0.01 ** (1 / 200)})
        >>> post = model.fit(z, method="svi", num_steps=200, optim=optim, num_samples=50, seed=0,
        ...                  progress=False)
        >>> resp, labels = model.predict(post, z)
        >>> resp.shape, len(set(labels[:15].tolist())), len(set(labels.tolist()))
        (torch.Size([30, 3]), 1, 2)
    """

    discrete_sites = ("c",)
    max_plate_nesting = 1
    engines = ("svi", "gibbs")
    #: sites whose components swap names between draws and chains (no R-hat alarms on them)
    label_switched_sites = ("v", "lam", "mu", "c")
    site_dims = {
        "v": ("stick",),
        "lam": ("component",),
        "mu": ("component", "feature"),
        "c": ("point",),
        "z": ("point", "feature"),
    }

    def __init__(self, prior: DPMixturePrior | None = None, truncation: int = 20):
        if prior is not None and not isinstance(prior, DPMixturePrior):
            raise TypeError(f"prior must be a DPMixturePrior or None, got {type(prior).__name__}")
        self.prior = prior
        self.truncation = check_int(truncation, "truncation", minimum=1)

    @property
    def alpha(self) -> float:
        """The DP concentration (unitless: the default prior's is 1)."""
        return (DPMixturePrior() if self.prior is None else self.prior).alpha

    # ----------------------------------------------------------------- data
    def prepare(self, data, device=None) -> torch.Tensor:
        """The observed points as a finite ``(N, d)`` float tensor with ``N >= 2``."""
        z = as_float_tensor(data, "data", ndim=2, device=device)
        if z.shape[0] < 2:
            raise ValueError(f"data must hold at least 2 points, got {z.shape[0]}")
        return z

    def base_measure(self, z: torch.Tensor) -> NormalGamma:
        """``G0`` as a :class:`~pyromodels.conjugate.NormalGamma` in ``z``'s dtype and device
        (with ``prior=None``, the default prior in ``z``'s units)."""
        return resolve_prior(self.prior, z.detach()).normal_gamma(z.shape[1], data=z)

    def observed_data(self, data) -> dict:
        """``{"z": (N, d) array}`` for ArviZ's ``observed_data`` group."""
        return {"z": self.prepare(data).detach().cpu().numpy()}

    # -------------------------------------------------------------- program
    def model(self, data):
        """The truncated program (module docstring) with ``z = data`` observed.

        Broadcasts over an enumeration dimension of ``c`` (left of the one plate dimension)
        and over a batch of draws of ``v``, ``lam``, ``mu`` left of their plates.
        """
        z = self.prepare(data)
        program = config_enumerate(truncated_dp_mixture, default="parallel")
        return program(z, self.base_measure(z), self.alpha, self.truncation)

    # --------------------------------------------------------- starting points
    def init_labels(self, data, generator: torch.Generator) -> torch.Tensor:
        """``(N,)`` k-means labels with ``min(T, N)`` clusters (one k-means++ start, seeded
        from ``generator``)."""
        z = self.prepare(data)
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator, device=generator.device))
        k = min(self.truncation, z.shape[0])
        return kmeans(z, k, seed=seed, n_init=1).labels.to(z.device)

    def _conditional_means(self, z, labels) -> dict:
        """Posterior means of ``v``, ``lam``, ``mu`` given the labels, in ``z``'s dtype."""
        T = self.truncation
        post = component_posterior(z, labels, self.base_measure(z), T)
        mu, lam = post.mean()
        values = {"lam": lam.to(z.dtype), "mu": mu.to(z.dtype)}
        if T > 1:
            a, b = stick_posterior(labels, self.alpha, T)
            values["v"] = (a / (a + b)).to(device=z.device, dtype=z.dtype)
        return values

    def init_values(self, data, generator: torch.Generator) -> dict:
        """SVI start: ``E[v, lam, mu | c]`` at the labels of :meth:`init_labels`."""
        z = self.prepare(data)
        return self._conditional_means(z, self.init_labels(z, generator))

    def init_state(self, data, generator: torch.Generator) -> dict:
        """Gibbs start: the labels of :meth:`init_labels` and ``E[v, lam, mu | c]``."""
        z = self.prepare(data)
        labels = self.init_labels(z, generator)
        return {"c": labels, **self._conditional_means(z, labels)}

    # ------------------------------------------------------------------ gibbs
    def _blocked_state(self, state: dict, z: torch.Tensor) -> BlockedState:
        v = state.get("v", z.new_zeros(0))
        alpha = torch.tensor(self.alpha, dtype=z.dtype, device=z.device)
        return BlockedState(state["c"], _full_sticks(v), state["mu"], state["lam"], alpha)

    def _parameter_conditionals(self, state: dict, z: torch.Tensor):
        """``NG`` posterior of every component and the Beta parameters of the sticks."""
        T = self.truncation
        post = component_posterior(z, state["c"], self.base_measure(z), T)
        a, b = stick_posterior(state["c"], self.alpha, T)
        return post, a.to(z.device), b.to(z.device)

    def _draw_parameters(self, state, data, generator) -> dict:
        alpha = torch.tensor(self.alpha, dtype=torch.float64, device=data.device)
        mu, lam, log_v, _, _ = draw_blocked_parameters(
            data, state["c"], self.base_measure(data), alpha, self.truncation, generator)
        out = {"mu": mu.to(data.dtype), "lam": lam.to(data.dtype)}
        if self.truncation > 1:
            out["v"] = log_v.exp().to(data.dtype)
        return out

    def _parameter_log_density(self, values, state, data) -> torch.Tensor:
        post, a, b = self._parameter_conditionals(state, data)
        lp = post.log_prob(values["mu"].double(), values["lam"].double()).sum()
        if self.truncation > 1:
            lp = lp + dist.Beta(a, b).log_prob(values["v"].double()).sum()
        return lp

    def _draw_labels(self, state, data, generator) -> dict:
        v = state["v"].double() if self.truncation > 1 else data.new_zeros(0, dtype=torch.float64)
        labels = draw_blocked_labels(data, state["mu"].double(), state["lam"].double(),
                                     torch.log(v), torch.log1p(-v), generator)
        return {"c": labels}

    def _label_log_density(self, values, state, data) -> torch.Tensor:
        logits = assignment_logits(data, self._blocked_state(state, data))
        return torch.log_softmax(logits, -1).gather(-1, values["c"].unsqueeze(-1)).sum()

    def gibbs_sweep(self, data) -> GibbsSweep:
        """The blocked sweep: ``(v, mu, lam) | c`` then ``c | v, mu, lam`` (each block's
        ``log_density`` is its full conditional, for condition-and-score checks)."""
        params = ("v", "mu", "lam") if self.truncation > 1 else ("mu", "lam")
        return GibbsSweep([
            GibbsBlock("parameters", params, self._draw_parameters, self._parameter_log_density),
            GibbsBlock("labels", ("c",), self._draw_labels, self._label_log_density),
        ])

    # -------------------------------------------------------------- predictions
    def _check_points(self, posterior, z) -> torch.Tensor:
        sites = ("v", "mu", "lam") if self.truncation > 1 else ("mu", "lam")
        samples = getattr(posterior, "samples", None)
        if not isinstance(samples, dict) or any(k not in samples for k in sites):
            held = sorted(samples) if isinstance(samples, dict) else type(posterior).__name__
            raise TypeError(f"posterior must be a fit of this TruncatedDPMixture (with draws of "
                            f"{', '.join(sites)}), got one holding {held}")
        if samples["mu"].dim() < 2 or samples["mu"].shape[-2] != self.truncation:
            raise ValueError(f"posterior must be a fit with truncation {self.truncation} (this "
                             f"model's), got mu of shape {tuple(samples['mu'].shape)}")
        mu = samples["mu"]
        x = as_float_tensor(z, "z", ndim=2, dtype=mu.dtype, device=mu.device)
        if x.shape[1] != mu.shape[-1]:
            raise ValueError(f"z must have {mu.shape[-1]} columns (the training dimension), got {x.shape[1]}")
        return x

    def _log_weights_and_components(self, z, v, lam, mu) -> torch.Tensor:
        """``log pi_k + log N(z_i | mu_k, lam_k^-1 I)``, shaped ``(..., N, T)``; the
        intermediate ``(..., N, T, d)`` block is built for all draws at once."""
        log_pi = stick_log_weights(_full_sticks(v)) if v is not None else lam.new_zeros(lam.shape)
        return isotropic_log_densities(z, mu, lam) + log_pi.unsqueeze(-2)

    def predict(self, posterior, z) -> TruncatedAssignment:
        """Responsibilities and hard labels of the points ``z`` at the posterior means.

        ``p(c_i = k) ∝ pi_k(E[v]) N(z_i | E[mu_k], E[lam_k]^-1 I_d)``: the plug-in rule at the
        posterior means (one chain of guide draws for SVI). For Gibbs draws the means are
        meaningful only without label switching among the components. Components that hold
        no points keep near-prior parameters, broad and with small weight: they can take a
        share of points in the tails of a cluster.

        Args:
            posterior: a fit of this model.
            z: ``(N, d)`` points.

        Returns:
            A :class:`TruncatedAssignment` ``(responsibilities (N, T), labels (N,))``.

        Raises:
            TypeError: ``posterior`` without draws of ``v``, ``mu``, ``lam`` (another
                model's fit).
            ValueError: a fit of another truncation; ``z`` of another width.
        """
        x = self._check_points(posterior, z)
        v = posterior.mean("v") if self.truncation > 1 else None
        logits = self._log_weights_and_components(x, v, posterior.mean("lam"), posterior.mean("mu"))
        resp = torch.softmax(logits, dim=-1)
        return TruncatedAssignment(resp, resp.argmax(-1))

    def log_likelihood_pointwise(self, data, samples) -> dict:
        """Marginal ``log p(z_i | v, lam, mu)`` per draw with ``c`` summed out:
        ``{"z": (chain, draw, N)}`` (draws taken in blocks of about 2^22 ``(i, k, j)`` entries)."""
        z = self.prepare(data)
        lam, mu = samples["lam"], samples["mu"]
        v = samples.get("v") if self.truncation > 1 else None
        lead = lam.shape[:-1]
        flat = lam.reshape(-1, lam.shape[-1]), mu.reshape((-1,) + tuple(mu.shape[-2:]))
        flat_v = None if v is None else v.reshape(-1, v.shape[-1])
        step = max(1, _BLOCK_ENTRIES // (z.shape[0] * mu.shape[-2] * mu.shape[-1]))
        out = []
        for start in range(0, flat[0].shape[0], step):
            part = slice(start, start + step)
            logits = self._log_weights_and_components(
                z, None if flat_v is None else flat_v[part], flat[0][part], flat[1][part]
            )
            out.append(torch.logsumexp(logits, dim=-1))
        return {"z": torch.cat(out).reshape(lead + (z.shape[0],))}
