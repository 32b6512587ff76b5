"""The result every engine returns, and its conversion to ArviZ.

The conversion (:func:`to_inference_data`, :func:`summary`) lives here, beside the class whose
methods call it; :mod:`pyromodels.diagnostics` offers the same functions to its users.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from .bound import CallableModel, ModelArgs
from .inference_data import (
    chain_draw_arrays,
    from_groups,
    inference_attrs,
    log_likelihood_arrays,
    model_coords,
    observed_arrays,
    sample_stats_arrays,
)

__all__ = [
    "Posterior",
    "check_posterior",
    "to_inference_data",
    "is_point_estimate",
    "summary",
    "stack_chains",
    "make_attrs",
]

_NOT_MCMC = {
    "svi": "its draws are one chain of independent draws from the variational guide, so they "
    "say nothing about convergence of the fit",
    "em": "it is a point estimate stored as one draw, so they are undefined",
    "natgrad": "its draws are one chain of independent draws from the fitted variational "
    "factors, so they say nothing about convergence of the fit",
}


@dataclass
class Posterior:
    """Draws, traces and diagnostics from one fit.

    Attributes:
        samples: site name -> tensor shaped ``(chain, draw, *site_shape)``. Discrete sites keep an
            integer dtype. Point estimates (EM, MAP) are stored as one chain of one draw.
        method: the engine that produced it: ``"em"``, ``"gibbs"``, ``"svi"``, ``"nuts"`` or
            ``"natgrad"``.
        sample_stats: per-draw statistics shaped ``(chain, draw)``: ``lp`` (log joint),
            ``acceptance_rate``, ``diverging`` where meaningful.
        losses: the optimisation trace: the negative ELBO per step for SVI, the objective per
            iteration for EM (shaped ``(restart, iter)`` padded with NaN, or ``(iter,)``).
        params: fitted parameters (SVI guide parameters, EM point estimates, responsibilities).
        diagnostics: engine diagnostics (convergence flags, divergences, acceptance rates).
        attrs: metadata: method, seed, versions, wall time, device.
        model: the model object that produced the fit (used by ``predict`` and conversions):
            the :class:`~pyromodels.core.Model`, or, for a plain Pyro callable or a program
            of several arguments, a :class:`~pyromodels.core.bound.CallableModel` wrapping it.
        data: the data the model was fitted to, as its hooks receive them (prepared), or a
            :class:`~pyromodels.core.bound.ModelArgs` for a program of several arguments.

    The program and its arguments, to run it again (``pyro.infer.Predictive(
    post.model_fn, posterior_samples=...)(*post.model_args, **post.model_kwargs)``), are
    :attr:`model_fn`, :attr:`model_args` and :attr:`model_kwargs`.
    """

    samples: dict[str, torch.Tensor]
    method: str
    sample_stats: dict[str, torch.Tensor] = field(default_factory=dict)
    losses: torch.Tensor | None = None
    params: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    model: Any = None
    data: Any = None

    def __post_init__(self):
        shapes = {k: tuple(v.shape[:2]) for k, v in self.samples.items()}
        for name, v in self.samples.items():
            if not isinstance(v, torch.Tensor) or v.dim() < 2:
                raise ValueError(
                    f"samples[{name!r}] must be a tensor shaped (chain, draw, ...), "
                    f"got {getattr(v, 'shape', type(v))}"
                )
        if len(set(shapes.values())) > 1:
            raise ValueError(f"all samples must share (chain, draw) sizes, got {shapes}")

    @property
    def model_fn(self):
        """The Pyro program that was fitted, callable as ``model_fn(*model_args,
        **model_kwargs)`` (``None`` without a model)."""
        if self.model is None:
            return None
        return self.model.fn if isinstance(self.model, CallableModel) else self.model.model

    @property
    def model_args(self) -> tuple:
        """The program's positional arguments for this fit (the prepared data)."""
        if isinstance(self.data, ModelArgs):
            return self.data.args
        return () if self.data is None else (self.data,)

    @property
    def model_kwargs(self) -> dict:
        """The program's keyword arguments for this fit."""
        return dict(self.data.kwargs) if isinstance(self.data, ModelArgs) else {}

    @property
    def num_chains(self) -> int:
        """Number of chains (1 for SVI, EM and MAP)."""
        return next(iter(self.samples.values())).shape[0] if self.samples else 0

    @property
    def num_draws(self) -> int:
        """Number of draws per chain."""
        return next(iter(self.samples.values())).shape[1] if self.samples else 0

    def __getitem__(self, site: str) -> torch.Tensor:
        return self.samples[site]

    def mean(self, site: str) -> torch.Tensor:
        """Posterior mean of ``site`` over chains and draws (integers are averaged as floats)."""
        v = self.samples[site]
        return v.double().mean(dim=(0, 1)) if not v.is_floating_point() else v.mean(dim=(0, 1))

    def flat(self, site: str) -> torch.Tensor:
        """``site``'s draws with chains and draws merged: ``(chain * draw, *site_shape)``."""
        v = self.samples[site]
        return v.reshape((-1,) + tuple(v.shape[2:]))

    def to_inference_data(
        self,
        log_likelihood: bool = True,
        coords=None,
        dims=None,
        predictive: bool | None = None,
        num_prior_draws: int = 500,
        seed: int | None = None,
    ):
        """Convert to ``arviz.InferenceData`` (see :func:`to_inference_data`)."""
        return to_inference_data(
            self,
            log_likelihood=log_likelihood,
            coords=coords,
            dims=dims,
            predictive=predictive,
            num_prior_draws=num_prior_draws,
            seed=seed,
        )

    def summary(self, var_names=None, **kwargs):
        """ArviZ summary table (mean, sd, HDI, ESS, R-hat) as a pandas DataFrame (see
        :func:`summary`)."""
        return summary(self, var_names=var_names, **kwargs)

    def sample_discrete(self, temperature: int = 1, seed: int | None = None) -> Posterior:
        """Draw the model's enumerated discrete sites given each continuous draw.

        Returns a new ``Posterior`` with the discrete sites added (see
        :func:`pyromodels.core.enumeration.sample_discrete`).
        """
        from .enumeration import sample_discrete

        if self.model is None or self.data is None:
            raise ValueError("sample_discrete needs the posterior's model and data")
        extra = sample_discrete(
            self.model, self.data, self.samples, temperature=temperature, seed=seed
        )
        samples = {**self.samples, **extra}
        return Posterior(
            samples=samples,
            method=self.method,
            sample_stats=self.sample_stats,
            losses=self.losses,
            params=self.params,
            diagnostics=self.diagnostics,
            attrs=self.attrs,
            model=self.model,
            data=self.data,
        )

    def predict(self, new_data, **kwargs):
        """The model's posterior predictions for ``new_data`` (model-specific, see its docs)."""
        if self.model is None or not hasattr(self.model, "predict"):
            raise NotImplementedError("this posterior's model does not define predict()")
        return self.model.predict(self, new_data, **kwargs)

    def predict_proba(self, new_data, **kwargs):
        """The model's predicted probabilities for ``new_data`` (its ``predict_proba``, where
        it has one: the cluster probabilities of the semi-crowdsourced models, say)."""
        if self.model is None or not hasattr(self.model, "predict_proba"):
            raise NotImplementedError("this posterior's model does not define predict_proba()")
        return self.model.predict_proba(self, new_data, **kwargs)

    def save(self, path) -> str:
        """Write this fit to the NetCDF file ``path``, readable by :meth:`load` and by
        ``arviz.from_netcdf`` (see :mod:`pyromodels.core.persist` for what is stored).

        Returns:
            The path written.
        """
        from .persist import save_posterior

        return save_posterior(check_posterior(self, "self"), path)

    @classmethod
    def load(cls, path, *, model=None, data=None) -> Posterior:
        """Read a fit written by :meth:`save`: samples (dtypes kept), sample statistics,
        losses, params, storable diagnostics and attrs come back as they were; ``model`` and
        ``data``, which the file does not hold, are attached when given (for ``predict``)."""
        from .persist import load_fields

        return cls(**load_fields(path), model=model, data=data)

    @classmethod
    def from_inference_data(cls, idata, method: str | None = None, *, model=None,
                            data=None) -> Posterior:
        """A ``Posterior`` from an ``arviz.InferenceData`` (its ``posterior`` and
        ``sample_stats`` groups; ``method`` defaults to the one it records). See
        :func:`pyromodels.core.persist.fields_from_inference_data`."""
        from .persist import fields_from_inference_data

        return cls(**fields_from_inference_data(idata, method), model=model, data=data)

    def __repr__(self) -> str:
        sites = ", ".join(f"{k}{tuple(v.shape[2:])}" for k, v in self.samples.items())
        return (
            f"Posterior(method={self.method!r}, chains={self.num_chains}, "
            f"draws={self.num_draws}, sites=[{sites}])"
        )


def check_posterior(posterior, name: str = "posterior") -> Posterior:
    """Raise unless ``posterior`` is a :class:`Posterior` holding at least one site."""
    if not isinstance(posterior, Posterior):
        raise TypeError(f"{name} must be a pyromodels Posterior, got {type(posterior).__name__}")
    if not posterior.samples:
        raise ValueError(f"{name}.samples is empty: there is nothing to convert")
    return posterior


def is_point_estimate(posterior) -> bool:
    """Whether ``posterior`` is a point estimate: an EM fit, or one chain of one draw."""
    return posterior.method == "em" or (posterior.num_chains, posterior.num_draws) == (1, 1)


def _default_dims(model, dims) -> dict:
    """The model's ``site_dims`` (names of each site's axes), overridden by ``dims``."""
    out = {k: list(v) for k, v in (getattr(model, "site_dims", None) or {}).items()}
    if dims is not None:
        if not isinstance(dims, dict):
            raise TypeError(f"dims must be a dict {{variable: [dim, ...]}}, got {type(dims).__name__}")
        out.update({k: list(v) for k, v in dims.items()})
    return out


#: the most values the replicated data of the default predictive groups may hold (about
#: 160 MB in float64); larger ones are left out with a warning unless ``predictive=True``
PREDICTIVE_DEFAULT_MAX_VALUES = 20_000_000


def _wants_predictive(predictive, posterior, observed, num_draws, num_prior_draws) -> bool:
    """Resolve ``predictive=None``: the groups are added when the posterior knows its model
    and data, the model declares its observed data, and the replicates stay small."""
    if predictive is not None:
        return predictive
    if posterior.model is None or posterior.data is None or not observed:
        return False
    values = sum(int(v.size) for v in observed.values()) * (num_draws + num_prior_draws)
    if values > PREDICTIVE_DEFAULT_MAX_VALUES:
        warnings.warn(
            f"the prior and predictive groups were left out: their replicated data would hold "
            f"{values:,} values (more than {PREDICTIVE_DEFAULT_MAX_VALUES:,}); pass "
            "predictive=True to add them anyway, or predictive=False to silence this",
            UserWarning, stacklevel=3,
        )
        return False
    return True


def _predictive_groups(posterior, shape, num_prior_draws, seed) -> dict:
    from .seeding import resolve_seed
    from .trace_inference import predictive_groups

    model, data = posterior.model, posterior.data
    if model is None or data is None:
        raise ValueError(
            "predictive=True needs the posterior's model and data (posterior.model and "
            "posterior.data are set by every engine; set them for a hand-built Posterior)"
        )
    seed = resolve_seed(seed if seed is not None else posterior.attrs.get("seed"))
    return predictive_groups(model, data, posterior.samples, shape, num_prior_draws, seed)


def _program(posterior, needed: bool):
    """The posterior's model bound to its data as a :class:`~pyromodels.core.trace_data.
    BoundProgram`, when a group must be read from the trace (``needed``) and the draws are
    the program's (they hold its every continuous latent site); else ``None``."""
    model, data = posterior.model, posterior.data
    if not needed or data is None or not callable(getattr(model, "model", None)):
        return None
    from .trace_data import BoundProgram, covers_program

    try:
        # a plain callable (or a program of several arguments) is traced as it was called
        fn, args, kwargs = ((posterior.model_fn, posterior.model_args, posterior.model_kwargs)
                            if isinstance(model, CallableModel)
                            else (model.model, (model.prepare(data),), {}))
        program = BoundProgram(fn, args, kwargs,
                               max_plate_nesting=getattr(model, "max_plate_nesting", None),
                               discrete_sites=getattr(model, "discrete_sites", None))
    except NotImplementedError:  # the base class's model(): there is no program to run
        return None
    return program if covers_program(program, posterior.samples) else None


def _trace_groups(posterior, groups, log_likelihood, point):
    """Fill the groups the model's hooks left empty from its program's trace; returns the
    plates' axis names and the program (``None`` when nothing was read from a trace)."""
    wants_ll = log_likelihood and not point and groups["log_likelihood"] is None
    program = _program(posterior, wants_ll or groups["observed_data"] is None)
    if program is None:
        return {}, None
    from .trace_data import constant_values, observed_values, program_dims
    from .trace_inference import log_likelihood_or_none

    shape = (posterior.num_chains, posterior.num_draws)
    if wants_ll:
        groups["log_likelihood"] = log_likelihood_or_none(program, posterior.samples, shape)
    if groups["observed_data"] is None:
        groups["observed_data"] = observed_values(program)
        groups["constant_data"] = constant_values(program)
    return program_dims(program), program


def to_inference_data(
    posterior,
    log_likelihood: bool = True,
    coords=None,
    dims=None,
    predictive: bool | None = None,
    num_prior_draws: int = 500,
    seed: int | None = None,
):
    """Convert a fit to ``arviz.InferenceData``.

    Groups (each built only when its inputs exist):

    * ``posterior``: every site of ``posterior.samples`` as a NumPy array
      ``(chain, draw, *site_shape)``; integer (discrete) sites keep their integer dtype.
    * ``sample_stats``: ``posterior.sample_stats``, shaped ``(chain, draw)``, under the ArviZ
      schema names (``lp``, ``diverging``, ``acceptance_rate``, ``energy``, ...; the spellings in
      :data:`~pyromodels.core.inference_data.SAMPLE_STATS_ALIASES` are renamed); ``diverging``
      is boolean.
    * ``log_likelihood``: when ``log_likelihood`` is true and the model defines
      ``log_likelihood_pointwise(data, samples) -> {observed_name: tensor (chain, draw, n)}``.
      That hook returns the marginal pointwise log-likelihood, with the discrete sites summed
      out, which is what ``arviz.loo`` and ``arviz.waic`` need. A point estimate (an EM fit,
      or one chain of one draw) gets no such group: it converts to a
      :class:`~pyromodels.core.point_estimate.PointEstimateInferenceData`, with the root
      attribute ``point_estimate = 1``, on which ``arviz.loo`` and ``arviz.waic`` raise a
      ``ValueError`` saying why.
    * ``observed_data``: when the model defines ``observed_data(data) -> {name: array}``.
    * ``posterior_predictive`` (one replicate of the observed sites per posterior draw),
      ``prior`` (``num_prior_draws`` draws of the latent sites from the prior, one chain) and
      ``prior_predictive`` (the observed sites of those prior draws), see
      :mod:`pyromodels.core.predictive`. These feed ``arviz.plot_ppc``. By default
      (``predictive=None``) they are added when the posterior knows its model and data and
      the model declares its observed data, unless the replicates would hold more than
      :data:`PREDICTIVE_DEFAULT_MAX_VALUES` values (then a warning says so);
      ``predictive=True`` always adds them (an error without model and data),
      ``predictive=False`` never.

    A model without the ``log_likelihood_pointwise`` or ``observed_data`` hook (a user's own
    :class:`~pyromodels.core.Model` subclass) gets those groups, and ``constant_data``, read
    from its program's trace when the draws are the program's (they hold its every
    continuous latent site), see :mod:`pyromodels.core.trace_data`: the pointwise
    log-likelihood of every observed site with the ``discrete_sites`` and the sites marked
    for enumeration summed out (other discrete sites with draws are conditioned on, as
    ``arviz.from_pyro`` does), the observed sites' values, and axes named by the plates. A
    program with a ``pyro.factor`` gets no ``log_likelihood`` (a warning says why) and no
    predictive groups by default.

    Axes are named by the model's ``site_dims`` (for example the mixture's ``locs`` is
    ``(chain, draw, component, feature)``), with ``dims`` taking precedence; their labels come
    from the model's ``site_coords(data)`` hook where it has one (the users' worker ids of a
    pairwise fit, say), with ``coords`` taking precedence.

    The root ``attrs`` and those of the ``posterior`` and ``sample_stats`` groups hold
    ``posterior.attrs`` (the seed among them) with ``inference_library="pyromodels"`` and
    ``method``, made storable by :func:`~pyromodels.core.inference_data.netcdf_safe_attrs`, so
    the result round-trips through ``idata.to_netcdf(path)`` and ``arviz.from_netcdf(path)``.

    Args:
        posterior: a :class:`Posterior`.
        log_likelihood: whether to add the ``log_likelihood`` group when the model can compute it.
        coords: ArviZ coordinates, ``{dim_name: values}``.
        dims: dimension names per variable, ``{var_name: [dim_name, ...]}``, naming the axes
            after ``(chain, draw)``.
        predictive: whether to add the prior and predictive groups: ``None`` (default) when
            they can be made and are not too large, ``True`` always (needs the posterior's
            model and data), ``False`` never.
        num_prior_draws: how many prior draws for the ``prior`` groups (0: none).
        seed: seed of the predictive draws (default: the fit's seed).

    Returns:
        ``arviz.InferenceData``.

    Example:
        >>> import torch
        >>> post = Posterior(samples={"mu": torch.zeros(2, 5)}, method="nuts")
        >>> to_inference_data(post).posterior["mu"].shape
        (2, 5)
    """
    posterior = check_posterior(posterior)
    for name, flag in (("log_likelihood", log_likelihood), ("predictive", predictive)):
        if not isinstance(flag, bool) and not (name == "predictive" and flag is None):
            expected = "a bool or None" if name == "predictive" else "a bool"
            raise TypeError(f"{name} must be {expected}, got {type(flag).__name__}")
    shape = (posterior.num_chains, posterior.num_draws)
    model, data = posterior.model, posterior.data
    point = is_point_estimate(posterior)
    groups = {
        "posterior": chain_draw_arrays(posterior.samples, shape, "samples"),
        "sample_stats": sample_stats_arrays(posterior.sample_stats, shape) or None,
        "log_likelihood": (log_likelihood_arrays(model, data, posterior.samples, shape)
                           if log_likelihood and not point else None),
        "observed_data": observed_arrays(model, data),
    }
    plate_dims, program = _trace_groups(posterior, groups, log_likelihood, point)
    if predictive is None and program is not None and program.factors:
        predictive = False  # a program with a factor cannot be simulated
    if _wants_predictive(predictive, posterior, groups["observed_data"],
                         shape[0] * shape[1], num_prior_draws):
        groups.update(_predictive_groups(posterior, shape, num_prior_draws, seed))
    attrs = inference_attrs(posterior.attrs, posterior.method)
    if coords is not None and not isinstance(coords, dict):
        raise TypeError(f"coords must be a dict {{dim_name: values}}, got {type(coords).__name__}")
    coords = {**model_coords(model, data), **(coords or {})}
    return from_groups(groups, attrs, coords=coords or None,
                       dims={**plate_dims, **_default_dims(model, dims)}, point_estimate=point)


def summary(posterior, var_names=None, **kwargs):
    """ArviZ summary table: mean, sd, HDI, MCSE, ``ess_bulk``, ``ess_tail`` and ``r_hat``.

    For ``method`` ``"svi"``, ``"natgrad"`` or ``"em"`` the table has the statistics only
    (ArviZ's ``kind="stats"``: mean, sd, HDI), since R-hat and ESS are MCMC diagnostics; asking
    for them (``kind="all"`` or ``"diagnostics"``) gives them with a ``UserWarning`` saying why
    they mean nothing there. A point estimate (one draw in all) gives one column, ``mean``:
    its values.

    Args:
        posterior: a :class:`Posterior`.
        var_names: sites to summarise; all sites by default.
        **kwargs: passed to ``arviz.summary`` (``hdi_prob``, ``kind``, ``round_to``, ...).

    Returns:
        ``pandas.DataFrame`` with one row per scalar component of each site.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> post = Posterior(samples={"mu": torch.randn(4, 200, generator=g)}, method="nuts")
        >>> list(summary(post).index)
        ['mu']
    """
    import arviz as az  # loaded on use, so that importing pyromodels stays light

    posterior = check_posterior(posterior)
    if posterior.method in _NOT_MCMC and "kind" not in kwargs:
        kwargs["kind"] = "stats"
    elif posterior.method in _NOT_MCMC and kwargs["kind"] != "stats":
        warnings.warn(
            f"R-hat and ESS are MCMC diagnostics, not diagnostics of a {posterior.method!r} fit: "
            f"{_NOT_MCMC[posterior.method]}.",
            UserWarning,
            stacklevel=2,
        )
    idata = to_inference_data(posterior, log_likelihood=False, predictive=False)
    if posterior.num_chains * posterior.num_draws == 1:
        # a point estimate: its spread and interval are undefined, so the table is its values
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "degrees of freedom <= 0"
            table = az.summary(idata, var_names=var_names, **kwargs)
        return table[["mean"]]
    return az.summary(idata, var_names=var_names, **kwargs)


def stack_chains(per_chain: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Stack a list of per-chain ``{site: (draw, ...)}`` dicts into ``{site: (chain, draw, ...)}``."""
    if not per_chain:
        return {}
    keys = per_chain[0].keys()
    return {k: torch.stack([c[k] for c in per_chain]) for k in keys}


def make_attrs(method: str, seed: int, device, start: float, **extra) -> dict:
    """The ``attrs`` every engine records: method, seed, device, wall time and versions."""
    import pyro

    return {
        "method": method,
        "seed": seed,
        "device": str(device),
        "wall_time_s": time.perf_counter() - start,
        "inference_library": "pyromodels",
        "pyro_version": str(pyro.__version__),
        "torch_version": str(torch.__version__),
        **extra,
    }
