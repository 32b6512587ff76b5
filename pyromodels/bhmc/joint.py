r"""Closed-form log joints of a BHMC state: CDL, its marginal over the labels, and RCDL.

With the labels instantiated (RBHMC paper, Fig. 2), the log joint of a state
:math:`(V, B, \Theta, c)` and the data is

.. math::

    \log p(X, c, V, B, \Theta) = \sum_n \big[\log N(x_n; \theta_{c_n}, I) + \log \beta_{v_{nL} c_n}\big]
        + \log p(V \mid \alpha) + \log p(o \mid \gamma_0) + \log p(B^- \mid \gamma)
        + \sum_k \log N(\theta_k; 0, I),

the log density of the Pyro program of :mod:`pyromodels.bhmc.model` at that state
(:func:`complete_log_joint`). The marginal over ``c`` replaces the first
sum by :math:`\sum_n \log \sum_k \beta_{v_{nL} k} N(x_n; \theta_k, I)` (Fig. 2's
:math:`p(X \mid V, \Theta, B)`). The paper's traced CDL, :math:`\log p(X, c, V \mid B,
\Theta)` (:func:`cdl`), leaves out the prior densities of :math:`B` and :math:`\Theta`; its
RCDL (:func:`rcdl`; Sec. 4.5, eq. 5) adds the hinge of every datum's worst margin violation,
:math:`-2C \max(0, \zeta_n)`, given the discriminants :math:`\eta`.

Margin violations (eq. 2): for datum ``n``, level ``l`` and each sibling
``z`` of its node :math:`v_{nl}`, :math:`\zeta_{nlz} = \varepsilon_0 - (\eta_{v_{nl}} -
\eta_z)^\top x_n`; :math:`\zeta_n` is the largest over all levels and siblings, and a datum
whose nodes have no siblings at any level has no constraint (its factor is 1).

Example:
    >>> import torch
    >>> from pyromodels.bnp import Tree
    >>> x = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
    >>> tree = Tree.from_paths([[0, 1], [0, 2]])
    >>> eta = {1: torch.tensor([0.5], dtype=torch.float64), 2: torch.tensor([-0.5], dtype=torch.float64)}
    >>> zeta, level, node = margin_violations(x, tree, eta, eps0=1.0)
    >>> zeta.tolist(), level.tolist(), node.tolist()  # 1 - (0.5 + 0.5) * 1 = 0 for both
    ([0.0, 0.0], [1, 1], [2, 1])
"""

from __future__ import annotations

import math
import numbers

import torch

from ..bnp import Tree, ncrp_log_prob, tree_weights_log_prob
from ..checks import as_float_tensor
from .augmentation import hinge_log_factor
from .prior import BHMCPrior
from .state import BHMCState, check_inputs, node_arrays

__all__ = ["component_log_likelihoods", "structure_log_prior", "complete_log_joint",
           "marginal_log_joint", "cdl", "margin_violations", "rcdl"]

_LOG_2PI = math.log(2 * math.pi)




def component_log_likelihoods(x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    r"""``(N, K)``: :math:`\log N(x_n; \theta_k, I_D)`.

    Example:
        >>> import torch
        >>> component_log_likelihoods(torch.zeros(1, 2), torch.zeros(3, 2)).shape
        torch.Size([1, 3])
    """
    d = x.shape[-1]
    sq = (x.unsqueeze(-2) - theta).pow(2).sum(-1)
    return -0.5 * (sq + d * _LOG_2PI)


def structure_log_prior(state: BHMCState, prior: BHMCPrior) -> torch.Tensor:
    r""":math:`\log p(V \mid \alpha) + \log p(o \mid \gamma_0) + \log p(B^- \mid \gamma) +
    \sum_k \log N(\theta_k; 0, I)`: every term of the CDL that involves no datum's label."""
    ids, parent, w = state.weight_matrix()
    theta = state.theta.to(torch.float64)
    theta_lp = -0.5 * (theta.pow(2).sum() + theta.numel() * _LOG_2PI)
    return (ncrp_log_prob(state.tree, prior.alpha)
            + tree_weights_log_prob(parent, w, prior.gamma0, prior.gamma, root="gem") + theta_lp)


def complete_log_joint(x, state: BHMCState, prior: BHMCPrior) -> torch.Tensor:
    """CDL with the labels instantiated (module docstring): the program's log joint.

    Args:
        x: ``(N, D)`` data.
        state: a complete :class:`~pyromodels.bhmc.BHMCState`.
        prior: the :class:`~pyromodels.bhmc.BHMCPrior` (its depth and ``K`` must match).

    Returns:
        0-dim float64 tensor.
    """
    x, state, prior = check_inputs(x, state, prior)
    ll = component_log_likelihoods(x, state.theta.to(torch.float64))
    n = torch.arange(x.shape[0])
    lw = torch.log(state.leaf_weights().to(torch.float64))
    return (ll[n, state.c] + lw[n, state.c]).sum() + structure_log_prior(state, prior)


def marginal_log_joint(x, state: BHMCState, prior: BHMCPrior) -> torch.Tensor:
    """CDL with every label summed out over the ``K`` components (``state.c`` is ignored).

    Arguments and returns as :func:`complete_log_joint`.
    """
    x, state, prior = check_inputs(x, state, prior)
    ll = component_log_likelihoods(x, state.theta.to(torch.float64))
    lw = torch.log(state.leaf_weights().to(torch.float64))
    return torch.logsumexp(ll + lw, -1).sum() + structure_log_prior(state, prior)


def margin_violations(x, tree: Tree, eta: dict, eps0) -> tuple[torch.Tensor, torch.Tensor,
                                                              torch.Tensor]:
    r"""Each datum's worst margin violation :math:`\zeta_n` and where it is, :math:`s_n`.

    Args:
        x: ``(N, D)`` data.
        tree: the :class:`~pyromodels.bnp.Tree` (every datum seated).
        eta: ``{node id: (D,) tensor}`` for every living non-root node (extra keys ignored).
        eps0: the margin :math:`\varepsilon_0` (finite).

    Returns:
        ``(zeta, level, node)``: ``(N,)`` float64 :math:`\zeta_n`, ``(N,)`` int64 level
        :math:`s_{n1}` and ``(N,)`` int64 sibling :math:`s_{n2}`; ties go to the shallowest
        level, then the smallest node id. A datum without any sibling on its path gets
        ``zeta = -inf`` and ``level = node = -1`` (no constraint).

    Raises:
        ValueError: ``x`` of the wrong shape, unseated data, a node without ``eta``.
    """
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be a pyromodels.bnp.Tree, got {type(tree).__name__}")
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    if isinstance(eps0, bool) or not isinstance(eps0, numbers.Real) or not math.isfinite(eps0):
        raise TypeError(f"eps0 must be a finite real number, got {eps0!r}")
    eps0 = float(eps0)
    if x.shape[0] != tree.num_points:
        raise ValueError(f"x must have {tree.num_points} rows (one per datum), got {x.shape[0]}")
    if not bool(tree.seated.all()):
        raise ValueError("tree must seat every datum")
    ids, parent = node_arrays(tree)
    if not isinstance(eta, dict) or any(z not in eta for z in ids[1:]):
        raise ValueError("eta must be a dict holding a (D,) tensor for every living non-root node")
    return _margin_violations(x, tree, eta, eps0, ids, parent)


def _margin_violations(x: torch.Tensor, tree: Tree, eta: dict, eps0: float, ids=None,
                       parent=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`margin_violations` on checked arguments (a sampler's trace after each sweep)."""
    if ids is None:
        ids, parent = node_arrays(tree)
    pos = {z: i for i, z in enumerate(ids)}
    e = torch.zeros(len(ids), x.shape[1], dtype=torch.float64)
    for i, z in enumerate(ids[1:], start=1):
        e[i] = torch.as_tensor(eta[z], dtype=torch.float64)
    score = x @ e.T  # (N, M): eta_z^T x_n
    paths = torch.tensor([[pos[z] for z in row] for row in tree.paths.tolist()])
    n_idx = torch.arange(x.shape[0])
    zeta = torch.full((x.shape[0],), -math.inf, dtype=torch.float64)
    level = torch.full((x.shape[0],), -1, dtype=torch.int64)
    node = torch.full((x.shape[0],), -1, dtype=torch.int64)
    node_ids = torch.tensor(ids)
    for lv in range(1, tree.depth + 1):
        v = paths[:, lv]  # (N,) positions of v_{nl}
        sib = (parent.unsqueeze(0) == parent[v].unsqueeze(1)) & (torch.arange(len(ids)) != v.unsqueeze(1))
        z_all = eps0 - (score[n_idx, v].unsqueeze(1) - score)
        z_all = torch.where(sib, z_all, torch.full_like(z_all, -math.inf))
        arg = z_all.argmax(1)  # the first maximum: the smallest position, i.e. the smallest id
        best = z_all.gather(1, arg.unsqueeze(1)).squeeze(1)
        better = best > zeta
        zeta = torch.where(better, best, zeta)
        level = torch.where(better, torch.full_like(level, lv), level)
        node = torch.where(better, node_ids[arg], node)
    return zeta, level, node


def cdl(x, state: BHMCState, prior: BHMCPrior) -> torch.Tensor:
    r"""The paper's CDL, :math:`\log p(X, c, V \mid B, \Theta)` (Sec. 4.5):
    :func:`complete_log_joint` without the prior densities of :math:`B` and :math:`\Theta`.

    It is the statistic the chain traces and the best tree is picked by. The full joint is not
    used there because the weight densities dominate it: a child's Dirichlet
    :math:`\mathrm{Dir}(\gamma \beta_z)` with the tiny concentrations of the unused
    components has a density of order :math:`\beta^{\gamma\beta_{zk} - 1}`, hundreds of nats
    per near-empty cell, which says nothing about the clustering.

    Arguments and returns as :func:`complete_log_joint`.
    """
    return _cdl(*check_inputs(x, state, prior))


def _cdl(x: torch.Tensor, state: BHMCState, prior: BHMCPrior) -> torch.Tensor:
    """:func:`cdl` on checked arguments (a sampler's trace after each sweep)."""
    ll = component_log_likelihoods(x, state.theta.to(torch.float64))
    n = torch.arange(x.shape[0])
    lw = torch.log(state.leaf_weights().to(torch.float64))
    return (ll[n, state.c] + lw[n, state.c]).sum() + ncrp_log_prob(state.tree, prior.alpha)


def rcdl(x, state: BHMCState, prior: BHMCPrior, eta: dict, C, eps0) -> torch.Tensor:
    r"""RCDL (also PCDL): :func:`cdl` plus :math:`\sum_n -2C\max(0, \zeta_n)` over the data
    with a constraint (Sec. 4.5, eq. 5), :math:`\zeta_n` from
    :func:`margin_violations`.

    Args:
        x, state, prior: as in :func:`complete_log_joint`.
        eta: ``{node id: (D,) tensor}`` for every living non-root node.
        C: regularisation constant (> 0).
        eps0: the margin :math:`\varepsilon_0`.

    Returns:
        0-dim float64 tensor.
    """
    zeta, level, _ = margin_violations(x, state.tree, eta, eps0)
    active = level >= 0
    return cdl(x, state, prior) + hinge_log_factor(zeta[active], C).sum()
