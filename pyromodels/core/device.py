"""Device and dtype resolution with a clean CPU fallback."""

from __future__ import annotations

import contextlib
import warnings

import torch

from .errors import DeviceFallbackWarning

__all__ = ["resolve_device", "resolve_dtype", "cuda_devices", "default_dtype", "num_threads"]


def resolve_device(device=None, *tensors) -> torch.device:
    """Pick the device for a fit.

    ``device=None`` takes the device of the first argument with a ``device`` (a tensor or a
    data object), else the CPU. A CUDA device
    requested on a machine without CUDA falls back to the CPU with a ``DeviceFallbackWarning``.
    """
    if device is None:
        for t in tensors:
            dev = getattr(t, "device", None)
            if isinstance(dev, torch.device):
                return dev
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda', got {device!r}") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        warnings.warn(
            f"device={device!r} was requested but CUDA is not available; using the CPU",
            DeviceFallbackWarning,
            stacklevel=3,
        )
        return torch.device("cpu")
    return dev


def resolve_dtype(dtype=None) -> torch.dtype:
    """``None`` gives ``torch.get_default_dtype()``; otherwise a floating torch dtype."""
    if dtype is None:
        return torch.get_default_dtype()
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch dtype such as torch.float64, got {dtype!r}")
    return dtype


def cuda_devices(device) -> tuple:
    """``(device,)`` if ``device`` is a CUDA device, else ``()`` (for RNG forking)."""
    return (device,) if torch.device(device).type == "cuda" else ()


@contextlib.contextmanager
def _torch_setting(get, set_, value):
    """Run the body with ``set_(value)``; restore what ``get()`` returned before."""
    old = get()
    set_(value)
    try:
        yield
    finally:
        set_(old)


def default_dtype(dtype: torch.dtype):
    """Run the body with ``dtype`` as torch's default floating dtype; restore the old one after."""
    return _torch_setting(torch.get_default_dtype, torch.set_default_dtype, dtype)


def num_threads(count: int):
    """Run the body with ``torch.set_num_threads(count)``; restore the old count after."""
    return _torch_setting(torch.get_num_threads, torch.set_num_threads, count)
