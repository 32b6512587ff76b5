r"""Gibbs sweeps for the DP mixture of isotropic Gaussians with a Normal-Gamma base measure.

One sweep of Neal's (2000) Algorithm 2, as the DDPM paper runs it (eqs. 22-24, with the
bookkeeping its Algorithm 1 leaves out), or of the collapsed Algorithm 3:

- an assignment pass over the points in order (see :mod:`~pyromodels.bnp.dp_kernels`): each
  point leaves its cluster (a cluster that empties is deleted with its parameters), then joins
  an occupied cluster or a new one drawn from the conditional of
  :func:`~pyromodels.bnp.dp_conditional.assignment_log_probs`; under Algorithm 2 a new cluster
  gets :math:`(\mu, \lambda)` at once from the Normal-Gamma posterior given that point;
- Algorithm 2 then redraws every :math:`(\mu_k, \lambda_k)` from eq. 22
  (:func:`~pyromodels.bnp.dp_state.resample_params`). Algorithm 3 draws none; call
  ``resample_params`` when a draw is wanted.

Random numbers come from the ``torch.Generator`` only, in a fixed order: ``N`` uniforms for the
pass, then for Algorithm 2 blocks of ``POOL`` unit-rate Gamma(:math:`\alpha_0 + d/2`) variates
and ``POOL x d`` normals for new clusters (a block is drawn whenever the previous one is used
up, and one at the start of each pass), then the parameter block. Both backends consume them
identically, so one seed gives the same chain with ``backend="numba"`` and ``"torch"`` (up to
floating-point ties, which do not occur in practice).

Example:
    >>> import torch
    >>> from pyromodels.conjugate import NormalGamma
    >>> from pyromodels.bnp import init_state
    >>> gen = torch.Generator().manual_seed(0)
    >>> z = torch.cat([torch.randn(20, 2, generator=gen, dtype=torch.float64),
    ...                5 + torch.randn(20, 2, generator=gen, dtype=torch.float64)])
    >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 0.1, 2.0, 2.0)
    >>> state = init_state(z, [0] * 40, prior, gen)
    >>> for _ in range(20):
    ...     state = sweep(z, state, prior, 1.0, gen)
    >>> state.num_clusters >= 2
    True
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ..checks import check_bool, check_in, check_int, check_positive
from ..conjugate import NormalGamma
from ..conjugate.random import sample_gamma
from ..core.backend import resolve_backend
from ..core.progress import progress_bar
from .crp import check_concentration, check_torch_generator, resample_concentration
from .dp_conditional import torch_pass
from .dp_kernels import alg2_pass, alg3_pass, size_terms
from .dp_state import ALGORITHMS, NUM_FREE, DPState, draw_params, empty_state
from .ng_predictive import check_data, check_prior, log_predictive

__all__ = ["sweep", "run_chain", "chain_sweeps", "sequential_init", "ChainResult", "POOL"]

POOL = 16


class _Problem(NamedTuple):
    z: torch.Tensor
    prior: NormalGamma
    log_m: torch.Tensor  # (N,) log prior predictive of each point
    backend: str
    algorithm: str
    sizes: object  # numpy (N + 1,) size terms of Algorithm 3's compiled pass, or None


def _prepare(z, state, prior, generator, algorithm, backend, paper_literal,
             seat: bool = False) -> _Problem:
    """The checked problem (``state=None``: no state to check yet; ``seat``: for the
    sequential start, which runs Algorithm 3's pass whatever ``algorithm``)."""
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    check_torch_generator(generator)
    check_in(algorithm, "algorithm", ALGORITHMS)
    check_bool(paper_literal, "paper_literal")
    if state is not None and not isinstance(state, DPState):
        raise TypeError(f"state must be a DPState, got {type(state).__name__}")
    if state is not None and (state.num_points != z.shape[0] or state.dim != z.shape[1]):
        raise ValueError(f"state is for {state.num_points} points of dimension {state.dim}, "
                         f"but z has shape {tuple(z.shape)}")
    which = resolve_backend(backend, z)
    sizes = None
    if which != "torch" and (algorithm == "alg3" or seat):  # for the compiled alg3 pass
        sizes = size_terms(z.shape[0], z.shape[1], float(prior.kappa), float(prior.a))
    return _Problem(z, prior, log_predictive(z, prior, paper_literal), which, algorithm, sizes)


def _assign(p: _Problem, state: DPState, alpha: float, generator: torch.Generator,
            algorithm: str, seat: bool) -> None:
    """One assignment pass over every point (``algorithm`` picks the kernel; ``seat`` seats
    points that are in no cluster yet)."""
    z, prior = p.z, p.prior
    n, d = z.shape
    u = torch.rand(n, dtype=torch.float64, generator=generator)
    log_new = p.log_m + math.log(alpha)
    shape = torch.full((POOL,), float(prior.a) + 0.5 * d, dtype=torch.float64)
    pool_g = pool_n = None
    pool_pos = [POOL]
    k0, a0, b0 = float(prior.kappa), float(prior.a), float(prior.b)
    start = 0
    while start < n:
        if int(state.counters[NUM_FREE]) == 0:
            state.grow(2 * state.capacity)
        if algorithm == "alg2" and pool_pos[0] == POOL:
            pool_g = sample_gamma(shape, generator)
            pool_n = torch.randn(POOL, d, dtype=torch.float64, generator=generator)
            pool_pos = [0]
        if p.backend == "torch":
            start = torch_pass(z, state, prior, algorithm, u, log_new, pool_g, pool_n,
                               pool_pos, start, seat)
            continue
        arrays = (z.numpy(), state.slot.numpy(), state.cluster_id.numpy(), state.counts.numpy(),
                  state.sums.numpy(), state.sumsq.numpy())
        book = (state.active.numpy(), state.position.numpy(), state.free.numpy(),
                state.counters.numpy(), u.numpy(), log_new.numpy())
        m0 = prior.loc.numpy()
        if algorithm == "alg2":
            pos = torch.tensor(pool_pos, dtype=torch.int64)
            start = int(alg2_pass(*arrays, state.mu.numpy(), state.lam.numpy(), *book,
                                  pool_g.numpy(), pool_n.numpy(), pos.numpy(), m0, k0, b0,
                                  start))
            pool_pos = [int(pos[0])]
        else:
            start = int(alg3_pass(*arrays, *book, m0, k0, a0, b0, p.sizes, start, seat))
    state.refresh_stats(z)
    if p.algorithm == "alg2":
        draw_params(state, prior, generator)
    else:
        state.has_params = False


def _sweep(p: _Problem, state: DPState, alpha: float, generator: torch.Generator) -> None:
    """One sweep on prepared (checked) inputs."""
    state.refresh_stats(p.z)  # the statistics must be those of these data
    if p.algorithm == "alg2" and not state.has_params:
        draw_params(state, p.prior, generator)
    _assign(p, state, alpha, generator, p.algorithm, False)


def sweep(z, state: DPState, prior: NormalGamma, alpha, generator: torch.Generator,
          algorithm: str = "alg2", backend: str = "auto", paper_literal: bool = False) -> DPState:
    """One Gibbs sweep, updating ``state`` in place (and returning it).

    Args:
        z: ``(N, d)`` data (float64 after conversion).
        state: from :func:`~pyromodels.bnp.dp_state.init_state` for these data.
        prior: Normal-Gamma base measure ``NG(mu_0, kappa_0, alpha_0, beta_0)``.
        alpha: DP concentration (> 0).
        generator: ``torch.Generator`` (CPU), the only source of randomness.
        algorithm: ``"alg2"`` (the paper's sampler; a state without parameters gets a draw
            first) or ``"alg3"`` (collapsed; leaves ``has_params = False``).
        backend: ``"auto"`` (numba when installed), ``"numba"`` or ``"torch"``.
        paper_literal: new-cluster weight by eq. 24 as printed (the (1/2) kappa term).

    Raises:
        ValueError: ``alpha <= 0``, an unknown ``algorithm``/``backend``, a state for other data.
        TypeError: a wrong ``generator`` or ``state``.
    """
    alpha = check_concentration(alpha)
    problem = _prepare(z, state, prior, generator, algorithm, backend, paper_literal)
    _sweep(problem, state, alpha, generator)
    return state


def sequential_init(z, prior: NormalGamma, alpha, generator: torch.Generator,
                    algorithm: str = "alg2", backend: str = "auto",
                    paper_literal: bool = False) -> DPState:
    """A chain's start by sequential allocation: the points are seated in order, each drawn
    from its collapsed conditional (Algorithm 3's) given the points seated before it; under
    ``"alg2"`` the clusters' parameters are then drawn from eq. 22.

    One pass costs what a sweep does, and on separated clusters it lands near the posterior's
    partition at once, where a one-cluster start opens the clusters one sweep at a time.
    Cluster ids are handed out in order of opening, so they are the canonical labels.

    Args:
        z, prior, alpha, generator, algorithm, backend, paper_literal: as in :func:`sweep`.

    Returns:
        A new :class:`~pyromodels.bnp.dp_state.DPState` for ``z``.

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> z = torch.tensor([[0.0], [0.1], [9.0], [9.1]], dtype=torch.float64)
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 0.01, 2.0, 0.1)
        >>> state = sequential_init(z, prior, 1.0, torch.Generator().manual_seed(0), "alg3")
        >>> state.assignments.tolist()
        [0, 0, 1, 1]
    """
    alpha = check_concentration(alpha)
    problem = _prepare(z, None, prior, generator, algorithm, backend, paper_literal, True)
    state = empty_state(*problem.z.shape)
    _assign(problem, state, alpha, generator, "alg3", True)
    return state


class ChainResult(NamedTuple):
    """Output of :func:`run_chain`.

    Attributes:
        state: the final state.
        alpha: the final concentration.
        num_clusters: ``(T,)`` int64 ``K`` after each sweep.
        alphas: ``(T,)`` float64 concentration after each sweep.
        labels: ``(T, N)`` int64 cluster ids after each sweep, or ``None``.
    """

    state: DPState
    alpha: float
    num_clusters: torch.Tensor
    alphas: torch.Tensor
    labels: torch.Tensor | None


def _check_alpha_prior(alpha_prior):
    if alpha_prior is None:
        return None
    if not isinstance(alpha_prior, tuple) or len(alpha_prior) != 2:
        raise TypeError("alpha_prior must be a (shape, rate) tuple or None")
    return tuple(check_positive(v, n) for v, n in zip(alpha_prior, ("alpha_prior[0]",
                                                                    "alpha_prior[1]")))


def chain_sweeps(z, state: DPState, prior: NormalGamma, alpha, generator: torch.Generator,
                 num_sweeps: int, algorithm: str = "alg2", backend: str = "auto",
                 paper_literal: bool = False, alpha_prior: tuple[float, float] | None = None):
    """``num_sweeps`` sweeps as an iterator: the arguments are checked once, here, and each
    step yields ``(state, alpha)`` after a sweep (and the Escobar-West update of ``alpha``
    under ``alpha_prior``); ``state`` is updated in place.

    Args:
        z, state, prior, alpha, generator, algorithm, backend, paper_literal: as in
            :func:`sweep`.
        num_sweeps: number of sweeps (>= 1).
        alpha_prior: as in :func:`run_chain`.

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> z = torch.zeros(5, 1, dtype=torch.float64)
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 1.0, 2.0, 1.0)
        >>> from pyromodels.bnp import init_state
        >>> gen = torch.Generator().manual_seed(0)
        >>> state = init_state(z, [0] * 5, prior, gen)
        >>> [s.num_clusters >= 1 for s, _ in chain_sweeps(z, state, prior, 1.0, gen, 2)]
        [True, True]
    """
    alpha = check_concentration(alpha)
    num_sweeps = check_int(num_sweeps, "num_sweeps", minimum=1)
    hyper = _check_alpha_prior(alpha_prior)
    problem = _prepare(z, state, prior, generator, algorithm, backend, paper_literal)
    return _iterate(problem, state, alpha, generator, num_sweeps, hyper)


def _iterate(problem: _Problem, state: DPState, alpha: float, generator, num_sweeps: int,
             hyper):
    n = problem.z.shape[0]
    for _ in range(num_sweeps):
        _sweep(problem, state, alpha, generator)
        if hyper is not None:
            alpha = resample_concentration(alpha, state.num_clusters, n, *hyper, generator)
        yield state, alpha


def run_chain(z, state: DPState, prior: NormalGamma, alpha, generator: torch.Generator,
              num_sweeps: int, algorithm: str = "alg2", backend: str = "auto",
              paper_literal: bool = False, alpha_prior: tuple[float, float] | None = None,
              keep_labels: bool = False, progress: bool = False) -> ChainResult:
    """``num_sweeps`` sweeps with optional Escobar-West updates of ``alpha`` in between.

    Args:
        z, state, prior, alpha, generator, algorithm, backend, paper_literal: as in
            :func:`sweep`.
        num_sweeps: number of sweeps (>= 1).
        alpha_prior: ``(shape, rate)`` of a Gamma hyperprior on ``alpha``: after each sweep
            ``alpha`` is redrawn by :func:`~pyromodels.bnp.crp.resample_concentration`. The
            default ``None`` keeps ``alpha`` fixed, as the paper does.
        keep_labels: record the assignments after every sweep (``T x N`` integers).
        progress: show a progress bar (on a terminal only).

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> from pyromodels.bnp import init_state
        >>> z = torch.zeros(5, 1, dtype=torch.float64)
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 1.0, 2.0, 1.0)
        >>> gen = torch.Generator().manual_seed(0)
        >>> out = run_chain(z, init_state(z, [0] * 5, prior, gen), prior, 1.0, gen, 3,
        ...                 algorithm="alg3", alpha_prior=(1.0, 1.0))
        >>> out.num_clusters.shape, out.alphas.shape
        (torch.Size([3]), torch.Size([3]))
    """
    check_bool(keep_labels, "keep_labels")
    check_bool(progress, "progress")
    steps = chain_sweeps(z, state, prior, alpha, generator, num_sweeps, algorithm, backend,
                         paper_literal, alpha_prior)
    n = state.num_points
    ks = torch.empty(num_sweeps, dtype=torch.int64)
    alphas = torch.empty(num_sweeps, dtype=torch.float64)
    labels = torch.empty(num_sweeps, n, dtype=torch.int64) if keep_labels else None
    alpha = float(alpha)
    with progress_bar(num_sweeps, f"DP mixture ({algorithm})", progress) as bar:
        for t, (state, alpha) in enumerate(steps):
            ks[t] = state.num_clusters
            alphas[t] = alpha
            if labels is not None:
                labels[t] = state.assignments
            bar.update()
    return ChainResult(state, alpha, ks, alphas, labels)
