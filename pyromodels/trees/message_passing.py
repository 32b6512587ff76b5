r"""Exact inference in a latent tree model with Gaussian pouch leaves, batched over points.

For points :math:`z` (``(N, J)``) everything is computed in log space, vectorised over the
points with one loop over the tree's nodes, on the device and in the dtype of the parameters,
and is differentiable (autograd gives :math:`\partial \log p(z) / \partial z`, the paper's
Eq. 6, and the gradient with respect to :math:`\Theta`). Spec ``ltvae.md`` §3.2:

.. math::

    \lambda_b(k) &= \log N(z_b; \mu_{b,k}, \Sigma_{b,k}), \qquad
    \beta_j(k) = \sum_{b \to j} \lambda_b(k) + \sum_{c \to j} m_{c \to j}(k), \\
    m_{c \to j}(k') &= \log \sum_k A_c[k', k] e^{\beta_c(k)}, \qquad
    \log p(z) = \log \sum_k \rho_k e^{\beta_r(k)}, \\
    \alpha_r &= \log \rho, \qquad
    \alpha_c(k) = \log \sum_{k'} e^{\alpha_j(k') + \beta_j(k') - m_{c \to j}(k')} A_c[k', k].

Node marginals are :math:`e^{\alpha_j + \beta_j - \log p(z)}` and the pairwise marginal of
edge :math:`(j, c)` is :math:`e^{\alpha_j(k') + \beta_j(k') - m_{c\to j}(k') + \log A_c[k', k]
+ \beta_c(k) - \log p(z)}`: what an EM step for :math:`\Theta` needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..checks import as_float_tensor
from .params import TreeParams

__all__ = [
    "TreePosterior",
    "prepare_points",
    "leaf_log_densities",
    "tree_log_likelihood",
    "tree_posterior",
    "tree_map",
]


@dataclass(frozen=True)
class TreePosterior:
    """What exact inference returns for ``N`` points.

    Attributes:
        log_likelihood: :math:`\\log p(z_n)`, shape ``(N,)``.
        node_marginals: per latent node ``j``, :math:`P(Y_j = k \\mid z_n)`, ``(N, K_j)``.
        edge_marginals: per latent node ``j`` (``None`` at the root),
            :math:`P(Y_{\\pi(j)} = k', Y_j = k \\mid z_n)`, ``(N, K_{\\pi(j)}, K_j)``.
    """

    log_likelihood: torch.Tensor
    node_marginals: tuple[torch.Tensor, ...]
    edge_marginals: tuple[torch.Tensor | None, ...]

    def pouch_responsibilities(self, params: TreeParams) -> tuple[torch.Tensor, ...]:
        """Per pouch ``b``, :math:`P(Y_{\\pi(b)} = k \\mid z)`: its parent's node marginal."""
        return tuple(self.node_marginals[p] for p in params.tree.pouch_parents)


def prepare_points(params: TreeParams, z, name: str = "z") -> torch.Tensor:
    """Check points ``z`` against the parameters once: ``(N, J)`` with the tree's ``J``, finite,
    in the parameters' dtype and on their device.

    Array-likes (lists, numpy arrays) are converted to the parameters' dtype; a tensor of
    another floating dtype or on another device is an error (convert it yourself). A tensor
    that already fits is returned as it is, so gradients flow to it.
    """
    if not isinstance(params, TreeParams):
        raise TypeError(f"params must be TreeParams, got {type(params).__name__}")
    if isinstance(z, torch.Tensor):
        if z.is_floating_point() and z.dtype != params.dtype:
            raise ValueError(f"{name} has dtype {z.dtype}, the parameters' dtype is "
                             f"{params.dtype} (convert one with .to)")
        if z.device != params.device:
            raise ValueError(f"{name} is on {z.device}, the parameters are on {params.device}")
    z = as_float_tensor(z, name, ndim=2, dtype=params.dtype, device=params.device)
    params.tree.check_width(z.shape[1], name)
    return z


def _gaussian_log_density(x: torch.Tensor, mean: torch.Tensor, tril: torch.Tensor):
    """``log N(x_n; mean_k, L_k L_k^T)`` for ``x`` ``(N, d)``, ``mean`` ``(K, d)``, ``tril``
    ``(K, d, d)``; returns ``(N, K)``."""
    d = x.shape[-1]
    diff = (x.unsqueeze(-2) - mean).transpose(0, 1).unsqueeze(-1)  # (K, N, d, 1)
    white = torch.linalg.solve_triangular(tril.unsqueeze(1), diff, upper=False).squeeze(-1)
    half_logdet = tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)  # (K,)
    quad = white.pow(2).sum(-1).transpose(0, 1)  # (N, K)
    return -0.5 * quad - half_logdet - 0.5 * d * math.log(2 * math.pi)


def leaf_log_densities(params: TreeParams, z: torch.Tensor) -> tuple[torch.Tensor, ...]:
    r"""Per pouch ``b``, :math:`\lambda_b(k) = \log N(z_b; \mu_{b,k}, \Sigma_{b,k})`,
    ``(N, K_{\pi(b)})``, for prepared points ``z`` (:func:`prepare_points`)."""
    out = []
    for block, mean, tril in zip(params.tree.pouches, params.means, params.scale_trils):
        index = torch.as_tensor(block, device=z.device)
        out.append(_gaussian_log_density(z.index_select(1, index), mean, tril))
    return tuple(out)


def _upward(params: TreeParams, z: torch.Tensor):
    """Upward (collect) pass: ``beta`` per node ``(N, K_j)`` and ``msg`` per non-root node
    (its message to its parent, ``(N, K_parent)``)."""
    tree = params.tree
    leaf = leaf_log_densities(params, z)
    n = z.shape[0]
    beta: list[torch.Tensor | None] = [None] * tree.num_latents
    msg: list[torch.Tensor | None] = [None] * tree.num_latents
    for j in reversed(tree.order):
        b_j = z.new_zeros(n, tree.cardinalities[j])
        for b in tree.leaves[j]:
            b_j = b_j + leaf[b]
        for c in tree.children[j]:
            b_j = b_j + msg[c]
        beta[j] = b_j
        if tree.parents[j] is not None:
            log_a = params.cpts[j].log()
            msg[j] = torch.logsumexp(log_a.unsqueeze(0) + b_j.unsqueeze(1), dim=-1)
    return beta, msg


def tree_log_likelihood(params: TreeParams, z) -> torch.Tensor:
    r""":math:`\log p(z_n) = \log \sum_y p(z_n, y)` for each point, shape ``(N,)``.

    Args:
        params: the parameters (and through them the structure).
        z: points ``(N, J)``.

    Example:
        >>> from pyromodels.trees import LatentTree, TreeParams
        >>> params = TreeParams.random(LatentTree.single(2, 3))
        >>> tuple(tree_log_likelihood(params, torch.zeros(4, 3, dtype=torch.float64)).shape)
        (4,)
    """
    z = prepare_points(params, z)
    beta, _ = _upward(params, z)
    root = params.tree.root
    return torch.logsumexp(params.root_probs.log() + beta[root], dim=-1)


def tree_posterior(params: TreeParams, z) -> TreePosterior:
    r"""Exact node and pairwise posterior marginals and :math:`\log p(z)` (collect then
    distribute).

    Args:
        params: the parameters.
        z: points ``(N, J)``.

    Returns:
        A :class:`TreePosterior`.
    """
    z = prepare_points(params, z)
    tree = params.tree
    beta, msg = _upward(params, z)
    root = tree.root
    log_p = torch.logsumexp(params.root_probs.log() + beta[root], dim=-1)
    alpha: list[torch.Tensor | None] = [None] * tree.num_latents
    alpha[root] = params.root_probs.log().expand_as(beta[root])
    edges: list[torch.Tensor | None] = [None] * tree.num_latents
    for j in tree.order[1:]:
        p = tree.parents[j]
        outside = alpha[p] + beta[p] - msg[j]  # (N, K_p): all but j's subtree
        through = outside.unsqueeze(-1) + params.cpts[j].log()  # (N, K_p, K_j)
        alpha[j] = torch.logsumexp(through, dim=1)
        edges[j] = (through + (beta[j] - log_p.unsqueeze(-1)).unsqueeze(1)).exp()
    nodes = tuple((alpha[j] + beta[j] - log_p.unsqueeze(-1)).exp()
                  for j in range(tree.num_latents))
    return TreePosterior(log_p, nodes, tuple(edges))


def tree_map(params: TreeParams, z) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The most probable joint state :math:`\arg\max_y p(y \mid z_n)` by max-product.

    Args:
        params: the parameters.
        z: points ``(N, J)``.

    Returns:
        ``(states, log_joint)``: ``states`` ``(N, l)`` long, column ``j`` the state of latent
        node ``j``; ``log_joint`` ``(N,)``, :math:`\log p(z_n, y^*_n)`.
    """
    z = prepare_points(params, z)
    tree = params.tree
    leaf = leaf_log_densities(params, z)
    n = z.shape[0]
    best: list[torch.Tensor | None] = [None] * tree.num_latents
    arg: list[torch.Tensor | None] = [None] * tree.num_latents
    score: list[torch.Tensor | None] = [None] * tree.num_latents
    for j in reversed(tree.order):
        s = z.new_zeros(n, tree.cardinalities[j])
        for b in tree.leaves[j]:
            s = s + leaf[b]
        for c in tree.children[j]:
            s = s + best[c]
        score[j] = s
        if tree.parents[j] is not None:
            cand = params.cpts[j].log().unsqueeze(0) + s.unsqueeze(1)  # (N, K_p, K_j)
            best[j], arg[j] = cand.max(dim=-1)
    root = tree.root
    log_joint, top = (params.root_probs.log() + score[root]).max(dim=-1)
    states = torch.empty(n, tree.num_latents, dtype=torch.long, device=z.device)
    states[:, root] = top
    for j in tree.order[1:]:
        parent_state = states[:, tree.parents[j]]
        states[:, j] = arg[j].gather(1, parent_state.unsqueeze(1)).squeeze(1)
    return states, log_joint
