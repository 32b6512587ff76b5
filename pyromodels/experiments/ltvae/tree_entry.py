"""``pyromodels fit latent-tree``: a latent tree of one node fitted by EM to a numeric table.

The tree is :meth:`LatentTree.single <pyromodels.trees.LatentTree.single>`: one latent node
``Y`` of ``cardinality`` states over every column of the data, each column its own Gaussian
leaf whose variance EM learns (``covariance="full"``, floored at ``floor``, default 0.01), that is a Gaussian
mixture with diagonal covariances written as a latent tree
(:class:`~pyromodels.trees.LatentTreeModel`, batch EM by :func:`~pyromodels.core.run_em`).
The columns are standardised first (each centred and divided by its standard deviation), so
that the floor means the same in every column.

Without ``--data`` it fits Fisher's iris measurements (150 flowers, 4 columns; the bundled
UCI copy of :func:`~pyromodels.data.load_pltm_uci`). The report holds the generic one,
``labels.csv`` (each point's most probable state of ``Y`` given its row), the BIC and the
log-likelihood among the metrics, the tree drawn and a scatter of the data by cluster.
``pyromodels reproduce latent-tree`` runs the structure learner's protocols
(:mod:`.reproduction`).
"""

from __future__ import annotations

import numpy as np

from ...registry import register
from ..catalogue import LATENT_TREE
from .facet_report import facet_report
from .reproduction import reproduce
from .tables import read_points

__all__ = ["DEFAULT_STATES", "loader", "standardise", "tree_factory", "fit_tree",
           "describe_tree", "ENTRY"]

#: the number of states of the latent node without ``--cardinality`` (iris has 3 species)
DEFAULT_STATES = 3


def loader(path: str | None) -> np.ndarray:
    """The ``(N, D)`` points of the numeric CSV ``path``, or by default the iris
    measurements (150 rows, 4 columns)."""
    if path is None:
        from ...data import load_pltm_uci

        return load_pltm_uci("iris").features.to_numpy(dtype=np.float64)
    return read_points(path)


def standardise(x: np.ndarray) -> np.ndarray:
    """``x`` with each column centred and divided by its standard deviation (every column
    varies: the loader refuses constant ones)."""
    x = np.asarray(x, dtype=np.float64)
    return (x - x.mean(0)) / x.std(0)


class _SingleNodeTree:
    """What the factory returns: the number of states, the tree built once the data's width
    is known (the loader runs after the factory)."""

    engines = ("em",)

    def __init__(self, cardinality: int, floor: float):
        from ...checks import check_int
        from ...trees.em import check_covariance_settings

        self.cardinality = check_int(cardinality, "cardinality", minimum=2)
        self.floor = check_covariance_settings("full", 1.0, floor)[2]

    def __repr__(self) -> str:
        return f"latent-tree(cardinality={self.cardinality}, floor={self.floor})"

    def model(self, num_columns: int):
        """The :class:`~pyromodels.trees.LatentTreeModel` over ``num_columns`` leaves."""
        from ...trees import LatentTree, LatentTreeModel

        return LatentTreeModel(LatentTree.single(self.cardinality, num_columns),
                               covariance="full", floor=self.floor)


def tree_factory(cardinality: int = DEFAULT_STATES, floor: float = 0.01) -> _SingleNodeTree:
    """The registered model: one latent node of ``cardinality`` states over every column, each
    leaf's variance floored at ``floor`` (in units of the standardised column)."""
    return _SingleNodeTree(cardinality, floor)


def fit_tree(model: _SingleNodeTree, data: np.ndarray, *, method: str, seed: int,
             progress: bool, **options):
    """``pyromodels fit latent-tree``: batch EM on the standardised columns; ``options``
    holds what the command line gave (``max_iter``, ``n_init``, ``device`` and the
    checkpointing)."""
    return model.model(data.shape[1]).fit(standardise(data), method=method, seed=seed,
                                          progress=progress, **options)


def describe_tree(posterior, data: np.ndarray, *, name: str):
    """The report of a fit: ``labels.csv`` (``argmax_k P(Y = k | z)`` of each row), the BIC
    and log-likelihood, the tree."""
    import pandas as pd

    tree = posterior.model.tree
    facets = pd.DataFrame({node: posterior.params[f"responsibilities.{node}"].argmax(-1)
                           .cpu().numpy() for node in tree.names})
    metrics = {"bic": float(posterior.params["bic"]),
               "log_likelihood": float(posterior.params["log_likelihood"])}
    note = ("The columns were standardised before the fit; the BIC is log-likelihood minus "
            "half the free parameters times log N (larger is better).")
    return facet_report(posterior, data, facets, tree, name=name, metrics=metrics, note=note)


ENTRY = register(LATENT_TREE.entry(factory=tree_factory, loader=loader, fit=fit_tree,
                                   describe=describe_tree, reproduce=reproduce))
