"""Saving a fit to a NetCDF file and reading it back, through ``arviz.InferenceData``.

A saved fit is an ArviZ-readable NetCDF file (``arviz.from_netcdf(path)`` opens it) with
these groups:

=============  ==================================================================
group          contents
=============  ==================================================================
posterior      every site of ``posterior.samples``, ``(chain, draw, ...)``, in its own dtype
               (integer discrete sites stay integers, float32 stays float32)
sample_stats   ``posterior.sample_stats`` under their own names, ``(chain, draw)``
losses         the ``losses`` trace, when there is one
params         the tensors and arrays of ``posterior.params``
diagnostics    the tensors and arrays of ``posterior.diagnostics``
=============  ==================================================================

The entries of ``params``, ``diagnostics`` and ``attrs`` that JSON holds exactly (numbers,
strings, booleans, ``None``, lists and dicts of those) are kept as JSON text in the root
attributes ``pyromodels_params``, ``pyromodels_diagnostics`` and ``pyromodels_attrs``, so
booleans and ``None`` come back as they were; the root attributes also carry ``attrs`` in
ArviZ's plain form for other readers. Entries of neither kind (a convergence monitor object,
a Pyro param store with its constraints) are not written: their names are listed in the root
attribute ``unsaved`` and logged. ``model`` and ``data`` are Python objects and are not
written either; pass them to ``Posterior.load`` to predict with the loaded fit.

This module reads and writes the parts of a fit; :class:`~pyromodels.core.Posterior`'s
``save``, ``load`` and ``from_inference_data`` are the entry points.
"""

from __future__ import annotations

import json
import logging
import math
import os

import numpy as np
import torch

from .inference_data import chain_draw_arrays, netcdf_safe_attrs, to_numpy

__all__ = ["FORMAT", "posterior_to_inference_data", "save_posterior", "fields_from_inference_data",
           "load_fields"]

logger = logging.getLogger(__name__)

#: the value of the root attribute ``pyromodels_format`` of a saved fit
FORMAT = "pyromodels.Posterior/1"

_ARRAY_KIND = "pyromodels_kind"  # variable attribute: "tensor" or "numpy"
#: attributes that ArviZ adds to every group it builds; they are not the fit's own
_ARVIZ_ATTRS = ("created_at", "arviz_version", "inference_library_version",
                "creation_library", "creation_library_version", "creation_library_language")


def _json_exact(value) -> bool:
    """Whether ``value`` survives a JSON round trip unchanged (type included)."""
    if value is None or isinstance(value, bool | str | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_exact(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_exact(v) for k, v in value.items())
    return False


def _split(entries: dict, where: str, unsaved: list[str]) -> tuple[dict, dict]:
    """``entries`` as ``(arrays {name: (kind, ndarray)}, JSON-storable {name: value})``; the
    names of the others are appended to ``unsaved`` as ``"where.name"``."""
    arrays, plain = {}, {}
    for name, value in entries.items():
        if isinstance(value, torch.Tensor) and not value.is_complex():
            arrays[str(name)] = ("tensor", to_numpy(value, f"{where}[{name!r}]"))
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            arrays[str(name)] = ("numpy", value)
        elif isinstance(name, str) and _json_exact(value):
            plain[name] = value
        else:
            unsaved.append(f"{where}.{name}")
    return arrays, plain


def _free_dataset(arrays: dict):
    """An ``xarray.Dataset`` of arrays of any shape (dims ``<name>_dim_<i>``), or ``None``
    when there are none."""
    if not arrays:
        return None
    import xarray as xr

    variables = {}
    for name, (kind, arr) in arrays.items():
        dims = [f"{name}_dim_{i}" for i in range(arr.ndim)]
        variables[name] = xr.Variable(dims, arr, attrs={_ARRAY_KIND: kind})
    return xr.Dataset(variables)


def _chain_draw_dataset(arrays: dict):
    import xarray as xr

    variables = {}
    for name, arr in arrays.items():
        dims = ["chain", "draw"] + [f"{name}_dim_{i}" for i in range(arr.ndim - 2)]
        variables[name] = xr.Variable(dims, arr)
    return xr.Dataset(variables)


def posterior_to_inference_data(posterior):
    """The ``arviz.InferenceData`` that :func:`save_posterior` writes (see the module notes).

    Returns:
        ``(idata, unsaved)``: the InferenceData and the names of the entries left out.
    """
    import arviz as az

    shape = (posterior.num_chains, posterior.num_draws)
    unsaved: list[str] = []
    attrs_json = {}
    for key, value in posterior.attrs.items():
        if isinstance(key, str) and _json_exact(value):
            attrs_json[key] = value
        else:
            unsaved.append(f"attrs.{key}")
    params, params_json = _split(posterior.params, "params", unsaved)
    diagnostics, diagnostics_json = _split(posterior.diagnostics, "diagnostics", unsaved)
    groups = {
        "posterior": _chain_draw_dataset(chain_draw_arrays(posterior.samples, shape, "samples")),
        "params": _free_dataset(params),
        "diagnostics": _free_dataset(diagnostics),
    }
    if posterior.sample_stats:
        stats = chain_draw_arrays(posterior.sample_stats, shape, "sample_stats")
        groups["sample_stats"] = _chain_draw_dataset(stats)
    if posterior.losses is not None:
        groups["losses"] = _free_dataset({"losses": ("tensor", to_numpy(posterior.losses, "losses"))})
    root = netcdf_safe_attrs({**posterior.attrs, "method": posterior.method})
    root.update({
        "pyromodels_format": FORMAT,
        "pyromodels_method": posterior.method,
        "pyromodels_attrs": json.dumps(attrs_json),
        "pyromodels_params": json.dumps(params_json),
        "pyromodels_diagnostics": json.dumps(diagnostics_json),
        "unsaved": json.dumps(unsaved),
    })
    groups = {name: group for name, group in groups.items() if group is not None}
    return az.InferenceData(attrs=root, **groups), unsaved


def save_posterior(posterior, path) -> str:
    """Write ``posterior`` to the NetCDF file ``path`` (overwritten if it exists).

    Args:
        posterior: a :class:`~pyromodels.core.Posterior`.
        path: file path (``str`` or ``os.PathLike``); ``.nc`` is the usual suffix.

    Returns:
        The path written, as a string.
    """
    path = _check_path(path)
    idata, unsaved = posterior_to_inference_data(posterior)
    if unsaved:
        logger.info("saving the fit to %s without these entries, which NetCDF cannot hold: %s",
                    path, ", ".join(unsaved))
    idata.to_netcdf(path)
    return path


def _check_path(path) -> str:
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    return os.fspath(path)


def _restore(idata, group: str, root: dict) -> dict:
    """The entries of ``params`` or ``diagnostics`` as saved: the group's tensors and arrays
    with the JSON-stored values of the root attribute ``pyromodels_<group>``."""
    values = {}
    if group in idata.groups():
        for name, var in getattr(idata, group).data_vars.items():
            arr = np.array(var.values)
            kind = var.attrs.get(_ARRAY_KIND)
            values[str(name)] = arr if kind == "numpy" else torch.from_numpy(arr)
    values.update(json.loads(root.get(f"pyromodels_{group}", "{}")))
    return values


def _chain_draw_tensors(dataset, group: str) -> dict[str, torch.Tensor]:
    out = {}
    for name, var in dataset.data_vars.items():
        if var.dims[:2] != ("chain", "draw"):
            if "chain" not in var.dims or "draw" not in var.dims:
                raise ValueError(
                    f"idata.{group}[{name!r}] must have 'chain' and 'draw' dimensions, "
                    f"got {var.dims}"
                )
            var = var.transpose("chain", "draw", ...)
        out[str(name)] = torch.from_numpy(np.array(var.values))
    return out


def fields_from_inference_data(idata, method: str | None = None) -> dict:
    """The parts of a :class:`~pyromodels.core.Posterior` read from an ``arviz.InferenceData``.

    Reads the ``posterior`` group as the samples (``(chain, draw, ...)``, dtypes kept) and, when
    present, ``sample_stats``; a file written by :func:`save_posterior` also gives back
    ``losses``, ``params``, ``diagnostics`` and ``attrs`` exactly. For any other InferenceData
    (``Posterior.to_inference_data()``, ``arviz.from_pyro``, ...) ``attrs`` are those of its
    ``posterior`` group without ArviZ's own bookkeeping.

    Args:
        idata: ``arviz.InferenceData`` with a ``posterior`` group.
        method: the engine that made the draws; default the ``method`` recorded in the
            InferenceData's attributes (an error when there is none).

    Returns:
        The keyword arguments of ``Posterior`` (``samples``, ``method``, ``sample_stats``,
        ``losses``, ``params``, ``diagnostics``, ``attrs``), tensors on the CPU.
    """
    groups = getattr(idata, "groups", None)
    if not callable(groups) or "posterior" not in idata.groups():
        raise TypeError(
            f"idata must be an arviz.InferenceData with a posterior group, got {type(idata).__name__}"
        )
    root = dict(getattr(idata, "attrs", None) or {})
    saved = root.get("pyromodels_format") == FORMAT
    if saved:
        attrs = json.loads(root["pyromodels_attrs"])
    else:
        attrs = {k: v for k, v in idata.posterior.attrs.items() if k not in _ARVIZ_ATTRS}
    recorded = root.get("pyromodels_method", attrs.get("method"))
    if method is None:
        method = recorded
    if not isinstance(method, str) or not method:
        raise ValueError(
            "idata records no 'method' attribute: pass method= ('nuts', 'gibbs', 'svi', 'em', ...)"
        )
    groups = idata.groups()
    samples = _chain_draw_tensors(idata.posterior, "posterior")
    stats = _chain_draw_tensors(idata.sample_stats, "sample_stats") if "sample_stats" in groups else {}
    losses = params = diagnostics = None
    if saved:
        losses = _restore(idata, "losses", root).get("losses")
        params = _restore(idata, "params", root)
        diagnostics = _restore(idata, "diagnostics", root)
    return {"samples": samples, "method": method, "sample_stats": stats, "losses": losses,
            "params": params or {}, "diagnostics": diagnostics or {}, "attrs": attrs}


def load_fields(path) -> dict:
    """The parts of a fit written by :func:`save_posterior` (see
    :func:`fields_from_inference_data`).

    Args:
        path: the NetCDF file.
    """
    import arviz as az

    path = _check_path(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"path {path!r} does not exist")
    try:
        with az.rc_context({"data.load": "eager"}):  # read it all now: no file handle left open
            idata = az.from_netcdf(path)
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"path {path!r} is not a readable NetCDF file ({type(exc).__name__}: {exc})"
        ) from exc
    if dict(idata.attrs or {}).get("pyromodels_format") != FORMAT:
        raise ValueError(
            f"path {path!r} is not a fit saved by Posterior.save (no pyromodels_format "
            f"{FORMAT!r} attribute); for other ArviZ files use "
            "Posterior.from_inference_data(arviz.from_netcdf(path), method=...)"
        )
    return fields_from_inference_data(idata)
