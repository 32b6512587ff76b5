"""Truncated stick-breaking DP mixture of isotropic Gaussians: the Pyro program, its state and
its log joint.

The model (Ishwaran & James 2001; the DDPM paper's eqs. 1, 4-7 with the DP replaced by its
truncation at ``T`` sticks and the Normal-Gamma base ``G0 = NG(mu0, kappa0, alpha0, beta0)``):

.. math::

    v_k &\\sim \\mathrm{Beta}(1, \\alpha), \\quad k < T, \\qquad v_T = 1, \\qquad
    \\pi_k = v_k \\prod_{j<k} (1 - v_j), \\\\
    \\lambda_k &\\sim \\mathrm{Gamma}(\\alpha_0, \\beta_0) \\text{ (rate)}, \\qquad
    \\mu_k \\mid \\lambda_k \\sim N(\\mu_0, (\\kappa_0 \\lambda_k)^{-1} I_d), \\\\
    c_i &\\sim \\mathrm{Categorical}(\\pi), \\qquad
    z_i \\mid c_i \\sim N(\\mu_{c_i}, \\lambda_{c_i}^{-1} I_d).

Component indices are 0-based in code (``0..T-1``); the last stick ``v[T-1]`` is fixed at 1.

Example:
    >>> import torch
    >>> from pyro import poutine
    >>> from pyromodels.conjugate import NormalGamma
    >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 1.0, 2.0, 1.0)
    >>> tr = poutine.trace(truncated_dp_mixture).get_trace(None, prior, 1.0, 4, num_points=3)
    >>> tuple(tr.nodes["mu"]["value"].shape), tuple(tr.nodes["c"]["value"].shape)
    ((4, 2), (3,))
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pyro
import pyro.distributions as dist
import torch
from pyro.ops.indexing import Vindex

from ..checks import as_float_tensor, as_label_tensor, check_int, check_positive
from ..conjugate import NormalGamma

__all__ = [
    "BlockedState",
    "stick_log_weights",
    "truncated_dp_mixture",
    "blocked_log_joint",
    "blocked_labels",
]

_LOG_2PI = math.log(2.0 * math.pi)


@dataclass
class BlockedState:
    """One state of the truncated DP mixture.

    Attributes:
        labels: ``(N,)`` int64 component index ``c_i`` in ``[0, T)``.
        v: ``(T,)`` stick fractions in ``(0, 1]``, with ``v[T-1] == 1``.
        mu: ``(T, d)`` component means.
        lam: ``(T,)`` component precisions (> 0).
        alpha: ``()`` DP concentration (> 0).
        log_1mv: optional ``(T-1,)`` values of ``log(1 - v_k)``, kept by the sampler (which
            draws the sticks in log space) because ``v_k`` rounds to 1 for tiny ``alpha``
            (``1 - v_k`` can be ``e^-100000`` at ``alpha = 1e-5``). They are used only where
            ``v_k`` is exactly 1, so a state whose ``v`` is edited stays consistent.
    """

    labels: torch.Tensor
    v: torch.Tensor
    mu: torch.Tensor
    lam: torch.Tensor
    alpha: torch.Tensor
    log_1mv: torch.Tensor | None = None

    @property
    def truncation(self) -> int:
        """Number of sticks ``T``."""
        return int(self.v.shape[0])

    @property
    def num_occupied(self) -> int:
        """Number of components holding at least one point."""
        return int(torch.unique(self.labels).numel())

    def stick_log1m(self) -> torch.Tensor:
        """``(T-1,)`` ``log(1 - v_k)``, from :attr:`log_1mv` where ``v_k`` rounded to 1."""
        direct = torch.log1p(-self.v[:-1])
        if self.log_1mv is None:
            return direct
        return torch.where(self.v[:-1] < 1, direct, self.log_1mv.to(direct.dtype))


def stick_log_weights(v: torch.Tensor, log_1mv: torch.Tensor | None = None) -> torch.Tensor:
    """``log pi_k = log v_k + sum_{j<k} log(1 - v_j)`` over the last axis.

    Args:
        v: ``(..., T)`` stick fractions with the last one equal to 1.
        log_1mv: optional ``(..., T-1)`` values of ``log(1 - v_j)`` to use instead of
            ``log1p(-v_j)`` (exact where ``v_j`` rounds to 1).

    Returns:
        ``(..., T)`` log weights; they sum (in probability) to 1 when ``v[..., -1] == 1``.

    Example:
        >>> stick_log_weights(torch.tensor([0.5, 0.5, 1.0])).exp()
        tensor([0.5000, 0.2500, 0.2500])
    """
    if log_1mv is None:
        log_1mv = torch.log1p(-v[..., :-1])
    tail = torch.cumsum(log_1mv, dim=-1)
    prefix = torch.cat([torch.zeros_like(v[..., :1]), tail], dim=-1)
    return torch.log(v) + prefix


def check_prior(prior, d: int | None = None) -> NormalGamma:
    """Raise unless ``prior`` is one (unbatched) :class:`NormalGamma` of dimension ``d``."""
    if not isinstance(prior, NormalGamma):
        raise TypeError(f"prior must be a NormalGamma, got {type(prior).__name__}")
    if tuple(prior.batch_shape) != ():
        raise ValueError(
            f"prior must be a single NormalGamma (batch shape ()), got batch shape "
            f"{tuple(prior.batch_shape)}"
        )
    if d is not None and prior.dim != d:
        raise ValueError(f"prior has dimension {prior.dim} but z has d = {d} columns")
    return prior


def check_data(z, dtype=None) -> torch.Tensor:
    """``z`` as a finite floating ``(N, d)`` tensor (``N >= 1``, ``d >= 1``)."""
    z = as_float_tensor(z, "z", ndim=2, dtype=dtype)
    if z.shape[1] < 1:
        raise ValueError(f"z must have shape (N, d) with d >= 1, got shape {tuple(z.shape)}")
    return z


def check_state(z, state: BlockedState) -> int:
    """Raise unless ``state`` fits the ``(N, d)`` data ``z``; return the truncation ``T``."""
    if not isinstance(state, BlockedState):
        raise TypeError(f"state must be a BlockedState, got {type(state).__name__}")
    T = state.v.shape[0] if state.v.dim() == 1 else -1
    if T < 1 or tuple(state.mu.shape) != (T, z.shape[1]) or tuple(state.lam.shape) != (T,):
        raise ValueError(
            "state must hold v (T,), mu (T, d) and lam (T,) with d = z.shape[1]; got v "
            f"{tuple(state.v.shape)}, mu {tuple(state.mu.shape)}, lam {tuple(state.lam.shape)}"
        )
    for name in ("labels", "v", "mu", "lam"):
        if getattr(state, name).device != z.device:
            raise ValueError(
                f"state.{name} must live on z's device ({z.device}), got {getattr(state, name).device}"
            )
    if state.labels.shape != (z.shape[0],):
        raise ValueError(f"state.labels must have shape ({z.shape[0]},), got {tuple(state.labels.shape)}")
    as_label_tensor(state.labels, "state.labels", num_classes=T)
    return T


def check_hyperprior(resample_alpha):
    """``None`` or the ``(shape, rate)`` of a Gamma hyperprior as two positive floats."""
    if resample_alpha is None:
        return None
    if not isinstance(resample_alpha, tuple | list) or len(resample_alpha) != 2:
        raise TypeError(
            "resample_alpha must be None or a pair (shape, rate) of a Gamma hyperprior, "
            f"got {resample_alpha!r}"
        )
    return check_positive(resample_alpha[0], "resample_alpha shape"), check_positive(
        resample_alpha[1], "resample_alpha rate"
    )


def check_generator(generator, device: torch.device) -> torch.Generator:
    """Raise unless ``generator`` is a ``torch.Generator`` on ``device``'s type."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if torch.device(generator.device).type != device.type:
        raise ValueError(f"generator must live on z's device ({device}), got {generator.device}")
    return generator


def truncated_dp_mixture(z, prior, alpha, truncation, num_points=None):
    """The truncated DP mixture as a Pyro program.

    Sample sites: ``"v"`` ``(T-1,)`` in plate ``"sticks"`` (absent when ``T == 1``); ``"lam"``
    ``(T,)`` and ``"mu"`` ``(T, d)`` in plate ``"components"``; ``"c"`` ``(N,)`` and the
    observed ``"z"`` ``(N, d)`` in plate ``"data"``.

    Args:
        z: ``(N, d)`` data, or ``None`` to simulate ``num_points`` points.
        prior: the base measure, a :class:`~pyromodels.conjugate.NormalGamma` of dimension ``d``.
        alpha: DP concentration (> 0).
        truncation: number of sticks ``T >= 1``.
        num_points: ``N`` when ``z`` is ``None`` (must equal ``len(z)`` otherwise).

    Returns:
        The ``(N, d)`` points (observed or simulated).
    """
    prior = check_prior(prior)
    alpha = check_positive(alpha, "alpha")
    T = check_int(truncation, "truncation", minimum=1)
    loc, dtype = prior.loc, prior.loc.dtype
    if z is None:
        if num_points is None:
            raise ValueError("num_points must be given when z is None")
        n = check_int(num_points, "num_points", minimum=1)
    else:
        z = check_data(z, dtype=dtype).to(loc.device)
        check_prior(prior, z.shape[1])
        n = z.shape[0]
        if num_points is not None and check_int(num_points, "num_points") != n:
            raise ValueError(f"num_points must equal len(z) = {n}, got {num_points}")
    one = torch.ones((), dtype=dtype, device=loc.device)
    if T > 1:
        with pyro.plate("sticks", T - 1, dim=-1):
            v = pyro.sample("v", dist.Beta(one, alpha * one))
        v = torch.cat([v, v.new_ones(v.shape[:-1] + (1,))], dim=-1)  # v_T = 1
    else:
        v = one.reshape(1)
    with pyro.plate("components", T, dim=-1):
        lam = pyro.sample("lam", dist.Gamma(prior.a, prior.b))
        scale = torch.rsqrt(prior.kappa * lam).unsqueeze(-1)
        mu = pyro.sample("mu", dist.Normal(loc, scale).to_event(1))
    with pyro.plate("data", n, dim=-1):
        # broadcasts over an enumeration dimension of c and a batch of (v, lam, mu) draws
        c = pyro.sample("c", dist.Categorical(logits=stick_log_weights(v).unsqueeze(-2)))
        point_loc = Vindex(mu.unsqueeze(-3))[..., c, :]
        point_scale = torch.rsqrt(Vindex(lam.unsqueeze(-2))[..., c]).unsqueeze(-1)
        return pyro.sample("z", dist.Normal(point_loc, point_scale).to_event(1), obs=z)


def blocked_log_joint(z, state: BlockedState, prior) -> torch.Tensor:
    """Log joint of the truncated model at ``state`` (with the concentration held fixed).

    .. math::

        \\sum_{k<T} \\log \\mathrm{Beta}(v_k | 1, \\alpha)
        + \\sum_k \\log NG(\\mu_k, \\lambda_k)
        + \\sum_i [\\log \\pi_{c_i} + \\log N(z_i | \\mu_{c_i}, \\lambda_{c_i}^{-1} I_d)]

    It equals ``log_prob_sum()`` of :func:`truncated_dp_mixture` conditioned on the state
    (where every ``v_k < 1`` in floating point; where one rounds to 1 the program scores
    ``+inf`` while this uses the state's exact ``log(1 - v_k)``).

    Args:
        z: ``(N, d)`` data.
        state: a :class:`BlockedState`.
        prior: the Normal-Gamma base measure.

    Returns:
        ``()`` tensor in ``z``'s dtype.

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 1.0, 2.0, 1.0)
        >>> one = torch.ones(1, dtype=torch.float64)
        >>> state = BlockedState(torch.tensor([0]), one, torch.zeros(1, 1, dtype=torch.float64),
        ...                      one, torch.tensor(1.0, dtype=torch.float64))
        >>> # log N(0 | 0, 1) + log Gamma(1 | 2, 1) + log N(0 | 0, 1) = -0.9189 - 1 - 0.9189
        >>> round(float(blocked_log_joint(torch.zeros(1, 1, dtype=torch.float64), state, prior)), 4)
        -2.8379
    """
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    v, lam, mu, c = state.v, state.lam, state.mu, state.labels
    alpha = torch.as_tensor(state.alpha, dtype=v.dtype, device=v.device)
    d = z.shape[1]
    log_1mv = state.stick_log1m()
    sticks = (torch.log(alpha) + (alpha - 1) * log_1mv).sum()
    base = prior.log_prob(mu.to(prior.loc.dtype), lam.to(prior.loc.dtype)).sum().to(z.dtype)
    lam_c = lam[c]
    sq = ((z - mu[c]) ** 2).sum(-1)
    lik = 0.5 * d * (torch.log(lam_c) - _LOG_2PI) - 0.5 * lam_c * sq
    return sticks + base + stick_log_weights(v, log_1mv)[c].sum() + lik.sum()


def blocked_labels(state_or_labels) -> torch.Tensor:
    """Occupied components relabelled ``0..K-1`` in order of first appearance.

    Two states that induce the same partition of the points get the same labels.

    Args:
        state_or_labels: a :class:`BlockedState` or an ``(N,)`` int64 label tensor.

    Returns:
        ``(N,)`` int64 canonical labels.

    Example:
        >>> blocked_labels(torch.tensor([7, 2, 7, 5]))
        tensor([0, 1, 0, 2])
    """
    labels = getattr(state_or_labels, "labels", state_or_labels)
    if not isinstance(labels, torch.Tensor) or labels.dtype != torch.long or labels.dim() != 1:
        raise TypeError("labels must be a 1-dimensional int64 tensor (or a BlockedState)")
    if labels.numel() == 0:
        return labels.clone()
    if int(labels.min()) < 0:
        raise ValueError(f"labels must be non-negative, found {int(labels.min())}")
    size = int(labels.max()) + 1
    n = labels.numel()
    first = torch.full((size,), n, dtype=torch.long, device=labels.device)
    first.scatter_reduce_(0, labels, torch.arange(n, device=labels.device), reduce="amin")
    order = torch.argsort(first)  # occupied components first, by first appearance
    rank = torch.empty_like(order)
    rank[order] = torch.arange(size, device=labels.device)
    return rank[labels]
