"""Exceptions and warnings raised by pyromodels."""

from __future__ import annotations

# NotFittedError is provided by __getattr__ below, loaded on first use
__all__ = ["ConvergenceWarning", "ModelSpecError", "DeviceFallbackWarning"]


class ConvergenceWarning(UserWarning):
    """An iterative fit stopped before converging, or a monotone objective decreased."""


class DeviceFallbackWarning(UserWarning):
    """A CUDA device was requested but is not available, so the CPU is used instead."""


class ModelSpecError(ValueError):
    """A model object is missing something an engine needs (a sweep, an EM step, ...)."""


def __getattr__(name: str):
    # NotFittedError subclasses scikit-learn's; load it (and scikit-learn) on first use only
    if name == "NotFittedError":
        from .not_fitted import NotFittedError

        return NotFittedError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
