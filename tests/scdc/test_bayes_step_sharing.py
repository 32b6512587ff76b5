"""BayesSCDC's step encodes each distinct item once (the link branch reads the potentials of
its items in the data batch from the data branch's pass) and gives what separate per-branch,
per-endpoint encoding gives."""

import pytest
import torch

from pyromodels.core.conjugate_factors import Minibatch
from pyromodels.data import simulate_block_pairs, simulate_pinwheel
from pyromodels.scdc import BayesSCDC
from pyromodels.scdc.bayes import initial_globals
from pyromodels.scdc.bayes_elbo import BayesLocalStep, GaussianObservation, local_terms
from pyromodels.scdc.links import co_cluster_probability, worker_counts
from pyromodels.scdc.vmp import LinkBatch, annotation_term, global_means, run_vmp

NUM_ITEMS, BATCH, DRAWN = 60, 30, 25


@pytest.fixture(scope="module")
def problem():
    o, truth = simulate_pinwheel(num_clusters=3, points_per_cluster=20, seed=0)
    o = (o - o.mean(0)) / o.std()
    # 40 links on 20 annotated items: the drawn links repeat endpoints
    annotated = torch.arange(0, NUM_ITEMS, 3)
    pairs, _ = simulate_block_pairs(truth["z"], 4, 11, annotated=annotated, seed=1)
    model = BayesSCDC(4, 2, hidden=(8,))
    priors = model.priors(pairs.num_workers)
    init = initial_globals(priors, torch.Generator().manual_seed(2), model.mean_precision)
    return o, pairs, model, init


def _step(model, o, pairs, observation):
    return BayesLocalStep(observation, o, pairs.i_idx, pairs.j_idx, pairs.worker_idx,
                          pairs.link, pairs.num_workers, DRAWN)


def _batch(o):
    indices = torch.arange(BATCH)
    return Minibatch(o[indices], indices, NUM_ITEMS / BATCH, 0, 0)


class _Counting:
    """An observation model recording every row its potential is asked for."""

    def __init__(self, inner):
        self.inner, self.rows = inner, []

    def potential(self, o):
        self.rows.append(o.detach().clone())
        return self.inner.potential(o)

    def expected_log_likelihood(self, o, qx, generator):
        return self.inner.expected_log_likelihood(o, qx, generator)


def test_each_distinct_item_is_encoded_once_per_step(problem):
    o, pairs, model, init = problem
    # closed-form likelihood and q(z) started from the responsibilities: the step's one
    # random draw is the links'
    observation = _Counting(GaussianObservation(4.0))
    _step(model, o, pairs, observation)(init, _batch(o), torch.Generator().manual_seed(3))
    drawn = torch.randperm(pairs.num_pairs, generator=torch.Generator().manual_seed(3))[:DRAWN]
    link_items = torch.cat([pairs.i_idx[drawn], pairs.j_idx[drawn]]).unique()
    used = torch.cat([torch.arange(BATCH), link_items]).unique()
    assert torch.isin(link_items, torch.arange(BATCH)).sum() > 0  # the streams share items
    assert 2 * DRAWN > link_items.numel()  # and the links share endpoints
    encoded = torch.cat(observation.rows)
    assert encoded.shape[0] == used.numel()  # one row per distinct item, no more
    rows_of = (encoded.unsqueeze(1) == o.unsqueeze(0)).all(-1).int().argmax(-1)
    assert torch.equal(rows_of.sort().values, used)


def _reference(model, o, pairs, init, observation, seed):
    """The step computed branch by branch with every endpoint of the drawn links encoded
    separately, each distinct item's potential read from its first endpoint."""
    generator = torch.Generator().manual_seed(seed)
    g = global_means(init)
    batch = _batch(o)
    h, lam = observation.potential(batch.data)
    local = run_vmp(h, lam, g, None, num_sweeps=4, z_init="responsibilities")
    objective = batch.scale * local_terms(observation, batch.data, local, g, generator).sum()
    drawn = torch.randperm(pairs.num_pairs, generator=generator)[:DRAWN]  # after the draws above
    ends = torch.cat([pairs.i_idx[drawn], pairs.j_idx[drawn]])
    h_end, lam_end = observation.potential(o[ends])  # one row per endpoint
    items, inverse = torch.unique(ends, return_inverse=True)
    first = torch.tensor([int((inverse == k).nonzero()[0]) for k in range(items.numel())])
    links = LinkBatch(inverse[:DRAWN], inverse[DRAWN:], pairs.worker_idx[drawn],
                      pairs.link[drawn])
    pair_local = run_vmp(h_end[first], lam_end[first], g, links, num_sweeps=4,
                         z_init="responsibilities")
    objective = objective + (pairs.num_pairs / DRAWN) * annotation_term(
        pair_local.probs, links, g).sum()
    counts = worker_counts(co_cluster_probability(pair_local.probs, links.i, links.j),
                           links.link, links.worker, pairs.num_workers)
    return objective, local.probs, counts


def test_the_shared_encoding_gives_the_per_endpoint_loss_and_gradients(problem):
    o, pairs, model, init = problem
    observation = model.networks(2, "normal", torch.Generator().manual_seed(0), torch.float64,
                                 None)
    params = list(observation.parameters())
    result = _step(model, o, pairs, observation)(init, _batch(o), torch.Generator().manual_seed(4))
    expected, probs, counts = _reference(model, o, pairs, init, observation, 4)
    torch.testing.assert_close(result.objective, expected, rtol=1e-12, atol=1e-10)
    got = torch.autograd.grad(result.objective, params)
    want = torch.autograd.grad(expected, params)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(result.stats["weights"],
                               init["weights"].observation_stats(probs.sum(0)))
    alpha = init["alpha"].observation_stats(counts.alpha[:, 0], counts.alpha[:, 1])
    torch.testing.assert_close(result.stats["alpha"], alpha)
