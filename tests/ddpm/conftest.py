"""Shared helpers of the DDPM tests: an oracle for the complete log joint written with scipy."""

import math

import numpy as np
import pytest
from scipy import stats


def scipy_log_joint(z, labels, mu, lam, mu0, kappa0, alpha0, beta0, alpha):
    """CRP EPPF + Normal-Gamma + Gaussian log densities, term by term with scipy."""
    z, mu, lam = (np.asarray(a, dtype=np.float64) for a in (z, mu, lam))
    c = np.asarray(labels)
    counts = np.bincount(c)
    n = c.shape[0]
    eppf = (len(counts) * math.log(alpha) + math.lgamma(alpha) - math.lgamma(alpha + n)
            + sum(math.lgamma(m) for m in counts))
    prior = sum(
        stats.gamma.logpdf(lam[k], alpha0, scale=1.0 / beta0)
        + stats.norm.logpdf(mu[k], mu0, 1.0 / math.sqrt(kappa0 * lam[k])).sum()
        for k in range(len(counts))
    )
    lik = stats.norm.logpdf(z, mu[c], 1.0 / np.sqrt(lam[c])[:, None]).sum()
    return eppf + prior + lik


@pytest.fixture
def oracle():
    return scipy_log_joint
