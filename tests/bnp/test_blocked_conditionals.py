"""Each block of the blocked Gibbs sweep against condition-and-score on the Pyro program."""

import math

import pytest
import torch
from pyro import poutine

from pyromodels.bnp import (
    BlockedState,
    assignment_logits,
    blocked_init,
    blocked_labels,
    blocked_log_joint,
    component_posterior,
    stick_log_weights,
    stick_posterior,
    truncated_dp_mixture,
)
from pyromodels.bnp.blocked import _parameter_update
from pyromodels.bnp.blocked_assign import draw_labels
from pyromodels.conjugate import NormalGamma

D, T, N = 2, 6, 7


def program_log_joint(z, state, prior):
    """``log_prob_sum()`` of the Pyro program conditioned on ``state``."""
    data = {"lam": state.lam, "mu": state.mu, "c": state.labels}
    if state.v.shape[0] > 1:
        data["v"] = state.v[:-1]
    model = poutine.condition(truncated_dp_mixture, data=data)
    tr = poutine.trace(model).get_trace(z, prior, float(state.alpha), state.v.shape[0])
    return tr.log_prob_sum()


@pytest.fixture
def problem():
    gen = torch.Generator().manual_seed(3)
    prior = NormalGamma(torch.tensor([0.5, -0.2]), 0.4, 2.5, 1.5)
    z = 1.5 * torch.randn(N, D, generator=gen)
    state = blocked_init(z, torch.tensor([0, 0, 2, 2, 2, 4, 0]), prior, 1.3, T, gen)
    return z, prior, state, gen


def test_log_joint_equals_program(problem):
    z, prior, state, _ = problem
    want = program_log_joint(z, state, prior)
    assert float(blocked_log_joint(z, state, prior)) == pytest.approx(float(want), abs=1e-10)


def test_log_joint_equals_program_for_one_stick():
    prior = NormalGamma(torch.zeros(3), 1.0, 2.0, 1.0)
    z = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
    state = blocked_init(z, 1, prior, 0.7, 1, torch.Generator().manual_seed(1))
    assert state.v.tolist() == [1.0]
    want = program_log_joint(z, state, prior)
    assert float(blocked_log_joint(z, state, prior)) == pytest.approx(float(want), abs=1e-10)


def test_stick_log_weights_sum_to_one():
    v = torch.tensor([0.3, 0.9, 0.2, 1.0])
    pi = stick_log_weights(v).exp()
    assert pi.tolist() == pytest.approx([0.3, 0.7 * 0.9, 0.7 * 0.1 * 0.2, 0.7 * 0.1 * 0.8])
    assert float(pi.sum()) == pytest.approx(1.0, abs=1e-15)


def joint_label_probs(z, state, prior, i):
    """Normalised program joint over every value of c_i."""
    scores = []
    for k in range(T):
        labels = state.labels.clone()
        labels[i] = k
        s = BlockedState(labels, state.v, state.mu, state.lam, state.alpha)
        scores.append(program_log_joint(z, s, prior))
    return torch.softmax(torch.stack(scores), 0)


def test_assignment_conditional_matches_program(problem):
    z, prior, state, _ = problem
    own = torch.softmax(assignment_logits(z, state), 1)
    for i in range(N):
        torch.testing.assert_close(own[i], joint_label_probs(z, state, prior, i), rtol=0, atol=1e-12)


@pytest.mark.parametrize("chunk_rows", [1, 3, 7, 100])
def test_inverse_cdf_draw_matches_program_cdf(problem, chunk_rows):
    z, prior, state, _ = problem
    probs = torch.stack([joint_label_probs(z, state, prior, i) for i in range(N)])
    cdf = torch.cumsum(probs, 1)
    w = torch.rand(N, generator=torch.Generator().manual_seed(5))
    w[0] = 1.0  # the top end of (0, 1] picks the last component with positive weight
    want = (cdf < w.unsqueeze(1) * cdf[:, -1:]).sum(1)
    # no w lies within rounding of a CDF step, so the comparison is exact
    assert float((cdf - w.unsqueeze(1)).abs()[1:].min()) > 1e-9
    got = draw_labels(z, stick_log_weights(state.v), state.mu, state.lam, w, chunk_rows)
    assert got.tolist() == want.tolist()


def test_component_conditional_matches_program(problem):
    z, prior, state, gen = problem
    post = component_posterior(z, state.labels, prior, T)
    diffs = []
    for _ in range(5):
        mu, lam = post.sample(gen)
        s = BlockedState(state.labels, state.v, mu, lam, state.alpha)
        diffs.append(float(post.log_prob(mu, lam).sum() - program_log_joint(z, s, prior)))
    assert max(diffs) - min(diffs) < 1e-9


def test_stick_conditional_matches_program(problem):
    z, prior, state, gen = problem
    a, b = stick_posterior(state.labels, 1.3, T)
    assert a.tolist() == [4.0, 1.0, 4.0, 1.0, 2.0] and b.tolist() == pytest.approx([5.3, 5.3, 2.3, 2.3, 1.3])
    beta = torch.distributions.Beta(a, b)
    diffs = []
    for _ in range(5):
        v = torch.cat([beta.sample(), torch.ones(1)])
        s = BlockedState(state.labels, v, state.mu, state.lam, state.alpha)
        diffs.append(float(beta.log_prob(v[:-1]).sum() - program_log_joint(z, s, prior)))
    assert max(diffs) - min(diffs) < 1e-9


def test_alpha_conditional_matches_joint(problem):
    z, prior, state, _ = problem
    shape, rate = 2.0, 0.5
    post = torch.distributions.Gamma(shape + T - 1, rate - torch.log1p(-state.v[:-1]).sum())
    hyper = torch.distributions.Gamma(torch.tensor(shape), torch.tensor(rate))
    diffs = []
    for alpha in (0.2, 0.9, 2.5, 6.0):
        s = BlockedState(state.labels, state.v, state.mu, state.lam, torch.tensor(alpha))
        joint = hyper.log_prob(torch.tensor(alpha)) + program_log_joint(z, s, prior)
        diffs.append(float(post.log_prob(torch.tensor(alpha)) - joint))
    assert max(diffs) - min(diffs) < 1e-9


def test_parameter_draws_have_the_conditional_means(problem):
    """The sweep's own draws of v, lam and alpha | v have the conditionals' means.

    M = 1500 independent draws; each check is |mean - exact| < 5 standard errors, with the
    standard error sqrt(var / M) from the exact variance (false alarm ~ 6e-7 per check).
    """
    z, prior, state, gen = problem
    M, shape, rate = 1500, 2.0, 0.5
    vs, lams, products = [], [], []
    alpha = torch.tensor(1.3, dtype=torch.float64)
    for _ in range(M):
        mu, lam, log_v, log_1mv, new_alpha = _parameter_update(
            z, state.labels, prior, alpha, T, gen, (shape, rate)
        )
        vs.append(log_v.exp())
        lams.append(lam)
        # alpha | v is Gamma(shape + T - 1, rate - sum log(1 - v)): alpha * rate(v) is
        # Gamma(shape + T - 1, 1) whatever v is
        products.append(new_alpha * (rate - log_1mv.sum()))
    a, b = stick_posterior(state.labels, 1.3, T)
    v_mean, v_var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert ((torch.stack(vs).mean(0) - v_mean).abs() < 5 * (v_var / M).sqrt()).all()
    post = component_posterior(z, state.labels, prior, T)
    lam_mean, lam_var = post.a / post.b, post.a / post.b**2
    assert ((torch.stack(lams).mean(0) - lam_mean).abs() < 5 * (lam_var / M).sqrt()).all()
    g = shape + T - 1
    assert abs(float(torch.stack(products).mean()) - g) < 5 * math.sqrt(g / M)


def test_canonical_labels():
    labels = torch.tensor([4, 4, 1, 9, 1, 0])
    assert blocked_labels(labels).tolist() == [0, 0, 1, 2, 1, 3]
    state = BlockedState(torch.tensor([2, 0, 2]), torch.ones(3), torch.zeros(3, 1), torch.ones(3), 1.0)
    assert blocked_labels(state).tolist() == [0, 1, 0]
    assert state.num_occupied == 2 and state.truncation == 3


def test_tiny_concentration_keeps_exact_stick_logs():
    """At alpha = 1e-5 (the paper's value) the empty sticks' 1 - v underflows: v is stored as 1
    and log(1 - v) (about -1e5) is kept; the log joint stays finite, and an edited v < 1 is
    scored from v itself, not from the kept value."""
    prior = NormalGamma(torch.zeros(2), 0.3, 3.0, 2.0)
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(40, 2, generator=gen)
    state = blocked_init(z, 2, prior, 1e-5, 8, gen)
    rounded = state.v[:-1] == 1
    assert bool(rounded.any())
    assert bool((state.log_1mv[rounded] < -100).all())
    lj = blocked_log_joint(z, state, prior)
    assert torch.isfinite(lj)
    assert torch.isfinite(assignment_logits(z, state)).all()
    # v < 1 entries ignore log_1mv: corrupting them changes nothing
    stale = state.log_1mv.clone()
    stale[~rounded] = 7.0
    edited = BlockedState(state.labels, state.v, state.mu, state.lam, state.alpha, stale)
    assert float(blocked_log_joint(z, edited, prior)) == float(lj)
