"""The two-coin link likelihood: its closed form against enumeration, its messages against
autograd, its counts against direct counting."""

import math

import pytest
import torch

from pyromodels.scdc.links import (
    co_cluster_probability,
    expected_worker_logs,
    link_log_prob,
    logit_worker_logs,
    message_weights,
    pair_messages,
    point_worker_logs,
    worker_counts,
    worker_weights,
)


def _links(num_items=7, num_workers=3, num_links=25, seed=0):
    g = torch.Generator().manual_seed(seed)
    i = torch.randint(num_items, (num_links,), generator=g)
    j = (i + torch.randint(1, num_items, (num_links,), generator=g)) % num_items
    w = torch.randint(num_workers, (num_links,), generator=g)
    link = torch.randint(2, (num_links,), generator=g)
    return i, j, w, link


def _coins(num_workers=3, seed=1):
    g = torch.Generator().manual_seed(seed)
    alpha = 0.5 + 0.49 * torch.rand(num_workers, generator=g)
    return alpha, 0.3 + 0.69 * torch.rand(num_workers, generator=g)


def test_link_log_prob_is_the_two_coin_bernoulli():
    i, j, w, link = _links()
    alpha, beta = _coins()
    logs = point_worker_logs(alpha, beta)
    for same in (torch.ones(len(link)), torch.zeros(len(link))):
        p_one = torch.where(same.bool(), alpha[w], 1 - beta[w])
        expected = torch.distributions.Bernoulli(probs=p_one).log_prob(link.double())
        torch.testing.assert_close(link_log_prob(link, same, logs, w), expected)


def test_closed_form_equals_enumeration_over_both_clusters():
    K = 4
    i, j, w, link = _links()
    g = torch.Generator().manual_seed(2)
    q = torch.softmax(torch.randn(7, K, generator=g), -1)
    logs = point_worker_logs(*_coins())
    closed = link_log_prob(link, co_cluster_probability(q, i, j), logs, w)
    enumerated = torch.zeros(len(link))
    for a in range(K):
        for b in range(K):
            same = torch.full((len(link),), float(a == b))
            enumerated += q[i, a] * q[j, b] * link_log_prob(link, same, logs, w)
    torch.testing.assert_close(closed, enumerated)


def test_logit_form_equals_point_form():
    alpha, beta = _coins()
    a = logit_worker_logs(torch.logit(alpha), torch.logit(beta))
    b = point_worker_logs(alpha, beta)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y)


def test_expected_logs_are_the_beta_means_of_the_logs():
    conc = torch.tensor([[2.0, 5.0], [30.0, 3.0]])
    logs = expected_worker_logs(conc, conc.flip(-1))
    draws = torch.distributions.Beta(conc[:, 0], conc[:, 1]).sample((200_000,))
    for exact, sample in ((logs.log_alpha, draws.log()), (logs.log1m_alpha, torch.log1p(-draws))):
        se = sample.std(0) / math.sqrt(len(sample))
        assert ((exact - sample.mean(0)).abs() < 5 * se).all()
    # the specificity concentrations were given flipped
    torch.testing.assert_close(logs.log_beta, logs.log1m_alpha)


def test_message_weights_are_the_derivative_of_the_expected_log_likelihood():
    K = 3
    i, j, w, link = _links()
    g = torch.Generator().manual_seed(3)
    q = torch.softmax(torch.randn(7, K, generator=g), -1).requires_grad_()
    logs = expected_worker_logs(torch.tensor([[9.0, 1.0], [3.0, 2.0], [1.5, 4.0]]),
                                torch.tensor([[8.0, 2.0], [2.0, 2.0], [6.0, 1.0]]))
    total = link_log_prob(link, co_cluster_probability(q, i, j), logs, w).sum()
    (grad,) = torch.autograd.grad(total, q)
    torch.testing.assert_close(pair_messages(q.detach(), i, j, message_weights(link, logs, w)), grad)


def test_messages_do_not_depend_on_the_order_within_a_pair():
    i, j, w, link = _links()
    q = torch.softmax(torch.randn(7, 3, generator=torch.Generator().manual_seed(4)), -1)
    weights = message_weights(link, point_worker_logs(*_coins()), w)
    torch.testing.assert_close(pair_messages(q, i, j, weights), pair_messages(q, j, i, weights))


def test_accurate_workers_pull_must_links_together_and_push_cannot_links_apart():
    logs = point_worker_logs(torch.tensor([0.9]), torch.tensor([0.9]))
    weights = message_weights(torch.tensor([1, 0]), logs, torch.tensor([0, 0]))
    assert weights[0] > 0 > weights[1]
    torch.testing.assert_close(weights[0] - weights[1], worker_weights(torch.tensor(0.9), torch.tensor(0.9)))


def test_worker_counts_with_hard_assignments_count_the_cells():
    i, j, w, link = _links(num_links=60)
    z = torch.randint(3, (7,), generator=torch.Generator().manual_seed(5))
    same = (z[i] == z[j]).double()
    counts = worker_counts(same, link, w, 3)
    for m in range(3):
        mine = w == m
        s, lk = same[mine].bool(), link[mine].bool()
        assert counts.alpha[m].tolist() == [float((s & lk).sum()), float((s & ~lk).sum())]
        assert counts.beta[m].tolist() == [float((~s & ~lk).sum()), float((~s & lk).sum())]


def test_worker_counts_are_linear_in_the_co_clustering_probability():
    i, j, w, link = _links()
    g = torch.Generator().manual_seed(6)
    r1, r2 = torch.rand(2, len(link), generator=g, dtype=torch.float64)
    t = 0.3
    mixed = worker_counts(t * r1 + (1 - t) * r2, link, w, 3)
    a, b = worker_counts(r1, link, w, 3), worker_counts(r2, link, w, 3)
    torch.testing.assert_close(mixed.alpha, t * a.alpha + (1 - t) * b.alpha)
    torch.testing.assert_close(mixed.beta, t * a.beta + (1 - t) * b.beta)
    # every link is counted once in all
    assert float(mixed.alpha.sum() + mixed.beta.sum()) == pytest.approx(len(link))


@pytest.mark.parametrize("accuracy, expected", [(0.5, 0.0), (0.9, 2 * math.log(9))])
def test_worker_weight(accuracy, expected):
    assert float(worker_weights(torch.tensor(accuracy), torch.tensor(accuracy))) == pytest.approx(expected)


def test_the_pyro_site_scores_what_link_log_prob_computes():
    import pyro

    from pyromodels.scdc.links import observe_links

    i, j, w, link = _links()
    alpha, beta = _coins()
    z = torch.randint(3, (7,), generator=torch.Generator().manual_seed(7))
    trace = pyro.poutine.trace(observe_links).get_trace(z, i, j, w, link, alpha, beta)
    trace.compute_log_prob()
    same = (z[i] == z[j]).double()
    expected = link_log_prob(link, same, point_worker_logs(alpha, beta), w)
    torch.testing.assert_close(trace.nodes["links"]["log_prob"], expected)
