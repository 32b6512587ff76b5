r"""Finite HDP weight diffusion down a tree: prior draws, log density and a Gibbs update.

A tree of ``M`` nodes is given by ``parent``, an ``(M,)`` int64 tensor holding each node's
parent index and ``-1`` for the single root (any node order; a top-down order is computed).
Every node ``z`` carries weights :math:`\beta_z` over ``K`` cells (BHMC paper, Algorithm 1 and
Fig. 1):

.. math::

    \beta_{z_0} &\sim \mathrm{GEM}_K(\gamma_0): \quad o_k \sim \mathrm{Beta}(1, \gamma_0),\
        \beta_{z_0 k} = o_k \prod_{j<k} (1 - o_j)\ (k < K - 1),\
        \beta_{z_0, K-1} = \prod_{j<K-1} (1 - o_j), \\
    &\text{or } \beta_{z_0} \sim \mathrm{Dir}(\gamma_0 / K, \dots, \gamma_0 / K)
        \quad (\texttt{root="dirichlet"}), \\
    \beta_{z'} \mid \beta_z &\sim \mathrm{Dir}(\gamma \beta_z) \quad \text{for every edge }
        (z, z').

With ``root="gem"`` the last cell is the leftover mass :math:`\beta^*` (the probability of a
component not yet instantiated). Data sit in the nodes as component counts
:math:`n_{zk}` (``counts``, ``(M, K)``; in BHMC only leaves hold data) drawn as
:math:`c \sim \mathrm{Discrete}(\beta_z)`.

The Gibbs update (:func:`resample_tree_weights`) uses the HDP's auxiliary table counts. Let
:math:`m_z = n_z + \sum_{z' \text{ child of } z} t_{z'}` (a node's customers: its own data and
the tables its children send up). Define the augmented target

.. math::

    \pi(\beta, t) = p(\beta \mid \gamma_0, \gamma)\, p(n \mid \beta)
        \prod_{z \ne z_0} \mathrm{Antoniak}(t_z \mid m_z, \gamma \beta_{\mathrm{pa}(z)}),

a conditional extension of the posterior :math:`p(\beta \mid n)`, so its :math:`\beta`-marginal
is the posterior. Both blocks below are exact draws from :math:`\pi`'s conditionals, so a
sweep is a two-block Gibbs sampler that leaves :math:`\pi`, hence :math:`p(\beta \mid n)`,
invariant:

1. **Tables given weights, bottom-up** (:func:`sample_table_counts`): by construction of
   :math:`\pi`, :math:`t_{zk} \mid \beta, n \sim \mathrm{Antoniak}(m_{zk}, \gamma
   \beta_{\mathrm{pa}(z) k})` independently over :math:`k`, and :math:`m_z` needs only the
   tables of :math:`z`'s children, so deepest nodes go first.
2. **Weights given tables, top-down** (:func:`sample_weights_given_tables`). By the chain
   rule, :math:`\pi(\beta \mid t, n)` is drawn exactly by drawing the root, then each node given
   its ancestors, each with its descendants integrated out. Integrate a subtree out from the
   bottom: for a child :math:`z'` of :math:`z`, using :math:`\Gamma(a + m)/\Gamma(a) =
   \sum_t s(m, t) a^t`, the integral of :math:`\mathrm{Dir}(\beta_{z'}; \gamma \beta_z)
   \prod_k \beta_{z'k}^{m_{z'k}}` times :math:`z'`'s Antoniak factor is
   :math:`\Gamma(\gamma)/\Gamma(\gamma + |m_{z'}|) \prod_k s(m_{z'k}, t_{z'k}) (\gamma
   \beta_{zk})^{t_{z'k}}` (the Antoniak normaliser cancels), i.e. :math:`\propto \prod_k
   \beta_{zk}^{t_{z'k}}`; with :math:`z`'s own data this gives :math:`\prod_k
   \beta_{zk}^{m_{zk}}`, and by induction every subtree reduces so. Hence :math:`\beta_z \mid
   \text{ancestors}, t, n \sim \mathrm{Dir}(\gamma \beta_{\mathrm{pa}(z)} + m_z)` (its own
   Antoniak factor does not involve :math:`\beta_z`), and the root's conditional is its prior
   times :math:`\prod_k \beta_{z_0 k}^{m_{z_0 k}}`: :math:`\mathrm{Dir}(\gamma_0 / K +
   m_{z_0})`, or for the GEM root :math:`o_k \sim \mathrm{Beta}(1 + m_{z_0 k}, \gamma_0 +
   \sum_{j > k} m_{z_0 j})` (the truncated stick prior is conjugate to these counts).

Numerics. Dirichlet and Beta draws are normalised Gamma draws made in log space
(:mod:`pyromodels.conjugate.random`); a weight below the smallest normal float64
(``2.2e-308``) is stored as that float, so that it stays a valid concentration.

Example:
    >>> import torch
    >>> parent = torch.tensor([-1, 0, 0])
    >>> g = torch.Generator().manual_seed(0)
    >>> w = sample_tree_weights(parent, 4, 1.0, 2.0, g)
    >>> w.shape, bool(torch.allclose(w.sum(-1), torch.ones(3, dtype=torch.float64)))
    (torch.Size([3, 4]), True)
    >>> counts = torch.tensor([[0, 0, 0, 0], [5, 0, 1, 0], [0, 3, 0, 0]])
    >>> resample_tree_weights(parent, counts, w, 1.0, 2.0, g).shape
    torch.Size([3, 4])
"""

from __future__ import annotations

import torch

from ..checks import check_in, check_int
from ..conjugate.random import sample_beta, sample_log_gamma
from .antoniak import sample_tables
from .crp import check_concentration, check_torch_generator

__all__ = [
    "tree_levels",
    "sample_tree_weights",
    "tree_weights_log_prob",
    "sample_table_counts",
    "sample_weights_given_tables",
    "resample_tree_weights",
]

_ROOTS = ("gem", "dirichlet")
_TINY = torch.finfo(torch.float64).tiny


def _check_parent(parent) -> torch.Tensor:
    if not isinstance(parent, torch.Tensor):
        raise TypeError(f"parent must be an int64 tensor of node indices, got {type(parent).__name__}")
    if parent.dtype != torch.int64:
        raise TypeError(f"parent must be an int64 tensor of node indices, got dtype {parent.dtype}")
    if parent.dim() != 1 or parent.numel() == 0:
        raise ValueError(f"parent must have shape (M,) with M >= 1, got {tuple(parent.shape)}")
    m = parent.numel()
    if int(parent.min()) < -1 or int(parent.max()) >= m:
        raise ValueError(f"parent must hold node indices in [0, {m}) or -1 for the root")
    roots = int((parent == -1).sum())
    if roots != 1:
        raise ValueError(f"parent must mark exactly one root with -1, got {roots}")
    return parent.cpu()


def tree_levels(parent: torch.Tensor) -> list[torch.Tensor]:
    """Node indices grouped by depth: ``levels[d]`` holds the nodes at depth ``d`` (root: 0).

    Args:
        parent: ``(M,)`` int64 parent indices, ``-1`` for the single root.

    Returns:
        list of int64 index tensors (ascending within a level), one per depth.

    Raises:
        ValueError: ``'parent must describe a tree'`` when a node does not reach the root (a
            cycle), and the shape and root checks of the other functions.

    Example:
        >>> [lv.tolist() for lv in tree_levels(torch.tensor([2, -1, 1, 1]))]
        [[1], [2, 3], [0]]
    """
    parent = _check_parent(parent)
    depth = torch.full_like(parent, -1)
    depth[parent == -1] = 0
    levels = [torch.nonzero(parent == -1).flatten()]
    while True:
        frontier = torch.nonzero(torch.isin(parent, levels[-1]) & (depth == -1)).flatten()
        if frontier.numel() == 0:
            break
        depth[frontier] = len(levels)
        levels.append(frontier)
    if bool((depth == -1).any()):
        raise ValueError("parent must describe a tree: some nodes do not reach the root (a cycle)")
    return levels


def _check_weights(weights, m: int, name: str = "weights") -> torch.Tensor:
    if not isinstance(weights, torch.Tensor) or not weights.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor of shape (M, K)")
    if weights.dim() != 2 or weights.shape[0] != m or weights.shape[1] < 2:
        raise ValueError(f"{name} must have shape (M, K) = ({m}, K >= 2), got {tuple(weights.shape)}")
    if not bool(torch.isfinite(weights).all()) or bool((weights < 0).any()):
        raise ValueError(f"{name} must be finite and >= 0")
    if not torch.allclose(weights.sum(-1).double(), torch.ones(m, dtype=torch.float64), atol=1e-6):
        raise ValueError(f"{name} rows must sum to 1 (each is a point of the simplex)")
    return weights.to(torch.float64)


def _check_counts(counts, m: int, k: int, name: str) -> torch.Tensor:
    if not isinstance(counts, torch.Tensor) or counts.is_floating_point() or counts.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor of shape (M, K)")
    if tuple(counts.shape) != (m, k):
        raise ValueError(f"{name} must have shape (M, K) = ({m}, {k}), got {tuple(counts.shape)}")
    if bool((counts < 0).any()):
        raise ValueError(f"{name} must be >= 0")
    return counts.to(torch.int64).cpu()


def _dirichlet(concentration: torch.Tensor, generator) -> torch.Tensor:
    """Rows of Dirichlet draws, normalised in log space, floored at the smallest normal float."""
    log_g = sample_log_gamma(concentration.clamp_min(_TINY), generator)
    return torch.softmax(log_g, dim=-1).clamp_min(_TINY)


def _root_draw(m_root: torch.Tensor, k: int, gamma0: float, root: str, generator) -> torch.Tensor:
    """The root's weights given its customer counts ``m_root`` (zeros: a prior draw)."""
    m_root = m_root.to(torch.float64)
    if root == "dirichlet":
        return _dirichlet(gamma0 / k + m_root, generator)
    tail = torch.flip(torch.cumsum(torch.flip(m_root, [0]), 0), [0])  # sum_{j >= k} m_j
    o = sample_beta(1.0 + m_root[:-1], gamma0 + tail[1:], generator)
    log_rest = torch.cat([torch.zeros(1, dtype=torch.float64), torch.cumsum(torch.log1p(-o), 0)])
    log_beta = log_rest + torch.cat([torch.log(o), torch.zeros(1, dtype=torch.float64)])
    beta = torch.exp(log_beta).clamp_min(_TINY)
    return beta / beta.sum()


def sample_tree_weights(parent, K: int, gamma0, gamma, generator: torch.Generator,
                        root: str = "gem") -> torch.Tensor:
    """Draw all node weights from the prior, top-down.

    Args:
        parent: ``(M,)`` int64 parent indices, ``-1`` for the root.
        K: number of cells (>= 2); with ``root="gem"`` the last is the leftover mass.
        gamma0: root concentration (> 0).
        gamma: child concentration (> 0).
        generator: CPU ``torch.Generator``.
        root: ``"gem"`` (truncated stick breaking) or ``"dirichlet"`` (``Dir(gamma0 / K)``).

    Returns:
        ``(M, K)`` float64 weights, each row on the simplex with entries > 0.

    Example:
        >>> sample_tree_weights(torch.tensor([-1, 0]), 3, 1.0, 1.0,
        ...                     torch.Generator().manual_seed(0), root="dirichlet").shape
        torch.Size([2, 3])
    """
    levels = tree_levels(parent)
    K = check_int(K, "K", minimum=2)
    counts = torch.zeros(parent.numel(), K, dtype=torch.int64)
    return _top_down(parent.cpu(), levels, counts, K, gamma0, gamma, generator, root)


def _top_down(parent, levels, m, K, gamma0, gamma, generator, root) -> torch.Tensor:
    gamma0 = check_concentration(gamma0, "gamma0")
    gamma = check_concentration(gamma, "gamma")
    check_in(root, "root", _ROOTS)
    check_torch_generator(generator)
    weights = torch.empty(parent.numel(), K, dtype=torch.float64)
    weights[levels[0]] = _root_draw(m[levels[0][0]], K, gamma0, root, generator)
    for nodes in levels[1:]:
        weights[nodes] = _dirichlet(gamma * weights[parent[nodes]] + m[nodes], generator)
    return weights


def tree_weights_log_prob(parent, weights, gamma0, gamma, root: str = "gem") -> torch.Tensor:
    r"""Log prior of the weights: :math:`\log p(o \mid \gamma_0) + \log p(B^- \mid \gamma)` (BHMC
    paper, Fig. 2).

    With ``root="gem"`` the root factor is the density of the sticks
    :math:`o_k = \beta_{z_0 k} / \sum_{j \ge k} \beta_{z_0 j}` (``k < K - 1``) under
    :math:`\mathrm{Beta}(1, \gamma_0)`, as in the paper's :math:`p(o \mid \gamma_0)` (a density
    in :math:`o`, not in :math:`\beta_{z_0}`); with ``root="dirichlet"`` it is
    :math:`\log \mathrm{Dir}(\beta_{z_0}; \gamma_0 / K)`. Every edge adds
    :math:`\log \mathrm{Dir}(\beta_{z'}; \gamma \beta_z)`.

    Args:
        parent: ``(M,)`` int64 parent indices, ``-1`` for the root.
        weights: ``(M, K)`` rows on the simplex; a zero entry makes the density infinite
            (``+inf`` or ``-inf``) unless its concentration is exactly 1.
        gamma0: root concentration (> 0).
        gamma: child concentration (> 0).
        root: ``"gem"`` or ``"dirichlet"``.

    Returns:
        0-dim float64 tensor.

    Example:
        >>> w = torch.tensor([[0.5, 0.5], [0.5, 0.5]], dtype=torch.float64)
        >>> round(float(tree_weights_log_prob(torch.tensor([-1, 0]), w, 1.0, 2.0)), 6)  # Beta(1,1)
        0.0
    """
    levels = tree_levels(parent)
    w = _check_weights(weights, parent.numel())
    gamma0 = check_concentration(gamma0, "gamma0")
    gamma = check_concentration(gamma, "gamma")
    check_in(root, "root", _ROOTS)
    K = w.shape[1]
    b0 = w[levels[0][0]]
    if root == "dirichlet":
        a0 = torch.full((K,), gamma0 / K, dtype=torch.float64)
        total = _dirichlet_log_density(b0, a0)
    else:
        tail = torch.flip(torch.cumsum(torch.flip(b0, [0]), 0), [0])
        o = b0[:-1] / tail[:-1]
        total = ((K - 1) * torch.log(torch.tensor(gamma0, dtype=torch.float64))
                 + ((gamma0 - 1.0) * torch.log1p(-o)).sum())
    children = torch.nonzero(parent.cpu() != -1).flatten()
    if children.numel():
        total = total + _dirichlet_log_density(w[children], gamma * w[parent.cpu()[children]]).sum()
    return total


def _dirichlet_log_density(x: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    return (torch.lgamma(alpha.sum(-1)) - torch.lgamma(alpha).sum(-1)
            + torch.xlogy(alpha - 1.0, x).sum(-1))


@torch.no_grad()
def sample_table_counts(parent, counts, weights, gamma, generator: torch.Generator):
    r"""Step 1 of the update: auxiliary table counts, bottom-up.

    For every non-root node, deepest first, :math:`t_{zk} \sim \mathrm{Antoniak}(m_{zk}, \gamma
    \beta_{\mathrm{pa}(z) k})` with :math:`m_z = n_z + \sum_{\text{children}} t_{z'}`.

    Args:
        parent: ``(M,)`` int64 parent indices, ``-1`` for the root.
        counts: ``(M, K)`` integer data counts per node and cell (zero rows for internal nodes
            in BHMC).
        weights: ``(M, K)`` current weights (rows on the simplex).
        gamma: child concentration (> 0).
        generator: CPU ``torch.Generator``.

    Returns:
        ``(tables, customers)``: two ``(M, K)`` int64 tensors, ``t_z`` (zero for the root) and
        ``m_z`` (the root's row holds the table counts its children send up plus its own data).

    Example:
        >>> t, m = sample_table_counts(torch.tensor([-1, 0]), torch.tensor([[0, 0], [3, 0]]),
        ...                            torch.full((2, 2), 0.5, dtype=torch.float64), 1.0,
        ...                            torch.Generator().manual_seed(0))
        >>> int(t[1, 1]), int(m[0, 0]) == int(t[1, 0]) >= 1
        (0, True)
    """
    levels = tree_levels(parent)
    parent = parent.cpu()
    w = _check_weights(weights, parent.numel())
    n = _check_counts(counts, parent.numel(), w.shape[1], "counts")
    gamma = check_concentration(gamma, "gamma")
    check_torch_generator(generator)
    customers = n.clone()
    tables = torch.zeros_like(n)
    for nodes in reversed(levels[1:]):
        conc = (gamma * w[parent[nodes]]).clamp_min(_TINY)
        t = sample_tables(customers[nodes], conc, generator)
        tables[nodes] = t
        customers.index_add_(0, parent[nodes], t)
    return tables, customers


@torch.no_grad()
def sample_weights_given_tables(parent, customers, gamma0, gamma, generator: torch.Generator,
                                root: str = "gem") -> torch.Tensor:
    r"""Step 2 of the update: weights top-down given each node's customers :math:`m_z`.

    The root from :math:`\mathrm{Dir}(\gamma_0/K + m_{z_0})` or its stick conditional
    :math:`o_k \sim \mathrm{Beta}(1 + m_{z_0 k}, \gamma_0 + \sum_{j>k} m_{z_0 j})`; then each
    node from :math:`\mathrm{Dir}(\gamma \beta_{\mathrm{pa}(z)} + m_z)`.

    Args:
        parent: ``(M,)`` int64 parent indices, ``-1`` for the root.
        customers: ``(M, K)`` integer ``m_z`` from :func:`sample_table_counts`.
        gamma0: root concentration (> 0).
        gamma: child concentration (> 0).
        generator: CPU ``torch.Generator``.
        root: ``"gem"`` or ``"dirichlet"``.

    Returns:
        ``(M, K)`` float64 weights.

    Example:
        >>> sample_weights_given_tables(torch.tensor([-1, 0]), torch.tensor([[2, 0], [3, 0]]),
        ...                             1.0, 1.0, torch.Generator().manual_seed(0)).shape
        torch.Size([2, 2])
    """
    levels = tree_levels(parent)
    if not isinstance(customers, torch.Tensor) or customers.dim() != 2 or customers.shape[1] < 2:
        raise ValueError("customers must be an integer tensor of shape (M, K) with K >= 2")
    m = _check_counts(customers, parent.numel(), customers.shape[1], "customers")
    return _top_down(parent.cpu(), levels, m, m.shape[1], gamma0, gamma, generator, root)


@torch.no_grad()
def resample_tree_weights(parent, counts, weights, gamma0, gamma, generator: torch.Generator,
                          root: str = "gem") -> torch.Tensor:
    """One Gibbs update of all node weights given the data counts (module docstring).

    Tables bottom-up (:func:`sample_table_counts`), then weights top-down
    (:func:`sample_weights_given_tables`); together they leave the posterior
    ``p(weights | counts)`` invariant.

    Args:
        parent: ``(M,)`` int64 parent indices, ``-1`` for the root.
        counts: ``(M, K)`` integer component counts ``n_{zk}`` per node (BHMC: leaves only).
        weights: ``(M, K)`` current weights, rows on the simplex.
        gamma0: root concentration (> 0).
        gamma: child concentration (> 0).
        generator: CPU ``torch.Generator``.
        root: ``"gem"`` or ``"dirichlet"``, as in the prior.

    Returns:
        ``(M, K)`` float64 new weights (the input is not modified).

    Example:
        >>> w = torch.full((2, 3), 1 / 3, dtype=torch.float64)
        >>> new = resample_tree_weights(torch.tensor([-1, 0]), torch.tensor([[0, 0, 0], [4, 0, 1]]),
        ...                             w, 1.0, 1.0, torch.Generator().manual_seed(0))
        >>> new.shape
        torch.Size([2, 3])
    """
    _, customers = sample_table_counts(parent, counts, weights, gamma, generator)
    return sample_weights_given_tables(parent, customers, gamma0, gamma, generator, root)
