"""Exceptions and warnings raised by pyromodels."""

from __future__ import annotations

__all__ = ["ConvergenceWarning", "NotFittedError", "ModelSpecError", "DeviceFallbackWarning"]


class ConvergenceWarning(UserWarning):
    """An iterative fit stopped before converging, or a monotone objective decreased."""


class DeviceFallbackWarning(UserWarning):
    """A CUDA device was requested but is not available, so the CPU is used instead."""


class NotFittedError(ValueError, AttributeError):
    """An estimator or model was used before ``fit`` was called."""


class ModelSpecError(ValueError):
    """A model object is missing something an engine needs (a sweep, an EM step, ...)."""
