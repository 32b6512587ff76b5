r"""The Antoniak distribution: the number of occupied tables in a Chinese restaurant process.

Seat :math:`n` customers in a CRP with concentration :math:`a > 0`; the number of occupied
tables :math:`t` has the probability mass function (Antoniak 1974)

.. math::

    p(t \mid n, a) = s(n, t)\, a^t \frac{\Gamma(a)}{\Gamma(a + n)}, \qquad t = 0, \dots, n,

where :math:`s(n, t)` is the unsigned Stirling number of the first kind (the number of
permutations of :math:`n` items with :math:`t` cycles; :math:`s(0, 0) = 1`). Since customer
:math:`i` (counted from 0) opens a new table with probability :math:`a / (a + i)` whatever
happened before, :math:`t` is a sum of independent Bernoulli variables, which gives the
sampler and the moments

.. math::

    E[t] = \sum_{i=0}^{n-1} \frac{a}{a + i} = a\,(\psi(a + n) - \psi(a)), \qquad
    \mathrm{Var}[t] = \sum_{i=0}^{n-1} \frac{a\, i}{(a + i)^2}
                    = E[t] - a^2 (\psi'(a) - \psi'(a + n)).

(The variance is evaluated by direct summation of its first terms, the closed form only for
the tail, because the closed form cancels badly at small ``n``.)

In the HDP (BHMC paper, Sec. 2) these are the auxiliary table
counts that make a node's weights conjugate given its children.

The log Stirling numbers come from the recursion :math:`s(n + 1, k) = n\, s(n, k) +
s(n, k - 1)` carried out in log space (``logaddexp``), so they never overflow; the table is
computed once per process and grown on demand (memory :math:`O(n_{max}^2)`) up to
:math:`n = 2048`; beyond that :func:`antoniak_log_prob` recomputes only the rows it needs
(time :math:`O(n_{max}^2)`, memory :math:`O(n_{max})` per distinct ``n``). The sampler needs no
Stirling numbers.

Example:
    >>> import torch
    >>> p = antoniak_log_prob(torch.arange(4), 3, 1.0).exp()  # s(3, t) = 0, 2, 3, 1; 3! = 6
    >>> [round(float(v), 6) for v in p]
    [0.0, 0.333333, 0.5, 0.166667]
    >>> sample_tables(torch.tensor([0, 5, 5]), 2.0, torch.Generator().manual_seed(0)).shape
    torch.Size([3])
"""

from __future__ import annotations

import math
import numbers

import torch

from ..checks import check_int
from .crp import check_torch_generator

__all__ = [
    "log_stirling1_table",
    "antoniak_log_prob",
    "sample_tables",
    "antoniak_mean",
    "antoniak_variance",
]

_TABLE = torch.zeros(1, 1, dtype=torch.float64)  # log s(0, 0) = 0
_CHUNK = 256  # customers handled per vectorised step of the sampler
_CACHED_MAX = 2048  # log pmf beyond this n streams the needed Stirling rows instead of caching
_DIRECT = 1024  # terms of the variance summed directly before the closed-form tail


def log_stirling1_table(n_max: int) -> torch.Tensor:
    """Log unsigned Stirling numbers of the first kind, ``L[n, k] = log s(n, k)``.

    Args:
        n_max: largest ``n`` needed (>= 0).

    Returns:
        ``(n_max + 1, n_max + 1)`` float64 tensor; ``-inf`` where ``s(n, k) = 0`` (``k > n``,
        or ``k = 0 < n``). A view of a cached table: do not modify it.

    Example:
        >>> log_stirling1_table(4)[4].exp().round().tolist()  # s(4, k) = 0, 6, 11, 6, 1
        [0.0, 6.0, 11.0, 6.0, 1.0]
    """
    global _TABLE
    n_max = check_int(n_max, "n_max", minimum=0)
    have = _TABLE.shape[0] - 1
    if n_max > have:
        size = max(n_max, 2 * have) + 1
        table = torch.full((size, size), -torch.inf, dtype=torch.float64)
        table[: have + 1, : have + 1] = _TABLE
        for n in range(have, size - 1):
            row = table[n, : n + 1]
            log_n = torch.log(torch.tensor(float(n), dtype=torch.float64))
            # s(n + 1, k) = n s(n, k) + s(n, k - 1), for k = 0..n+1
            table[n + 1, : n + 1] = log_n + row
            table[n + 1, 1 : n + 2] = torch.logaddexp(table[n + 1, 1 : n + 2], row)
        _TABLE = table
    return _TABLE[: n_max + 1, : n_max + 1]


def _log_stirling_rows(ns: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``log s(n, .)`` for the sorted unique ``ns`` only, by the same recursion keeping one
    row at a time: ``O(max(ns)^2)`` time, ``O(len(ns) max(ns))`` memory."""
    n_max = int(ns.max())
    rows = torch.full((ns.numel(), n_max + 1), -torch.inf, dtype=torch.float64)
    row = torch.full((n_max + 2,), -torch.inf, dtype=torch.float64)
    row[0] = 0.0
    wanted = dict(zip(ns.tolist(), range(ns.numel())))
    for n in range(n_max + 1):
        if n in wanted:
            rows[wanted[n]] = row[: n_max + 1]
        shifted = torch.logaddexp(math.log(n) + row[1:] if n else torch.full_like(row[1:], -torch.inf),
                                  row[:-1])
        row = torch.cat([row[:1] + (math.log(n) if n else -torch.inf), shifted])
    return rows, ns


def _as_counts(n, name: str, nonnegative: bool = True) -> torch.Tensor:
    if isinstance(n, bool):
        raise TypeError(f"{name} must hold integers, got bool")
    if isinstance(n, numbers.Integral):
        n = torch.tensor(int(n))
    n = torch.as_tensor(n)
    if n.is_floating_point() or n.is_complex() or n.dtype == torch.bool:
        raise TypeError(f"{name} must hold integers, got dtype {n.dtype}")
    n = n.to(torch.int64)
    if nonnegative and n.numel() and int(n.min()) < 0:
        raise ValueError(f"{name} must be >= 0, got minimum {int(n.min())}")
    return n


def _as_concentration(a, name: str = "a") -> torch.Tensor:
    if isinstance(a, bool):
        raise TypeError(f"{name} must be a real number or a floating tensor, got bool")
    a = torch.as_tensor(a, dtype=torch.float64) if not isinstance(a, torch.Tensor) else a
    if not a.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor or a real number, got dtype {a.dtype}")
    if not bool(torch.isfinite(a).all()):
        raise ValueError(f"{name} must be finite: found NaN or infinite values")
    if a.numel() and not bool((a > 0).all()):
        raise ValueError(f"{name} must be > 0, got minimum {float(a.min()):.6g}")
    return a.to(torch.float64)


def antoniak_log_prob(t, n, a) -> torch.Tensor:
    r"""Log pmf of the number of tables: :math:`\log s(n, t) + t \log a + \log\Gamma(a) -
    \log\Gamma(a + n)`.

    Args:
        t: integer numbers of tables, any shape.
        n: integer numbers of customers (>= 0), broadcastable with ``t``.
        a: concentration (> 0, finite), a real number or a tensor broadcastable with ``t``.

    Returns:
        float64 tensor of the broadcast shape; ``-inf`` outside ``0 <= t <= n`` (and for
        ``t = 0 < n``).

    Example:
        >>> float(antoniak_log_prob(0, 0, 0.3))  # no customers: no tables, surely
        0.0
    """
    t = _as_counts(t, "t", nonnegative=False)
    n = _as_counts(n, "n")
    a = _as_concentration(a)
    t, n, a = torch.broadcast_tensors(t, n, a)
    n_max = int(n.max()) if n.numel() else 0
    inside = (t >= 0) & (t <= n)
    if n_max <= _CACHED_MAX:
        log_s = log_stirling1_table(n_max)[n, t.clamp(0, n_max)]
    else:
        rows, where = _log_stirling_rows(n.unique())
        log_s = rows[torch.searchsorted(where, n.contiguous()), t.clamp(0, n_max)]
    log_s = torch.where(inside, log_s, torch.full_like(log_s, -torch.inf))
    log_a_t = torch.where(t == 0, torch.zeros_like(a), t * torch.log(a))
    return log_s + log_a_t + torch.lgamma(a) - torch.lgamma(a + n)


@torch.no_grad()
def sample_tables(n, a, generator: torch.Generator) -> torch.Tensor:
    """Draw table counts ``t ~ Antoniak(n, a)``, one per broadcast entry of ``(n, a)``.

    ``t = sum_{i=0}^{n-1} B_i`` with independent ``B_i ~ Bernoulli(a / (a + i))``; the first
    customer always opens a table. The work is ``O(numel * max(n))``, done in chunks of
    customers so that memory stays ``O(numel * 256)``.

    Args:
        n: integer customer counts (>= 0), any shape.
        a: concentration (> 0, finite), a real number or a tensor broadcastable with ``n``.
        generator: ``torch.Generator`` (CPU, or on ``a``'s device).

    Returns:
        int64 tensor of the broadcast shape, on ``a``'s device, with ``min(n, 1) <= t <= n``.

    Example:
        >>> g = torch.Generator().manual_seed(1)
        >>> t = sample_tables(torch.tensor([[1, 4], [0, 9]]), torch.tensor([0.5, 3.0]), g)
        >>> t.shape, int(t[0, 0]), int(t[1, 0])
        (torch.Size([2, 2]), 1, 0)
    """
    n = _as_counts(n, "n")
    a = _as_concentration(a)
    check_torch_generator(generator)
    n, a = torch.broadcast_tensors(n.to(a.device), a)
    flat_n, flat_a = n.reshape(-1), a.reshape(-1)
    total = torch.zeros_like(flat_n)
    n_max = int(flat_n.max()) if flat_n.numel() else 0
    for start in range(0, n_max, _CHUNK):
        live = torch.nonzero(flat_n > start).flatten()
        i = torch.arange(start, min(start + _CHUNK, n_max), dtype=torch.float64, device=a.device)
        a_live = flat_a[live].unsqueeze(-1)
        p = a_live / (a_live + i)
        u = torch.rand(p.shape, dtype=torch.float64, device=a.device, generator=generator)
        opened = (u < p) & (i < flat_n[live].unsqueeze(-1))
        total[live] += opened.sum(-1)
    return total.reshape(n.shape)


def antoniak_mean(n, a) -> torch.Tensor:
    r"""Mean number of tables, :math:`a(\psi(a + n) - \psi(a))`.

    Args:
        n: integer customer counts (>= 0), any shape.
        a: concentration (> 0), broadcastable with ``n``.

    Returns:
        float64 tensor of the broadcast shape.

    Example:
        >>> round(float(antoniak_mean(3, 1.0)), 6)  # 1 + 1/2 + 1/3
        1.833333
    """
    n = _as_counts(n, "n")
    a = _as_concentration(a)
    return a * (torch.digamma(a + n) - torch.digamma(a))


def antoniak_variance(n, a) -> torch.Tensor:
    r"""Variance of the number of tables, :math:`\sum_{i<n} a i / (a + i)^2`.

    The first 1024 terms are summed directly; the rest (if any) by the closed form
    :math:`a(\psi(a + n) - \psi(a + n_0)) - a^2(\psi'(a + n_0) - \psi'(a + n))`, so that
    the cancellation of the all-closed-form :math:`E[t] - a^2(\psi'(a) - \psi'(a + n))` at
    small ``n`` is avoided.

    Args:
        n: integer customer counts (>= 0), any shape.
        a: concentration (> 0), broadcastable with ``n``.

    Returns:
        float64 tensor of the broadcast shape.

    Example:
        >>> round(float(antoniak_variance(3, 1.0)), 6)  # 0 + 1/4 + 2/9
        0.472222
    """
    n = _as_counts(n, "n")
    a = _as_concentration(a)
    n, a = torch.broadcast_tensors(n.to(a.device), a)
    head = n.clamp(max=_DIRECT)
    i = torch.arange(int(head.max()) if head.numel() else 0, dtype=torch.float64, device=a.device)
    terms = a.unsqueeze(-1) * i / (a.unsqueeze(-1) + i) ** 2
    direct = torch.where(i < head.unsqueeze(-1), terms, torch.zeros_like(terms)).sum(-1)
    a0 = a + head
    tail = a * (torch.digamma(a + n) - torch.digamma(a0)) - a * a * (
        torch.polygamma(1, a0) - torch.polygamma(1, a + n))
    return direct + torch.where(n > head, tail, torch.zeros_like(tail))
