"""The exact partition posterior of :mod:`pyromodels.bnp` with the DDPM prior: the collapsed joint
against the program's joint (Chib's identity) and against the chain rule of predictives, the
posterior against a Student-t oracle written here, normalisation."""

import math

import numpy as np
import pytest
import torch
from pyro import poutine
from scipy import stats

from pyromodels.bnp import collapsed_log_joint, exact_partition_posterior, set_partitions
from pyromodels.ddpm import DPMixture, DPMixturePrior, dp_mixture_crp, state_values

PRIOR = DPMixturePrior(mu0=(0.2, -0.4), kappa0=0.5, alpha0=2.0, beta0=1.5, alpha=0.8)


def test_collapsed_joint_satisfies_chibs_identity_with_the_program():
    # log p(c, Z) = log p(c, mu, lam, Z) - sum_k log NG(mu_k, lam_k | posterior of cluster k),
    # for any (mu, lam): the program gives the first term, the conjugate posterior the second.
    draw = DPMixture(PRIOR).simulate(7, torch.Generator().manual_seed(2))
    assert draw.num_clusters >= 2
    values = state_values(draw.labels, draw.mu, draw.lam)
    tr = poutine.trace(poutine.condition(dp_mixture_crp, data=values)).get_trace(7, 2, PRIOR, draw.z)
    ng = PRIOR.normal_gamma(2)
    post = 0.0
    for k in range(draw.num_clusters):
        zk = draw.z[draw.labels == k]
        post_k = ng.posterior(zk.shape[0], zk.sum(0), (zk * zk).sum())
        post += float(post_k.log_prob(draw.mu[k], draw.lam[k]))
    want = float(tr.log_prob_sum()) - post
    got = float(collapsed_log_joint(draw.z, draw.labels, ng, PRIOR.alpha))
    assert got == pytest.approx(want, rel=1e-12)


def test_cluster_marginal_is_the_chain_rule_of_predictives():
    z = torch.tensor([[0.1, 0.3], [1.2, -0.5], [0.7, 0.0]], dtype=torch.float64)
    ng = PRIOR.normal_gamma(2)
    chain = 0.0
    for i in range(3):
        prev = z[:i]
        post = ng.posterior(i, prev.sum(0), (prev * prev).sum())
        chain += float(post.predictive_log_prob(z[i]))
    one_cluster = float(collapsed_log_joint(z, [0, 0, 0], ng, PRIOR.alpha))
    # one cluster of 3: p(c) = alpha Gamma(alpha) Gamma(3) / Gamma(alpha + 3)
    eppf = math.log(0.8) + math.lgamma(0.8) + math.lgamma(3.0) - math.lgamma(3.8)
    assert one_cluster == pytest.approx(chain + eppf, rel=1e-12)


def _student_t_log_marginal(zk, mu0, kappa0, alpha0, beta0):
    """log m(Z_k) as the product of one-point predictives, each the multivariate Student-t with
    2 a_n degrees of freedom, location m_n and scale b_n (kappa_n + 1) / (a_n kappa_n) I after
    the n points before it (the Normal-Gamma updates written out here, scipy's density)."""
    d = zk.shape[1]
    total = 0.0
    for n in range(zk.shape[0]):
        prev = zk[:n]
        kappa_n, a_n = kappa0 + n, alpha0 + 0.5 * n * d
        mean = prev.mean(0) if n else mu0
        scatter = float(((prev - mean) ** 2).sum()) if n else 0.0
        m_n = (kappa0 * mu0 + prev.sum(0)) / kappa_n
        b_n = beta0 + 0.5 * scatter + kappa0 * n * float(((mean - mu0) ** 2).sum()) / (2 * kappa_n)
        shape = b_n * (kappa_n + 1) / (a_n * kappa_n) * np.eye(d)
        total += stats.multivariate_t.logpdf(zk[n], m_n, shape, df=2 * a_n)
    return total


def test_exact_posterior_is_the_normalised_eppf_times_student_t_marginals():
    # p(c | Z) ∝ alpha^K prod_k (n_k - 1)! m(Z_k), written from the block sizes and scipy's
    # Student-t, independently of the package's CRP and Normal-Gamma code.
    z = np.array([[0.0, 0.0], [0.3, -0.2], [1.5, 1.0], [1.8, 1.4], [-0.8, 1.2]])
    mu0 = np.array(PRIOR.mu0)
    logs = []
    for part in set_partitions(5):
        lab = np.array(part)
        logs.append(sum(
            math.log(PRIOR.alpha) + math.lgamma(int((lab == k).sum()))
            + _student_t_log_marginal(z[lab == k], mu0, 0.5, 2.0, 1.5)
            for k in range(lab.max() + 1)))
    want = np.exp(np.array(logs) - max(logs))
    want /= want.sum()
    labels, probs = exact_partition_posterior(torch.from_numpy(z), PRIOR.normal_gamma(2), PRIOR.alpha)
    assert [tuple(row) for row in labels.tolist()] == set_partitions(5)
    assert labels.dtype == torch.int64 and probs.dtype == torch.float64
    np.testing.assert_allclose(probs.numpy(), want, rtol=1e-10, atol=1e-14)


def test_posterior_is_normalised_and_finds_separated_groups():
    z = torch.tensor([[0.0, 0.0], [0.1, -0.1], [0.05, 0.1], [8.0, 8.0], [8.1, 7.9]],
                     dtype=torch.float64)
    labels, probs = exact_partition_posterior(z, PRIOR.with_mu0(4.0).normal_gamma(2), PRIOR.alpha)
    assert labels.shape == (52, 5) and float(probs.sum()) == pytest.approx(1.0, abs=1e-12)
    assert labels[int(probs.argmax())].tolist() == [0, 0, 0, 1, 1]


def test_bad_input():
    ng = PRIOR.normal_gamma(2)
    with pytest.raises(ValueError, match="z must have at most 10 rows for enumeration, got 11"):
        exact_partition_posterior(torch.zeros(11, 2), ng, 1.0)
    with pytest.raises(ValueError, match="prior has dimension 2 but z has 1 columns"):
        exact_partition_posterior(torch.zeros(3, 1), ng, 1.0)
    with pytest.raises(TypeError, match="prior must be a pyromodels.conjugate.NormalGamma"):
        exact_partition_posterior(torch.zeros(3, 2), PRIOR, 1.0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        exact_partition_posterior(torch.zeros(3, 2), ng, 0.0)
    with pytest.raises(ValueError, match="z must be 2-dimensional"):
        exact_partition_posterior(torch.zeros(3), ng, 1.0)
