"""The not-fitted error, kept apart because it subclasses scikit-learn's: importing scikit-learn
costs about a second, so :mod:`pyromodels.core.errors` loads this module only when the name is
first used (the DataFrame facades import it when they raise it)."""

from __future__ import annotations

from sklearn.exceptions import NotFittedError as _SklearnNotFittedError

__all__ = ["NotFittedError"]


class NotFittedError(_SklearnNotFittedError):
    """An estimator or model was used before ``fit`` was called.

    A subclass of ``sklearn.exceptions.NotFittedError`` (itself a ``ValueError`` and an
    ``AttributeError``), so code written for scikit-learn estimators catches it too.
    """
