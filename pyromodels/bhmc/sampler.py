r"""The BHMC sampler (the RBHMC paper's :math:`C \to 0` limit): Metropolis-within-Gibbs on
:math:`(V, B, \Theta, c)`.

One sweep (:func:`sweep`) runs four blocks; each leaves the posterior
:math:`p(V, B, \Theta, c \mid X)` of the program in :mod:`pyromodels.bhmc.model` invariant.

(a) **Paths** (:func:`sample_paths`; Sec. 4.2). For each datum ``n`` in turn, propose
    :math:`v'_n` from the nested CRP given the other paths (:func:`~pyromodels.bnp.path_proposal`),
    draw the weights of the nodes it opens from their prior :math:`\mathrm{Dir}(\gamma
    \beta_{\mathrm{parent}})`, top-down, and accept with probability
    :math:`\min\{1, p(x_n \mid \beta_{v'_{nL}}, \Theta) / p(x_n \mid \beta_{v_{nL}}, \Theta)\}`
    where :math:`p(x_n \mid \beta, \Theta) = \sum_k \beta_k N(x_n; \theta_k, I)`: **the label
    c_n is marginalised** over the leaf weights. Why this is exact: the block updates
    :math:`(V, B)` with target the label-marginal :math:`p(V, B \mid \Theta, X) \propto p(V)\,
    p(B \mid V) \prod_n \sum_k \beta_{v_{nL} k} f(x_n; \theta_k)`, which it never reads ``c``
    for. The proposal of :math:`(v'_n, B_{\text{born}})` has density :math:`p(v'_n \mid
    V^{-n})\, p(B_{\text{born}} \mid \text{parents})` and the reverse move the same with the
    dying nodes' weights, so the nCRP and Dirichlet terms of the target cancel against the
    proposal and the Metropolis-Hastings ratio is the likelihood ratio of ``x_n`` alone (the
    other data's leaves and weights are unchanged). Dying nodes' weights are dropped on
    acceptance and restored, with the old ids, on rejection. Since the block leaves the
    label-marginal invariant and (b) then draws every label exactly from
    :math:`p(c \mid V, B, \Theta, X)`, the pair (a)+(b) leaves the joint invariant.
(b) **Labels** (:func:`sample_labels`): :math:`p(c_n = k \mid \cdot) \propto \beta_{v_{nL} k}
    N(x_n; \theta_k, I)`, independent over ``n`` given the rest: an exact Gibbs draw.
(c) **Components** (:func:`sample_components`): with :math:`H = N(0, I)` and ``n_k`` data of
    sum :math:`S_k` on component ``k``, :math:`\theta_k \mid X, c \sim N(S_k / (n_k + 1),
    I / (n_k + 1))`: an exact Gibbs draw.
(d) **Weights** (:func:`sample_weights`): :func:`~pyromodels.bnp.resample_tree_weights`, the
    two-block auxiliary-table Gibbs update of :math:`B` given the leaf label counts (its
    module documents its invariance).

Speed: a sweep is a sequence of operations on tensors of a few dozen numbers, which more
than one torch thread only slows down (the idle threads spin; on a busy two-core machine a
sweep ran six times slower on two threads than on one), so :func:`sweep` and
:func:`run_bhmc` run on one torch thread and restore the caller's count after.

With ``likelihood=False`` every block ignores ``x`` (the acceptance ratio is 1, the labels
are drawn from the leaf weights and the components from their prior): the sweep then leaves
the prior invariant, which the tests check against exact nested-CRP values.

Example:
    >>> import torch
    >>> from pyromodels.bhmc import BHMC, BHMCPrior
    >>> prior = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=4)
    >>> x = BHMC(prior).simulate(10, 2, torch.Generator().manual_seed(0)).x
    >>> chain = run_bhmc(x, prior, num_sweeps=5, generator=torch.Generator().manual_seed(1))
    >>> chain.cdl.shape, chain.nodes_per_level.shape
    (torch.Size([5]), torch.Size([5, 2]))
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..bnp import Tree, path_proposal, resample_tree_weights, sample_ncrp_paths, sample_tree_weights
from ..checks import as_float_tensor, check_bool, check_int
from ..conjugate.random import sample_categorical, sample_log_gamma
from ..core.device import num_threads
from .joint import _cdl, component_log_likelihoods
from .prior import BHMCPrior
from .state import BHMCState, check_inputs, check_state, node_arrays

__all__ = ["init_state", "child_weights", "shifted_likelihoods", "leaf_log_ratio", "path_step",
           "sample_paths", "label_log_probs", "sample_labels",
           "component_conditional", "sample_components", "sample_weights", "sweep",
           "run_bhmc", "BHMCChain"]

_TINY = torch.finfo(torch.float64).tiny


def _check_generator(generator) -> torch.Generator:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return generator




def _dirichlet(concentration: torch.Tensor, generator) -> torch.Tensor:
    """A Dirichlet draw normalised in log space, floored at the smallest normal float (so it
    stays a valid concentration of the children's Dirichlets)."""
    log_g = sample_log_gamma(concentration.clamp_min(_TINY), generator)
    return torch.softmax(log_g, -1).clamp_min(_TINY)


def child_weights(prior: BHMCPrior, parent_weights: torch.Tensor, generator) -> torch.Tensor:
    r"""A new node's weights from their prior :math:`\mathrm{Dir}(\gamma \beta_{\mathrm{parent}})`."""
    return _dirichlet(prior.gamma * parent_weights, generator)


def _loglik(x, state, likelihood: bool) -> torch.Tensor:
    if not likelihood:
        return torch.zeros(x.shape[0], state.num_components, dtype=torch.float64)
    return component_log_likelihoods(x, state.theta.to(torch.float64))


def shifted_likelihoods(loglik: torch.Tensor) -> np.ndarray:
    r"""``(..., K)`` numpy :math:`N(x_n; \theta_k, I) / \max_k N(x_n; \theta_k, I)` from the log
    likelihoods: the path step's likelihood ratio is a ratio of two dot products with it."""
    ll = loglik.detach().to(torch.float64).cpu().numpy()
    return np.exp(ll - ll.max(-1, keepdims=True))


def leaf_log_ratio(lik_n: np.ndarray, new_weights: torch.Tensor, old_weights: torch.Tensor
                   ) -> float:
    r""":math:`\log p(x_n \mid \beta', \Theta) - \log p(x_n \mid \beta, \Theta)` with
    :math:`p(x_n \mid \beta, \Theta) = \sum_k \beta_k N(x_n; \theta_k, I)`, given datum
    ``n``'s row of :func:`shifted_likelihoods` (the shift cancels; the largest term of each
    sum is at least the weights' floor, so neither logarithm sees 0)."""
    new = float(np.dot(new_weights.detach().numpy(), lik_n))
    old = float(np.dot(old_weights.detach().numpy(), lik_n))
    return math.log(new) - math.log(old)


def path_step(loglik_n: torch.Tensor, state: BHMCState, n: int, prior: BHMCPrior,
              generator: torch.Generator) -> bool:
    r"""One Metropolis-Hastings move of datum ``n``'s path (block (a)), in place.

    Args:
        loglik_n: ``(K,)`` :math:`\log N(x_n; \theta_k, I)` (zeros: the prior's kernel).
        state: the state, modified in place (tree and weights).
        n: the datum.
        prior: the hyperparameters.
        generator: ``torch.Generator``.

    Returns:
        whether the proposal was accepted.
    """
    return _path_step(shifted_likelihoods(loglik_n), state, n, prior, generator)


def _path_step(lik_n: np.ndarray, state: BHMCState, n: int, prior: BHMCPrior,
               generator: torch.Generator) -> bool:
    tree, weights = state.tree, state.weights
    old_leaf = tree.path(n)[-1]
    proposal = path_proposal(tree, n, prior.alpha, generator)
    edit = tree.move_path(n, proposal.path)
    for z in edit.born:  # top-down: each parent's weights exist before its child's draw
        weights[z] = child_weights(prior, weights[tree.parent(z)], generator)
    log_ratio = leaf_log_ratio(lik_n, weights[edit.new_path[-1]], weights[old_leaf])
    u = float(torch.rand((), dtype=torch.float64, generator=generator))
    accept = math.log(u) < log_ratio if u > 0 else True
    if accept:
        for z in edit.died:
            del weights[z]
    else:
        tree.undo(edit)
        for z in edit.born:
            del weights[z]
    return accept


def sample_paths(x, state: BHMCState, prior: BHMCPrior, generator: torch.Generator,
                 likelihood: bool = True) -> float:
    """Block (a): :func:`path_step` for every datum in index order; returns the acceptance rate."""
    x, state, _ = check_inputs(x, state, prior)
    return _sample_paths(x, state, prior, _check_generator(generator),
                         check_bool(likelihood, "likelihood"))


def _sample_paths(x, state, prior, generator, likelihood: bool) -> float:
    """:func:`sample_paths` on checked arguments (the functions named ``_sample_*`` and
    :func:`_sweep` are the sweep's inside: the public functions check, these trust)."""
    lik = shifted_likelihoods(_loglik(x, state, likelihood))
    accepted = sum(_path_step(lik[n], state, n, prior, generator) for n in range(x.shape[0]))
    return accepted / x.shape[0]


def label_log_probs(x, state: BHMCState, likelihood: bool = True) -> torch.Tensor:
    r"""``(N, K)`` normalised :math:`\log p(c_n = k \mid V, B, \Theta, X)` (block (b))."""
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    state = check_state(state, x)
    return _label_log_probs(x, state, likelihood)


def _label_log_probs(x, state, likelihood: bool) -> torch.Tensor:
    logits = torch.log(state.leaf_weights().to(torch.float64)) + _loglik(x, state, likelihood)
    return torch.log_softmax(logits, -1)


def sample_labels(x, state: BHMCState, generator: torch.Generator, likelihood: bool = True) -> None:
    """Block (b): draw every label from :func:`label_log_probs`, in place."""
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    _sample_labels(x, check_state(state, x), _check_generator(generator), likelihood)


def _sample_labels(x, state, generator, likelihood: bool = True) -> None:
    state.c = sample_categorical(_label_log_probs(x, state, likelihood), generator)


def component_conditional(x, c, num_components: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Mean ``(K, D)`` and variance ``(K,)`` of :math:`\theta_k \mid X, c \sim N(S_k / (n_k + 1),
    I / (n_k + 1))` (block (c); an empty component gets its prior :math:`N(0, I)`)."""
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    K = check_int(num_components, "num_components", minimum=2)
    return _component_conditional(x, c, K)


def _component_conditional(x, c, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    n_k = torch.bincount(c, minlength=K).to(torch.float64)
    sums = torch.zeros(K, x.shape[1], dtype=torch.float64).index_add_(0, c, x)
    return sums / (n_k + 1).unsqueeze(-1), 1.0 / (n_k + 1)


def sample_components(x, state: BHMCState, generator: torch.Generator, likelihood: bool = True) -> None:
    """Block (c): draw every :math:`\\theta_k` from :func:`component_conditional`, in place."""
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    _sample_components(x, state, _check_generator(generator), likelihood)


def _sample_components(x, state, generator, likelihood: bool = True) -> None:
    K = state.num_components
    if likelihood:
        mean, var = _component_conditional(x, state.c, K)
    else:
        mean, var = torch.zeros(K, x.shape[1], dtype=torch.float64), torch.ones(K, dtype=torch.float64)
    noise = torch.randn(mean.shape, dtype=torch.float64, generator=generator)
    state.theta = mean + var.sqrt().unsqueeze(-1) * noise


def sample_weights(state: BHMCState, prior: BHMCPrior, generator: torch.Generator) -> None:
    """Block (d): :func:`~pyromodels.bnp.resample_tree_weights` given the leaf label counts."""
    _sample_weights(state, prior, _check_generator(generator))


def _sample_weights(state, prior, generator) -> None:
    ids, parent, counts = state.leaf_counts()
    w = torch.stack([state.weights[z] for z in ids])
    new = resample_tree_weights(parent, counts, w, prior.gamma0, prior.gamma, generator,
                                root="gem")
    state.weights = dict(zip(ids, new))


def sweep(x, state: BHMCState, prior: BHMCPrior, generator: torch.Generator,
          likelihood: bool = True) -> float:
    """One sweep (a)-(d) of the module docstring, in place; returns the paths' acceptance rate.

    The inputs are checked once, here; the blocks inside take them as prepared.

    Example:
        >>> from pyromodels.bhmc import BHMC, BHMCPrior
        >>> prior = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=1, num_components=2)
        >>> draw = BHMC(prior).simulate(4, 1, torch.Generator().manual_seed(0))
        >>> 0.0 <= sweep(draw.x, draw.state, prior, torch.Generator().manual_seed(1)) <= 1.0
        True
    """
    x, state, _ = check_inputs(x, state, prior)
    return _sweep(x, state, prior, _check_generator(generator),
                  check_bool(likelihood, "likelihood"))


def _sweep(x, state, prior, generator, likelihood: bool = True) -> float:
    """:func:`sweep` on checked arguments."""
    with num_threads(1):  # tiny tensors: more threads only spin (module docstring)
        rate = _sample_paths(x, state, prior, generator, likelihood)
        _sample_labels(x, state, generator, likelihood)
        _sample_components(x, state, generator, likelihood)
        _sample_weights(state, prior, generator)
    return rate


def init_state(x, prior: BHMCPrior, generator: torch.Generator) -> BHMCState:
    """A starting state: paths, weights and components from the prior, then labels and
    components from their conditionals (the paper states no initialisation)."""
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    if not isinstance(prior, BHMCPrior):
        raise TypeError(f"prior must be a BHMCPrior, got {type(prior).__name__}")
    _check_generator(generator)
    N, D, K = x.shape[0], x.shape[1], prior.num_components
    tree = Tree.from_paths(sample_ncrp_paths(N, prior.depth, prior.alpha, generator))
    ids, parent = node_arrays(tree)
    w = sample_tree_weights(parent, K, prior.gamma0, prior.gamma, generator, root="gem")
    theta = torch.randn(K, D, dtype=torch.float64, generator=generator)
    state = BHMCState(tree, dict(zip(ids, w)), theta, torch.zeros(N, dtype=torch.int64))
    _sample_labels(x, state, generator)
    _sample_components(x, state, generator)
    return state


@dataclass
class BHMCChain:
    r"""The record of :func:`run_bhmc` (label-invariant statistics per sweep).

    Attributes:
        cdl: ``(S,)`` float64 the paper's CDL :math:`\log p(X, c, V \mid B, \Theta)`
            (:func:`~pyromodels.bhmc.joint.cdl`) after each sweep.
        nodes_per_level: ``(S, L)`` int64 living nodes at levels ``1..L`` (the last column is
            the number of leaves).
        num_components: ``(S,)`` int64 distinct labels in use.
        acceptance: ``(S,)`` float64 paths' acceptance rate.
        best_state: copy of the state of highest CDL after burn-in (Sec. 4.5).
        best_cdl: its CDL.
        state: the final state.
    """

    cdl: torch.Tensor
    nodes_per_level: torch.Tensor
    num_components: torch.Tensor
    acceptance: torch.Tensor
    best_state: BHMCState
    best_cdl: float
    state: BHMCState

    @property
    def num_leaves(self) -> torch.Tensor:
        return self.nodes_per_level[:, -1]


def run_bhmc(x, prior: BHMCPrior, num_sweeps: int, generator: torch.Generator,
             init: BHMCState | None = None, burn_in: int = 0) -> BHMCChain:
    """Run the BHMC sampler for ``num_sweeps`` sweeps.

    Args:
        x: ``(N, D)`` data.
        prior: the hyperparameters.
        num_sweeps: ``S >= 1``.
        generator: the chain's only source of randomness.
        init: a starting state (copied), or ``None`` for :func:`init_state`.
        burn_in: sweeps (``0 <= burn_in < S``) not considered for ``best_state``.

    Returns:
        :class:`BHMCChain`.
    """
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    S = check_int(num_sweeps, "num_sweeps", minimum=1)
    burn_in = check_int(burn_in, "burn_in", minimum=0, maximum=S - 1)
    _check_generator(generator)
    state = init_state(x, prior, generator) if init is None else init.copy()
    x, state, _ = check_inputs(x, state, prior)
    trace = torch.empty(S, dtype=torch.float64)
    levels = torch.empty(S, prior.depth, dtype=torch.int64)
    used = torch.empty(S, dtype=torch.int64)
    acc = torch.empty(S, dtype=torch.float64)
    best, best_cdl = None, -math.inf
    with num_threads(1):
        for s in range(S):
            acc[s] = _sweep(x, state, prior, generator)
            trace[s] = _cdl(x, state, prior)
            levels[s] = torch.tensor([len(state.tree.nodes_at_level(lv))
                                      for lv in range(1, prior.depth + 1)])
            used[s] = int(torch.unique(state.c).numel())
            if s >= burn_in and float(trace[s]) > best_cdl:
                best, best_cdl = state.copy(), float(trace[s])
    return BHMCChain(trace, levels, used, acc, best, best_cdl, state)
