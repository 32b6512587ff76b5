r"""Compiled assignment passes of the DP-mixture Gibbs sweep (Neal's Algorithms 2 and 3).

Each pass visits points ``start, start + 1, ...`` in order and, for point :math:`i`,

1. removes :math:`z_i` from its slot's statistics, deleting the cluster (and its parameters)
   if it empties;
2. scores every occupied cluster and a new one,

   - Algorithm 2: :math:`\log n_{-i,k} + \log N(z_i \mid \mu_k, \lambda_k^{-1} I_d)`,
   - Algorithm 3: :math:`\log n_{-i,k} + \log t_{2\alpha_n}(z_i \mid \mu_n, \beta_n(\kappa_n+1)
     / (\alpha_n\kappa_n) I_d)` with the cluster's Normal-Gamma posterior excluding
     :math:`z_i`,
   - new cluster: ``log_new[i]`` :math:`= \log\alpha + \log m(z_i)` (given by the caller);

3. picks a cluster by the inverse CDF of the normalised weights at the uniform ``u[i]``
   (clusters in ``active`` order, the new cluster last);
4. opens a new cluster in the slot on top of the free stack with the next id; under
   Algorithm 2 its :math:`(\mu, \lambda)` are drawn at once from the Normal-Gamma posterior
   given :math:`z_i` alone, from the pre-drawn unit-rate Gamma variate
   ``pool_gamma[p]`` (shape :math:`\alpha_0 + d/2`) and normals ``pool_normal[p]``;
5. adds :math:`z_i` to the chosen slot.

A pass stops before a point when the free stack is empty or (Algorithm 2) the pool is used
up, and returns that point's index (``N`` when done); the caller refills and calls again.

The Algorithm 3 pass also *seats* the points (``seat=True``): it skips step 1, so each point
joins the clusters of the points before it, drawn from its collapsed conditional given those
points alone (the sequential allocation that starts a chain; the points carry no slot yet).
Per point the work is :math:`O(K d)`; per-cluster constants are cached and refreshed only for
the (at most two) clusters whose statistics change. Arrays are numpy views of the
:class:`~pyromodels.bnp.dp_state.DPState` tensors, updated in place; ``counters`` is
``[K, nfree, next_id]`` and ``pool_pos`` a one-element array.
"""

from __future__ import annotations

import math

import numpy as np

try:  # pragma: no cover - exercised by whichever branch the environment has
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        return lambda f: f


__all__ = ["HAVE_NUMBA", "alg2_pass", "alg3_pass", "size_terms"]

LOG_2PI = math.log(2.0 * math.pi)


@njit(cache=True, inline="always")
def _squared_distance(z, i, loc, c):  # pragma: no cover - compiled
    """``||z[i] - loc[c]||^2``."""
    out = 0.0
    for t in range(z.shape[1]):
        diff = z[i, t] - loc[c, t]
        out += diff * diff
    return out


@njit(cache=True)
def _remove(i, z, slot, cluster_id, counts, sums, sumsq, active, position, free, counters):
    """Take point ``i`` out of its slot; delete the cluster if it empties. Returns the slot
    and whether it was deleted."""
    s = slot[i]
    d = z.shape[1]
    counts[s] -= 1
    q = 0.0
    for j in range(d):
        sums[s, j] -= z[i, j]
        q += z[i, j] * z[i, j]
    sumsq[s] -= q
    if counts[s] > 0:
        return s, False
    k = counters[0] - 1
    last = active[k]
    p = position[s]
    active[p] = last
    position[last] = p
    counters[0] = k
    free[counters[1]] = s
    counters[1] += 1
    cluster_id[s] = -1
    for j in range(d):
        sums[s, j] = 0.0
    sumsq[s] = 0.0
    return s, True


@njit(cache=True)
def _open(cluster_id, counts, sums, sumsq, active, position, free, counters):
    """Open a cluster in the slot on top of the free stack; return the slot."""
    counters[1] -= 1
    s = free[counters[1]]
    k = counters[0]
    active[k] = s
    position[s] = k
    counters[0] = k + 1
    cluster_id[s] = counters[2]
    counters[2] += 1
    counts[s] = 0
    for j in range(sums.shape[1]):
        sums[s, j] = 0.0
    sumsq[s] = 0.0
    return s


@njit(cache=True)
def _add(i, s, z, slot, counts, sums, sumsq):
    counts[s] += 1
    q = 0.0
    for j in range(z.shape[1]):
        sums[s, j] += z[i, j]
        q += z[i, j] * z[i, j]
    sumsq[s] += q
    slot[i] = s


@njit(cache=True)
def _choose(lw, num, u):
    """Index in ``0..num-1`` by the inverse CDF of ``softmax(lw[:num])`` at ``u``."""
    m = -np.inf
    for j in range(num):
        if lw[j] > m:
            m = lw[j]
    total = 0.0
    for j in range(num):
        lw[j] = np.exp(lw[j] - m)
        total += lw[j]
    target = u * total
    acc = 0.0
    last = 0
    for j in range(num):
        if lw[j] > 0.0:
            last = j
        acc += lw[j]
        if acc > target:
            return j
    return last


@njit(cache=True)
def alg2_pass(z, slot, cluster_id, counts, sums, sumsq, mu, lam, active, position, free,
              counters, u, log_new, pool_gamma, pool_normal, pool_pos, m0, k0, b0, start):
    """Neal's Algorithm 2 assignment pass from point ``start``; returns where it stopped."""
    n, d = z.shape
    cap = cluster_id.shape[0]
    lconst = np.empty(cap)
    lw = np.empty(cap + 1)
    for j in range(counters[0]):
        c = active[j]
        lconst[c] = 0.5 * d * (np.log(lam[c]) - LOG_2PI)
    k1 = k0 + 1.0
    for i in range(start, n):
        if counters[1] == 0 or pool_pos[0] == pool_gamma.shape[0]:
            return i
        _remove(i, z, slot, cluster_id, counts, sums, sumsq, active, position, free, counters)
        num = counters[0]
        for j in range(num):
            c = active[j]
            dist = _squared_distance(z, i, mu, c)
            lw[j] = np.log(counts[c]) + lconst[c] - 0.5 * lam[c] * dist
        lw[num] = log_new[i]
        choice = _choose(lw, num + 1, u[i])
        if choice == num:
            s = _open(cluster_id, counts, sums, sumsq, active, position, free, counters)
            p = pool_pos[0]
            pool_pos[0] = p + 1
            dist = 0.0
            for t in range(d):
                diff = z[i, t] - m0[t]
                dist += diff * diff
            lam_new = pool_gamma[p] / (b0 + k0 * dist / (2.0 * k1))
            sd = 1.0 / np.sqrt(k1 * lam_new)
            for t in range(d):
                mu[s, t] = (k0 * m0[t] + z[i, t]) / k1 + sd * pool_normal[p, t]
            lam[s] = lam_new
            lconst[s] = 0.5 * d * (np.log(lam_new) - LOG_2PI)
        else:
            s = active[choice]
        _add(i, s, z, slot, counts, sums, sumsq)
    return n


@njit(cache=True)
def size_terms(n, d, k0, a0):  # pragma: no cover - compiled
    """``(n + 1,)`` the parts of a cluster's predictive constant that depend on its size
    ``m`` alone: ``log m + lgamma(a_m + d/2) - lgamma(a_m) + (d/2) log(k_m / (k_m + 1))
    - (d/2) log(2 pi)`` with ``a_m = a0 + m d / 2``, ``k_m = k0 + m`` (entry 0 unused).
    Computed once per chain, they spare each cache refresh two ``lgamma`` and three ``log``."""
    out = np.empty(n + 1)
    out[0] = -np.inf
    for m in range(1, n + 1):
        an = a0 + 0.5 * d * m
        kn = k0 + m
        out[m] = (np.log(m) + math.lgamma(an + 0.5 * d) - math.lgamma(an)
                  + 0.5 * d * (np.log(kn) - np.log(kn + 1.0)) - 0.5 * d * LOG_2PI)
    return out


@njit(cache=True)
def _predictive_cache(c, counts, sums, sumsq, m0, m0sq, k0, a0, b0, sizes, ploc, pconst,
                      pcoef, pshape, prate):
    """Student-t predictive constants of slot ``c`` from its current statistics, with the
    cluster's log size folded in: ``log n_c + log t(z) = pconst - pshape * log(prate + pcoef
    * ||z - ploc||^2)`` (``sizes`` from :func:`size_terms`)."""
    d = sums.shape[1]
    nk = counts[c]
    kn = k0 + nk
    norm = 0.0
    for t in range(d):
        loc = (k0 * m0[t] + sums[c, t]) / kn
        ploc[c, t] = loc
        norm += loc * loc
    an = a0 + 0.5 * d * nk
    bn = b0 + 0.5 * (sumsq[c] + k0 * m0sq - kn * norm)
    if bn < b0:  # b_n >= b_0 exactly; only rounding can make it smaller
        bn = b0
    pconst[c] = sizes[nk] + an * np.log(bn)
    pcoef[c] = kn / (2.0 * (kn + 1.0))
    pshape[c] = an + 0.5 * d
    prate[c] = bn


@njit(cache=True)
def alg3_pass(z, slot, cluster_id, counts, sums, sumsq, active, position, free, counters, u,
              log_new, m0, k0, a0, b0, sizes, start, seat):
    """Neal's Algorithm 3 (collapsed) assignment pass from ``start``; returns where it stopped.
    With ``seat`` the points are seated (not yet in a cluster; step 1 skipped). ``sizes``:
    :func:`size_terms` of these data and prior."""
    n, d = z.shape
    cap = cluster_id.shape[0]
    ploc = np.empty((cap, d))
    pconst = np.empty(cap)
    pcoef = np.empty(cap)
    pshape = np.empty(cap)
    prate = np.empty(cap)
    lw = np.empty(cap + 1)
    m0sq = 0.0
    for t in range(d):
        m0sq += m0[t] * m0[t]
    for j in range(counters[0]):
        _predictive_cache(active[j], counts, sums, sumsq, m0, m0sq, k0, a0, b0, sizes, ploc,
                          pconst, pcoef, pshape, prate)
    for i in range(start, n):
        if counters[1] == 0:
            return i
        if not seat:
            s, deleted = _remove(i, z, slot, cluster_id, counts, sums, sumsq, active, position,
                                 free, counters)
            if not deleted:
                _predictive_cache(s, counts, sums, sumsq, m0, m0sq, k0, a0, b0, sizes, ploc,
                                  pconst, pcoef, pshape, prate)
        num = counters[0]
        for j in range(num):
            c = active[j]
            dist = _squared_distance(z, i, ploc, c)
            lw[j] = pconst[c] - pshape[c] * np.log(prate[c] + pcoef[c] * dist)
        lw[num] = log_new[i]
        choice = _choose(lw, num + 1, u[i])
        if choice == num:
            s = _open(cluster_id, counts, sums, sumsq, active, position, free, counters)
        else:
            s = active[choice]
        _add(i, s, z, slot, counts, sums, sumsq)
        _predictive_cache(s, counts, sums, sumsq, m0, m0sq, k0, a0, b0, sizes, ploc, pconst,
                          pcoef, pshape, prate)
    return n
