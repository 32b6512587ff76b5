r"""Graphs over items: an edge list with sparse adjacency views.

An undirected graph (``symmetric=True``) lists every edge :math:`\{i, j\}` exactly once, in
either orientation, so a Potts energy :math:`U(y) = \tfrac{\delta}{2}\sum_{(i,j)\in E}
[y_i \ne y_j]` sums over ``edges`` directly. The adjacency matrix :math:`A` is symmetric with
:math:`A_{ij} = A_{ji} = 1` per edge and the degree is :math:`d_i = \sum_j A_{ij}`. A directed
graph (``symmetric=False``) lists arcs ``i -> j``; its degree is the out-degree. Self loops
and repeated edges are rejected.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..checks import as_label_tensor, as_numeric_tensor, check_int
from .idmaps import as_id_index, check_id_kinds, plain, repeated_keys
from .tensors import TensorFields

if TYPE_CHECKING:  # scipy.sparse is imported by the methods that use it, not with the package
    import scipy.sparse as sp

__all__ = ["Graph", "node_ids"]


def node_ids(columns: dict) -> pd.Index:
    """The sorted distinct ids of the nodes named in ``columns`` (``{name: ids}``, for example
    a table's task column and an edge list's two columns), checked to be of one kind.

    ``'0'`` and ``0`` are different ids, and sorting ids that mix them fails inside pandas
    (``'<' not supported``): every column must hold strings only or non-strings only, and all
    columns the same kind.

    Raises:
        ValueError: a column mixing strings and non-strings, or columns of different kinds,
            named with an example of each kind.

    Example:
        >>> list(node_ids({"df['task']": [2, 0], "edges['source']": [0, 1]}))
        [0, 1, 2]
    """
    kinds: dict[bool, list[tuple[str, object]]] = {True: [], False: []}
    parts = []
    for name, values in columns.items():
        series = pd.Series(np.asarray(values, dtype=object) if not isinstance(values, pd.Series)
                           else values)
        check_id_kinds(series, name)
        if len(series):
            first = series.dropna().iloc[0] if series.notna().any() else None
            kinds[isinstance(first, str)].append((name, first))
        parts.append(pd.Index(series))
    if kinds[True] and kinds[False]:
        (s_name, s_value), (o_name, o_value) = kinds[True][0], kinds[False][0]
        raise ValueError(
            f"{s_name} holds string ids ({s_value!r}) but {o_name} holds "
            f"{type(plain(o_value)).__name__} ids ({plain(o_value)!r}): the same node would be "
            "two ids. Convert them to one type first, e.g. with .astype(str)"
        )
    return parts[0].append(parts[1:]).unique().sort_values()


@dataclass(frozen=True, eq=False)
class Graph(TensorFields):
    """A graph on ``num_nodes`` nodes stored as an edge list.

    Attributes:
        edges: long tensor ``(E, 2)`` of node codes; ``E`` may be 0.
        num_nodes: number of nodes ``N``.
        symmetric: undirected (each edge listed once) or directed.
        nodes: node ids (``pandas.Index`` of length ``N``); default ``0 .. N - 1``.

    Example:
        >>> g = Graph.from_edges([[0, 1], [1, 2]], num_nodes=4)
        >>> g.degree().tolist()
        [1, 2, 1, 0]
        >>> g.neighbors(1).tolist()
        [0, 2]
    """

    edges: torch.Tensor
    num_nodes: int
    symmetric: bool = True
    nodes: pd.Index | None = None

    _tensor_fields = ("edges",)

    def __post_init__(self):
        n = check_int(self.num_nodes, "num_nodes", minimum=1)
        if not isinstance(self.symmetric, bool):
            raise TypeError(f"symmetric must be a bool, got {self.symmetric!r}")
        nodes = pd.RangeIndex(n) if self.nodes is None else as_id_index(self.nodes, "nodes")
        if len(nodes) != n:
            raise ValueError(f"nodes must hold num_nodes={n} ids, got {len(nodes)}")
        edges = self.edges
        if not isinstance(edges, torch.Tensor):
            edges = np.asarray(edges)
            if edges.size == 0:
                edges = edges.reshape(0, 2).astype(np.int64)
        edges = as_label_tensor(edges, "edges", ndim=2, allow_empty=True)
        if edges.shape[1] != 2:
            raise ValueError(f"edges must have shape (E, 2), got {tuple(edges.shape)}")
        if edges.numel() and int(edges.max()) >= n:
            raise ValueError(
                f"edges must hold node codes in [0, {n - 1}] (num_nodes={n}), "
                f"found {int(edges.max())}"
            )
        loops = torch.nonzero(edges[:, 0] == edges[:, 1]).flatten()
        if len(loops):
            r = int(loops[0])
            raise ValueError(
                f"edges holds {len(loops)} self loop(s), e.g. row {r} = {edges[r].tolist()}; "
                "self loops are not supported: remove them"
            )
        key = torch.sort(edges, dim=1).values if self.symmetric else edges
        rows = repeated_keys(key[:, 0], key[:, 1])
        if len(rows):
            r = int(rows[0])
            what = "undirected edge (in either orientation)" if self.symmetric else "arc"
            raise ValueError(
                f"edges repeats {len(rows)} {what}(s), e.g. row {r} = {edges[r].tolist()}; "
                "list each edge once"
            )
        object.__setattr__(self, "num_nodes", n)
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "edges", edges)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_edges(cls, edges, num_nodes: int, symmetric: bool = True, nodes=None) -> Graph:
        """Graph from an ``(E, 2)`` integer array of node codes (see the class docstring)."""
        return cls(edges, num_nodes, symmetric=symmetric, nodes=nodes)

    @classmethod
    def from_scipy(cls, matrix, symmetric: bool = True, nodes=None) -> Graph:
        """Graph from a square scipy sparse (or dense numpy) 0/1 adjacency matrix.

        With ``symmetric=True`` the matrix must equal its transpose and each edge is read once
        from the upper triangle. Weights other than 1 and diagonal entries are errors.
        """
        import scipy.sparse as sp

        if not sp.issparse(matrix):
            arr = as_numeric_tensor(matrix, "matrix").cpu().numpy()
            if arr.ndim != 2:
                raise ValueError(f"matrix must be a 2-D adjacency matrix, got shape {arr.shape}")
            matrix = sp.csr_matrix(arr)
        matrix = sp.coo_matrix(matrix)
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
        if matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"matrix must be square, got shape {matrix.shape}")
        if matrix.nnz and not np.all(matrix.data == 1):
            raise ValueError("matrix must hold only 0/1 entries; weighted graphs are not supported")
        if symmetric and (matrix != matrix.T).nnz:
            raise ValueError(
                "matrix must equal its transpose for symmetric=True; pass symmetric=False for a "
                "directed graph"
            )
        row, col = matrix.row.astype(np.int64), matrix.col.astype(np.int64)
        if symmetric:
            keep = row <= col  # diagonal entries stay and are reported as self loops
            row, col = row[keep], col[keep]
        edges = np.stack([row, col], axis=1)
        return cls(edges, matrix.shape[0], symmetric=symmetric, nodes=nodes)

    # ------------------------------------------------------------------ sizes
    @property
    def num_edges(self) -> int:
        """Number of listed edges ``E``."""
        return int(self.edges.shape[0])

    def __repr__(self) -> str:
        return (
            f"Graph(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
            f"symmetric={self.symmetric})"
        )

    # ------------------------------------------------------------------ views
    def arcs(self) -> torch.Tensor:
        """Long tensor ``(2, D)`` of (source, target) pairs: both orientations of every edge
        when symmetric (``D = 2E``), the arcs themselves otherwise."""
        e = self.edges.T
        return torch.cat([e, e.flip(0)], dim=1) if self.symmetric else e

    def adjacency(self, layout: str = "coo", dtype: torch.dtype | None = None) -> torch.Tensor:
        """Sparse adjacency ``(N, N)`` as a torch ``"coo"`` or ``"csr"`` tensor of ones."""
        if layout not in ("coo", "csr"):
            raise ValueError(f"layout must be 'coo' or 'csr', got {layout!r}")
        if dtype is not None and not isinstance(dtype, torch.dtype):
            raise TypeError(f"dtype must be a torch.dtype or None, got {dtype!r}")
        arcs = self.arcs()
        values = torch.ones(arcs.shape[1], dtype=dtype or torch.get_default_dtype(),
                            device=self.device)
        adj = torch.sparse_coo_tensor(arcs, values, (self.num_nodes, self.num_nodes),
                                      check_invariants=False).coalesce()  # arcs were validated
        if layout == "coo":
            return adj
        with warnings.catch_warnings():  # torch labels its CSR support as beta on every call
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            return adj.to_sparse_csr()

    def to_scipy(self) -> sp.csr_matrix:
        """Adjacency as a ``scipy.sparse.csr_matrix`` of float64 ones."""
        import scipy.sparse as sp

        arcs = self.arcs().cpu().numpy()
        return sp.csr_matrix(
            (np.ones(arcs.shape[1]), (arcs[0], arcs[1])), shape=(self.num_nodes, self.num_nodes)
        )

    @cached_property
    def _csr(self) -> tuple[torch.Tensor, torch.Tensor]:
        arcs = self.arcs()
        order = torch.argsort(arcs[0] * self.num_nodes + arcs[1])
        indices = arcs[1][order]
        indptr = torch.zeros(self.num_nodes + 1, dtype=torch.long, device=self.device)
        indptr[1:] = torch.cumsum(torch.bincount(arcs[0], minlength=self.num_nodes), 0)
        return indptr, indices

    @property
    def indptr(self) -> torch.Tensor:
        """CSR row pointer ``(N + 1,)``: node ``i``'s neighbours are
        ``indices[indptr[i]:indptr[i + 1]]``."""
        return self._csr[0]

    @property
    def indices(self) -> torch.Tensor:
        """CSR column indices: the neighbours of every node, sorted, node after node."""
        return self._csr[1]

    def neighbors(self, node: int) -> torch.Tensor:
        """Sorted neighbour codes of ``node`` (out-neighbours for a directed graph)."""
        node = check_int(node, "node", minimum=0, maximum=self.num_nodes - 1)
        return self.indices[int(self.indptr[node]):int(self.indptr[node + 1])]

    def neighbor_lists(self) -> list[torch.Tensor]:
        """The neighbours of every node, as a list of ``N`` long tensors."""
        sizes = (self.indptr[1:] - self.indptr[:-1]).tolist()
        return list(torch.split(self.indices, sizes))

    def degree(self) -> torch.Tensor:
        """Long tensor ``(N,)``: number of neighbours (out-degree when directed)."""
        return self.indptr[1:] - self.indptr[:-1]

    @property
    def mean_degree(self) -> float:
        """Average degree ``D / N`` (``2E / N`` when undirected)."""
        return self.arcs().shape[1] / self.num_nodes

    def check_matches(self, table) -> Graph:
        """Raise unless the nodes are exactly the items of ``table`` in the same order.

        ``table`` is any contract with an ``items`` index (AnnotationTable,
        PairwiseAnnotations). Returns the graph, for chaining.
        """
        items = getattr(table, "items", None)
        if not isinstance(items, pd.Index):
            raise TypeError(f"table must have an items index, got {type(table).__name__}")
        if len(items) != self.num_nodes:
            raise ValueError(
                f"graph has {self.num_nodes} nodes but the table has {len(items)} items"
            )
        same = self.nodes.to_numpy(dtype=object) == items.to_numpy(dtype=object)
        if not same.all():
            k = int(np.argmin(same))
            raise ValueError(
                f"graph nodes and table items differ first at code {k}: node id "
                f"{plain(self.nodes[k])!r} vs item id {plain(items[k])!r}; build both with the "
                "same id order"
            )
        return self
