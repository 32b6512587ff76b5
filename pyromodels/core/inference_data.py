"""The pieces of an ``arviz.InferenceData`` built from a fit: arrays, metadata and groups.

:meth:`~pyromodels.core.Posterior.to_inference_data` assembles one
``{group: {variable: array (chain, draw, ...)}}`` layout from these and hands it to
``arviz.from_dict``. It never goes through ``arviz.from_pyro``: for models whose discrete
sites are summed out, ``from_pyro`` scores the data conditionally on a random draw of those
sites, while the model's own ``log_likelihood_pointwise`` hook returns the marginal
``log p(y_i | theta) = log sum_k p(z_i = k | theta) p(y_i | z_i = k, theta)``.

ArviZ is imported when an ``InferenceData`` is built, not with this module, so that importing
:mod:`pyromodels` stays light.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

__all__ = [
    "SAMPLE_STATS_ALIASES",
    "netcdf_safe_attrs",
    "inference_attrs",
    "to_numpy",
    "chain_draw_arrays",
    "sample_stats_arrays",
    "log_likelihood_arrays",
    "observed_arrays",
    "from_groups",
    "group_dims",
]

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


def inference_attrs(attrs: dict, method: str) -> dict:
    """The NetCDF-safe metadata of a fit: its ``attrs`` plus library and ``method``."""
    attrs = dict(attrs)
    attrs["inference_library"] = "pyromodels"
    attrs["method"] = method
    return netcdf_safe_attrs(attrs)


def chain_draw_arrays(values: dict, shape: tuple[int, int], group: str) -> dict[str, np.ndarray]:
    """``values`` as NumPy arrays, each checked to be shaped ``(chain, draw, ...) = shape``."""
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


def sample_stats_arrays(sample_stats: dict, shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """Per-draw statistics under their ArviZ names (see :data:`SAMPLE_STATS_ALIASES`), with
    ``diverging`` as booleans."""
    renamed = {}
    for name, value in sample_stats.items():
        target = SAMPLE_STATS_ALIASES.get(name, name)
        if target in renamed:
            raise ValueError(
                f"posterior.sample_stats holds two entries for {target!r} "
                f"(ArviZ name of {name!r}); keep one"
            )
        renamed[target] = value
    stats = chain_draw_arrays(renamed, shape, "sample_stats")
    if "diverging" in stats:
        div = stats["diverging"]
        if div.dtype != np.bool_:
            if not np.isin(div, (0, 1)).all():
                raise ValueError("sample_stats['diverging'] must hold booleans (or 0/1 flags)")
            stats["diverging"] = div.astype(bool)
    return stats


def _model_hook(model, data, hook: str):
    fn = getattr(model, hook, None) if model is not None else None
    return fn if callable(fn) and data is not None else None


def log_likelihood_arrays(
    model, data, samples: dict, shape: tuple[int, int]
) -> dict[str, np.ndarray] | None:
    """The model's marginal pointwise log-likelihood of ``data`` at every draw of ``samples``,
    or ``None`` when the model has no ``log_likelihood_pointwise`` hook or there is no data."""
    fn = _model_hook(model, data, "log_likelihood_pointwise")
    if fn is None:
        return None
    with torch.no_grad():
        values = fn(data, samples)
    if not isinstance(values, dict) or not values:
        raise TypeError(
            "model.log_likelihood_pointwise must return a non-empty dict "
            f"{{observed_name: tensor (chain, draw, n)}}, got {type(values).__name__}"
        )
    return chain_draw_arrays(values, shape, "log_likelihood")


def observed_arrays(model, data) -> dict[str, np.ndarray] | None:
    """The model's ``observed_data(data)`` as NumPy arrays, or ``None`` without that hook."""
    fn = _model_hook(model, data, "observed_data")
    if fn is None:
        return None
    values = fn(data)
    if not isinstance(values, dict):
        raise TypeError(
            f"model.observed_data must return a dict {{name: array}}, got {type(values).__name__}"
        )
    return {name: to_numpy(v, f"observed_data[{name!r}]") for name, v in values.items()}


def model_coords(model, data) -> dict:
    """The model's ``site_coords(data)`` (``{dim_name: values}``, the labels of the axes its
    ``site_dims`` name, such as the users' worker ids), or ``{}`` without that hook."""
    fn = _model_hook(model, data, "site_coords")
    if fn is None:
        return {}
    values = fn(data)
    if not isinstance(values, dict):
        raise TypeError(
            f"model.site_coords must return a dict {{dim_name: values}}, got {type(values).__name__}"
        )
    return {name: np.asarray(v) for name, v in values.items()}


def group_dims(dims: dict, arrays: dict, sample_axes: int) -> dict:
    """The dimension names of each array of one group, cut to the axes the array has.

    ``dims`` names the axes of each variable's full shape (for an observed site: its data
    axes); a group whose array has fewer axes (the pointwise ``log_likelihood`` of ``x``
    ``(chain, draw, N)`` against ``x`` itself ``(N, d)``) keeps the leading names.
    """
    out = {}
    for name, arr in arrays.items():
        names = list(dims.get(name, ()))
        ndim = arr.ndim - sample_axes
        if names:
            out[name] = names[:ndim]
    return out


def from_groups(groups: dict, attrs: dict, coords=None, dims=None, point_estimate: bool = False):
    """An ``arviz.InferenceData`` of ``groups`` with ``attrs`` on the root and on the
    ``posterior`` and ``sample_stats`` groups.

    Args:
        groups: ``{group: {variable: array}}``; arrays are shaped ``(chain, draw, ...)`` except
            in ``observed_data`` and ``constant_data`` (``None`` or an empty dict leaves a
            group out).
        attrs: NetCDF-safe metadata (see :func:`inference_attrs`).
        coords: ArviZ coordinates, ``{dim_name: values}``.
        dims: dimension names per variable, ``{var_name: [dim_name, ...]}``, naming the axes
            after ``(chain, draw)`` (see :func:`group_dims` for groups with fewer axes).
        point_estimate: build a :class:`PointEstimateInferenceData`, which has no
            ``log_likelihood`` group and on which ``arviz.loo`` and ``arviz.waic`` raise a
            ``ValueError`` saying why (see :mod:`pyromodels.core.point_estimate`).
    """
    import arviz as az

    datasets = {}
    for group, arrays in groups.items():
        if not arrays:
            continue
        sample_axes = 0 if group in ("observed_data", "constant_data") else 2
        group_attrs = dict(attrs) if group in ("posterior", "sample_stats") else None
        datasets[group] = az.dict_to_dataset(
            arrays,
            attrs=group_attrs,
            coords=coords,
            dims=group_dims(dims or {}, arrays, sample_axes),
            default_dims=[] if sample_axes == 0 else None,
        )
    if point_estimate:
        from .point_estimate import PointEstimateInferenceData

        datasets.pop("log_likelihood", None)
        root = {**attrs, "point_estimate": 1}
        return PointEstimateInferenceData(attrs=root, **datasets)
    return az.InferenceData(attrs=dict(attrs), **datasets)
