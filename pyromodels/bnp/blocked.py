"""Blocked Gibbs sampler (Ishwaran & James 2001) for the truncated DP mixture of isotropic
Gaussians, vectorised in torch; the same code runs on CPU and CUDA.

One sweep (:func:`blocked_sweep`) updates, in order, given the labels ``c``:

1. per-component statistics ``n_k``, ``s_k = sum_{c_i=k} z_i``, ``q_k = sum_{c_i=k} ||z_i||^2``
   (one ``index_add``, accumulated in float64);
2. ``(mu_k, lambda_k) ~ NG(posterior)`` for every ``k`` (DDPM paper, eq. 22; empty components draw
   from the prior);
3. ``v_k ~ Beta(1 + n_k, alpha + sum_{j>k} n_j)`` for ``k < T`` (drawn in log space);
4. optionally ``alpha ~ Gamma(a + T - 1, b - sum_{k<T} log(1 - v_k))`` under a
   ``Gamma(a, b)`` hyperprior (off by default);
5. all labels at once: ``p(c_i = k) ∝ pi_k N(z_i | mu_k, lambda_k^{-1} I_d)`` by inverse-CDF
   sampling with one uniform per point. The squared distances are expanded as
   ``||z||^2 - 2 z.mu + ||mu||^2`` (one matmul, data centred first) in chunks of rows so that
   memory stays bounded.

Precision. The statistics, the Normal-Gamma posterior and the stick and parameter draws run in
float64 whatever ``z``'s dtype; the ``(N, T)`` assignment block runs in ``z``'s dtype. The
expanded distance loses about ``eps * lam_k (||z_i - zbar||^2 + ||mu_k - zbar||^2)`` nats of
a logit (``eps`` the dtype's machine epsilon, ``zbar`` the data mean): negligible in float64;
in float32 about 1e-5 for unit-scale features, but it grows for tight clusters far from the
data mean. Uniforms are drawn in float64, so float32 and float64 runs from one seed share them.

The model, the state and the log joint live in :mod:`pyromodels.bnp.blocked_model`; the
assignment kernel (step 5) in :mod:`pyromodels.bnp.blocked_assign`.

Example:
    >>> import torch
    >>> from pyromodels.conjugate import NormalGamma
    >>> gen = torch.Generator().manual_seed(0)
    >>> z = torch.randn(50, 2, dtype=torch.float64, generator=gen)
    >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 0.1, 2.0, 1.0)
    >>> state = blocked_init(z, 3, prior, alpha=1.0, truncation=10, generator=gen)
    >>> for _ in range(5):
    ...     state = blocked_sweep(z, state, prior, gen)
    >>> state.labels.shape, state.v.shape, state.mu.shape
    (torch.Size([50]), torch.Size([10]), torch.Size([10, 2]))
"""

from __future__ import annotations

import numbers

import torch

from ..checks import as_label_tensor, check_int, check_positive
from ..conjugate import NormalGamma, sample_gamma, sample_log_gamma
from .blocked_assign import CHUNK_ENTRIES, assignment_logits, draw_labels
from .blocked_model import (
    BlockedState,
    blocked_labels,
    blocked_log_joint,
    check_data,
    check_generator,
    check_hyperprior,
    check_prior,
    check_state,
    stick_log_weights,
    truncated_dp_mixture,
)

__all__ = [
    "BlockedState",
    "blocked_init",
    "blocked_sweep",
    "blocked_chain",
    "draw_blocked_parameters",
    "draw_blocked_labels",
    "blocked_log_joint",
    "blocked_labels",
    "truncated_dp_mixture",
    "stick_log_weights",
    "component_posterior",
    "stick_posterior",
    "assignment_logits",
]


def _as_float64_prior(prior: NormalGamma, device) -> NormalGamma:
    f = torch.float64
    if prior.loc.dtype == f and prior.loc.device == torch.device(device):
        return prior
    return NormalGamma(
        prior.loc.to(device=device, dtype=f), prior.kappa.to(device=device, dtype=f),
        prior.a.to(device=device, dtype=f), prior.b.to(device=device, dtype=f),
    )


def _stats(z: torch.Tensor, labels: torch.Tensor, T: int):
    """``(n, s, q)`` of shapes ``(T,)``, ``(T, d)``, ``(T,)`` in float64."""
    z64 = z.to(torch.float64)
    n = torch.bincount(labels, minlength=T).to(torch.float64)
    s = torch.zeros(T, z.shape[1], dtype=torch.float64, device=z.device).index_add_(0, labels, z64)
    q = torch.zeros(T, dtype=torch.float64, device=z.device).index_add_(0, labels, (z64 * z64).sum(1))
    return n, s, q


def component_posterior(z, labels, prior, truncation) -> NormalGamma:
    """Posterior of every component's ``(mu_k, lambda_k)`` given the labels (DDPM paper, eq. 22).

    Args:
        z: ``(N, d)`` data.
        labels: ``(N,)`` component indices in ``[0, T)``.
        prior: the Normal-Gamma base measure.
        truncation: ``T``.

    Returns:
        A float64 :class:`NormalGamma` with batch shape ``(T,)`` (the prior for empty ones).

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> g = torch.Generator().manual_seed(0)
        >>> z = torch.randn(20, 2, dtype=torch.float64, generator=g)
        >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 0.5, 2.0, 1.0)
        >>> post = component_posterior(z, torch.zeros(20, dtype=torch.long), prior, 3)
        >>> post.a.tolist()  # a0 + n d / 2 for the occupied one, a0 for the empty ones
        [22.0, 2.0, 2.0]
    """
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    T = check_int(truncation, "truncation", minimum=1)
    labels = as_label_tensor(labels, "labels", num_classes=T, device=z.device)
    return _as_float64_prior(prior, z.device).posterior(*_stats(z, labels, T))


def _stick_params(n: torch.Tensor, alpha: torch.Tensor):
    tail = n.sum() - torch.cumsum(n, 0)  # sum_{j>k} n_j
    return 1.0 + n[:-1], alpha + tail[:-1]


def stick_posterior(labels, alpha, truncation):
    """Beta parameters of ``v_k | c`` for ``k < T``: ``(1 + n_k, alpha + sum_{j>k} n_j)``.

    Args:
        labels: ``(N,)`` component indices in ``[0, T)``.
        alpha: concentration (> 0).
        truncation: ``T``.

    Returns:
        Two float64 tensors of shape ``(T - 1,)``.

    Example:
        >>> stick_posterior(torch.tensor([0, 0, 2]), 1.0, 3)
        (tensor([3., 1.], dtype=torch.float64), tensor([2., 2.], dtype=torch.float64))
    """
    T = check_int(truncation, "truncation", minimum=1)
    alpha = check_positive(alpha, "alpha")
    labels = as_label_tensor(labels, "labels", num_classes=T)
    n = torch.bincount(labels, minlength=T).to(torch.float64)
    return _stick_params(n, torch.tensor(alpha, dtype=torch.float64, device=n.device))


def _parameter_update(z, labels, prior, alpha, T, generator, hyper):
    """Steps 1-4: ``(mu, lam, log v, log(1 - v), alpha)`` given the labels."""
    prior64 = _as_float64_prior(prior, z.device)
    n, s, q = _stats(z, labels, T)
    mu, lam = prior64.posterior(n, s, q).sample(generator)
    alpha64 = alpha.to(torch.float64)
    log_v = log_1mv = n.new_zeros(0)
    if T > 1:  # v = G_a / (G_a + G_b) with unit-rate Gamma draws, kept in log space
        a, b = _stick_params(n, alpha64)
        log_g = sample_log_gamma(torch.stack([a, b], -1), generator)
        log_norm = torch.logaddexp(log_g[:, 0], log_g[:, 1])
        log_v, log_1mv = log_g[:, 0] - log_norm, log_g[:, 1] - log_norm
    if hyper is not None:
        shape = torch.tensor(hyper[0] + T - 1, dtype=torch.float64, device=z.device)
        alpha64 = sample_gamma(shape, generator) / (hyper[1] - log_1mv.sum())
    return mu, lam, log_v, log_1mv, alpha64


def _state_from(z, labels, mu, lam, log_v, log_1mv, alpha64) -> BlockedState:
    one = torch.ones(1, dtype=z.dtype, device=z.device)
    v = torch.cat([log_v.exp().to(z.dtype), one])
    t = z.dtype
    return BlockedState(labels, v, mu.to(t), lam.to(t), alpha64.to(t), log_1mv.to(t))


def blocked_init(z, labels, prior, alpha, truncation, generator) -> BlockedState:
    """A starting state: labels given (or uniform over the first ``num_components``), then the
    parameters ``(mu, lam)``, the sticks ``v`` drawn from their conditionals given the labels.

    Args:
        z: ``(N, d)`` finite data; the state takes its dtype and device.
        labels: ``(N,)`` initial component indices in ``[0, truncation)``, or an int
            ``num_components`` (``1 <= num_components <= truncation``) for uniform random labels.
        prior: the Normal-Gamma base measure (dimension ``d``, batch shape ``()``).
        alpha: concentration (> 0).
        truncation: number of sticks ``T >= 1``.
        generator: ``torch.Generator`` on ``z``'s device.

    Raises:
        ValueError: for ``alpha <= 0``, ``truncation < 1``, non-finite ``z`` or labels out of
            range (each message names the argument).
        TypeError: if ``generator`` is not a ``torch.Generator``.

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> g = torch.Generator().manual_seed(0)
        >>> z = torch.randn(20, 2, dtype=torch.float64, generator=g)
        >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 0.5, 2.0, 1.0)
        >>> state = blocked_init(z, 3, prior, alpha=1.0, truncation=8, generator=g)
        >>> int(state.labels.max()) < 3, float(state.v[-1])
        (True, 1.0)
    """
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    alpha = check_positive(alpha, "alpha")
    T = check_int(truncation, "truncation", minimum=1)
    check_generator(generator, z.device)
    if isinstance(labels, numbers.Integral) and not isinstance(labels, bool):
        k = check_int(labels, "num_components", minimum=1, maximum=T)
        labels = torch.randint(k, (z.shape[0],), generator=generator, device=z.device)
    else:
        labels = as_label_tensor(labels, "labels", num_classes=T, device=z.device)
        if labels.shape != (z.shape[0],):
            raise ValueError(f"labels must have shape ({z.shape[0]},), got {tuple(labels.shape)}")
    alpha_t = torch.tensor(alpha, dtype=torch.float64, device=z.device)
    mu, lam, log_v, log_1mv, alpha64 = _parameter_update(
        z, labels, prior, alpha_t, T, generator, None
    )
    return _state_from(z, labels, mu, lam, log_v, log_1mv, alpha64)


def _check_sweep_args(z, state, prior, generator, resample_alpha, chunk_rows):
    """The checks of a sweep: ``(z, float64 prior, hyperprior, chunk_rows)``."""
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    T = check_state(z, state)
    hyper = check_hyperprior(resample_alpha)
    check_generator(generator, z.device)
    check_positive(float(state.alpha), "state.alpha")
    if chunk_rows is None:
        chunk_rows = max(1, CHUNK_ENTRIES.get(z.device.type, 1 << 16) // T)
    chunk_rows = check_int(chunk_rows, "chunk_rows", minimum=1)
    return z, _as_float64_prior(prior, z.device), hyper, chunk_rows


def draw_blocked_parameters(z, labels, prior, alpha, truncation, generator, hyper=None):
    """Steps 1-4 on trusted inputs: ``(mu, lam, log v, log(1 - v), alpha)`` in float64 given
    the labels (``alpha`` a float64 tensor; ``hyper`` as checked ``resample_alpha``)."""
    return _parameter_update(z, labels, prior, alpha, truncation, generator, hyper)


def draw_blocked_labels(z, mu, lam, log_v, log_1mv, generator, chunk_rows=None) -> torch.Tensor:
    """Step 5 on trusted inputs: every label at once, given the float64 parameters (the
    uniforms drawn in float64 from ``generator``)."""
    if chunk_rows is None:
        chunk_rows = max(1, CHUNK_ENTRIES.get(z.device.type, 1 << 16) // mu.shape[0])
    # log pi from the log-space stick draws: exact even where v rounds to 1 in z's dtype
    zero = log_v.new_zeros(1)
    log_pi = torch.cat([log_v, zero]) + torch.cat([zero, torch.cumsum(log_1mv, 0)])
    # uniforms on (0, 1], drawn in float64 whatever z's dtype, so float32 and float64 runs from
    # one seed see the same numbers
    u = torch.rand(z.shape[0], dtype=torch.float64, device=z.device, generator=generator)
    w = (1.0 - u).to(z.dtype)
    return draw_labels(z, log_pi.to(z.dtype), mu.to(z.dtype), lam.to(z.dtype), w, chunk_rows)


def _step(z, state: BlockedState, prior64, generator, hyper, chunk_rows) -> BlockedState:
    """One sweep on checked inputs (``prior64`` from :func:`_as_float64_prior`)."""
    T = state.truncation
    alpha_t = state.alpha.to(device=z.device, dtype=torch.float64).reshape(())
    mu, lam, log_v, log_1mv, alpha64 = _parameter_update(
        z, state.labels, prior64, alpha_t, T, generator, hyper
    )
    new = _state_from(z, state.labels, mu, lam, log_v, log_1mv, alpha64)
    new.labels = draw_blocked_labels(z, mu, lam, log_v, log_1mv, generator, chunk_rows)
    return new


def blocked_sweep(
    z, state: BlockedState, prior, generator, resample_alpha=None, chunk_rows=None
) -> BlockedState:
    """One blocked Gibbs sweep (steps 1-5 of the module docstring); returns a new state.

    Args:
        z: ``(N, d)`` finite data on the state's device.
        state: the current :class:`BlockedState`.
        prior: the Normal-Gamma base measure.
        generator: ``torch.Generator`` on ``z``'s device.
        resample_alpha: ``None`` (keep ``alpha``) or ``(a, b)``, the shape and rate of a Gamma
            hyperprior on ``alpha``, for the update ``alpha | v``.
        chunk_rows: rows per block of the ``(N, T)`` assignment computation (default: about
            ``2^16 / T`` on a CPU, ``2^24 / T`` on CUDA); memory is ``O(chunk_rows * T)``
            beyond the data.

    Returns:
        The next :class:`BlockedState`, in ``z``'s dtype.

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> g = torch.Generator().manual_seed(0)
        >>> z = torch.randn(20, 2, dtype=torch.float64, generator=g)
        >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 0.5, 2.0, 1.0)
        >>> state = blocked_init(z, 1, prior, 1.0, 8, g)
        >>> state = blocked_sweep(z, state, prior, g, resample_alpha=(1.0, 1.0))
        >>> state.mu.shape, bool(state.alpha > 0)
        (torch.Size([8, 2]), True)
    """
    z, prior64, hyper, chunk_rows = _check_sweep_args(z, state, prior, generator,
                                                      resample_alpha, chunk_rows)
    return _step(z, state, prior64, generator, hyper, chunk_rows)


def blocked_chain(z, state: BlockedState, prior, generator, num_sweeps: int,
                  resample_alpha=None, chunk_rows=None):
    """``num_sweeps`` blocked sweeps as an iterator: the arguments are checked once, here,
    and each step yields the next state (what :func:`blocked_sweep` returns, sweep by sweep).

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> g = torch.Generator().manual_seed(0)
        >>> z = torch.randn(20, 2, dtype=torch.float64, generator=g)
        >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 0.5, 2.0, 1.0)
        >>> state = blocked_init(z, 2, prior, 1.0, 8, g)
        >>> [s.labels.shape for s in blocked_chain(z, state, prior, g, 2)]
        [torch.Size([20]), torch.Size([20])]
    """
    num_sweeps = check_int(num_sweeps, "num_sweeps", minimum=1)
    args = _check_sweep_args(z, state, prior, generator, resample_alpha, chunk_rows)
    return _iterate(state, generator, num_sweeps, *args)


def _iterate(state, generator, num_sweeps, z, prior64, hyper, chunk_rows):
    for _ in range(num_sweeps):
        state = _step(z, state, prior64, generator, hyper, chunk_rows)
        yield state
