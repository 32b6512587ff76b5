r"""Margin violations kept up to date under path and discriminant moves (RBHMC's fast path).

:func:`~pyromodels.bhmc.joint.margin_violations` recomputes every datum's worst violation
:math:`\zeta_n = \max_{l, z \in S(v_{nl})} \varepsilon_0 - (\eta_{v_{nl}} - \eta_z)^\top x_n`
(eq. 2) in :math:`O(NM)`. A datum's :math:`\zeta_n` reads only the nodes on its path, their
sibling sets and those nodes' :math:`\eta`, so one move changes few of them:

- moving datum ``n``'s path changes sibling sets only where a node is born or dies: the data
  that pass through the parent of the highest born node and of the highest dead node (and
  ``n`` itself) are the only ones to recompute (:func:`path_move_rows`);
- changing :math:`\eta_z` touches exactly the data through ``z``'s parent (``z`` is on their
  path or a sibling of a node on it; :func:`node_rows`).

:class:`MarginCache` holds :math:`(\zeta, s_{n1}, s_{n2})` for every datum as numpy arrays and
recomputes chosen rows (:meth:`MarginCache.compute`) level by level, one small matrix product
per parent node. Ties go, as in ``margin_violations``, to the shallowest level and then the
smallest node id (children are kept in ascending id order). The values equal the full
recomputation up to rounding of the dot products.

Example:
    >>> import torch
    >>> from pyromodels.bnp import Tree
    >>> x = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
    >>> tree = Tree.from_paths([[0, 1], [0, 2]])
    >>> eta = {1: torch.tensor([0.5], dtype=torch.float64), 2: torch.tensor([-0.5], dtype=torch.float64)}
    >>> cache = MarginCache(x, tree, eta, eps0=1.0)
    >>> cache.zeta.tolist(), cache.level.tolist(), cache.node.tolist()
    ([0.0, 0.0], [1, 1], [2, 1])
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..bnp import Tree

__all__ = ["MarginCache", "path_move_rows", "node_rows", "log_kernel", "kernel_log_ratio"]

_LOG_2PI = math.log(2.0 * math.pi)


def _as_np(value) -> np.ndarray:
    if isinstance(value, torch.Tensor) and value.dtype == torch.float64 and value.device.type == "cpu":
        return value.detach().numpy()
    return np.asarray(torch.as_tensor(value, dtype=torch.float64).detach().cpu())


def log_kernel(lam: np.ndarray, zeta: np.ndarray, level: np.ndarray, C: float) -> np.ndarray:
    r""":math:`\log K(\lambda_n; \tilde\zeta_n)` with :math:`\tilde\zeta_n = 0` where
    ``level < 0`` (the numpy twin of
    :func:`~pyromodels.bhmc.augmentation.polson_scott_log_kernel`)."""
    eff = np.where(level >= 0, zeta, 0.0)
    return -0.5 * (np.log(lam) + _LOG_2PI) - (C * eff + lam) ** 2 / (2.0 * lam)


def kernel_log_ratio(lam: np.ndarray, new: tuple, old: tuple, C: float) -> float:
    r""":math:`\sum_n \log K(\lambda_n; \tilde\zeta'_n) - \log K(\lambda_n; \tilde\zeta_n)`
    for ``new = (zeta', level')`` and ``old = (zeta, level)`` (the :math:`\log(2\pi\lambda)`
    terms cancel; one datum is summed in plain floats)."""
    if lam.shape[0] == 1:
        lam0 = float(lam[0])
        e_new = float(new[0][0]) if new[1][0] >= 0 else 0.0
        e_old = float(old[0][0]) if old[1][0] >= 0 else 0.0
        return ((C * e_old + lam0) ** 2 - (C * e_new + lam0) ** 2) / (2.0 * lam0)
    e_new = np.where(new[1] >= 0, new[0], 0.0)
    e_old = np.where(old[1] >= 0, old[0], 0.0)
    return float((((C * e_old + lam) ** 2 - (C * e_new + lam) ** 2) / (2.0 * lam)).sum())


def node_rows(paths: np.ndarray, tree: Tree, z: int) -> np.ndarray:
    """Ascending indices of the data whose :math:`\\zeta` can depend on :math:`\\eta_z`: those
    passing through ``z``'s parent."""
    lv = tree.level(z)
    return np.flatnonzero(paths[:, lv - 1] == tree.parent(z))


def path_move_rows(paths: np.ndarray, edit) -> np.ndarray:
    """Ascending indices of the data whose :math:`\\zeta` a path move ``edit`` (a
    :class:`~pyromodels.bnp.PathEdit`, applied; ``paths`` after it) can change: the moved
    datum and every datum through the parent of the highest born or dead node."""
    mask = np.zeros(paths.shape[0], dtype=bool)
    mask[edit.datum] = True
    for changed, path in ((edit.born, edit.new_path), (edit.died, edit.old_path)):
        if changed and path is not None:
            lv = path.index(changed[0])
            mask |= paths[:, lv - 1] == path[lv - 1]
    return np.flatnonzero(mask)


class MarginCache:
    r"""Every datum's worst margin violation, kept in step with the tree and :math:`\eta`.

    Args:
        x: ``(N, D)`` float64 data.
        tree: the :class:`~pyromodels.bnp.Tree` (every datum seated).
        eta: ``{node id: (D,)}`` for every living non-root node.
        eps0: the margin :math:`\varepsilon_0`.

    The cache assumes that an :math:`\eta` is replaced (``eta[z] = new``), never changed in
    place, as the samplers do.

    Attributes:
        zeta: ``(N,)`` float64 :math:`\zeta_n` (``-inf`` without a constraint).
        level: ``(N,)`` int64 :math:`s_{n1}` (-1 without a constraint).
        node: ``(N,)`` int64 :math:`s_{n2}` (-1 without a constraint).
    """

    def __init__(self, x, tree: Tree, eta: dict, eps0: float):
        self.x = np.ascontiguousarray(_as_np(x))
        self.eps0 = float(eps0)
        self._stacks: dict = {}
        self.zeta, self.level, self.node = self.compute(tree, eta, None)

    def _siblings(self, tree: Tree, eta: dict, p: int) -> tuple[tuple[int, ...], np.ndarray]:
        """``p``'s children (ascending) and their :math:`\\eta` stacked ``(m, D)`` (``None`` for
        fewer than two children), reused while the children and their :math:`\\eta` tensors
        are the same objects."""
        kids = tree.children(p)
        if len(kids) < 2:
            return kids, None
        hit = self._stacks.get(p)
        if hit is not None and hit[0] == kids and all(a is eta[k] for a, k in zip(hit[1], kids)):
            return kids, hit[2]
        tensors = tuple(eta[k] for k in kids)
        stacked = np.stack([_as_np(t) for t in tensors])
        self._stacks[p] = (kids, tensors, stacked)
        return kids, stacked

    def compute(self, tree: Tree, eta: dict, rows, paths: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(zeta, level, node)`` of the data ``rows`` (all when ``None``) under ``tree`` and
        ``eta``, without changing the cache (``paths``: ``tree.paths`` as numpy, if at hand)."""
        if rows is not None and len(rows) == 1:
            return self._one(tree, eta, int(rows[0]))
        if paths is None:
            paths = tree.paths.numpy()
        if rows is None:
            rows = np.arange(paths.shape[0])
        P, X = paths[rows], self.x[rows]
        R = P.shape[0]
        zeta = np.full(R, -math.inf)
        level = np.full(R, -1, dtype=np.int64)
        node = np.full(R, -1, dtype=np.int64)
        for lv in range(1, tree.depth + 1):
            par, own = P[:, lv - 1], P[:, lv]
            for p in np.unique(par).tolist():
                kids, E = self._siblings(tree, eta, p)
                if E is None:
                    continue
                g = np.flatnonzero(par == p)
                score = X[g] @ E.T  # (|g|, m): eta_k^T x_n over the siblings k
                j = np.searchsorted(np.asarray(kids), own[g])
                ar = np.arange(g.shape[0])
                cand = self.eps0 - (score[ar, j][:, None] - score)
                cand[ar, j] = -math.inf
                arg = cand.argmax(1)  # first maximum: the smallest sibling id
                best = cand[ar, arg]
                better = best > zeta[g]
                hit = g[better]
                zeta[hit] = best[better]
                level[hit] = lv
                node[hit] = np.asarray(kids)[arg[better]]
        return zeta, level, node

    def _one(self, tree: Tree, eta: dict, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`compute` for the single datum ``n`` (the common case of a path move that
        opens and closes no node), walking its path without copying the tree's paths."""
        path = tree.path(n)
        xn = self.x[n]
        best, best_lv, best_node = -math.inf, -1, -1
        for lv in range(1, len(path)):
            kids, E = self._siblings(tree, eta, path[lv - 1])
            if E is None:
                continue
            score = E @ xn
            j = kids.index(path[lv])
            cand = self.eps0 - (score[j] - score)
            cand[j] = -math.inf
            a = int(cand.argmax())
            if cand[a] > best:
                best, best_lv, best_node = float(cand[a]), lv, kids[a]
        return (np.array([best]), np.array([best_lv], dtype=np.int64),
                np.array([best_node], dtype=np.int64))

    def update(self, rows: np.ndarray, values) -> None:
        """Write ``values = (zeta, level, node)`` of :meth:`compute` for ``rows`` into the cache."""
        self.zeta[rows], self.level[rows], self.node[rows] = values

    def effective(self) -> torch.Tensor:
        r"""``(N,)`` :math:`\tilde\zeta_n`: :math:`\zeta_n`, or 0 without a constraint."""
        return torch.from_numpy(np.where(self.level >= 0, self.zeta, 0.0))
