r"""The nested Chinese restaurant process on a tree of fixed depth (BHMC's path prior).

Each datum walks from the root down ``L`` levels; at a node ``z`` holding :math:`N_z` earlier
data it enters an existing child :math:`z'` with probability :math:`N_{z'} / (N_z + \alpha)`
and opens a new child with probability :math:`\alpha / (N_z + \alpha)` (RBHMC paper, Alg. 1;
the paper's :math:`n + \alpha` denominator for the ``n``-th datum is off by one: taken
literally its probabilities do not sum to one, so there is no paper-literal variant). Once a
new node opens, every deeper node on the path is new. The probability of all paths is a
product of CRP partition probabilities, one per internal node (Fig. 2's
:math:`p(V \mid \alpha)`):

.. math::

    p(V \mid \alpha) = \prod_{z \in I_H} \frac{\Gamma(\alpha)\, \alpha^{m_z}}
        {\Gamma(N_z + \alpha)} \prod_{z' \in \mathrm{ch}(z)} \Gamma(N_{z'}),

with :math:`m_z` the number of children of ``z``. Given the other data's paths, datum ``n``'s
path has the prior conditional obtained by seating it last (exchangeability):
:func:`path_proposal` draws it (the Metropolis-Hastings proposal of Sec. 4.2), and
:func:`path_conditional_log_probs` lists every possible path with its probability.

Example:
    >>> import torch
    >>> from pyromodels.bnp import Tree
    >>> tree = Tree.from_paths([[0, 1, 2], [0, 1, 2]])
    >>> round(float(ncrp_log_prob(tree, 1.0).exp()), 6)  # (1 * 1/2) at each level
    0.25
    >>> paths, logp = path_conditional_log_probs(tree, 1, 1.0)
    >>> paths.tolist(), [round(p, 4) for p in logp.exp().tolist()]
    ([[0, 1, 2], [0, 1, -1], [0, -1, -1]], [0.25, 0.25, 0.5])
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ..checks import check_int
from .crp import check_concentration, check_torch_generator
from .tree import NEW, Tree

__all__ = ["ncrp_log_prob", "sample_ncrp_paths", "path_proposal", "path_conditional_log_probs",
           "PathProposal"]


class PathProposal(NamedTuple):
    """A path drawn by :func:`path_proposal`.

    Attributes:
        path: ``(L + 1,)`` int64: the root, nodes that live without the datum, then
            :data:`~pyromodels.bnp.tree.NEW` markers (-1) for the nodes to open.
        log_prob: 0-dim float64, the log probability of drawing it.
    """

    path: torch.Tensor
    log_prob: torch.Tensor


def _check_tree(tree) -> Tree:
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be a pyromodels.bnp.Tree, got {type(tree).__name__}")
    return tree


def ncrp_log_prob(tree: Tree, alpha) -> torch.Tensor:
    r"""Log nested-CRP probability of the seated data's paths, :math:`\log p(V \mid \alpha)`.

    Args:
        tree: the :class:`~pyromodels.bnp.Tree` (unseated data are left out).
        alpha: concentration (> 0).

    Returns:
        0-dim float64 tensor (0 when no datum is seated).

    Example:
        >>> from pyromodels.bnp import Tree
        >>> tree = Tree.from_paths([[0, 1, 2], [0, 3, 4]])
        >>> round(float(ncrp_log_prob(tree, 2.0).exp()), 6)  # 2 / (1 + 2) at level 1
        0.666667
    """
    tree = _check_tree(tree)
    alpha = check_concentration(alpha)
    lg_alpha, log_alpha = math.lgamma(alpha), math.log(alpha)
    terms = []
    for z in tree.internal_nodes:
        kids = tree.children(z)
        terms.append(lg_alpha + len(kids) * log_alpha - math.lgamma(tree.count(z) + alpha))
        terms.extend(math.lgamma(tree.count(c)) for c in kids)
    return torch.tensor(math.fsum(terms), dtype=torch.float64)


def _counts_without(tree: Tree, n: int):
    """``count(z)`` with datum ``n`` left out (nodes only ``n`` passes through get 0)."""
    own = tree.path(n)
    on_path = set(own) if own is not None else set()
    return lambda z: tree.count(z) - (z in on_path)


def _seat_walk(tree: Tree, count, alpha: float, uniforms: list[float]) -> tuple[list[int], float]:
    """Walk from the root choosing a child by inverse CDF; return (path, log probability)."""
    z = tree.root
    path, logq = [z], 0.0
    for lv in range(1, tree.depth + 1):
        if z == NEW:
            path.append(NEW)
            continue
        total = count(z) + alpha
        target, acc, choice = uniforms[lv - 1] * total, 0.0, NEW
        weight = alpha
        for c in tree.children(z):
            w = count(c)
            if w == 0:
                continue
            acc += w
            if target < acc:
                choice, weight = c, w
                break
        logq += math.log(weight) - math.log(total)
        path.append(choice)
        z = choice
    return path, logq


def sample_ncrp_paths(num_points: int, depth: int, alpha, generator: torch.Generator
                      ) -> torch.Tensor:
    """Seat ``num_points`` data one after another by the nested CRP.

    Args:
        num_points: ``N >= 1``.
        depth: ``L >= 1``.
        alpha: concentration (> 0).
        generator: ``torch.Generator`` giving the ``N * L`` uniforms used.

    Returns:
        ``(N, L + 1)`` int64 paths; the root is 0 and nodes are numbered in the order they
        open (:meth:`Tree.from_paths` rebuilds the tree).

    Example:
        >>> paths = sample_ncrp_paths(5, 2, 1.0, torch.Generator().manual_seed(0))
        >>> paths.shape, paths[0].tolist()
        (torch.Size([5, 3]), [0, 1, 2])
    """
    num_points = check_int(num_points, "num_points", minimum=1)
    depth = check_int(depth, "depth", minimum=1)
    alpha = check_concentration(alpha)
    check_torch_generator(generator)
    u = torch.rand(num_points, depth, dtype=torch.float64, generator=generator).tolist()
    tree = Tree(depth, num_points)
    for n in range(num_points):
        path, _ = _seat_walk(tree, tree.count, alpha, u[n])
        tree.add_path(n, path)
    return tree.paths


def path_proposal(tree: Tree, n: int, alpha, generator: torch.Generator) -> PathProposal:
    r"""Draw datum ``n``'s path from the nested CRP given every other datum's path.

    Datum ``n`` is left out (without changing ``tree``) and seated level by level with
    probabilities :math:`N^{-n}_{z'} / (N^{-n}_z + \alpha)` and :math:`\alpha / (N^{-n}_z +
    \alpha)`; nodes that only ``n`` passes through count as absent, so re-drawing ``n``'s own
    singleton branch shows as :data:`~pyromodels.bnp.tree.NEW` markers (BHMC Sec. 4.2,
    :math:`q(v'_n \mid v_n)`).

    Args:
        tree: the current tree (datum ``n`` seated or not).
        n: datum index.
        alpha: concentration (> 0).
        generator: ``torch.Generator`` giving the ``L`` uniforms used.

    Returns:
        :class:`PathProposal` ``(path, log_prob)``. To apply it:
        ``tree.move_path(n, proposal.path)`` (or ``add_path`` for an unseated datum), and
        ``tree.undo(edit)`` on rejection.

    Example:
        >>> from pyromodels.bnp import Tree
        >>> tree = Tree.from_paths([[0, 1, 2], [0, 1, 3]])
        >>> prop = path_proposal(tree, 1, 1.0, torch.Generator().manual_seed(0))
        >>> prop.path.tolist(), round(float(prop.log_prob.exp()), 4)
        ([0, -1, -1], 0.5)
    """
    tree = _check_tree(tree)
    n = check_int(n, "n", minimum=0, maximum=tree.num_points - 1)
    alpha = check_concentration(alpha)
    check_torch_generator(generator)
    u = torch.rand(tree.depth, dtype=torch.float64, generator=generator).tolist()
    path, logq = _seat_walk(tree, _counts_without(tree, n), alpha, u)
    return PathProposal(torch.tensor(path, dtype=torch.int64),
                        torch.tensor(logq, dtype=torch.float64))


def path_conditional_log_probs(tree: Tree, n: int, alpha) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Every possible path of datum ``n`` with its nested-CRP probability given the others.

    The options are each living leaf (through nodes other data pass through), and for each
    living node ``z`` above the leaves the path that opens a new child of ``z`` (then new nodes
    down to level ``L``). Their probabilities sum to one and equal
    :math:`p(V) / p(V^{-n})` for the tree with ``n`` on that path.

    Args:
        tree: the current tree (datum ``n`` seated or not).
        n: datum index.
        alpha: concentration (> 0).

    Returns:
        ``(paths, log_probs)``: ``(P, L + 1)`` int64 paths with -1 for new nodes, in
        depth-first order of the living nodes (a node's existing children before its new
        child), and ``(P,)`` float64 log probabilities.
    """
    tree = _check_tree(tree)
    n = check_int(n, "n", minimum=0, maximum=tree.num_points - 1)
    alpha = check_concentration(alpha)
    count = _counts_without(tree, n)
    depth = tree.depth
    paths: list[list[int]] = []
    logps: list[float] = []

    def visit(z: int, prefix: list[int], logp: float) -> None:
        lv = len(prefix) - 1
        if lv == depth:
            paths.append(prefix)
            logps.append(logp)
            return
        log_total = math.log(count(z) + alpha)
        for c in tree.children(z):
            if count(c) > 0:
                visit(c, prefix + [c], logp + math.log(count(c)) - log_total)
        paths.append(prefix + [NEW] * (depth - lv))
        logps.append(logp + math.log(alpha) - log_total)

    visit(tree.root, [tree.root], 0.0)
    return (torch.tensor(paths, dtype=torch.int64), torch.tensor(logps, dtype=torch.float64))
