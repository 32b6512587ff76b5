"""Rank-normalised split R-hat and bulk and tail effective sample sizes of Markov chains.

These are the convergence statistics of Vehtari, Gelman, Simpson, Carpenter and Bürkner
(2021), "Rank-normalization, folding, and localization: an improved R-hat for assessing
convergence of MCMC", with the conventions ArviZ uses for them (``az.rhat``, ``az.ess`` with
``method="bulk"`` or ``"tail"``), so a fit's warnings and a user's ArviZ summary agree
(``tests/core/test_chain_stats.py`` checks them against ArviZ). They need only NumPy and torch:
the package import of ArviZ loads its plotting stack, about 1.5 s that every fresh process
would pay for the automatic check at the end of a fit.

* Each chain is split in halves (the middle draw of an odd count left out), so a chain that
  drifts looks like two chains that disagree.
* Rank normalisation: the draws of all chains are ranked together (ties get their average
  rank ``r``) and mapped to ``Phi^-1((r - 3/8) / (S + 1/4))`` for ``S`` draws in all.
* R-hat: ``sqrt((B / W + n - 1) / n)`` with ``n`` draws per (split) chain, ``B`` ``n`` times
  the variance of the chain means and ``W`` the mean of the chain variances (both with
  ``ddof = 1``); the rank version is the larger of the R-hat of the normalised draws and of
  the normalised distances from the median (folded).
* ESS: ``S / tau`` with ``tau = -1 + 2 sum_t rho_t`` over Geyer's initial positive and then
  monotone sequence of paired autocorrelations, which are estimated from every chain's
  autocovariance and the between-chain variance; ``tau`` is kept at least ``1 / log10(S)``.
  Bulk ESS is that of the normalised split draws; tail ESS the smaller of those of the
  indicators ``x <= q`` at the 5% and 95% quantiles (R's type 7, linear interpolation).

Every function takes ``(chain, draw)`` float arrays and returns a float: ``nan`` for fewer than
4 draws per chain (R-hat: or fewer than 2 chains) or any NaN.

Example:
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(2, 400))
    >>> bool(0.99 < rank_rhat(x) < 1.01), bool(600 < ess_bulk(x) < 1000)
    (True, True)
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["rank_rhat", "ess_bulk", "ess_tail"]

#: the fewest draws per chain for any of these statistics
MIN_DRAWS = 4


def _valid(ary: np.ndarray, min_chains: int) -> bool:
    return ary.shape[0] >= min_chains and ary.shape[1] >= MIN_DRAWS and not np.isnan(ary).any()


def _split(ary: np.ndarray) -> np.ndarray:
    """Each chain's first and last halves as chains of their own."""
    half = ary.shape[1] // 2
    return np.concatenate([ary[:, :half], ary[:, ary.shape[1] - half:]])


def _normal_scores(ary: np.ndarray) -> np.ndarray:
    """Average ranks over all draws mapped through ``Phi^-1((r - 3/8) / (S + 1/4))``."""
    flat = ary.reshape(-1)
    values, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts            # draws below each distinct value
    ranks = (first + (counts + 1) / 2.0)[inverse]
    p = (ranks - 0.375) / (flat.size + 0.25)
    return torch.special.ndtri(torch.from_numpy(p)).numpy().reshape(ary.shape)


def _rhat(ary: np.ndarray) -> float:
    n = ary.shape[1]
    between = n * np.var(ary.mean(axis=1), ddof=1)
    within = np.mean(np.var(ary, axis=1, ddof=1))
    return float(np.sqrt((between / within + n - 1) / n))


def rank_rhat(ary) -> float:
    """Rank-normalised split R-hat: the larger of the bulk and the folded (tail) R-hat."""
    ary = np.asarray(ary, dtype=np.float64)
    if not _valid(ary, min_chains=2):
        return float("nan")
    split = _split(ary)
    folded = np.abs(split - np.median(split))
    return max(_rhat(_normal_scores(split)), _rhat(_normal_scores(folded)))


def _autocovariance(ary: np.ndarray) -> np.ndarray:
    """Every chain's autocovariance at lags ``0 .. n - 1`` (divided by ``n``), by FFT."""
    n = ary.shape[1]
    centred = ary - ary.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()          # room for every lag without wrapping
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    return np.fft.irfft(spectrum * np.conjugate(spectrum), n=size, axis=1)[:, :n] / n


def _ess(ary: np.ndarray) -> float:
    """ESS of ``(chain, draw)`` draws by Geyer's initial monotone sequence."""
    chains, n = ary.shape
    total = chains * n
    if np.max(ary) - np.min(ary) < np.finfo(np.float64).resolution:
        return float(total)
    acov = _autocovariance(ary)
    mean_var = np.mean(acov[:, 0]) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if chains > 1:
        var_plus += np.var(ary.mean(axis=1), ddof=1)

    def rho(t):
        return 1.0 - (mean_var - np.mean(acov[:, t])) / var_plus

    rho_t = np.zeros(n)
    even, odd = 1.0, rho(1)
    rho_t[0], rho_t[1] = even, odd
    t = 1
    while t < n - 3 and even + odd > 0.0:        # initial positive sequence of pairs
        even, odd = rho(t + 1), rho(t + 2)
        if even + odd >= 0:
            rho_t[t + 1], rho_t[t + 2] = even, odd
        t += 2
    last = t - 2
    if even > 0:
        rho_t[last + 1] = even
    t = 1
    while t <= last - 2:                          # made monotone
        if rho_t[t + 1] + rho_t[t + 2] > rho_t[t - 1] + rho_t[t]:
            rho_t[t + 1] = rho_t[t + 2] = (rho_t[t - 1] + rho_t[t]) / 2.0
        t += 2
    tau = -1.0 + 2.0 * np.sum(rho_t[:last + 1]) + np.sum(rho_t[last + 1:last + 2])
    tau = max(tau, 1.0 / np.log10(total))
    return float("nan") if np.isnan(rho_t).any() else float(total / tau)


def ess_bulk(ary) -> float:
    """Bulk ESS: of the rank-normalised split chains."""
    ary = np.asarray(ary, dtype=np.float64)
    if not _valid(ary, min_chains=1):
        return float("nan")
    return _ess(_normal_scores(_split(ary)))


def ess_tail(ary) -> float:
    """Tail ESS: the smaller ESS of the indicators of the draws below the 5% and the 95%
    quantiles."""
    ary = np.asarray(ary, dtype=np.float64)
    if not _valid(ary, min_chains=1):
        return float("nan")
    return min(_ess(_split((ary <= _quantile(ary, q)).astype(np.float64))) for q in (0.05, 0.95))


def _quantile(ary: np.ndarray, p: float) -> float:
    """The ``p`` quantile of all draws, R's type 7 (linear between order statistics), written as
    ArviZ computes it (``mquantiles``), so the indicator of the draws below it is the same even
    where the interpolation lands next to a tied value."""
    x = np.sort(ary.reshape(-1))
    n = x.size
    aleph = n * p + (1.0 - p)
    k = int(np.floor(np.clip(aleph, 1, n - 1)))
    gamma = float(np.clip(aleph - k, 0.0, 1.0))
    return (1.0 - gamma) * x[k - 1] + gamma * x[k]
