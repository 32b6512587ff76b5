"""What the scikit-learn facades of the mixture families share.

A facade is a scikit-learn estimator around a model class: its constructor stores arguments
only, ``fit(X)`` checks the data with scikit-learn's own validation (so bad input gets the
errors scikit-learn users and ``check_estimator`` expect), runs one of the model's engines and
returns the estimator itself. The fitted estimator is a finite mixture ``sum_k w_k p_k(x)``
read off the posterior; :class:`MixtureClusterer` turns it into ``predict_proba``,
``predict``, ``labels_``, ``fit_predict``, ``score_samples`` and ``score``. A subclass supplies
two methods:

* ``_fit_mixture(x, seed)``: fit the model on the validated ``(N, d)`` float64 tensor ``x``
  with the integer ``seed``, and set the fitted attributes (``posterior_`` among them);
* ``_log_joint(x)``: ``(N, K)`` values ``log w_k + log p_k(x_n)`` of the fitted mixture.

``random_state`` follows scikit-learn (:func:`~pyromodels.checks.seed_from_random_state`):
an int is the fit's seed, a ``numpy.random.RandomState`` or ``numpy.random.Generator`` gives
one draw as the seed, and ``None`` draws a fresh seed from the operating system (the global
NumPy state is never read). The seed used is ``seed_``.

This module imports scikit-learn; the families load their facades on first use, so that
importing a family does not (scikit-learn costs about a second of a fresh process).
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..checks import seed_from_random_state
from .seeding import resolve_seed

__all__ = ["MixtureClusterer"]


class MixtureClusterer(ClusterMixin, DensityMixin, BaseEstimator):
    """Base class of the mixture facades (module docstring). Subclasses define ``__init__``
    (storing every argument, ``random_state`` among them), ``_fit_mixture`` and ``_log_joint``.
    """

    def _fit_mixture(self, x: torch.Tensor, seed: int) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _log_joint(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def fit(self, X, y=None):
        """Fit the model to ``X``.

        Args:
            X: array-like ``(n_samples, n_features)``, finite, at least 2 samples.
            y: ignored (scikit-learn's convention for unsupervised estimators).

        Returns:
            The fitted estimator (``self``), with ``labels_`` the training points' labels.
        """
        x = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        self.seed_ = resolve_seed(seed_from_random_state(self.random_state))
        self._fit_mixture(torch.from_numpy(np.ascontiguousarray(x)), self.seed_)
        self.labels_ = self._log_joint(torch.from_numpy(np.ascontiguousarray(x))).argmax(-1).numpy()
        return self

    def _checked_log_joint(self, X) -> torch.Tensor:
        check_is_fitted(self)
        x = validate_data(self, X, dtype=np.float64, reset=False)
        return self._log_joint(torch.from_numpy(np.ascontiguousarray(x)))

    def predict_proba(self, X) -> np.ndarray:
        """Component probabilities ``(n_samples, n_components_)`` of the points ``X``."""
        return torch.softmax(self._checked_log_joint(X), -1).numpy()

    def predict(self, X) -> np.ndarray:
        """The most probable component of each point of ``X``: ``(n_samples,)`` ints."""
        return self._checked_log_joint(X).argmax(-1).numpy()

    def score_samples(self, X) -> np.ndarray:
        """``log p(x)`` of each point under the fitted mixture: ``(n_samples,)``."""
        return torch.logsumexp(self._checked_log_joint(X), -1).numpy()

    def score(self, X, y=None) -> float:
        """Mean log-likelihood per point of ``X`` under the fitted mixture (``y`` ignored)."""
        return float(self.score_samples(X).mean())
