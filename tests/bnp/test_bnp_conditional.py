"""Condition-and-score: the sweep's single-site conditionals against brute-force normalisation
of the joint over every value of c_i, and the joints against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
import torch

from pyromodels.bnp import (
    assignment_log_probs,
    canonical_labels,
    collapsed_log_joint,
    init_state,
    log_joint,
    state_statistics,
)

LABELS = [0, 0, 1, 1, 2, 0]  # point 4 is alone in its cluster
MU = torch.tensor([[0.1, -0.1], [1.6, 1.1], [-0.5, 1.0]], dtype=torch.float64)
LAM = torch.tensor([1.3, 0.7, 2.2], dtype=torch.float64)
ALPHA = 0.8


def state_with(z, prior, labels, params: dict):
    """A state whose clusters carry ``params[id] = (mu, lam)``; ids of ``labels`` are kept
    as keys, the state's own ids are canonical."""
    lab = torch.as_tensor(labels)
    canon = canonical_labels(lab)
    ids = [int(lab[(canon == k).nonzero()[0, 0]]) for k in range(int(canon.max()) + 1)]
    mu = torch.stack([params[i][0] for i in ids])
    lam = torch.stack([params[i][1] for i in ids])
    return init_state(z, lab, prior, params=(mu, lam))


def base_params():
    return {k: (MU[k], LAM[k]) for k in range(3)}


@pytest.mark.parametrize("i", [0, 2, 4])
def test_alg2_conditional_is_the_normalised_joint(z6, ng_prior, i):
    prior = ng_prior()
    state = state_with(z6, prior, LABELS, base_params())
    cond = assignment_log_probs(z6, state, i, prior, ALPHA, algorithm="alg2")
    others = sorted({c for j, c in enumerate(LABELS) if j != i})
    assert sorted(cond.cluster_ids.tolist()) == others
    scores = []
    for k in cond.cluster_ids.tolist():
        labels = list(LABELS)
        labels[i] = k
        scores.append(float(log_joint(z6, state_with(z6, prior, labels, base_params()), prior,
                                      ALPHA)))
    # New cluster: p(c_i = new, Z, H) integrates over its parameters theta*; by Bayes,
    # log alpha m(z_i) ... = log p(c, Z, H, theta*) - log p(theta* | z_i) for ANY theta*.
    labels = list(LABELS)
    labels[i] = 9
    post = prior.posterior(1, z6[i], (z6[i] ** 2).sum())
    new = []
    for theta in [(z6[i] + 0.3, torch.tensor(1.7, dtype=torch.float64)),
                  (torch.tensor([-2.0, 0.5], dtype=torch.float64), torch.tensor(0.2))]:
        params = {**base_params(), 9: (theta[0], theta[1].double())}
        joint = float(log_joint(z6, state_with(z6, prior, labels, params), prior, ALPHA))
        new.append(joint - float(post.log_prob(*theta)))
    assert new[0] == pytest.approx(new[1], abs=1e-10)
    brute = torch.log_softmax(torch.tensor(scores + new[:1], dtype=torch.float64), 0)
    torch.testing.assert_close(cond.log_probs, brute, rtol=0, atol=1e-10)


@pytest.mark.parametrize("i", [0, 2, 4])
def test_alg3_conditional_is_the_normalised_collapsed_joint(z6, ng_prior, i):
    prior = ng_prior()
    state = init_state(z6, LABELS, prior, algorithm="alg3")
    cond = assignment_log_probs(z6, state, i, prior, ALPHA, algorithm="alg3")
    scores = []
    for k in cond.cluster_ids.tolist() + [9]:
        labels = list(LABELS)
        labels[i] = k
        scores.append(float(collapsed_log_joint(z6, labels, prior, ALPHA)))
    brute = torch.log_softmax(torch.tensor(scores, dtype=torch.float64), 0)
    torch.testing.assert_close(cond.log_probs, brute, rtol=0, atol=1e-10)


@pytest.mark.parametrize("algorithm", ["alg2", "alg3"])
def test_paper_literal_shifts_only_the_new_cluster_odds(z6, ng_prior, algorithm):
    prior = ng_prior()  # d = 2, kappa_0 = 0.5: the literal weight is larger by 0.5 log 3
    state = state_with(z6, prior, LABELS, base_params())
    a = assignment_log_probs(z6, state, 0, prior, ALPHA, algorithm=algorithm).log_probs
    b = assignment_log_probs(z6, state, 0, prior, ALPHA, algorithm=algorithm,
                             paper_literal=True).log_probs
    odds = (b[-1] - b[:-1]) - (a[-1] - a[:-1])
    torch.testing.assert_close(odds, torch.full_like(odds, 0.5 * math.log(3.0)), rtol=0,
                               atol=1e-12)


def test_log_joint_matches_scipy(z6, ng_prior):
    prior = ng_prior()
    state = state_with(z6, prior, LABELS, base_params())
    lab = np.array(LABELS)
    sizes = np.bincount(lab)
    crp = (len(sizes) * math.log(ALPHA) + math.lgamma(ALPHA) - math.lgamma(ALPHA + 6)
           + sum(math.lgamma(n) for n in sizes))
    prior_terms = sum(
        st.multivariate_normal.logpdf(MU[k], np.zeros(2), np.eye(2) / (0.5 * LAM[k].item()))
        + st.gamma.logpdf(LAM[k].item(), 2.0, scale=1.0) for k in range(3))
    lik = sum(st.multivariate_normal.logpdf(z6[i], MU[c], np.eye(2) / LAM[c].item())
              for i, c in enumerate(lab))
    assert float(log_joint(z6, state, prior, ALPHA)) == pytest.approx(crp + prior_terms + lik,
                                                                      rel=1e-12)


def test_collapsed_joint_is_the_instantiated_joint_integrated(z6, ng_prior):
    # p(c, Z) = p(c, Z, H) / p(H | c, Z) for any H, with p(H | c, Z) the product of the
    # clusters' Normal-Gamma posteriors (Theorem 1).
    prior = ng_prior()
    state = state_with(z6, prior, LABELS, base_params())
    lab = torch.tensor(LABELS)
    log_post = 0.0
    for k in range(3):
        zk = z6[lab == k]
        log_post += float(prior.posterior(len(zk), zk.sum(0), (zk * zk).sum()).log_prob(
            MU[k], LAM[k]))
    expected = float(log_joint(z6, state, prior, ALPHA)) - log_post
    assert float(collapsed_log_joint(z6, LABELS, prior, ALPHA)) == pytest.approx(expected,
                                                                                 rel=1e-12)


def test_statistics_do_not_depend_on_the_labels_names(z6, ng_prior):
    prior = ng_prior()
    a = state_with(z6, prior, LABELS, base_params())
    renamed = [{0: 5, 1: 3, 2: 8}[c] for c in LABELS]
    params = {5: base_params()[0], 3: base_params()[1], 8: base_params()[2]}
    b = state_with(z6, prior, renamed, params)
    sa, sb = state_statistics(z6, a, prior, ALPHA), state_statistics(z6, b, prior, ALPHA)
    assert sa.num_clusters == sb.num_clusters == 3
    assert sa.sizes.tolist() == sb.sizes.tolist() == [3, 2, 1]
    assert sa.log_joint == pytest.approx(sb.log_joint, rel=1e-13)
    assert sa.collapsed_log_joint == pytest.approx(sb.collapsed_log_joint, rel=1e-13)
    c = state_statistics(z6, init_state(z6, renamed, prior, algorithm="alg3"), prior, ALPHA)
    assert math.isnan(c.log_joint) and c.collapsed_log_joint == sa.collapsed_log_joint
