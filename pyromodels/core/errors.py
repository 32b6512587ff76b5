"""Exceptions and warnings raised by pyromodels."""

from __future__ import annotations

from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

__all__ = ["ConvergenceWarning", "NotFittedError", "ModelSpecError", "DeviceFallbackWarning"]


class ConvergenceWarning(UserWarning):
    """An iterative fit stopped before converging, or a monotone objective decreased."""


class DeviceFallbackWarning(UserWarning):
    """A CUDA device was requested but is not available, so the CPU is used instead."""


class NotFittedError(_SklearnNotFittedError):
    """An estimator or model was used before ``fit`` was called.

    A subclass of ``sklearn.exceptions.NotFittedError`` (itself a ``ValueError`` and an
    ``AttributeError``), so code written for scikit-learn estimators catches it too.
    """


class ModelSpecError(ValueError):
    """A model object is missing something an engine needs (a sweep, an EM step, ...)."""
