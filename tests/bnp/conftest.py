"""Oracles shared by the bnp tests: the exact posterior over set partitions of a tiny data set,
and a total-variation bound for a chain's partition frequencies derived from its Monte Carlo
error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pyromodels.bnp import (
    exact_partition_posterior,
    partition_frequencies,
    partition_key,
    total_variation,
)
from pyromodels.conjugate import NormalGamma

# Five points in two loose groups and a stray one: the posterior spreads over many of the
# 52 partitions (the largest holds about a sixth of the mass).
Z5 = torch.tensor([[0.0, 0.0], [0.3, -0.2], [1.5, 1.0], [1.8, 1.4], [-0.8, 1.2]],
                  dtype=torch.float64)
Z6 = torch.cat([Z5, torch.tensor([[0.9, 0.4]], dtype=torch.float64)])


def _ng_prior(d: int = 2, loc=0.0, kappa=0.5, a=2.0, b=1.0) -> NormalGamma:
    return NormalGamma(torch.full((d,), loc, dtype=torch.float64), kappa, a, b)


def _exact_partition_posterior(z: torch.Tensor, prior: NormalGamma, alpha: float) -> dict:
    """``{partition: p(c | Z)}`` from :func:`pyromodels.bnp.exact_partition_posterior` (checked
    against the Pyro program's joint and a term-by-term oracle in tests/ddpm/test_exact.py)."""
    labels, probs = exact_partition_posterior(z, prior, alpha)
    return {tuple(row): float(p) for row, p in zip(labels.tolist(), probs)}


def _chain_tv_and_bound(labels: torch.Tensor, exact: dict, num_batches: int = 40,
                       n_se: float = 5.0, seed: int = 0) -> tuple[float, float, float]:
    """``(TV, bound, n_eff)`` of a chain's partition frequencies against ``exact``.

    Derivation of the bound. The frequency of partition j after T draws has variance
    ``tau_j p_j (1 - p_j) / T`` where ``tau_j`` is the integrated autocorrelation time of its
    indicator; ``tau_j`` is estimated by batch means (``num_batches`` batches: the variance of
    the batch means times the batch length, over ``p_j (1 - p_j)``), for the partitions with
    ``p_j >= 0.02`` (rarer ones give too noisy an estimate), and the largest is used:
    ``n_eff = T / max(1, max_j tau_j)``. With that many independent draws the frequency vector
    is multinomial(n_eff, p) / n_eff; the TV of such vectors is simulated 4000 times and the
    bound is its mean plus ``n_se`` standard deviations. For a correct sampler the observed TV
    exceeds it with probability of order 1e-6 under the normal approximation (the TV of a
    multinomial vector is a sum of many half-normal terms), plus the chance that ``n_eff`` is
    overestimated by more than its batch-means error (about 20% with 40 batches), which the
    conservative choice of the largest ``tau_j`` covers.
    """
    t = labels.shape[0]
    keys = list(exact)
    index = {k: j for j, k in enumerate(keys)}
    p = np.array([exact[k] for k in keys])
    visits = np.array([index[partition_key(row)] for row in labels])
    b = t // num_batches
    taus = [1.0]
    for j in np.flatnonzero(p >= 0.02):
        ind = (visits[: b * num_batches] == j).astype(float).reshape(num_batches, b).mean(1)
        taus.append(b * ind.var(ddof=1) / (p[j] * (1 - p[j])))
    n_eff = int(t / max(taus))
    rng = np.random.default_rng(seed)
    sims = rng.multinomial(n_eff, p, size=4000) / n_eff
    tv_sims = 0.5 * np.abs(sims - p).sum(1)
    bound = tv_sims.mean() + n_se * tv_sims.std(ddof=1)
    tv = total_variation(partition_frequencies(labels), exact)
    return tv, float(bound), n_eff


@pytest.fixture
def z5():
    return Z5.clone()


@pytest.fixture
def z6():
    return Z6.clone()


@pytest.fixture
def ng_prior():
    """``ng_prior(d=2, loc=0, kappa=0.5, a=2, b=1)`` -> a float64 ``NormalGamma``."""
    return _ng_prior


@pytest.fixture
def exact_posterior():
    """``exact_posterior(z, prior, alpha)`` -> ``{partition: probability}``."""
    return _exact_partition_posterior


@pytest.fixture
def chain_tv():
    """``chain_tv(labels, exact)`` -> ``(TV, bound, n_eff)``."""
    return _chain_tv_and_bound
