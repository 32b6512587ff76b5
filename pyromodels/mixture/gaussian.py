"""The finite Bayesian Gaussian mixture: the reference model that proves the inference core.

Generative story (``K`` components in ``d`` dimensions, ``N`` points)::

    weights           ~ Dirichlet(alpha 1_K)
    precisions_k      ~ Wishart(nu, Psi^-1)                  k = 1..K
    locs_k | prec_k   ~ Normal(m, (kappa precisions_k)^-1)   k = 1..K
    z_n | weights     ~ Categorical(weights)                 n = 1..N
    x_n | z_n, ...    ~ Normal(locs_{z_n}, precisions_{z_n}^-1)

This is the Normal-inverse-Wishart prior written on the precision:
``Sigma_k = precisions_k^-1 ~ InverseWishart(nu, Psi)``.

Sample sites:

============  ==============================  ===========  =================================
site          support                         shape        meaning
============  ==============================  ===========  =================================
weights       simplex                         (K,)         mixing proportions
precisions    positive definite               (K, d, d)    component precision matrices
locs          real                            (K, d)       component means
z             {0, ..., K-1} (enumerated)      (N,)         component of each point
x             real (observed)                 (N, d)       the data
============  ==============================  ===========  =================================

The global sites carry their component axis as an event dimension (``to_event``) rather than a
plate, so the program broadcasts over an extra batch dimension of draws; this is what lets
:func:`~pyromodels.core.sample_discrete` restore ``z`` for a thousand draws in one trace.

Engines: ``em`` (MAP by EM), ``gibbs`` (blocked conjugate Gibbs), ``svi`` (AutoNormal guide,
``z`` enumerated), ``nuts`` (``z`` summed out, then restored).
"""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import torch
from pyro.ops.indexing import Vindex

from ..checks import as_float_tensor, check_int
from ..conjugate.suffstats import one_hot
from ..core.model import Model
from . import em as em_kernels
from . import gibbs as gibbs_kernels
from .densities import component_log_density, precision_to_scale_tril
from .init import kmeans_init
from .prior import MixtureData, resolve_prior
from .wishart import BartlettWishart

__all__ = ["GaussianMixtureModel"]


class GaussianMixtureModel(Model):
    """Finite Bayesian Gaussian mixture with a Normal-inverse-Wishart prior and Dirichlet weights.

    Args:
        num_components: ``K >= 1``.
        weight_concentration: Dirichlet concentration ``alpha`` (default 1). EM needs ``>= 1``.
        mean_prior: prior mean ``m`` of the component means (default: the data mean).
        mean_precision: ``kappa`` (default 1).
        degrees_of_freedom: Wishart ``nu > d - 1`` (default ``d + 2``). EM needs ``nu > d``.
        covariance_prior: ``Psi``, the inverse-Wishart scale (default: empirical covariance).

    Priors left as ``None`` are resolved against the data at fit time (see
    :func:`~pyromodels.mixture.prior.resolve_prior`); the resolved prior travels with the
    prepared data (``posterior.data.prior``). With the default ``m`` and ``Psi`` (empirical
    Bayes) the fit is scale-equivariant: the same seed on ``c x`` gives the same start, EM
    steps and Gibbs draws with ``c locs`` and ``precisions / c^2``, up to rounding (see
    :mod:`~pyromodels.mixture.scale`). EM may stop at another iteration, within its
    tolerance: that is relative to the log posterior, whose value moves with the units.

    Example:
        >>> import torch
        >>> from pyromodels.mixture import GaussianMixtureModel
        >>> x = torch.cat([torch.randn(50, 2) - 3, torch.randn(50, 2) + 3]).double()
        >>> post = GaussianMixtureModel(2).fit(x, method="em", seed=0, progress=False)
        >>> post.params["responsibilities"].shape
        torch.Size([100, 2])
    """

    discrete_sites = ("z",)
    max_plate_nesting = 1
    engines = ("em", "gibbs", "svi", "nuts")
    em_sites = ("weights", "locs", "precisions")
    #: component axis of each site, counted in the site's own shape (for relabelling)
    component_sites = {"weights": 0, "locs": 0, "precisions": 0}
    #: sites whose components swap names between draws and chains (no R-hat alarms on them)
    label_switched_sites = ("weights", "locs", "precisions", "z")
    #: names of each site's axes in ArviZ groups (see :func:`~pyromodels.core.to_inference_data`)
    site_dims = {
        "weights": ("component",),
        "locs": ("component", "feature"),
        "precisions": ("component", "feature", "feature_bis"),
        "z": ("point",),
        "x": ("point", "feature"),
    }

    def __init__(
        self,
        num_components: int,
        weight_concentration: float | None = None,
        mean_prior=None,
        mean_precision: float | None = None,
        degrees_of_freedom: float | None = None,
        covariance_prior=None,
    ):
        self.num_components = check_int(num_components, "num_components", minimum=1)
        self.weight_concentration = weight_concentration
        self.mean_prior = mean_prior
        self.mean_precision = mean_precision
        self.degrees_of_freedom = degrees_of_freedom
        self.covariance_prior = covariance_prior

    # ----------------------------------------------------------------- data
    def prepare(self, data, device=None) -> MixtureData:
        """Validate ``data`` (an ``(N, d)`` array) and resolve the prior against it."""
        if isinstance(data, MixtureData):
            return data if device is None or data.x.device == torch.device(device) else MixtureData(
                data.x.to(device), _prior_to(data.prior, device)
            )
        x = as_float_tensor(data, "data", ndim=2, device=device)
        if x.shape[0] < self.num_components:
            raise ValueError(
                f"data must have at least num_components={self.num_components} rows, got {x.shape[0]}"
            )
        prior = resolve_prior(
            x,
            self.weight_concentration,
            self.mean_prior,
            self.mean_precision,
            self.degrees_of_freedom,
            self.covariance_prior,
        )
        return MixtureData(x, prior)

    def observed_data(self, data) -> dict:
        """``{"x": (N, d) array}`` for ArviZ's ``observed_data`` group."""
        return {"x": self.prepare(data).x.detach().cpu().numpy()}

    # -------------------------------------------------------------- program
    def model(self, data):
        """The generative story (see the module docstring)."""
        data = data if isinstance(data, MixtureData) else self.prepare(data)
        x, p, K = data.x, data.prior, self.num_components
        weights = pyro.sample("weights", dist.Dirichlet(p.weight_concentration.expand(K)))
        precisions = pyro.sample(
            "precisions",
            BartlettWishart(p.degrees_of_freedom, scale_tril=p.wishart_scale_tril).expand([K]).to_event(1),
        )
        locs = pyro.sample(
            "locs",
            dist.MultivariateNormal(p.mean_prior, precision_matrix=p.mean_precision * precisions).to_event(1),
        )
        scale_tril = precision_to_scale_tril(precisions)
        with pyro.plate("data", x.shape[0], dim=-1):
            z = pyro.sample("z", dist.Categorical(weights), infer={"enumerate": "parallel"})
            pyro.sample(
                "x",
                dist.MultivariateNormal(Vindex(locs)[..., z, :], scale_tril=Vindex(scale_tril)[..., z, :, :]),
                obs=x,
            )

    # --------------------------------------------------------- starting points
    def _kmeans_start(self, data, generator) -> tuple[torch.Tensor, dict]:
        z = kmeans_init(data.x, self.num_components, generator)
        resp = one_hot(z, self.num_components, data.x.dtype)
        return z, em_kernels.m_step(data, resp, map_weights=False)

    def init_values(self, data, generator) -> dict:
        """Continuous starting values from k-means labels (posterior means given them)."""
        return self._kmeans_start(self.prepare(data), generator)[1]

    def init_state(self, data, generator) -> dict:
        """A full Gibbs state: k-means labels plus the matching continuous values."""
        z, values = self._kmeans_start(self.prepare(data), generator)
        return {**values, "z": z}

    # ------------------------------------------------------------------ engines
    def gibbs_sweep(self, data):
        """The blocked sweep ``z | rest``, ``weights | z``, ``(locs, precisions) | z, x``."""
        return gibbs_kernels.sweep()

    def em_init(self, data, generator) -> dict:
        em_kernels.check_em_prior(self.prepare(data))
        return self.init_values(data, generator)

    #: ``em_step(data, params)``: one MAP-EM iteration (the E-step, then the joint mode)
    em_step = staticmethod(em_kernels.em_step)

    def em_objective(self, data, params) -> float:
        return float(em_kernels.log_posterior(data, params))

    def em_outputs(self, data, params) -> dict:
        resp = em_kernels.responsibilities(data, params)
        return {"responsibilities": resp, "labels": resp.argmax(-1)}

    # -------------------------------------------------------------- predictions
    def log_likelihood_pointwise(self, data, samples) -> dict:
        """Marginal ``log p(x_n | weights, locs, precisions)`` per draw, ``z`` summed out.

        Returns ``{"x": (chain, draw, N)}``.
        """
        data = self.prepare(data)
        comp = component_log_density(data.x, samples["locs"], samples["precisions"])
        return {"x": torch.logsumexp(comp + samples["weights"].log().unsqueeze(-2), -1)}

    def predict(self, posterior, new_data) -> torch.Tensor:
        """Posterior-averaged component probabilities ``(N_new, K)`` of new points.

        Averaging over draws is meaningful only when the draws share one labelling (one chain,
        or after :func:`pyromodels.diagnostics.relabel`).
        """
        x = as_float_tensor(new_data, "new_data", ndim=2, dtype=posterior.samples["locs"].dtype)
        d = posterior.samples["locs"].shape[-1]
        if x.shape[1] != d:
            raise ValueError(f"new_data must have {d} columns (the training dimension), got {x.shape[1]}")
        comp = component_log_density(x, posterior.samples["locs"], posterior.samples["precisions"])
        logits = comp + posterior.samples["weights"].log().unsqueeze(-2)
        return torch.softmax(logits, -1).mean(dim=(0, 1))


def _prior_to(prior, device):
    from dataclasses import fields, replace

    return replace(prior, **{f.name: getattr(prior, f.name).to(device) for f in fields(prior)})
