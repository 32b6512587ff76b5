"""The DP samplers' assignment conditional (Neal's Algorithm 2, :mod:`pyromodels.bnp`) against
the family's Pyro program: condition the CRP program on every value of one point's label and
normalise its log joint (condition-and-score).

A new cluster's weight integrates the new parameters over the base measure; the program
scores one value of them, so the integral comes from Chib's identity
``m(z_i) = p(z_i | theta) G0(theta) / p(theta | z_i)``, exact at any ``theta``."""

import pytest
import torch

from pyromodels.bnp import assignment_log_probs, init_state
from pyromodels.ddpm import DPMixture, DPMixturePrior, state_values

PRIOR = DPMixturePrior(mu0=(0.5, -0.5), kappa0=0.4, alpha0=3.0, beta0=2.0, alpha=0.7)


def _state():
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(6, 2, generator=gen, dtype=torch.float64) * 2
    labels = [0, 0, 1, 1, 2, 0]
    mu = torch.randn(3, 2, generator=gen, dtype=torch.float64)
    lam = torch.rand(3, generator=gen, dtype=torch.float64) + 0.3
    base = PRIOR.normal_gamma(2)
    state = init_state(z, labels, base, gen, algorithm="alg2", params=(mu, lam))
    return z, torch.tensor(labels), mu, lam, base, state


def _program_log_joint(z, labels, mu, lam):
    return float(DPMixture(PRIOR).log_joint(z, state_values(labels, mu, lam)))


@pytest.mark.parametrize("i", [0, 2, 4])  # in a cluster of 3, of 2, and alone
def test_alg2_assignment_conditional_equals_condition_and_score(i):
    z, labels, mu, lam, base, state = _state()
    out = assignment_log_probs(z, state, i, base, PRIOR.alpha, algorithm="alg2")
    others = labels.clone()
    kept = [k for k in range(3) if bool((labels[torch.arange(6) != i] == k).any())]
    scores = []
    for k in kept:  # c_i joins an existing cluster (one that keeps a point without i)
        others[i] = k
        keep = torch.tensor(kept)
        relabel = {old: new for new, old in enumerate(kept)}
        c = torch.tensor([relabel[int(v)] for v in others])
        scores.append(_program_log_joint(z, c, mu[keep], lam[keep]))
    # c_i opens a new cluster: score it with any theta, then divide by p(theta | z_i)
    new_label = len(kept)
    c = torch.tensor([relabel[int(v)] if j != i else new_label
                      for j, v in enumerate(labels.tolist())])
    post = base.posterior(torch.tensor(1.0, dtype=torch.float64), z[i], (z[i] ** 2).sum())
    theta_mu, theta_lam = torch.tensor([0.3, 0.1], dtype=torch.float64), torch.tensor(0.8)
    joint = _program_log_joint(z, c, torch.cat([mu[keep], theta_mu[None]]),
                               torch.cat([lam[keep], theta_lam.double()[None]]))
    scores.append(joint - float(post.log_prob(theta_mu, theta_lam.double())))
    expected = torch.log_softmax(torch.tensor(scores, dtype=torch.float64), 0)
    # the sampler lists existing clusters by id in its own order; ids here equal old labels
    order = [kept.index(int(k)) for k in out.cluster_ids]
    got = out.log_probs
    assert torch.allclose(got[:-1], expected[order], atol=1e-10)
    assert float(got[-1]) == pytest.approx(float(expected[-1]), abs=1e-10)
