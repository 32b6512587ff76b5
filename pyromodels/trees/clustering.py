"""Multidimensional clustering of a table by a learned pouch latent tree: one clustering per
latent variable (a *facet*), as PLTM-EAST reports it.

:class:`LatentTreeClustering` checks the table once, standardises its columns, learns the
structure and parameters with :func:`~pyromodels.trees.learner.fit_structure` and labels each
row, for every latent node ``Y_j``, with :math:`\\arg\\max_k P(Y_j = k \\mid z)`. It needs
nothing of a neural network, so it lives with the trees.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..checks import as_float_tensor, check_bool
from .learner import StructureResult, check_points, fit_structure
from .message_passing import tree_posterior

__all__ = ["LatentTreeClustering"]


class LatentTreeClustering:
    """Learn a pouch latent tree over a table's columns and cluster the rows along each facet.

    Args:
        standardize: rescale every column to mean 0 and standard deviation 1 (the
            population's, ``ddof=0``) before learning, with the training table's statistics
            (also applied by :meth:`predict`); ``False`` uses the values as they are.
        **settings: the search's settings, passed to
            :func:`~pyromodels.trees.learn_structure` (``start``, ``covariance``,
            ``alpha``, ``floor``, ``operators``, ``screen``, ``screen_steps``,
            ``screen_points``, ``refine_top``, ``em_steps``, ``em_tol``, ``em_restarts``,
            ``tol``, ``max_steps``, ``seed``, ``progress``, ``callbacks``, ``checkpoint``,
            ``checkpoint_every``, ``resume``).

    Attributes (after :meth:`fit`):
        result_: the :class:`~pyromodels.trees.learner.StructureResult`.
        tree_, params_: the learned structure and its parameters (on the standardised scale).
        bic_, log_likelihood_: their BIC and log-likelihood on the (standardised) table.
        labels_: a DataFrame with one column per latent node (its name), the most probable
            state of that node for each row, indexed like the table.
        feature_names_: the table's column names (``"0"``, ``"1"``, ... for an array).
        mean_, scale_: the column statistics used to standardise.

    Example:
        >>> import pandas as pd
        >>> from pyromodels.data import load_pltm_uci
        >>> iris = load_pltm_uci("iris")  # doctest: +SKIP
        >>> model = LatentTreeClustering(seed=0, progress=False).fit(iris.features)  # doctest: +SKIP
        >>> model.labels_.columns.tolist()  # doctest: +SKIP
        ['Y', 'Y1']
    """

    _settings = ("start", "covariance", "alpha", "floor", "operators", "screen_steps",
                 "screen", "screen_points", "refine_top", "em_steps", "em_tol", "em_restarts",
                 "tol", "max_steps", "seed", "progress", "callbacks", "checkpoint",
                 "checkpoint_every", "resume")

    def __init__(self, *, standardize: bool = True, **settings):
        unknown = sorted(set(settings) - set(self._settings))
        if unknown:
            raise TypeError(f"LatentTreeClustering got unknown settings {unknown}; known: "
                            f"{list(self._settings)}")
        self.standardize = check_bool(standardize, "standardize")
        defaults = {"start": None, "covariance": "full", "alpha": 1.0, "floor": 0.01,
                    "operators": None,
                    "screen": "local", "screen_steps": 10, "screen_points": None,
                    "refine_top": 3, "em_steps": 200, "em_tol": 1e-6,
                    "em_restarts": 5, "tol": 1e-2, "max_steps": 50, "seed": None,
                    "progress": True, "callbacks": None, "checkpoint": None,
                    "checkpoint_every": None, "resume": None}
        self.settings = {**defaults, **settings}

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.settings.items() if v is not None}
        return f"LatentTreeClustering(standardize={self.standardize}, {changed})"

    def _points(self, table, name: str) -> tuple[torch.Tensor, pd.Index | None]:
        index = table.index if isinstance(table, pd.DataFrame) else None
        return check_points(table, name), index

    def fit(self, table) -> LatentTreeClustering:
        """Learn the tree on ``table`` (a DataFrame of numeric columns or a 2-D array; no
        missing values, no constant columns) and label its rows.

        Raises:
            TypeError, ValueError: the table check's errors (a non-numeric column, NaN or
                infinite values, a constant column, fewer than two rows), named.
        """
        z, index = self._points(table, "table")
        self.feature_names_ = (list(map(str, table.columns)) if isinstance(table, pd.DataFrame)
                               else [str(c) for c in range(z.shape[1])])
        if self.standardize:
            self.mean_, self.scale_ = z.mean(0), z.std(0, unbiased=False)
        else:
            self.mean_ = torch.zeros(z.shape[1], dtype=z.dtype)
            self.scale_ = torch.ones(z.shape[1], dtype=z.dtype)
        z = (z - self.mean_) / self.scale_
        result: StructureResult = fit_structure(z, **self.settings)
        self.result_ = result
        self.tree_, self.params_ = result.tree, result.params
        self.bic_, self.log_likelihood_ = result.bic, result.log_likelihood
        self.labels_ = self._labels(z, index)
        return self

    def _labels(self, z: torch.Tensor, index) -> pd.DataFrame:
        post = tree_posterior(self.params_, z)
        columns = {name: m.argmax(-1).cpu().numpy().astype(np.int64)
                   for name, m in zip(self.tree_.names, post.node_marginals)}
        return pd.DataFrame(columns, index=index)

    def _check_fitted(self, what: str) -> None:
        if not hasattr(self, "tree_"):
            raise RuntimeError(f"LatentTreeClustering is not fitted: call fit(table) before "
                               f"{what}")

    def predict(self, table) -> pd.DataFrame:
        """The most probable state of every latent node for each row of ``table``,
        standardised with the fitted statistics.

        ``table`` needs the fitted table's columns (by name for a DataFrame, by number for an
        array) and finite numbers; unlike :meth:`fit` it may have a single row or a constant
        column.

        Raises:
            TypeError: a non-numeric column.
            ValueError: other columns than the fitted ones, NaN or infinite values.
        """
        self._check_fitted("predict")
        index = None
        if isinstance(table, pd.DataFrame):
            names = list(map(str, table.columns))
            if names != self.feature_names_:
                raise ValueError(f"table must have the fitted columns {self.feature_names_}, "
                                 f"got {names}")
            for column in table.columns:
                dtype = table[column].dtype
                if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype):
                    raise TypeError(f"table column {column!r} must be numeric, got {dtype}")
            index, table = table.index, table.to_numpy(dtype=np.float64)
        z = as_float_tensor(table, "table", ndim=2, dtype=torch.float64)
        self.tree_.check_width(z.shape[1], "table")
        return self._labels((z - self.mean_) / self.scale_, index)

    def draw(self, ax=None):
        """Draw the learned tree (see :meth:`~pyromodels.trees.LatentTree.draw`)."""
        self._check_fitted("draw")
        return self.tree_.draw(ax)
