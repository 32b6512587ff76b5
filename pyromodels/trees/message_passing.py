r"""Exact inference in a latent tree model with Gaussian pouch leaves, batched over points.

For points :math:`z` (``(N, J)``) everything is vectorised over the points with one loop over
the tree's nodes, on the device and in the dtype of the parameters, and is differentiable
(autograd gives :math:`\partial \log p(z) / \partial z`, the paper's Eq. 6, and the gradient
with respect to :math:`\Theta`). Spec ``ltvae.md`` §3.2:

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

How it is computed: every pass works state-major, a node's terms laid out ``(K_j, N)`` (the
public results are transposed views), so that each product with a small CPT runs over long
contiguous rows (on the CPU about twice as fast as over ``(N, K)`` rows of two to ten
numbers). The leaf terms of each node come from two matrix products over its whitened
coordinates (:func:`_gaussian_groups`); each message is
:math:`\log(e^{\beta_c - \max \beta_c} A_c^\top) + \max \beta_c` (a product of non-negative
terms, exact to rounding, :func:`_fast_collect`); the distribute pass runs on probabilities
(:func:`tree_posterior`). Points where a CPT entry of zero or near zero could make a message
underflow are flagged and recomputed by the straightforward ``logsumexp`` passes
(:func:`_log_space`).

The leaf terms are most of a pass on a wide table. When only some pouches' parameters change
between passes over the same points (local EM), :func:`known_leaves` sums the others' terms
per node once and :func:`posterior_given_leaves` computes only the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..checks import as_float_tensor
from .params import TreeParams

_LOG_2PI = math.log(2 * math.pi)
#: the most coordinates whose pouches one whitening product takes together
_GROUP_WIDTH = 8

__all__ = [
    "TreePosterior",
    "prepare_points",
    "leaf_log_densities",
    "tree_log_likelihood",
    "tree_posterior",
    "tree_map",
    "KnownLeaves",
    "known_leaves",
    "posterior_given_leaves",
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


def _gaussian_groups(params: TreeParams, zt: torch.Tensor, groups) -> list[torch.Tensor]:
    r"""Summed Gaussian log densities of groups of pouches, two matrix products per group,
    at points ``zt`` laid out ``(J, N)`` (a transposed view of prepared points).

    Every pouch of a group has the same latent parent (``K`` states); together they cover
    ``D`` coordinates. With :math:`W_k` the block-diagonal :math:`L_{b,k}^{-1}` over the
    group's pouches and :math:`c_k = W_k \mu_k`, the whitened point :math:`W_k z - c_k` of
    every state comes from one ``addmm`` over ``(K D, D) @ (D, N)``, and a second ``addmm``
    sums its squares per state and adds :math:`-\sum \log \operatorname{diag} L - \tfrac{D}{2}
    \log 2\pi`. Returns one ``(K, N)`` tensor per group.
    """
    tree = params.tree
    opts = {"dtype": zt.dtype, "device": zt.device}
    out = []
    for group in groups:
        block = [c for b in group for c in tree.pouches[b]]
        width, k = len(block), params.means[group[0]].shape[0]
        if block == list(range(block[0], block[0] + width)):
            coords = zt[block[0]:block[0] + width]  # a view: no copy
        else:
            coords = zt.index_select(0, torch.as_tensor(block, device=zt.device))
        rows, shifts, const, offset = [], [], zt.new_zeros(k), 0
        for b in group:
            tril, d = params.scale_trils[b], len(tree.pouches[b])
            rhs = torch.cat([torch.eye(d, **opts).expand(k, d, d),
                             params.means[b].unsqueeze(-1)], dim=-1)
            sol = torch.linalg.solve_triangular(tril, rhs, upper=False)  # (K, d, d + 1)
            # rows[r, k, c] = (L^{-1})[k, c, r], placed at the pouch's columns c
            rows.append(F.pad(sol[..., :d].permute(2, 0, 1), (offset, width - offset - d)))
            shifts.append(sol[..., d])
            const = const - tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) - 0.5 * d * _LOG_2PI
            offset += d
        whiten = torch.cat(rows, dim=0).reshape(width, k * width)  # (D, K D)
        shift = torch.cat(shifts, dim=1).reshape(k * width, 1)
        reduce = torch.eye(k, **opts).repeat_interleave(width, dim=0).mul_(-0.5)  # (K D, K)
        white = torch.addmm(-shift, whiten.T, coords)  # (K D, N)
        out.append(torch.addmm(const.unsqueeze(1), reduce.T, white.square_()))
    return out


def leaf_log_densities(params: TreeParams, z: torch.Tensor) -> tuple[torch.Tensor, ...]:
    r"""Per pouch ``b``, :math:`\lambda_b(k) = \log N(z_b; \mu_{b,k}, \Sigma_{b,k})`,
    ``(N, K_{\pi(b)})``, for prepared points ``z`` (:func:`prepare_points`)."""
    groups = [(b,) for b in range(len(params.tree.pouches))]
    return tuple(t.T for t in _gaussian_groups(params, z.T, groups))


def _node_leaf_terms(params: TreeParams, zt: torch.Tensor, pouches=None,
                     known: KnownLeaves | None = None) -> list[torch.Tensor | None]:
    r"""Per latent node :math:`\sum_{b \to j} \lambda_b`, state-major ``(K_j, N)``
    (``None`` for a node without pouches), at points ``zt`` laid out ``(J, N)``.

    A node's pouches are taken together in groups of at most :data:`_GROUP_WIDTH`
    coordinates (a wider pouch alone): the whitening product of a group costs its width
    squared per state, so one group over many small pouches would waste most of its work
    on the zeros between blocks.

    With ``pouches`` (a set of pouch indices) the sums run over those pouches only; with
    ``known`` they run over the pouches it lacks and start from its terms (which are not
    modified).
    """
    tree = params.tree
    if known is not None:
        pouches = set(range(len(tree.pouches))) - known.pouches
    groups, owners = [], []
    for j, under in enumerate(tree.leaves):
        width = _GROUP_WIDTH  # start a new group at the first pouch
        for b in under:
            if pouches is not None and b not in pouches:
                continue
            d = len(tree.pouches[b])
            if width + d > _GROUP_WIDTH:
                groups.append([])
                owners.append(j)
                width = 0
            groups[-1].append(b)
            width += d
    terms: list[torch.Tensor | None] = (
        [None] * tree.num_latents if known is None
        else [None if t is None else t.T for t in known.terms])
    for j, term in zip(owners, _gaussian_groups(params, zt, groups)):
        # ``term`` is new: adding into it leaves a known term as it was
        terms[j] = term if terms[j] is None else term.add_(terms[j])
    return terms


@dataclass(frozen=True)
class KnownLeaves:
    r"""The leaf terms of some pouches for fixed points, computed once (:func:`known_leaves`)
    and reused by :func:`posterior_given_leaves` while those pouches' parameters stay as
    they were (local EM holds every pouch outside its part).

    Attributes:
        pouches: the pouch indices covered.
        terms: per latent node ``j``, :math:`\sum_b \lambda_b` over the covered pouches under
            ``j``, ``(N, K_j)``, or ``None`` where none is.
    """

    pouches: frozenset[int]
    terms: tuple[torch.Tensor | None, ...]

    def rows(self, index: torch.Tensor) -> KnownLeaves:
        """The same terms for the points ``index`` only."""
        return KnownLeaves(self.pouches, tuple(None if t is None else t[index]
                                               for t in self.terms))


def known_leaves(params: TreeParams, z, pouches) -> KnownLeaves:
    """The leaf terms of ``pouches`` (pouch indices of ``params.tree``) at points ``z``
    (``(N, J)``, checked by :func:`prepare_points`), summed per latent node.

    Raises:
        ValueError: an index that names no pouch.
    """
    z = prepare_points(params, z)
    pouches = frozenset(pouches)
    count = len(params.tree.pouches)
    bad = sorted(b for b in pouches if not (isinstance(b, int) and 0 <= b < count))
    if bad:
        raise ValueError(f"pouches must be pouch indices below {count}, got {bad}")
    terms = _node_leaf_terms(params, z.T, pouches)
    return KnownLeaves(pouches, tuple(None if t is None else t.T for t in terms))


def _check_known(params: TreeParams, z: torch.Tensor, known: KnownLeaves) -> None:
    tree = params.tree
    if not isinstance(known, KnownLeaves):
        raise TypeError(f"known must be KnownLeaves, got {type(known).__name__}")
    if len(known.terms) != tree.num_latents:
        raise ValueError(f"known holds terms of {len(known.terms)} latent nodes, the tree "
                         f"has {tree.num_latents}")
    for j, t in enumerate(known.terms):
        shape = (z.shape[0], tree.cardinalities[j])
        if t is not None and tuple(t.shape) != shape:
            raise ValueError(f"known's term of latent node {tree.names[j]!r} has shape "
                             f"{tuple(t.shape)}, expected {shape}")


def _collect(params: TreeParams, leaf: list, like: torch.Tensor, send):
    """The upward (collect) pass, children before parents.

    State-major: node ``j``'s :math:`\\beta_j` (``(K_j, N)``; ``like`` is any ``(., N)``
    tensor) is its leaf term plus its children's messages; ``send(j, beta_j)`` returns
    ``(message to the parent, what to keep of j)``.
    Terms are dropped from ``leaf`` and messages once used, so that memory is released early.

    Returns:
        ``(beta_root, kept)``, ``kept`` a list by node (``None`` at the root).
    """
    tree = params.tree
    msg: list[torch.Tensor | None] = [None] * tree.num_latents
    kept: list = [None] * tree.num_latents
    for j in reversed(tree.order):
        beta, leaf[j] = leaf[j], None
        for c in tree.children[j]:
            beta = msg[c] if beta is None else beta + msg[c]
            msg[c] = None
        if beta is None:  # no pouches and no latent children
            beta = like.new_zeros(tree.cardinalities[j], like.shape[1])
        if tree.parents[j] is None:
            return beta, kept
        msg[j], kept[j] = send(j, beta)
    raise AssertionError("the breadth-first order starts at the root")


def _fast_collect(params: TreeParams, leaf: list, like: torch.Tensor):
    r"""The upward pass by shifted exponentials and matrix products.

    A message is :math:`m(k') = \log s(k') + \max_k \beta(k)` with :math:`v = e^{\beta -
    \max \beta}` and :math:`s = A v` (state-major). Every term of :math:`s` is a product of
    non-negative numbers, so :math:`s` is exact up to rounding unless terms are too small to
    be represented: those below the dtype's ``tiny`` are lost, at most ``K tiny`` in all,
    which is below rounding while :math:`s \ge` ``tiny / eps``. As the largest :math:`v` is
    1, :math:`s(k') \ge A[k', \arg\max \beta]`: a smaller :math:`s` needs a CPT entry below
    ``tiny / eps`` (about ``1e-292`` in float64), zero in practice. The points where it occurs
    are flagged in the returned ``(N,)`` mask, to be recomputed in log space
    (:func:`_log_space`), and their ``s`` is clamped so that values and gradients stay
    finite.

    Returns:
        ``(beta_root, kept, flagged)``; ``kept[j] = (v_j, s_j)``.
    """
    info = torch.finfo(like.dtype)
    floor = info.tiny / info.eps
    lowest: list[torch.Tensor] = []

    def send(j, beta):
        top = beta.amax(0, keepdim=True)
        v = (beta - top).exp_()
        s = params.cpts[j] @ v
        lowest.append(s.min())
        return s.clamp_min_(floor).log().add_(top), (v, s)

    beta_root, kept = _collect(params, leaf, like, send)
    flagged = None
    if lowest and bool(torch.stack(lowest).min() < floor):  # rare: no cost otherwise
        flagged = torch.stack([(kept[j][1] <= floor).any(0) for j in range(len(kept))
                               if kept[j] is not None]).any(0)
    return beta_root, kept, flagged


def _log_space(params: TreeParams, z: torch.Tensor, marginals: bool,
               known: KnownLeaves | None = None):
    """The straightforward log-space passes (``logsumexp`` over ``(N, K', K)`` terms), exact
    for any parameters but slower: for the points :func:`_fast_collect` flags.

    Returns:
        ``(log_p, nodes, edges)`` laid out as :class:`TreePosterior`'s fields (``nodes`` and
        ``edges`` ``None`` unless ``marginals``).
    """
    tree = params.tree
    zt = z.T
    log_a = [None if a is None else a.log().unsqueeze(-1) for a in params.cpts]  # (K', K, 1)

    def send(j, beta):
        msg = torch.logsumexp(log_a[j] + beta.unsqueeze(0), dim=1)
        return msg, (beta, msg)

    beta_root, kept = _collect(params, _node_leaf_terms(params, zt, known=known), zt, send)
    root = tree.root
    log_rho = params.root_probs.log().unsqueeze(1)
    log_p = torch.logsumexp(log_rho + beta_root, dim=0)
    if not marginals:
        return log_p, None, None
    beta = [beta_root if j == root else kept[j][0] for j in range(tree.num_latents)]
    alpha: list[torch.Tensor | None] = [None] * tree.num_latents
    alpha[root] = log_rho.expand_as(beta_root)
    edges: list[torch.Tensor | None] = [None] * tree.num_latents
    for j in tree.order[1:]:
        p = tree.parents[j]
        outside = alpha[p] + beta[p] - kept[j][1]  # (K_p, N): all but j's subtree
        through = outside.unsqueeze(1) + log_a[j]  # (K_p, K_j, N)
        alpha[j] = torch.logsumexp(through, dim=0)
        edges[j] = (through + (beta[j] - log_p).unsqueeze(0)).exp().permute(2, 0, 1)
    nodes = [(alpha[j] + beta[j] - log_p).exp().T for j in range(tree.num_latents)]
    return log_p, nodes, edges


def _patch(fast: torch.Tensor | None, rows: torch.Tensor, exact: torch.Tensor | None):
    """``fast`` with the given rows replaced by ``exact`` (differentiably)."""
    return None if fast is None else fast.index_put((rows,), exact)


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
    zt = prepare_points(params, z).T
    beta_root, _, flagged = _fast_collect(params, _node_leaf_terms(params, zt), zt)
    log_p = torch.logsumexp(params.root_probs.log().unsqueeze(1) + beta_root, dim=0)
    if flagged is not None:
        rows = flagged.nonzero().squeeze(1)
        log_p = _patch(log_p, rows, _log_space(params, zt.T[rows], marginals=False)[0])
    return log_p


def tree_posterior(params: TreeParams, z) -> TreePosterior:
    r"""Exact node and pairwise posterior marginals and :math:`\log p(z)` (collect then
    distribute).

    The distribute pass runs on probabilities: with :math:`v_j, s_j` of the upward pass
    (:func:`_fast_collect`), :math:`P(Y_j = k \mid Y_{\pi(j)} = k', z) = A_j[k', k] v_j(k) /
    s_j(k')`, so with :math:`w = P(Y_{\pi(j)} \mid z) / s_j` the node marginal is
    :math:`v_j \odot (w A_j)` and the pairwise marginal :math:`w(k') A_j[k', k] v_j(k)`.
    The marginals are transposed views of state-major tensors (``.contiguous()`` makes
    them row-major).

    Args:
        params: the parameters.
        z: points ``(N, J)``.

    Returns:
        A :class:`TreePosterior`.
    """
    return _posterior(params, prepare_points(params, z), None)


def posterior_given_leaves(params: TreeParams, z, known: KnownLeaves) -> TreePosterior:
    """:func:`tree_posterior` with the leaf terms of ``known.pouches`` taken from ``known``
    (:func:`known_leaves` at the same points under parameters with the same values of those
    pouches) and only the other pouches' computed: equal to :func:`tree_posterior` up to
    rounding.

    Raises:
        TypeError, ValueError: ``known`` is not :class:`KnownLeaves` of the tree's latent
            nodes for ``N`` points.
    """
    z = prepare_points(params, z)
    _check_known(params, z, known)
    return _posterior(params, z, known)


def _posterior(params: TreeParams, z: torch.Tensor, known: KnownLeaves | None) -> TreePosterior:
    tree = params.tree
    zt = z.T
    beta_root, kept, flagged = _fast_collect(params, _node_leaf_terms(params, zt, known=known),
                                             zt)
    joint = params.root_probs.log().unsqueeze(1) + beta_root
    log_p = torch.logsumexp(joint, dim=0)
    nodes: list[torch.Tensor | None] = [None] * tree.num_latents
    nodes[tree.root] = (joint - log_p).exp_()
    edges: list[torch.Tensor | None] = [None] * tree.num_latents
    for j in tree.order[1:]:
        (v, s), kept[j] = kept[j], None
        a = params.cpts[j]
        w = nodes[tree.parents[j]] / s
        nodes[j] = (a.T @ w).mul_(v)
        edges[j] = _pairwise(w, a, v).permute(2, 0, 1)
    nodes = [n.T for n in nodes]
    if flagged is not None:
        rows = flagged.nonzero().squeeze(1)
        exact = _log_space(params, z[rows], marginals=True,
                           known=None if known is None else known.rows(rows))
        log_p = _patch(log_p, rows, exact[0])
        nodes = [_patch(f, rows, e) for f, e in zip(nodes, exact[1])]
        edges = [_patch(f, rows, e) for f, e in zip(edges, exact[2])]
    return TreePosterior(log_p, tuple(nodes), tuple(edges))


def _pairwise(w: torch.Tensor, a: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``w[k', n] a[k', k] v[k, n]``, shape ``(K', K, N)`` (state-major ``w`` and ``v``): one
    matrix product whose every sum has a single non-zero term (so it is exact), giving
    ``a[k', k] v[k, n]`` laid out as ``(K' K, N)``, times ``w`` broadcast in place (on the
    CPU, much faster than broadcasting two factors over small dimensions)."""
    kp, kc = a.shape
    spread = torch.eye(kc, dtype=a.dtype, device=a.device).repeat(kp, 1) * a.reshape(-1, 1)
    return (spread @ v).view(kp, kc, -1).mul_(w.unsqueeze(1))


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
    log_a = [None if a is None else a.log().unsqueeze(-1) for a in params.cpts]  # (K', K, 1)

    def send(j, score):  # the best over the child's states, and which state it is: (K', N)
        best, arg = (log_a[j] + score.unsqueeze(0)).max(dim=1)
        return best, arg

    score_root, arg = _collect(params, _node_leaf_terms(params, z.T), z.T, send)
    root = tree.root
    log_joint, top = (params.root_probs.log().unsqueeze(1) + score_root).max(dim=0)
    states = torch.empty(z.shape[0], tree.num_latents, dtype=torch.long, device=z.device)
    states[:, root] = top
    for j in tree.order[1:]:
        parent_state = states[:, tree.parents[j]]
        states[:, j] = arg[j].gather(0, parent_state.unsqueeze(0)).squeeze(0)
    return states, log_joint
