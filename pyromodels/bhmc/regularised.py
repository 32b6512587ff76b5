r"""RBHMC: the BHMC sampler with the max-margin pseudo-likelihood (posterior regularisation).

The target (Lemma 1, eq. 5) is the BHMC posterior times :math:`\prod_n \exp\{-2C\max(0,
\zeta_n)\}` with discriminants :math:`\eta_z \sim N(0, \nu_0^2 I)` per non-root node, and
:math:`\zeta_n` the worst margin violation (:func:`~pyromodels.bhmc.joint.margin_violations`).
With Polson and Scott's augmentation (eq. 6-9) the chain runs on :math:`(V, B, \Theta, c, \eta,
\lambda)` with target

.. math::

    \pi \propto p(V, B, \Theta, c, X)\, \prod_z N(\eta_z; 0, \nu_0^2 I) \prod_n
        K(\lambda_n; \tilde\zeta_n), \qquad
    K(\lambda; \zeta) = (2\pi\lambda)^{-1/2} e^{-(C\zeta + \lambda)^2 / (2\lambda)},

whose :math:`\lambda`-marginal is the regularised posterior because :math:`\int K(\lambda;
\zeta)\, d\lambda = e^{-2C\max(0, \zeta)}`. :math:`s_n` is the deterministic argmax, so it is
not a separate variable. A datum without any sibling on its path has no constraint; it
gets :math:`\tilde\zeta_n = 0`, for which :math:`K` is a normalised density (the
chi-square with one degree of freedom), so its :math:`\lambda_n` is a pseudo-variable that
integrates out to 1. Otherwise :math:`\tilde\zeta_n = \zeta_n`.

One sweep (:func:`rbhmc_sweep`):

(a) **Paths** by Metropolis-Hastings as in :mod:`pyromodels.bhmc.sampler` (label marginalised,
    new nodes' :math:`\beta` from :math:`\mathrm{Dir}(\gamma\beta_{\mathrm{parent}})`), and new
    nodes' :math:`\eta` from their prior :math:`N(0, \nu_0^2 I)` as part of the proposal, so
    both cancel. Moving datum ``n`` changes sibling sets and so the
    :math:`\zeta_m` of *other* data: the ratio multiplies the likelihood ratio of
    ``x_n`` by :math:`\prod_m K(\lambda_m; \tilde\zeta'_m) / K(\lambda_m; \tilde\zeta_m)` over
    **every** datum, which makes the step exact. ``paper_literal=True`` keeps only
    :math:`m = n` (the paper's App. A.1 ratio).
(b)-(d) Labels, components and weights: the BHMC blocks (the hinge does not involve them).
(e) **Discriminants**, one node at a time (:func:`sample_eta`). Propose :math:`\eta'_z` from
    the Gaussian conditional given the current argmax :math:`s`
    (:func:`~pyromodels.bhmc.augmentation.eta_conditional`) and accept with the
    Metropolis-Hastings ratio of :math:`\pi` (with :math:`s` recomputed at :math:`\eta'`)
    and of the forward and reverse proposal densities (the reverse one uses the :math:`s` of
    :math:`\eta'`). When the argmax does not change, the
    proposal is :math:`\pi`'s exact conditional on that region and the ratio is 1. The paper's
    literal step (``paper_literal=True``: recompute :math:`s`, draw from the untruncated
    Gaussian, always accept, and the printed prior precision :math:`+\nu_0^2 I`) is not
    invariant.
(f) **Augmentation variables**: :math:`\lambda_n \sim \mathrm{GIG}(1/2, 1, C^2\tilde\zeta_n^2)`
    exactly (:func:`~pyromodels.bhmc.augmentation.sample_lambda`).

Example:
    >>> import torch
    >>> from pyromodels.bhmc import BHMC, BHMCPrior
    >>> prior = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=3)
    >>> x = BHMC(prior).simulate(8, 2, torch.Generator().manual_seed(0)).x
    >>> chain = run_rbhmc(x, prior, 3, C=0.1, eps0=1.0, generator=torch.Generator().manual_seed(1))
    >>> chain.rcdl.shape, bool((chain.rcdl <= chain.cdl).all())
    (torch.Size([3]), True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..bnp import path_proposal
from ..checks import as_float_tensor, check_bool, check_int, check_positive
from ..core.device import num_threads
from .augmentation import (
    _eta_conditional,
    _hinge_log_factor,
    _sample_gaussian_precision,
    _sample_lambda,
    polson_scott_log_kernel,
    sample_lambda,
)
from .joint import _cdl, _margin_violations, component_log_likelihoods, margin_violations
from .margins import MarginCache, kernel_log_ratio, node_rows, path_move_rows
from .prior import BHMCPrior
from .sampler import (
    _sample_components,
    _sample_labels,
    _sample_weights,
    child_weights,
    init_state,
    leaf_log_ratio,
    shifted_likelihoods,
)
from .state import BHMCState, check_inputs

__all__ = ["RBHMCState", "check_rbhmc_state", "log_kernels", "rbhmc_path_step", "sample_eta",
           "sample_lambdas", "rbhmc_sweep", "init_rbhmc_state", "run_rbhmc", "RBHMCChain"]


@dataclass
class RBHMCState(BHMCState):
    """A :class:`~pyromodels.bhmc.BHMCState` with ``eta`` (``{node id: (D,)}`` for every living
    non-root node) and ``lam`` (``(N,)`` augmentation variables, > 0)."""

    eta: dict = None
    lam: torch.Tensor = None

    def copy(self) -> RBHMCState:
        base = super().copy()
        return RBHMCState(base.tree, base.weights, base.theta, base.c,
                          {z: e.clone() for z, e in self.eta.items()}, self.lam.clone())


def _check_settings(C, eps0, paper_literal):
    C = check_positive(C, "C")
    eps0 = check_positive(eps0, "eps0", strict=False)
    return C, eps0, check_bool(paper_literal, "paper_literal")


def check_rbhmc_state(x, state, prior: BHMCPrior) -> RBHMCState:
    """Check ``state`` as :func:`~pyromodels.bhmc.state.check_state` does, plus its ``eta``
    (a ``(D,)`` tensor for exactly the living non-root nodes) and ``lam`` (``(N,)``, > 0).

    Raises:
        TypeError: ``state`` is not an ``RBHMCState``.
        ValueError: missing or extra eta, eta or lam of the wrong shape, lam not > 0, and the
            errors of ``check_state``.
    """
    if not isinstance(state, RBHMCState):
        raise TypeError(f"state must be an RBHMCState, got {type(state).__name__}")
    x, state, _ = check_inputs(x, state, prior)
    nodes = set(state.tree.nodes) - {state.tree.root}
    D = x.shape[1]
    if not isinstance(state.eta, dict) or set(state.eta) != nodes:
        raise ValueError(f"state.eta must map exactly the living non-root nodes {sorted(nodes)} "
                         f"to (D,) tensors")
    if any(not isinstance(e, torch.Tensor) or tuple(e.shape) != (D,) for e in state.eta.values()):
        raise ValueError(f"state.eta values must be ({D},) tensors")
    lam = state.lam
    if not isinstance(lam, torch.Tensor) or tuple(lam.shape) != (x.shape[0],):
        raise ValueError(f"state.lam must be a ({x.shape[0]},) tensor")
    if not bool((lam > 0).all()):
        raise ValueError("state.lam must be > 0")
    return x, state


def log_kernels(x, state: RBHMCState, C: float, eps0: float):
    r"""``(log K, zeta, level, node)``: :math:`\log K(\lambda_n; \tilde\zeta_n)` ``(N,)`` and
    :func:`~pyromodels.bhmc.joint.margin_violations`'s outputs."""
    zeta, level, node = margin_violations(x, state.tree, state.eta, eps0)
    eff = torch.where(level >= 0, zeta, torch.zeros_like(zeta))
    return polson_scott_log_kernel(state.lam, eff, C), zeta, level, node


def _move_rows(tree, edit, only_datum: bool):
    """``(rows, paths)``: the data a path move can change (:func:`path_move_rows`; the moved
    datum alone if ``only_datum``) and the tree's paths as numpy, copied (O(N)) only when a
    node was born or died."""
    if only_datum or not (edit.born or edit.died):
        return np.array([edit.datum]), None
    paths = tree.paths.numpy()
    return path_move_rows(paths, edit), paths


def rbhmc_path_step(loglik_n, x, state: RBHMCState, n: int, prior: BHMCPrior, C: float,
                    eps0: float, generator: torch.Generator, paper_literal: bool = False,
                    margins: MarginCache | None = None) -> bool:
    """Block (a) for datum ``n``, in place; returns whether the move was accepted.

    ``loglik_n``: ``(K,)`` :math:`\\log N(x_n; \\theta_k, I)`. ``margins``: a
    :class:`~pyromodels.bhmc.margins.MarginCache` in step with ``state`` (kept in step on
    return); ``None`` builds one. Only the data whose sibling sets the move changes are
    recomputed (:func:`~pyromodels.bhmc.margins.path_move_rows`): the others' kernel ratios
    are 1.
    """
    if margins is None:
        margins = MarginCache(x, state.tree, state.eta, eps0)
    return _rbhmc_path_step(shifted_likelihoods(loglik_n), x, state, n, prior, C, generator,
                            paper_literal, margins)


def _rbhmc_path_step(lik_n, x, state, n, prior, C, generator, paper_literal, margins) -> bool:
    """:func:`rbhmc_path_step` given datum ``n``'s row of
    :func:`~pyromodels.bhmc.sampler.shifted_likelihoods` and the cache."""
    tree, weights, eta = state.tree, state.weights, state.eta
    old_leaf = tree.path(n)[-1]
    edit = tree.move_path(n, path_proposal(tree, n, prior.alpha, generator).path)
    for z in edit.born:
        weights[z] = child_weights(prior, weights[tree.parent(z)], generator)
        eta[z] = prior.nu0 * torch.randn(x.shape[1], dtype=torch.float64, generator=generator)
    rows, paths = _move_rows(tree, edit, paper_literal)
    new = margins.compute(tree, eta, rows, paths)
    log_k = kernel_log_ratio(state.lam.numpy()[rows], new,
                             (margins.zeta[rows], margins.level[rows]), C)
    log_ratio = leaf_log_ratio(lik_n, weights[edit.new_path[-1]], weights[old_leaf]) + log_k
    u = float(torch.rand((), dtype=torch.float64, generator=generator))
    accept = u == 0 or math.log(u) < log_ratio
    dropped = edit.died if accept else edit.born
    if accept:
        if paper_literal:  # the ratio read datum n only; the cache needs every changed datum
            rows, paths = _move_rows(tree, edit, False)
            new = margins.compute(tree, eta, rows, paths)
        margins.update(rows, new)
    else:
        tree.undo(edit)
    for z in dropped:
        del weights[z], eta[z]
    return accept


def _blocks(x, lam, eta, z, paths, rows, level, node):
    """Sets A (z is the correct node at the active level) and B (z is the worst sibling),
    among the data ``rows`` (which hold both), in ascending order."""
    on_level = level >= 0
    correct = paths[rows, np.maximum(level, 0)]
    out = []
    for mask, partner in ((on_level & (correct == z), node), (on_level & (node == z), correct)):
        idx = rows[mask]
        partners = [eta[p] for p in partner[mask].tolist()]
        p = torch.stack(partners) if partners else torch.zeros(0, x.shape[1], dtype=torch.float64)
        idx = torch.from_numpy(idx)
        out.append((x[idx], lam[idx], p))
    return out


def _gauss_log_density(value, mean, precision):
    diff = value - mean
    chol = torch.linalg.cholesky(precision)
    return -0.5 * diff @ precision @ diff + torch.log(torch.diagonal(chol)).sum()


def sample_eta(x, state: RBHMCState, prior: BHMCPrior, C: float, eps0: float,
               generator: torch.Generator, paper_literal: bool = False,
               margins: MarginCache | None = None) -> float:
    """Block (e): update every node's :math:`\\eta_z` in place (module docstring); returns the
    acceptance rate (1 with ``paper_literal=True``).

    ``margins``: as in :func:`rbhmc_path_step`. A move of :math:`\\eta_z` recomputes only the
    data through ``z``'s parent (:func:`~pyromodels.bhmc.margins.node_rows`).
    """
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    C, eps0, paper_literal = _check_settings(C, eps0, paper_literal)
    if margins is None:
        margins = MarginCache(x, state.tree, state.eta, eps0)
    return _sample_eta(x, state, prior, C, eps0, generator, paper_literal, margins)


def _sample_eta(x, state, prior, C, eps0, generator, paper_literal, margins) -> float:
    """:func:`sample_eta` on checked arguments (inside :func:`rbhmc_sweep`)."""
    tree = state.tree
    paths = tree.paths.numpy()
    lam = state.lam
    lam_np = lam.numpy()
    nodes = [z for z in tree.nodes if z != tree.root]
    accepted = 0
    for z in nodes:
        rows = node_rows(paths, tree, z)
        level, node = margins.level[rows], margins.node[rows]
        A, B = _blocks(x, lam, state.eta, z, paths, rows, level, node)
        mean, prec = _eta_conditional(*A, *B, C, eps0, prior.nu0, paper_literal)
        old = state.eta[z]
        new = _sample_gaussian_precision(mean, prec, generator)
        state.eta[z] = new
        moved = margins.compute(tree, state.eta, rows)
        if paper_literal:
            accepted += 1
            margins.update(rows, moved)
            continue
        A2, B2 = _blocks(x, lam, state.eta, z, paths, rows, moved[1], moved[2])
        mean2, prec2 = _eta_conditional(*A2, *B2, C, eps0, prior.nu0)
        log_k = kernel_log_ratio(lam_np[rows], moved, (margins.zeta[rows], level), C)
        log_ratio = (float(-0.5 * (new.pow(2).sum() - old.pow(2).sum()) / prior.nu0 ** 2)
                     + float(log_k)
                     + float(_gauss_log_density(old, mean2, prec2) - _gauss_log_density(new, mean, prec)))
        u = float(torch.rand((), dtype=torch.float64, generator=generator))
        if u == 0 or math.log(u) < log_ratio:
            accepted += 1
            margins.update(rows, moved)
        else:
            state.eta[z] = old
    return accepted / max(len(nodes), 1)


def sample_lambdas(x, state: RBHMCState, C: float, eps0: float, generator: torch.Generator,
                   margins: MarginCache | None = None) -> None:
    """Block (f): every :math:`\\lambda_n \\sim \\mathrm{GIG}(1/2, 1, C^2\\tilde\\zeta_n^2)`, in place
    (``margins`` as in :func:`rbhmc_path_step`)."""
    if margins is None:
        margins = MarginCache(x, state.tree, state.eta, eps0)
    state.lam = sample_lambda(margins.effective(), C, generator)


def rbhmc_sweep(x, state: RBHMCState, prior: BHMCPrior, C, eps0, generator: torch.Generator,
                paper_literal: bool = False) -> tuple[float, float]:
    """One RBHMC sweep (a)-(f), in place; returns the acceptance rates of paths and eta.

    The inputs are checked once, here; the blocks inside take them as prepared."""
    C, eps0, paper_literal = _check_settings(C, eps0, paper_literal)
    x, state = check_rbhmc_state(x, state, prior)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return _rbhmc_sweep(x, state, prior, C, eps0, generator, paper_literal)


def _rbhmc_sweep(x, state, prior, C, eps0, generator, paper_literal) -> tuple[float, float]:
    """:func:`rbhmc_sweep` on checked arguments."""
    with num_threads(1):  # tiny tensors: see pyromodels.bhmc.sampler's docstring
        lik = shifted_likelihoods(component_log_likelihoods(x, state.theta))
        margins = MarginCache(x, state.tree, state.eta, eps0)  # kept in step by blocks (a), (e)
        acc = sum(_rbhmc_path_step(lik[n], x, state, n, prior, C, generator, paper_literal,
                                   margins) for n in range(x.shape[0])) / x.shape[0]
        _sample_labels(x, state, generator)
        _sample_components(x, state, generator)
        _sample_weights(state, prior, generator)
        eta_acc = _sample_eta(x, state, prior, C, eps0, generator, paper_literal, margins)
        state.lam = _sample_lambda(margins.effective(), C, generator)
    return acc, eta_acc


def init_rbhmc_state(x, prior: BHMCPrior, generator: torch.Generator) -> RBHMCState:
    """:func:`~pyromodels.bhmc.sampler.init_state`, then eta from its prior and lam = 1."""
    base = init_state(x, prior, generator)
    D = base.theta.shape[1]
    eta = {z: prior.nu0 * torch.randn(D, dtype=torch.float64, generator=generator)
           for z in base.tree.nodes if z != base.tree.root}
    return RBHMCState(base.tree, base.weights, base.theta, base.c, eta,
                      torch.ones(base.tree.num_points, dtype=torch.float64))


@dataclass
class RBHMCChain:
    """The record of :func:`run_rbhmc`: ``cdl`` and ``rcdl`` ``(S,)``, ``nodes_per_level``
    ``(S, L)``, ``acceptance`` ``(S, 2)`` (paths, eta), the best state by RCDL after burn-in
    (Sec. 4.5), its RCDL, and the final state."""

    cdl: torch.Tensor
    rcdl: torch.Tensor
    nodes_per_level: torch.Tensor
    acceptance: torch.Tensor
    best_state: RBHMCState
    best_rcdl: float
    state: RBHMCState


def run_rbhmc(x, prior: BHMCPrior, num_sweeps: int, C, eps0, generator: torch.Generator,
              init: RBHMCState | None = None, burn_in: int = 0,
              paper_literal: bool = False) -> RBHMCChain:
    """Run the RBHMC sampler for ``num_sweeps`` sweeps (arguments as
    :func:`~pyromodels.bhmc.sampler.run_bhmc`, plus ``C``, ``eps0`` and ``paper_literal``)."""
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    S = check_int(num_sweeps, "num_sweeps", minimum=1)
    burn_in = check_int(burn_in, "burn_in", minimum=0, maximum=S - 1)
    C, eps0, paper_literal = _check_settings(C, eps0, paper_literal)
    state = init_rbhmc_state(x, prior, generator) if init is None else init.copy()
    x, state = check_rbhmc_state(x, state, prior)
    trace = torch.empty(S, 2, dtype=torch.float64)
    levels = torch.empty(S, prior.depth, dtype=torch.int64)
    acc = torch.empty(S, 2, dtype=torch.float64)
    best, best_rcdl = None, -math.inf
    with num_threads(1):
        for s in range(S):
            acc[s] = torch.tensor(_rbhmc_sweep(x, state, prior, C, eps0, generator,
                                               paper_literal))
            zeta, level, _ = _margin_violations(x, state.tree, state.eta, eps0)
            trace[s, 0] = _cdl(x, state, prior)
            trace[s, 1] = trace[s, 0] + _hinge_log_factor(zeta[level >= 0], C).sum()
            levels[s] = torch.tensor([len(state.tree.nodes_at_level(lv))
                                      for lv in range(1, prior.depth + 1)])
            if s >= burn_in and float(trace[s, 1]) > best_rcdl:
                best, best_rcdl = state.copy(), float(trace[s, 1])
    return RBHMCChain(trace[:, 0], trace[:, 1], levels, acc, best, best_rcdl, state)
