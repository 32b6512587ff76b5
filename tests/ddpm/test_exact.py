"""The exact partition posterior: Bell numbers, the cluster marginal against the program's joint
(Chib's identity) and against the chain rule of predictives, normalisation."""

import math

import pytest
import torch
from pyro import poutine

from pyromodels.ddpm import (
    DPMixture,
    DPMixturePrior,
    dp_mixture_crp,
    exact_partition_posterior,
    partition_log_marginal,
    set_partitions,
    state_values,
)

PRIOR = DPMixturePrior(mu0=(0.2, -0.4), kappa0=0.5, alpha0=2.0, beta0=1.5, alpha=0.8)


@pytest.mark.parametrize("n, bell", [(1, 1), (2, 2), (3, 5), (4, 15), (5, 52), (6, 203)])
def test_set_partitions_are_the_bell_number_of_distinct_partitions(n, bell):
    rows = set_partitions(n)
    assert rows.shape == (bell, n)
    canon = {tuple(r) for r in rows.tolist()}
    assert len(canon) == bell
    for r in rows.tolist():
        assert r[0] == 0 and all(r[i] <= max(r[:i]) + 1 for i in range(1, n))


def test_marginal_satisfies_chibs_identity_with_the_program():
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
    assert float(partition_log_marginal(draw.z, draw.labels, PRIOR)) == pytest.approx(want, rel=1e-12)


def test_cluster_marginal_is_the_chain_rule_of_predictives():
    z = torch.tensor([[0.1, 0.3], [1.2, -0.5], [0.7, 0.0]])
    ng = PRIOR.normal_gamma(2)
    chain = 0.0
    for i in range(3):
        prev = z[:i]
        post = ng.posterior(i, prev.sum(0), (prev * prev).sum())
        chain += float(post.predictive_log_prob(z[i]))
    one_cluster = float(partition_log_marginal(z, torch.zeros(3, dtype=torch.long), PRIOR))
    # one cluster of 3: p(c) = alpha Gamma(alpha) Gamma(3) / Gamma(alpha + 3)
    eppf = math.log(0.8) + math.lgamma(0.8) + math.lgamma(3.0) - math.lgamma(3.8)
    assert one_cluster == pytest.approx(chain + eppf, rel=1e-12)


def test_posterior_is_normalised_and_finds_separated_groups():
    z = torch.tensor([[0.0, 0.0], [0.1, -0.1], [0.05, 0.1], [8.0, 8.0], [8.1, 7.9]])
    labels, probs = exact_partition_posterior(z, PRIOR.with_mu0(4.0))
    assert labels.shape == (52, 5) and float(probs.sum()) == pytest.approx(1.0, abs=1e-12)
    assert labels[int(probs.argmax())].tolist() == [0, 0, 0, 1, 1]


def test_bad_input():
    with pytest.raises(ValueError, match="num_points must be an integer <= 10"):
        set_partitions(11)
    with pytest.raises(ValueError, match="z must have at most 10 rows for enumeration"):
        exact_partition_posterior(torch.zeros(11, 1), PRIOR)
    with pytest.raises(ValueError, match=r"labels must have one entry per row of z \(2\)"):
        partition_log_marginal(torch.zeros(2, 2), torch.tensor([0, 0, 1]), PRIOR)
    with pytest.raises(ValueError, match="no empty cluster"):
        partition_log_marginal(torch.zeros(2, 2), torch.tensor([0, 2]), PRIOR)
