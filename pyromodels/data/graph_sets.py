"""Citation graphs in the Planetoid split (Cora, CiteSeer, Pubmed), read from pickle-free npz."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..checks import check_in
from .graphs import Graph
from .paths import ENV_VAR, locate

if TYPE_CHECKING:  # scipy.sparse is imported when a graph set is read, not with the package
    import scipy.sparse as sp

__all__ = ["PlanetoidData", "load_planetoid"]

_PLANETOID = ("cora", "citeseer", "pubmed")


@dataclass(frozen=True, eq=False)
class PlanetoidData:
    """A Planetoid citation graph with node features, labels and the standard split.

    Attributes:
        graph: undirected :class:`~pyromodels.data.graphs.Graph` (no self loops).
        features: ``scipy.sparse.csr_matrix`` ``(N, D)`` float32.
        feature_available: bool ``(N,)``; False where the source has no feature row (zeros).
        labels: int64 ``(N,)`` class codes, ``-1`` where the node has no label.
        idx_train, idx_val, idx_test: int64 node codes of the standard (Kipf & Welling) split.
    """

    graph: Graph
    features: sp.csr_matrix
    feature_available: np.ndarray
    labels: np.ndarray
    idx_train: np.ndarray
    idx_val: np.ndarray
    idx_test: np.ndarray

    @property
    def num_classes(self) -> int:
        """Number of classes (largest label + 1)."""
        return int(self.labels.max()) + 1


def load_planetoid(name: str, path=None) -> PlanetoidData:
    """Load Cora, CiteSeer or Pubmed from ``<name>_planetoid.npz``.

    ==========  ======  ======  ========  =======  ================================
    name        nodes   edges   features  classes  notes
    ==========  ======  ======  ========  =======  ================================
    cora        2,708   5,278   1,433     7
    citeseer    3,327   4,552   3,703     6        15 placeholder nodes: no label
    pubmed      19,717  44,324  500       3        features only for 1,060 nodes
    ==========  ======  ======  ========  =======  ================================

    The file is looked for at ``path`` (the data set folder, or the npz itself), else at
    ``$PYROMODELS_DATA/<name>/<name>_planetoid.npz``. It is read with
    ``allow_pickle=False``.

    Args:
        name: ``"cora"``, ``"citeseer"`` or ``"pubmed"``.
        path: folder or file path.

    Returns:
        :class:`PlanetoidData`.

    Example:
        >>> data = load_planetoid("cora")  # doctest: +SKIP
        >>> data.graph.num_nodes, data.num_classes  # doctest: +SKIP
        (2708, 7)
    """
    check_in(name, "name", _PLANETOID)
    file = f"{name}_planetoid.npz"
    found = locate(
        [file], path=path, subdir=name, what=f"Planetoid {name} ({file})",
        how_to_get=(
            f"Set {ENV_VAR} to a folder holding {name}/{file} (the pickle-free "
            "conversion of the Planetoid files of Yang et al. 2016 with arrays feat_data, "
            "feat_indices, feat_indptr, feat_shape, feat_available, labels, edges, idx_train, "
            "idx_val, idx_test), or pass path= that folder."
        ),
    )
    with np.load(found, allow_pickle=False) as z:
        arrays = {key: z[key] for key in z.files}
    needed = ("feat_data", "feat_indices", "feat_indptr", "feat_shape", "feat_available",
              "labels", "edges", "idx_train", "idx_val", "idx_test")
    missing = [k for k in needed if k not in arrays]
    if missing:
        raise ValueError(f"{found} lacks the array(s) {missing}")
    n = int(arrays["feat_shape"][0])
    import scipy.sparse as sp

    features = sp.csr_matrix(
        (arrays["feat_data"], arrays["feat_indices"], arrays["feat_indptr"]),
        shape=tuple(int(s) for s in arrays["feat_shape"]),
    )
    labels = arrays["labels"].astype(np.int64)
    if labels.shape != (n,) or arrays["feat_available"].shape != (n,):
        raise ValueError(f"{found}: labels / feat_available do not have one entry per node ({n})")
    graph = Graph.from_edges(arrays["edges"].astype(np.int64), num_nodes=n, symmetric=True)
    return PlanetoidData(
        graph=graph,
        features=features,
        feature_available=arrays["feat_available"].astype(bool),
        labels=labels,
        idx_train=arrays["idx_train"].astype(np.int64),
        idx_val=arrays["idx_val"].astype(np.int64),
        idx_test=arrays["idx_test"].astype(np.int64),
    )
