r"""The Potts prior over true labels and the objective it adds to the crowd likelihood.

The networked crowd model (ensemble paper, section 5, eqs. 6 and 28-31) puts a Potts Markov
random field on the true labels :math:`y \in \{0..K-1\}^N` of the items, the nodes of an
undirected graph :math:`G = (V, E)` whose edges are listed once:

.. math::

    p(y) \propto \exp(-U(y)), \qquad
    U(y) = \tfrac12 \sum_{\{i, j\} \in E} \delta_{ij}\,[y_i \ne y_j].

The factor one half is the paper's, so each disagreeing edge costs :math:`\delta/2` nats.
The local energy of node :math:`n` (eq. 29) is the part of :math:`U` that depends on
:math:`y_n`,

.. math::

    U_n(k) = \tfrac12 \sum_{n' \in N_n} \delta_{n n'}\,[k \ne y_{n'}]
           = \tfrac12 \Big(d^\delta_n - \sum_{n'} W_{n n'} [y_{n'} = k]\Big),

with the weighted adjacency :math:`W_{nn'} = \delta_{nn'}` and weighted degree
:math:`d^\delta_n = \sum_{n'} W_{nn'}`; for every :math:`n, k` at once this is one sparse
product :math:`W\,\mathrm{onehot}(y)` (a gather and an ``index_add_`` over the arcs). With
the emissions :math:`\log b_n(k) = \sum_m \log \Gamma_m(f_{mn}, k)`
(:func:`pyromodels.crowd.emissions.log_emissions`) the negative log posterior of the labels,
up to a constant, is the objective

.. math:: E(y) = U(y) - \sum_n \log b_n(y_n),

and the full conditional of one label (eq. 31) is
:math:`p(y_n = k \mid \ldots) \propto \exp(-U_n(k) + \log b_n(k))`.

Couplings (:class:`PottsCoupling`):

* ``constant``: one :math:`\delta` for every edge (the paper's :math:`\delta = M`);
* ``edge``: one :math:`\delta_e` per listed edge;
* ``node``: :math:`\delta_n` per node, used by the paper for its crowdsourcing sets with
  :math:`\delta_n = M_n / 2` (:math:`M_n` = number of labels of item :math:`n`). Node
  :math:`n` then sees every neighbour with its own weight :math:`\delta_n`, so
  :math:`W` is not symmetric and the model defines only the local energies :math:`U_n`, not
  a joint :math:`U(y)`. Every local computation (ICM, the mode-field E-step, mean field,
  single-site Gibbs) uses this local form, as the paper does; a total energy (for exact
  enumeration, monitoring or a Pyro program) needs :meth:`PottsCoupling.symmetrized`, the
  per-edge coupling :math:`\delta_{ij} = (\delta_i + \delta_j)/2`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from ...checks import as_float_tensor, check_in, check_positive
from ...core.backend import resolve_backend
from ...data.graphs import Graph
from .kernels import gauss_seidel
from .kernels.gauss_seidel import ColorClass, split_by_color

__all__ = [
    "BACKENDS",
    "loop_backend",
    "greedy_coloring",
    "PottsCoupling",
    "ColorClass",
    "check_delta",
    "resolve_coupling",
    "local_energies",
    "conditional_logits",
    "potts_energy",
    "total_energy",
    "check_log_emissions",
    "weighted_label_counts",
]


BACKENDS = ("auto", "numba", "python")  #: backends of the CPU loops over nodes


def loop_backend(backend: str = "auto") -> str:
    """The backend of the loops over nodes (sequential sweep, greedy colouring): ``"numba"``
    or ``"python"`` (the same loop uncompiled) for ``backend`` in :data:`BACKENDS`;
    ``"auto"`` gives numba when it is installed.

    The loops copy their tensors to the CPU, so the choice does not depend on a device; a fit
    that loops resolves it once and passes the result on.
    """
    return resolve_backend(backend, portable="python")


@dataclass(frozen=True, eq=False)
class PottsCoupling:
    r"""A Potts coupling on an undirected graph, stored per arc (both orientations of each edge).

    Build it with :meth:`constant`, :meth:`per_edge` or :meth:`per_node` (or
    :func:`resolve_coupling`). Arcs are sorted by source node (CSR order): the arcs of node
    ``n`` are ``indptr[n]:indptr[n + 1]``.

    Attributes:
        graph: the undirected :class:`~pyromodels.data.Graph`.
        kind: ``"constant"``, ``"edge"`` or ``"node"``.
        src, dst: long ``(D,)`` arc sources and targets (``D = 2E``).
        weight: float64 ``(D,)``: the weight :math:`W_{src, dst}` that arc's source sees.
        indptr: long ``(N + 1,)`` CSR row pointer.
        edge_delta: float64 ``(E,)`` per listed edge (``None`` for ``kind="node"``).
        node_delta: float64 ``(N,)`` for ``kind="node"`` (else ``None``).

    Example:
        >>> from pyromodels.data import Graph
        >>> c = PottsCoupling.constant(Graph.from_edges([[0, 1], [1, 2]], num_nodes=3), 2.0)
        >>> potts_energy(c, torch.tensor([0, 0, 1])).item()  # one disagreeing edge: delta / 2
        1.0
    """

    graph: Graph
    kind: str
    src: torch.Tensor
    dst: torch.Tensor
    weight: torch.Tensor
    indptr: torch.Tensor
    edge_delta: torch.Tensor | None = None
    node_delta: torch.Tensor | None = None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def _build(cls, graph: Graph, kind: str, edge_delta=None, node_delta=None) -> PottsCoupling:
        n, e = graph.num_nodes, graph.num_edges
        arcs = graph.arcs()
        edge_id = torch.arange(e, device=graph.device).repeat(2)
        order = torch.argsort(arcs[0] * n + arcs[1])
        src, dst, edge_id = arcs[0][order], arcs[1][order], edge_id[order]
        indptr = torch.zeros(n + 1, dtype=torch.long, device=graph.device)
        indptr[1:] = torch.cumsum(torch.bincount(src, minlength=n), 0)
        weight = edge_delta[edge_id] if node_delta is None else node_delta[src]
        return cls(graph, kind, src, dst, weight, indptr, edge_delta, node_delta)

    @classmethod
    def constant(cls, graph: Graph, delta: float) -> PottsCoupling:
        """One coupling ``delta >= 0`` on every edge."""
        _check_graph(graph)
        delta = _check_delta_scalar(delta)
        edge_delta = torch.full((graph.num_edges,), delta, dtype=torch.float64, device=graph.device)
        return cls._build(graph, "constant", edge_delta=edge_delta)

    @classmethod
    def per_edge(cls, graph: Graph, delta) -> PottsCoupling:
        """Coupling ``delta[e] >= 0`` for edge ``graph.edges[e]``; ``delta`` has shape ``(E,)``."""
        d = _check_delta_tensor(delta, "delta", graph.num_edges, "the number of edges", graph)
        return cls._build(graph, "edge", edge_delta=d)

    @classmethod
    def per_node(cls, graph: Graph, delta) -> PottsCoupling:
        """Node-dependent coupling ``delta[n] >= 0`` (local energies only; see the module notes).

        ``delta`` has shape ``(N,)``.
        """
        d = _check_delta_tensor(delta, "delta", graph.num_nodes, "the number of nodes", graph)
        return cls._build(graph, "node", node_delta=d)

    # ------------------------------------------------------------------ views
    @property
    def num_nodes(self) -> int:
        """Number of nodes ``N``."""
        return self.graph.num_nodes

    @property
    def device(self) -> torch.device:
        return self.src.device

    @property
    def is_symmetric(self) -> bool:
        """Whether the coupling is a pairwise MRF (``kind`` ``"constant"`` or ``"edge"``)."""
        return self.kind != "node"

    def symmetrized(self) -> PottsCoupling:
        r"""The per-edge coupling :math:`\delta_{ij} = (\delta_i + \delta_j)/2` for a node
        coupling; a symmetric coupling is returned as it is."""
        if self.is_symmetric:
            return self
        edges = self.graph.edges
        return PottsCoupling.per_edge(
            self.graph, 0.5 * (self.node_delta[edges[:, 0]] + self.node_delta[edges[:, 1]])
        )

    @cached_property
    def weighted_degree(self) -> torch.Tensor:
        """float64 ``(N,)``: :math:`d^\\delta_n = \\sum_{n'} W_{nn'}`."""
        out = torch.zeros(self.num_nodes, dtype=torch.float64, device=self.device)
        return out.index_add_(0, self.src, self.weight)

    def to(self, device) -> PottsCoupling:
        """A copy on ``device``."""
        move = {name: getattr(self, name) for name in ("edge_delta", "node_delta")}
        move = {k: (v.to(device) if v is not None else None) for k, v in move.items()}
        return PottsCoupling(self.graph.to(device), self.kind, self.src.to(device),
                             self.dst.to(device), self.weight.to(device),
                             self.indptr.to(device), **move)

    @cached_property
    def csr_numpy(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(indptr, indices, weights, wdeg)`` as NumPy arrays for the CPU kernels."""
        return (
            self.indptr.cpu().numpy().astype(np.int64),
            self.dst.cpu().numpy().astype(np.int64),
            self.weight.cpu().numpy().astype(np.float64),
            self.weighted_degree.cpu().numpy().astype(np.float64),
        )

    @cached_property
    def colors(self) -> torch.Tensor:
        """long ``(N,)``: a greedy proper colouring (no edge joins two nodes of one colour)."""
        return greedy_coloring(self)

    @cached_property
    def color_classes(self) -> tuple[ColorClass, ...]:
        """One :class:`ColorClass` per colour, in colour order."""
        return split_by_color(self.colors, self.src, self.dst, self.weight)

    def __repr__(self) -> str:
        return (f"PottsCoupling(kind={self.kind!r}, num_nodes={self.num_nodes}, "
                f"num_edges={self.graph.num_edges})")


def greedy_coloring(coupling: PottsCoupling, backend: str = "auto") -> torch.Tensor:
    """long ``(N,)``: the greedy proper colouring of the coupling's graph (node ``n``, in code
    order, takes the smallest colour none of its lower-coded neighbours has), on the kernel
    that ``backend`` names (:func:`loop_backend`)."""
    kernel = (gauss_seidel.greedy_coloring if loop_backend(backend) == "numba"
              else gauss_seidel.greedy_coloring_py)
    indptr, indices, _, _ = coupling.csr_numpy
    return torch.from_numpy(kernel(indptr, indices)).to(coupling.device)


def _check_graph(graph) -> None:
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a pyromodels.data.Graph, got {type(graph).__name__}")
    if not graph.symmetric:
        raise ValueError("graph must be undirected (symmetric=True): the Potts model "
                         "couples each edge in both directions")


def _check_delta_scalar(delta) -> float:
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(f"delta must be a real number >= 0, got {type(delta).__name__} {delta!r}")
    return check_positive(delta, "delta", strict=False)


def _check_delta_tensor(delta, name, size, what, graph) -> torch.Tensor:
    _check_graph(graph)
    d = as_float_tensor(delta, name, ndim=1, dtype=torch.float64, device=graph.device,
                        allow_empty=True)
    if d.shape[0] != size:
        raise ValueError(f"{name} must have shape ({size},) ({what}), got {tuple(d.shape)}")
    if d.numel() and float(d.min()) < 0:
        raise ValueError(f"{name} must be >= 0 everywhere, found {float(d.min())}")
    return d


def check_delta(delta):
    """Validate a coupling specification: ``"M"``, ``"node"``, a real number ``>= 0`` (returned
    as a float) or a :class:`PottsCoupling`."""
    if isinstance(delta, PottsCoupling):
        return delta
    if isinstance(delta, str):
        return check_in(delta, "delta", ("M", "node"))
    if isinstance(delta, numbers.Real) and not isinstance(delta, bool):
        return _check_delta_scalar(delta)
    raise TypeError(f"delta must be 'M', 'node', a real number >= 0 or a PottsCoupling, "
                    f"got {type(delta).__name__} {delta!r}")


def resolve_coupling(graph: Graph, delta, table=None) -> PottsCoupling:
    """The coupling named by ``delta`` for ``graph`` (and the annotation ``table``).

    Args:
        graph: undirected graph on the items.
        delta: ``"M"`` (the number of workers of ``table``: the paper's default), ``"node"``
            (:math:`\\delta_n = M_n / 2` with :math:`M_n` the number of labels of item ``n``:
            the paper's crowdsourcing sets), a real number ``>= 0``, or a
            :class:`PottsCoupling` on the same number of nodes.
        table: an :class:`~pyromodels.data.AnnotationTable`, needed for ``"M"`` and ``"node"``.
    """
    delta = check_delta(delta)
    if isinstance(delta, PottsCoupling):
        same = delta.num_nodes == graph.num_nodes and torch.equal(
            delta.graph.edges.cpu(), graph.edges.cpu())
        if not same:
            raise ValueError(f"delta is a coupling on another graph ({delta.num_nodes} nodes, "
                             f"{delta.graph.num_edges} edges) than the data's ({graph.num_nodes} "
                             f"nodes, {graph.num_edges} edges)")
        return delta
    if isinstance(delta, float):
        return PottsCoupling.constant(graph, delta)
    if table is None:
        raise ValueError(f"delta={delta!r} needs the annotation table")
    if delta == "M":
        return PottsCoupling.constant(graph, table.num_workers)
    return PottsCoupling.per_node(graph, table.counts_per_item().to(torch.float64) / 2)


def check_log_emissions(log_b, num_nodes: int | None = None) -> torch.Tensor:
    """Raise unless ``log_b`` is a floating ``(N, K)`` tensor, ``K >= 2``, with no NaN or
    ``+inf`` and a finite entry in every row (``-inf`` marks an impossible class)."""
    if not isinstance(log_b, torch.Tensor) or not log_b.is_floating_point():
        raise TypeError(f"log_b must be a floating torch tensor (N, K), got {type(log_b).__name__}")
    if log_b.dim() != 2:
        raise ValueError(f"log_b must be 2-dimensional (N, K), got shape {tuple(log_b.shape)}")
    if log_b.shape[1] < 2:
        raise ValueError(f"log_b must have K >= 2 classes, got shape {tuple(log_b.shape)}")
    if num_nodes is not None and log_b.shape[0] != num_nodes:
        raise ValueError(f"log_b must have one row per node ({num_nodes}), got {log_b.shape[0]}")
    if bool(torch.isnan(log_b).any()) or bool((log_b == float("inf")).any()):
        raise ValueError("log_b must not contain NaN or +inf")
    bad = ~torch.isfinite(log_b).any(-1)
    if bool(bad.any()):
        raise ValueError(
            f"log_b gives every class probability zero for {int(bad.sum())} item(s) (e.g. item "
            f"{int(torch.nonzero(bad)[0])}); smooth the confusion matrices")
    return log_b


def weighted_label_counts(pos: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor,
                          size: int, num_classes: int, dtype: torch.dtype) -> torch.Tensor:
    """``(size, K)``: ``out[p, k] = sum of weight[a] over arcs a with pos[a] = p and
    labels[a] = k`` (one ``bincount``)."""
    flat = torch.bincount(pos * num_classes + labels, weights=weight.to(dtype),
                          minlength=size * num_classes)
    return flat.to(dtype).reshape(size, num_classes)


def _agreement(pos, dst, weight, size, labels, num_classes, dtype) -> torch.Tensor:
    """``(size, K)``: :math:`\\sum_a W_a q_{dst_a k}` summed per ``pos[a]``, for hard labels
    ``(N,)`` or soft ``q`` ``(N, K)``."""
    if not labels.is_floating_point():
        return weighted_label_counts(pos, labels[dst], weight, size, num_classes, dtype)
    out = torch.zeros(size, num_classes, dtype=dtype, device=labels.device)
    return out.index_add_(0, pos, weight.to(dtype).unsqueeze(-1) * labels[dst])


def local_energies(coupling: PottsCoupling, labels: torch.Tensor, num_classes: int | None = None,
                   dtype: torch.dtype | None = None, color_class: ColorClass | None = None):
    r"""Local energies :math:`U_n(k)` for every node and class, ``(N, K)``.

    Args:
        coupling: the Potts coupling.
        labels: long ``(N,)`` hard labels, or floating ``(N, K)`` label probabilities ``q``
            (then :math:`\tfrac12 \sum_{n'} W_{nn'} (1 - q_{n'k})`, the mean-field energy).
        num_classes: ``K`` (required for hard labels).
        dtype: result dtype (default: ``q``'s, or the default dtype for hard labels).
        color_class: only the nodes of this colour class (rows in ``color_class.nodes``
            order).
    """
    if labels.is_floating_point():
        num_classes, dtype = labels.shape[-1], labels.dtype
    elif num_classes is None:
        raise ValueError("num_classes is required with hard labels")
    dtype = dtype or torch.get_default_dtype()
    wdeg = coupling.weighted_degree.to(dtype)
    if color_class is None:
        agree = _agreement(coupling.src, coupling.dst, coupling.weight, coupling.num_nodes,
                           labels, num_classes, dtype)
    else:
        c = color_class
        agree = _agreement(c.arc_pos, c.arc_dst, c.arc_weight, len(c.nodes), labels,
                           num_classes, dtype)
        wdeg = wdeg[c.nodes]
    return 0.5 * (wdeg.unsqueeze(-1) - agree)


def conditional_logits(coupling: PottsCoupling, log_b: torch.Tensor, labels: torch.Tensor):
    r"""Unnormalised log full conditionals :math:`-U_n(k) + \log b_n(k)` (eq. 31), ``(N, K)``,
    with the neighbours at ``labels`` (hard ``(N,)`` or soft ``(N, K)``)."""
    return log_b - local_energies(coupling, labels, log_b.shape[-1], log_b.dtype)


def _require_symmetric(coupling: PottsCoupling) -> None:
    if not coupling.is_symmetric:
        raise ValueError(
            "a node-dependent coupling defines only local energies, not a total energy U(y); "
            "use coupling.symmetrized() (delta_ij = (delta_i + delta_j) / 2) for one"
        )


def potts_energy(coupling: PottsCoupling, labels: torch.Tensor,
                 dtype: torch.dtype | None = None) -> torch.Tensor:
    r""":math:`U(y) = \tfrac12 \sum_{e \in E} \delta_e [y_i \ne y_j]` for labels ``(..., N)``;
    returns ``(...)`` in ``dtype`` (default: the default dtype). Needs a symmetric coupling."""
    _require_symmetric(coupling)
    edges = coupling.graph.edges
    dtype = dtype or torch.get_default_dtype()
    differ = labels[..., edges[:, 0]] != labels[..., edges[:, 1]]
    return 0.5 * (differ.to(dtype) * coupling.edge_delta.to(dtype)).sum(-1)


def total_energy(coupling: PottsCoupling, log_b: torch.Tensor, labels: torch.Tensor):
    r""":math:`E(y) = U(y) - \sum_n \log b_n(y_n)` for labels ``(..., N)``; returns ``(...)``.

    ``E`` is the negative log posterior of the labels up to a constant; Gauss-Seidel ICM never
    increases it. Needs a symmetric coupling.
    """
    nodes = torch.arange(log_b.shape[0], device=log_b.device)
    return potts_energy(coupling, labels, log_b.dtype) - log_b[nodes, labels].sum(-1)
