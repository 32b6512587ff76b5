r"""Parameters for the tree a structure move produces, started close to the current model.

:func:`extend_params` maps a :class:`~pyromodels.trees.params.TreeParams` of a tree to
parameters of ``move.apply(tree)``, so that a candidate's local EM starts from the current
model rather than from scratch:

* ``SI`` splits the most probable state of the node (or ``move``'s choice) in two: half the
  mass each, the children's parameters copied; with ``noise=0`` the model is unchanged
  (an exact re-parameterisation); otherwise the copy's CPT rows are mixed with a random row
  and its pouch means shifted by ``noise`` standard deviations.
* ``SD`` drops a state (``move.state`` or the least probable one) and renormalises.
* ``PO`` joins two pouches into a Gaussian with a block-diagonal covariance: exact.
* ``UP`` keeps the marginals of the split-off coordinate and of the rest: exact when the
  coordinate is uncorrelated with the rest of its pouch.
* ``NI``, ``ND`` and ``NR``: every CPT whose edge is new is the current model's conditional
  :math:`P(Y_j \mid Y_{\text{new parent}})` along the tree path, a re-parented pouch gets the
  moment-matched Gaussian of its current mixture given the new parent, and the root prior is
  the current marginal of the (new) root. NI's new node is a copy of the node it comes from,
  its link to that node the identity mixed with a random CPT by ``noise`` (``noise=0``: an
  exact re-parameterisation). Nothing starts fresh.
"""

from __future__ import annotations

import torch

from .moves import (
    Move,
    NodeDeletion,
    NodeIntroduction,
    NodeRelocation,
    Pouching,
    StateDeletion,
    StateIntroduction,
    Unpouching,
)
from .params import TreeParams
from .structure import LatentTree

__all__ = ["extend_params", "latent_marginals", "latent_conditional"]


def latent_marginals(params: TreeParams) -> list[torch.Tensor]:
    """The prior marginal :math:`P(Y_j)` of each latent node, ``(K_j,)``.

    Example:
        >>> from pyromodels.trees import LatentTree
        >>> params = TreeParams.random(LatentTree([2, 3], [None, 0], [[0], [1]], [0, 1]))
        >>> [tuple(m.shape) for m in latent_marginals(params)]
        [(2,), (3,)]
    """
    tree = params.tree
    out: list = [None] * tree.num_latents
    for j in tree.order:
        p = tree.parents[j]
        out[j] = params.root_probs if p is None else out[p] @ params.cpts[j]
    return out


def latent_conditional(params: TreeParams, given: int, node: int,
                       marginals: list[torch.Tensor] | None = None) -> torch.Tensor:
    r""":math:`P(Y_{node} \mid Y_{given})`, ``(K_given, K_node)``, along the tree path (up
    by Bayes' rule, down by the CPTs); the identity if ``given == node``."""
    tree = params.tree
    m = latent_marginals(params) if marginals is None else marginals

    def ancestors(j):
        out = [j]
        while tree.parents[out[-1]] is not None:
            out.append(tree.parents[out[-1]])
        return out

    up, down = ancestors(given), ancestors(node)
    meet = next(a for a in up if a in down)
    result = torch.eye(tree.cardinalities[given], dtype=params.dtype, device=params.device)
    for c in up[:up.index(meet)]:  # P(parent | child) = P(parent) A[parent, child] / P(child)
        p = tree.parents[c]
        back = (params.cpts[c] * m[p].unsqueeze(1)).T
        back = back / back.sum(1, keepdim=True).clamp_min(torch.finfo(params.dtype).tiny)
        result = result @ back
    for c in reversed(down[:down.index(meet)]):
        result = result @ params.cpts[c]
    return result / result.sum(1, keepdim=True)


def _moment_match(weights: torch.Tensor, means: torch.Tensor, trils: torch.Tensor):
    """The Gaussian of each row's mixture ``sum_k weights[n, k] N(means[k], L_k L_k^T)``."""
    mean = weights @ means
    second = trils @ trils.transpose(-1, -2) + means.unsqueeze(-1) * means.unsqueeze(-2)
    cov = torch.einsum("nk,kij->nij", weights, second) - mean.unsqueeze(-1) * mean.unsqueeze(-2)
    return mean, torch.linalg.cholesky(0.5 * (cov + cov.transpose(-1, -2)))


def _random_rows(generator, rows: int, cols: int, like: torch.Tensor) -> torch.Tensor:
    g = torch._standard_gamma(torch.ones(rows, cols, dtype=torch.float64,
                                         device=generator.device), generator=generator)
    g = g.clamp_min(1e-12)
    return (g / g.sum(1, keepdim=True)).to(dtype=like.dtype, device=like.device)


def _mix(cpt: torch.Tensor, noise: float, generator) -> torch.Tensor:
    if noise == 0:
        return cpt
    return (1 - noise) * cpt + noise * _random_rows(generator, *cpt.shape, like=cpt)


def _state_intro(move: StateIntroduction, params: TreeParams, new: LatentTree, gen, noise):
    tree = params.tree
    j = tree.index(move.node)
    s = int(torch.argmax(latent_marginals(params)[j]))
    root, cpts = params.root_probs, list(params.cpts)
    means, trils = list(params.means), list(params.scale_trils)

    def split(probs):  # last axis: state s gives half its mass to the new state
        half = probs[..., s:s + 1] / 2
        return torch.cat([probs[..., :s], half, probs[..., s + 1:], half], -1)

    if tree.parents[j] is None:
        root = split(root)
    else:
        cpts[j] = split(cpts[j])
    for c in tree.children[j]:
        cpts[c] = torch.cat([cpts[c], _mix(cpts[c][s:s + 1], noise, gen)], 0)
    for b in tree.leaves[j]:
        shift = torch.randn(means[b].shape[1], generator=gen, dtype=torch.float64,
                            device=gen.device).to(means[b])
        std = (trils[b][s] ** 2).sum(1).sqrt()
        means[b] = torch.cat([means[b], (means[b][s] + noise * std * shift).unsqueeze(0)], 0)
        trils[b] = torch.cat([trils[b], trils[b][s:s + 1]], 0)
    return TreeParams(new, root, cpts, means, trils)


def _state_delete(move: StateDeletion, params: TreeParams, new: LatentTree, gen, noise):
    tree = params.tree
    j = tree.index(move.node)
    t = move.state if move.state is not None else int(torch.argmin(latent_marginals(params)[j]))
    keep = [k for k in range(tree.cardinalities[j]) if k != t]
    root, cpts = params.root_probs, list(params.cpts)

    def renormalise(probs):
        probs = probs[..., keep]
        total = probs.sum(-1, keepdim=True)
        return torch.where(total > 0, probs / total.clamp_min(torch.finfo(probs.dtype).tiny),
                           torch.full_like(probs, 1 / len(keep)))

    if tree.parents[j] is None:
        root = renormalise(root)
    else:
        cpts[j] = renormalise(cpts[j])
    for c in tree.children[j]:
        cpts[c] = cpts[c][keep]
    means = [m[keep] if tree.pouch_parents[b] == j else m for b, m in enumerate(params.means)]
    trils = [t_[keep] if tree.pouch_parents[b] == j else t_
             for b, t_ in enumerate(params.scale_trils)]
    return TreeParams(new, root, cpts, means, trils)


def _pouching(move: Pouching, params: TreeParams, new: LatentTree, gen, noise):
    tree = params.tree
    a, b = tree.pouches.index(tuple(move.first)), tree.pouches.index(tuple(move.second))
    joined_mean = torch.cat([params.means[a], params.means[b]], 1)
    joined_tril = torch.stack([torch.block_diag(x, y) for x, y in
                               zip(params.scale_trils[a], params.scale_trils[b])])
    means, trils = [], []
    for block in new.pouches:
        if block == tree.pouches[a] + tree.pouches[b]:
            means.append(joined_mean)
            trils.append(joined_tril)
        else:
            old = tree.pouches.index(block)
            means.append(params.means[old])
            trils.append(params.scale_trils[old])
    return TreeParams(new, params.root_probs, params.cpts, means, trils)


def _unpouching(move: Unpouching, params: TreeParams, new: LatentTree, gen, noise):
    tree = params.tree
    b = tree.pouches.index(tuple(move.pouch))
    cov = params.covariances[b]
    means, trils = [], []
    for block in new.pouches:
        if block in tree.pouches:
            old = tree.pouches.index(block)
            means.append(params.means[old])
            trils.append(params.scale_trils[old])
            continue
        pos = [tree.pouches[b].index(c) for c in block]
        sub = cov[:, pos][:, :, pos]
        means.append(params.means[b][:, pos])
        trils.append(torch.linalg.cholesky(0.5 * (sub + sub.transpose(-1, -2))))
    return TreeParams(new, params.root_probs, params.cpts, means, trils)


def _reconnect(move: Move, params: TreeParams, new: LatentTree, gen, noise):
    """NI, ND, NR: the current model's conditionals along each new edge."""
    tree = params.tree
    alias = {n: n for n in tree.names}
    fresh_edges = set()
    if isinstance(move, NodeIntroduction):
        alias[move.name] = move.node
        fresh_edges = {move.name, move.node}  # the link between the node and its copy
    old = {n: tree.index(alias[n]) for n in new.names}
    marg = latent_marginals(params)
    root = marg[old[new.names[new.root]]]
    cpts = []
    for name, p in zip(new.names, new.parents):
        if p is None:
            cpts.append(None)
            continue
        parent = new.names[p]
        if name in tree.names and tree.parents[old[name]] is not None and \
                tree.names[tree.parents[old[name]]] == alias[parent] and alias[name] == name:
            cpts.append(params.cpts[old[name]])
            continue
        cpt = latent_conditional(params, old[parent], old[name], marg)
        cpts.append(_mix(cpt, noise, gen) if {name, parent} == fresh_edges else cpt)
    means, trils = [], []
    for block, p in zip(new.pouches, new.pouch_parents):
        b = tree.pouches.index(block)
        was, now = tree.pouch_parents[b], old[new.names[p]]
        if was == now:
            means.append(params.means[b])
            trils.append(params.scale_trils[b])
        else:
            m, t = _moment_match(latent_conditional(params, now, was, marg), params.means[b],
                                 params.scale_trils[b])
            means.append(m)
            trils.append(t)
    return TreeParams(new, root, cpts, means, trils)


_CARRY = {StateIntroduction: _state_intro, StateDeletion: _state_delete, Pouching: _pouching,
          Unpouching: _unpouching, NodeIntroduction: _reconnect, NodeDeletion: _reconnect,
          NodeRelocation: _reconnect}


def extend_params(move: Move, params: TreeParams, generator: torch.Generator | None = None, *,
                  noise: float = 0.05) -> TreeParams:
    """Parameters for ``move.apply(params.tree)`` close to ``params`` (see the module
    docstring for each operator).

    Args:
        move: a move of :mod:`~pyromodels.trees.operators`.
        params: the current parameters.
        generator: the random stream for the perturbations (default: a fresh one seeded 0).
        noise: the size of the perturbation, in ``[0, 1)``; ``0`` makes SI and NI exact
            re-parameterisations.

    Returns:
        :class:`~pyromodels.trees.params.TreeParams` of the new tree, same dtype and device.

    Raises:
        TypeError: ``move`` is not a move or ``params`` not ``TreeParams``.
        ValueError: the move does not apply to ``params.tree``; ``noise`` outside ``[0, 1)``.

    Example:
        >>> from pyromodels.trees import LatentTree, Pouching, tree_log_likelihood
        >>> params = TreeParams.random(LatentTree.single(2, 2))
        >>> joined = extend_params(Pouching((0,), (1,)), params)
        >>> joined.tree.pouches
        ((0, 1),)
        >>> z = torch.zeros(1, 2, dtype=torch.float64)
        >>> bool(torch.allclose(tree_log_likelihood(joined, z), tree_log_likelihood(params, z)))
        True
    """
    if not isinstance(params, TreeParams):
        raise TypeError(f"params must be TreeParams, got {type(params).__name__}")
    if type(move) not in _CARRY:
        raise TypeError(f"move must be one of {[c.__name__ for c in _CARRY]}, got "
                        f"{type(move).__name__}")
    if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not 0 <= noise < 1:
        raise ValueError(f"noise must be a number in [0, 1), got {noise!r}")
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    new = move.apply(params.tree)
    with torch.no_grad():
        return _CARRY[type(move)](move, params.detach(), new, generator, float(noise))
