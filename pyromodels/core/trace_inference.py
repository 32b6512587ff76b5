"""An ``arviz.InferenceData`` of any Pyro program, its arguments and draws of its latent sites.

:func:`inference_data_from_trace` reads every group from the program itself (see
:mod:`pyromodels.core.trace_data`); :meth:`~pyromodels.core.Posterior.to_inference_data` uses
the same pieces for the groups a model's hooks leave empty.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import torch

from ..checks import check_int
from .inference_data import chain_draw_arrays, from_groups, inference_attrs, sample_stats_arrays
from .seeding import derive_seed, resolve_seed
from .trace_data import (
    BoundProgram,
    constant_values,
    observed_values,
    pointwise_log_likelihood,
    program_dims,
)

__all__ = ["inference_data_from_trace", "log_likelihood_or_none", "predictive_groups"]


def log_likelihood_or_none(program: BoundProgram, samples: dict, shape: tuple[int, int]):
    """:func:`pointwise_log_likelihood` as NumPy arrays, or ``None`` with a ``UserWarning``
    saying why when the program's pointwise log-likelihood cannot be read from its trace."""
    try:
        values = pointwise_log_likelihood(program, samples)
    except NotImplementedError as exc:
        warnings.warn(f"the log_likelihood group was left out: {exc}", UserWarning, stacklevel=3)
        return None
    return chain_draw_arrays(values, shape, "log_likelihood")


def inference_data_from_trace(
    model_fn,
    args=(),
    kwargs=None,
    samples=None,
    *,
    sample_stats=None,
    log_likelihood: bool = True,
    predictive: bool = True,
    num_prior_draws: int = 500,
    coords=None,
    dims=None,
    seed: int | None = None,
    max_plate_nesting: int | None = None,
    method: str = "mcmc",
):
    """An ``arviz.InferenceData`` of any Pyro program and draws of its latent sites.

    Every group is read from the program itself (module docstring): nothing but the program,
    its arguments and the draws is needed.

    * ``posterior``: ``samples``; ``sample_stats``: ``sample_stats`` (ArviZ names, see
      :func:`~pyromodels.core.inference_data.sample_stats_arrays`);
    * ``log_likelihood``: every observed site's pointwise log-likelihood at every draw, with
      the discrete sites marked for enumeration (or absent from ``samples``) summed out;
    * ``observed_data`` and ``constant_data``: the observed sites' values and the array
      arguments that no site observes;
    * ``prior``, ``prior_predictive`` (``num_prior_draws`` draws of the program, one chain)
      and ``posterior_predictive`` (one replicate of the observed sites per draw, the
      enumerated sites drawn afresh), by :mod:`pyromodels.core.predictive`.

    Axes are named by the plates (:func:`site_dim_names`), then by ``dims``.

    Args:
        model_fn: the Pyro program.
        args: its positional arguments, as passed when it was fitted.
        kwargs: its keyword arguments.
        samples: ``{site: tensor or array (chain, draw, *site_shape)}``, every continuous
            latent site among them (``pyro.infer.MCMC.get_samples(group_by_chain=True)``).
        sample_stats: ``{name: (chain, draw)}`` per-draw statistics.
        log_likelihood: whether to add the ``log_likelihood`` group.
        predictive: whether to add ``posterior_predictive`` and, unless ``num_prior_draws``
            is 0, ``prior`` and ``prior_predictive``.
        num_prior_draws: how many prior draws (0: no prior groups).
        coords: ArviZ coordinates, ``{dim_name: values}``.
        dims: axis names per variable, over the plates' names.
        seed: seed of the prior and predictive draws.
        max_plate_nesting: the program's plate nesting; read from one trace by default.
        method: recorded as the ``method`` attribute.

    Returns:
        ``arviz.InferenceData``.

    Example:
        >>> import pyro, pyro.distributions as dist, torch
        >>> def model(y):
        ...     mu = pyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     with pyro.plate("obs_id", len(y)):
        ...         pyro.sample("y", dist.Normal(mu, 1.0), obs=y)
        >>> idata = inference_data_from_trace(model, (torch.zeros(3),),
        ...                                   samples={"mu": torch.zeros(2, 4)})
        >>> idata.log_likelihood["y"].dims
        ('chain', 'draw', 'obs_id')
    """
    if not isinstance(samples, Mapping) or not samples:
        raise TypeError("samples must be a non-empty dict {site: array (chain, draw, ...)}, "
                        f"got {type(samples).__name__}")
    for name, flag in (("log_likelihood", log_likelihood), ("predictive", predictive)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    num_prior_draws = check_int(num_prior_draws, "num_prior_draws", minimum=0)
    samples = {k: torch.as_tensor(v) for k, v in samples.items()}
    program = BoundProgram(model_fn, args, kwargs, max_plate_nesting=max_plate_nesting)
    first = next(iter(samples.values()))
    if first.dim() < 2:
        raise ValueError(f"samples must be shaped (chain, draw, ...), got {tuple(first.shape)}")
    shape = tuple(first.shape[:2])
    groups = {
        "posterior": chain_draw_arrays(samples, shape, "samples"),
        "sample_stats": sample_stats_arrays(dict(sample_stats or {}), shape) or None,
        "log_likelihood": log_likelihood_or_none(program, samples, shape) if log_likelihood else None,
        "observed_data": observed_values(program),
        "constant_data": constant_values(program),
    }
    if predictive:
        groups.update(predictive_groups(program, None, samples, shape, num_prior_draws, seed))
    names = program_dims(program)
    if dims is not None:
        if not isinstance(dims, Mapping):
            raise TypeError(f"dims must be a dict {{variable: [dim, ...]}}, got {type(dims).__name__}")
        names.update({k: list(v) for k, v in dims.items()})
    return from_groups(groups, inference_attrs({}, method), coords=coords, dims=names)


def predictive_groups(program, data, samples: dict, shape, num_prior_draws: int, seed) -> dict:
    """``posterior_predictive`` and (unless ``num_prior_draws`` is 0) ``prior`` and
    ``prior_predictive`` of ``program`` (a pyromodels model with its ``data``, or a
    :class:`BoundProgram` with ``data=None``), by :mod:`pyromodels.core.predictive`; ``{}``
    with a ``UserWarning`` when the program cannot be simulated (it holds a ``pyro.factor``)."""
    from .predictive import posterior_predictive_draws, prior_draws

    num_prior_draws = check_int(num_prior_draws, "num_prior_draws", minimum=0)
    seed = resolve_seed(seed)
    try:
        out = {}
        if isinstance(program, BoundProgram):
            samples = {k: v for k, v in samples.items() if k in program.sites}
        post_pred = posterior_predictive_draws(program, data, samples,
                                               seed=derive_seed(seed, "posterior_predictive"))
        out["posterior_predictive"] = chain_draw_arrays(post_pred, shape, "posterior_predictive")
        if num_prior_draws:
            prior, prior_pred = prior_draws(program, data, num_prior_draws,
                                            seed=derive_seed(seed, "prior"))
            prior_shape = (1, num_prior_draws)
            out["prior"] = chain_draw_arrays(prior, prior_shape, "prior")
            out["prior_predictive"] = chain_draw_arrays(prior_pred, prior_shape, "prior_predictive")
    except NotImplementedError as exc:
        warnings.warn(f"the prior and predictive groups were left out: {exc}", UserWarning,
                      stacklevel=3)
        return {}
    return out
