"""Conversion of a :class:`~pyromodels.core.Posterior` to ``arviz.InferenceData``.

The converter assembles one ``{group: {variable: array (chain, draw, ...)}}`` layout and hands
it to ``arviz.from_dict``. It never goes through ``arviz.from_pyro``: for models whose discrete
sites are summed out, ``from_pyro`` scores the data conditionally on a random draw of those
sites, while the model's own ``log_likelihood_pointwise`` hook returns the marginal
``log p(y_i | theta) = log sum_k p(z_i = k | theta) p(y_i | z_i = k, theta)``.
"""

from __future__ import annotations

import numbers

import arviz as az
import numpy as np
import torch

from ..core.posterior import Posterior

__all__ = ["to_inference_data", "netcdf_safe_attrs", "SAMPLE_STATS_ALIASES"]

#: Other spellings of sample statistics and the ArviZ schema name each is stored under.
SAMPLE_STATS_ALIASES = {
    "divergences": "diverging",
    "divergent": "diverging",
    "acceptance rate": "acceptance_rate",
    "accept_prob": "acceptance_rate",
    "accept_stat": "acceptance_rate",
    "log_joint": "lp",
    "step size": "step_size",
    "num_steps": "n_steps",
}


def check_posterior(posterior, name: str = "posterior") -> Posterior:
    """Raise unless ``posterior`` is a :class:`Posterior` holding at least one site."""
    if not isinstance(posterior, Posterior):
        raise TypeError(f"{name} must be a pyromodels Posterior, got {type(posterior).__name__}")
    if not posterior.samples:
        raise ValueError(f"{name}.samples is empty: there is nothing to convert")
    return posterior


def to_numpy(value, name: str) -> np.ndarray:
    """A NumPy copy of a tensor or array-like, keeping its dtype (integers stay integers)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError(f"{name} must be numeric, got an array of dtype object")
    return arr


def netcdf_safe_attrs(attrs: dict) -> dict:
    """Metadata that NetCDF files can store.

    Strings, integers and floats (Python or NumPy scalars, or one-element tensors) are kept as
    Python scalars; booleans become the integers 0 and 1 (NetCDF has no boolean attribute type);
    anything else (``None``, lists, devices, objects) is stored as its ``str()``.

    Example:
        >>> netcdf_safe_attrs({"seed": 3, "converged": True, "device": None})
        {'seed': 3, 'converged': 1, 'device': 'None'}
    """
    safe = {}
    for key, value in attrs.items():
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, bool):
            safe[str(key)] = int(value)
        elif isinstance(value, str):
            safe[str(key)] = str(value)  # plain str: subclasses (torch's version) break h5netcdf
        elif isinstance(value, numbers.Integral):
            safe[str(key)] = int(value)
        elif isinstance(value, numbers.Real):
            safe[str(key)] = float(value)
        else:
            safe[str(key)] = str(value)
    return safe


def _chain_draw_group(values: dict, shape: tuple[int, int], group: str) -> dict[str, np.ndarray]:
    out = {}
    for name, value in values.items():
        arr = to_numpy(value, f"{group}[{name!r}]")
        if arr.ndim < 2 or tuple(arr.shape[:2]) != shape:
            raise ValueError(
                f"{group}[{name!r}] must be shaped (chain, draw, ...) = {shape + ('...',)}, "
                f"got {tuple(arr.shape)}"
            )
        out[name] = arr
    return out


def _sample_stats(posterior: Posterior, shape: tuple[int, int]) -> dict[str, np.ndarray]:
    renamed = {}
    for name, value in posterior.sample_stats.items():
        target = SAMPLE_STATS_ALIASES.get(name, name)
        if target in renamed:
            raise ValueError(
                f"posterior.sample_stats holds two entries for {target!r} "
                f"(ArviZ name of {name!r}); keep one"
            )
        renamed[target] = value
    stats = _chain_draw_group(renamed, shape, "sample_stats")
    if "diverging" in stats:
        div = stats["diverging"]
        if div.dtype != np.bool_:
            if not np.isin(div, (0, 1)).all():
                raise ValueError("sample_stats['diverging'] must hold booleans (or 0/1 flags)")
            stats["diverging"] = div.astype(bool)
    return stats


def _model_hook(posterior: Posterior, hook: str):
    fn = getattr(posterior.model, hook, None) if posterior.model is not None else None
    return fn if callable(fn) and posterior.data is not None else None


def _log_likelihood(posterior: Posterior, shape: tuple[int, int]) -> dict[str, np.ndarray] | None:
    fn = _model_hook(posterior, "log_likelihood_pointwise")
    if fn is None:
        return None
    with torch.no_grad():
        values = fn(posterior.data, posterior.samples)
    if not isinstance(values, dict) or not values:
        raise TypeError(
            "model.log_likelihood_pointwise must return a non-empty dict "
            f"{{observed_name: tensor (chain, draw, n)}}, got {type(values).__name__}"
        )
    return _chain_draw_group(values, shape, "log_likelihood")


def _observed_data(posterior: Posterior) -> dict[str, np.ndarray] | None:
    fn = _model_hook(posterior, "observed_data")
    if fn is None:
        return None
    values = fn(posterior.data)
    if not isinstance(values, dict):
        raise TypeError(
            f"model.observed_data must return a dict {{name: array}}, got {type(values).__name__}"
        )
    return {name: to_numpy(v, f"observed_data[{name!r}]") for name, v in values.items()}


def inference_attrs(posterior: Posterior) -> dict:
    """The NetCDF-safe metadata of ``posterior``: its ``attrs`` plus library, method and seed."""
    attrs = dict(posterior.attrs)
    attrs["inference_library"] = "pyromodels"
    attrs["method"] = posterior.method
    return netcdf_safe_attrs(attrs)


def to_inference_data(posterior, log_likelihood: bool = True, coords=None, dims=None):
    """Convert a fit to ``arviz.InferenceData`` through ``arviz.from_dict``.

    Groups (each built only when its inputs exist):

    * ``posterior``: every site of ``posterior.samples`` as a NumPy array
      ``(chain, draw, *site_shape)``; integer (discrete) sites keep their integer dtype.
    * ``sample_stats``: ``posterior.sample_stats``, shaped ``(chain, draw)``, under the ArviZ
      schema names (``lp``, ``diverging``, ``acceptance_rate``, ``energy``, ...; the spellings in
      :data:`SAMPLE_STATS_ALIASES` are renamed); ``diverging`` is boolean.
    * ``log_likelihood``: when ``log_likelihood`` is true and the model defines
      ``log_likelihood_pointwise(data, samples) -> {observed_name: tensor (chain, draw, n)}``.
      That hook returns the marginal pointwise log-likelihood, with the discrete sites summed
      out, which is what ``arviz.loo`` and ``arviz.waic`` need.
    * ``observed_data``: when the model defines ``observed_data(data) -> {name: array}``.

    The root ``attrs`` and those of the ``posterior`` and ``sample_stats`` groups hold
    ``posterior.attrs`` (the seed among them) with ``inference_library="pyromodels"`` and
    ``method``, made storable by :func:`netcdf_safe_attrs`, so the result round-trips through
    ``idata.to_netcdf(path)`` and ``arviz.from_netcdf(path)``.

    Args:
        posterior: a :class:`~pyromodels.core.Posterior`.
        log_likelihood: whether to add the ``log_likelihood`` group when the model can compute it.
        coords: ArviZ coordinates, ``{dim_name: values}``.
        dims: ArviZ dimension names per variable, ``{var_name: [dim_name, ...]}``.

    Returns:
        ``arviz.InferenceData``.

    Example:
        >>> import torch
        >>> from pyromodels.core import Posterior
        >>> post = Posterior(samples={"mu": torch.zeros(2, 5)}, method="nuts")
        >>> to_inference_data(post).posterior["mu"].shape
        (2, 5)
    """
    posterior = check_posterior(posterior)
    if not isinstance(log_likelihood, bool):
        raise TypeError(f"log_likelihood must be a bool, got {type(log_likelihood).__name__}")
    shape = (posterior.num_chains, posterior.num_draws)
    groups = {
        "posterior": _chain_draw_group(posterior.samples, shape, "samples"),
        "sample_stats": _sample_stats(posterior, shape) or None,
        "log_likelihood": _log_likelihood(posterior, shape) if log_likelihood else None,
        "observed_data": _observed_data(posterior),
    }
    attrs = inference_attrs(posterior)
    return az.from_dict(
        **groups,
        coords=coords,
        dims=dims,
        attrs=dict(attrs),
        posterior_attrs=dict(attrs),
        sample_stats_attrs=dict(attrs),
    )
