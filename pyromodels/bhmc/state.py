r"""The state of a BHMC chain: the tree, the node weights by node id, the components and labels.

A :class:`BHMCState` holds

- ``tree``: a :class:`~pyromodels.bnp.Tree` of depth ``L`` with every datum seated (the paths
  :math:`v_n`);
- ``weights``: ``{node id: (K,) float64}``, :math:`\beta_z` for every living node, the root
  included (rows of the simplex, last cell the leftover stick of the truncated GEM root);
- ``theta``: ``(K, D)`` component means :math:`\theta_k`;
- ``c``: ``(N,)`` int64 component labels :math:`c_n \in \{0, \dots, K-1\}`.

Weights are kept by the tree's stable node ids, so a node's :math:`\beta_z` survives births and
deaths of other nodes; :func:`node_arrays` gives the ``(ids, parent)`` index form that
:mod:`pyromodels.bnp.hdp` works on.

Example:
    >>> import torch
    >>> from pyromodels.bnp import Tree
    >>> tree = Tree.from_paths([[0, 1, 2], [0, 3, 4]])
    >>> ids, parent = node_arrays(tree)
    >>> ids, parent.tolist()
    ((0, 1, 2, 3, 4), [-1, 0, 1, 0, 3])
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..bnp import Tree
from ..checks import as_float_tensor, as_label_tensor
from .prior import BHMCPrior

__all__ = ["BHMCState", "node_arrays", "check_state"]


def node_arrays(tree: Tree) -> tuple[tuple[int, ...], torch.Tensor]:
    """The living nodes' ids (ascending) and their parents as indices into those ids.

    Returns:
        ``(ids, parent)``: a tuple of ``M`` node ids and an ``(M,)`` int64 tensor holding each
        node's parent's position in ``ids`` (-1 for the root).
    """
    ids = tree.nodes
    pos = {z: i for i, z in enumerate(ids)}
    parent = [-1 if z == tree.root else pos[tree.parent(z)] for z in ids]
    return ids, torch.tensor(parent, dtype=torch.int64)


@dataclass
class BHMCState:
    """One state of the BHMC chain (module docstring).

    Attributes:
        tree: the tree, every datum seated.
        weights: ``{node id: (K,) float64}`` for every living node.
        theta: ``(K, D)`` float64 component means.
        c: ``(N,)`` int64 component labels.
    """

    tree: Tree
    weights: dict
    theta: torch.Tensor
    c: torch.Tensor

    @property
    def num_components(self) -> int:
        return int(self.theta.shape[0])

    def copy(self) -> BHMCState:
        """An independent copy (tree, weight dict and tensors copied)."""
        return BHMCState(self.tree.copy(), {z: w.clone() for z, w in self.weights.items()},
                         self.theta.clone(), self.c.clone())

    def weight_matrix(self) -> tuple[tuple[int, ...], torch.Tensor, torch.Tensor]:
        """``(ids, parent, W)``: :func:`node_arrays` and the ``(M, K)`` weights in ``ids``'s order."""
        ids, parent = node_arrays(self.tree)
        return ids, parent, torch.stack([self.weights[z] for z in ids])

    def leaf_weights(self) -> torch.Tensor:
        """``(N, K)``: each datum's leaf weights :math:`\\beta_{v_{nL}}`."""
        ids, _ = node_arrays(self.tree)
        return torch.stack([self.weights[z] for z in ids])[self._leaf_positions(ids)]

    def _leaf_positions(self, ids) -> torch.Tensor:
        """``(N,)`` each datum's leaf as a position in ``ids``."""
        pos = {z: i for i, z in enumerate(ids)}
        return torch.tensor([pos[z] for z in self.tree.paths[:, -1].tolist()], dtype=torch.int64)

    def leaf_counts(self) -> tuple[tuple[int, ...], torch.Tensor, torch.Tensor]:
        """``(ids, parent, counts)``: ``counts[i, k]`` data at node ``ids[i]`` with label ``k``
        (non-zero at leaves only; the ``counts`` argument of
        :func:`~pyromodels.bnp.resample_tree_weights`)."""
        ids, parent = node_arrays(self.tree)
        pos = self._leaf_positions(ids)
        counts = torch.zeros(len(ids), self.num_components, dtype=torch.int64)
        counts.index_put_((pos, self.c), torch.ones_like(self.c), accumulate=True)
        return ids, parent, counts


def check_state(state, x: torch.Tensor | None = None) -> BHMCState:
    """Check that ``state`` is a complete :class:`BHMCState` (and matches ``x`` when given).

    Raises:
        TypeError: ``state`` is not a ``BHMCState``; ``tree`` is not a ``Tree``.
        ValueError: unseated data, a living node without weights (or weights of a dead node),
            weights of the wrong shape or off the simplex, ``theta`` or ``c`` of the wrong
            shape, labels outside ``[0, K)``, ``x`` of the wrong shape.
    """
    if not isinstance(state, BHMCState):
        raise TypeError(f"state must be a BHMCState, got {type(state).__name__}")
    tree = state.tree
    if not isinstance(tree, Tree):
        raise TypeError(f"state.tree must be a pyromodels.bnp.Tree, got {type(tree).__name__}")
    if not bool(tree.seated.all()):
        raise ValueError("state.tree must seat every datum (found unseated data)")
    theta = as_float_tensor(state.theta, "state.theta", ndim=2)
    K = theta.shape[0]
    if K < 2:
        raise ValueError(f"state.theta must have K >= 2 rows, got {K}")
    c = as_label_tensor(state.c, "state.c", num_classes=K)
    if c.shape[0] != tree.num_points:
        raise ValueError(f"state.c must have shape ({tree.num_points},), got {tuple(c.shape)}")
    if not isinstance(state.weights, dict) or set(state.weights) != set(tree.nodes):
        have = sorted(state.weights) if isinstance(state.weights, dict) else state.weights
        raise ValueError(f"state.weights must map exactly the living nodes {list(tree.nodes)} "
                         f"to (K,) weights, got keys {have}")
    for z, w in state.weights.items():
        if not isinstance(w, torch.Tensor) or tuple(w.shape) != (K,) or not w.is_floating_point():
            raise ValueError(f"state.weights[{z}] must be a ({K},) floating tensor")
        if bool((w < 0).any()) or abs(float(w.sum()) - 1.0) > 1e-6:
            raise ValueError(f"state.weights[{z}] must be a point of the simplex")
    if x is not None and (x.dim() != 2 or x.shape[0] != tree.num_points
                          or x.shape[1] != theta.shape[1]):
        raise ValueError(f"x must have shape ({tree.num_points}, {theta.shape[1]}) to match the "
                         f"state, got {tuple(x.shape)}")
    return state


def check_inputs(x, state, prior) -> tuple[torch.Tensor, BHMCState, BHMCPrior]:
    """``(x, state, prior)`` checked together: ``x`` as an ``(N, D)`` float64 tensor, a state
    for these data with the prior's depth and number of components, a :class:`BHMCPrior`."""
    if not isinstance(prior, BHMCPrior):
        raise TypeError(f"prior must be a BHMCPrior, got {type(prior).__name__}")
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    state = check_state(state, x)
    if state.tree.depth != prior.depth or state.num_components != prior.num_components:
        raise ValueError(f"state must have depth {prior.depth} and {prior.num_components} "
                         f"components like the prior, got depth {state.tree.depth} and "
                         f"{state.num_components}")
    return x, state, prior

