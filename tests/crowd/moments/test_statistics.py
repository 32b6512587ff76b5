"""Sample and population moments: brute-force loops, Monte Carlo identities, helpers."""

import itertools

import numpy as np
import pytest
import torch

from pyromodels.crowd.moments.statistics import (
    expand_ranges,
    population_moments,
    sample_moments,
    select_workers,
    triple_ranks,
)
from pyromodels.data import AnnotationTable
from pyromodels.data.simulate_crowd import WorkerPopulation, random_confusions, simulate_annotations


def _tiny_table(seed=0, n=9, m=5, k=3, keep=0.6):
    rng = np.random.default_rng(seed)
    rows = [(i, w, int(rng.integers(k))) for i in range(n) for w in range(m) if rng.random() < keep]
    items, workers, labels = map(list, zip(*rows))
    table = AnnotationTable.from_arrays(items, workers, labels, num_items=n, num_workers=m,
                                        num_classes=k)
    dense = np.full((n, m), -1)
    dense[items, workers] = labels
    return table, dense


def _brute_moments(dense, workers, k):
    """Co-occurrence-normalised moments by explicit loops over items."""
    m = len(workers)
    first = np.zeros((m, k))
    first_n = np.zeros(m, dtype=int)
    second = np.zeros((m, m, k, k))
    second_n = np.zeros((m, m), dtype=int)
    third, third_n = {}, {}
    for row in dense:
        f = [row[w] for w in workers]
        for a in range(m):
            if f[a] < 0:
                continue
            first[a, f[a]] += 1
            first_n[a] += 1
            for b in range(m):
                if b != a and f[b] >= 0:
                    second[a, b, f[a], f[b]] += 1
                    second_n[a, b] += 1
        for a, b, c in itertools.combinations(range(m), 3):
            if min(f[a], f[b], f[c]) >= 0:
                third.setdefault((a, b, c), np.zeros((k, k, k)))[f[a], f[b], f[c]] += 1
                third_n[(a, b, c)] = third_n.get((a, b, c), 0) + 1
    first /= np.maximum(first_n, 1)[:, None]
    second /= np.maximum(second_n, 1)[:, :, None, None]
    third = {key: val / third_n[key] for key, val in third.items()}
    return first, first_n, second, second_n, third, third_n


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sample_moments_match_brute_force_with_missing_labels(seed):
    table, dense = _tiny_table(seed)
    mom = sample_moments(table)
    first, first_n, second, second_n, third, third_n = _brute_moments(dense, range(5), 3)
    np.testing.assert_allclose(mom.first.numpy(), first, atol=1e-15)
    np.testing.assert_array_equal(mom.first_counts.numpy(), first_n)
    np.testing.assert_allclose(mom.second.numpy(), second, atol=1e-15)
    np.testing.assert_array_equal(mom.second_counts.numpy(), second_n)
    assert [tuple(t) for t in mom.triples.tolist()] == sorted(third)
    for p, key in enumerate(sorted(third)):
        np.testing.assert_allclose(mom.third[p].numpy(), third[key], atol=1e-15)
        assert int(mom.third_counts[p]) == third_n[key]


def test_worker_subsets_match_brute_force():
    table, dense = _tiny_table(3, n=12, m=6)
    chosen = [0, 2, 3, 5]
    mom = sample_moments(table, workers=[5, 0, 3, 2])  # order of the request does not matter
    assert mom.workers.tolist() == chosen
    first, _, second, _, third, _ = _brute_moments(dense, chosen, 3)
    np.testing.assert_allclose(mom.second.numpy(), second, atol=1e-15)
    for p, key in enumerate(sorted(third)):
        np.testing.assert_allclose(mom.third[p].numpy(), third[key], atol=1e-15)
    counts = (dense >= 0).sum(0)
    top = sorted(np.argsort(-counts, kind="stable")[:3].tolist())
    assert select_workers(table, 3).tolist() == top
    assert sample_moments(table, max_workers=3).workers.tolist() == top


def test_third_order_can_be_skipped_and_pairs_are_transposes():
    table, _ = _tiny_table(4)
    mom = sample_moments(table, third=False)
    assert mom.third.shape == (0, 3, 3, 3)
    torch.testing.assert_close(mom.second, mom.second.transpose(0, 1).transpose(2, 3))


def test_triple_ranks_follow_torch_combinations():
    combos = torch.combinations(torch.arange(7), 3)
    ranks = triple_ranks(combos[:, 0], combos[:, 1], combos[:, 2], 7)
    assert ranks.tolist() == list(range(len(combos)))


def test_expand_ranges_lists_every_pair():
    lo, hi = torch.tensor([2, 0, 5, 1]), torch.tensor([4, 0, 6, 4])
    src, dst = expand_ranges(lo, hi)
    want = [(s, d) for s in range(4) for d in range(int(lo[s]), int(hi[s]))]
    assert list(zip(src.tolist(), dst.tolist())) == want


def test_population_moments_match_a_loop_over_classes():
    conf = random_confusions(4, 3, seed=5)
    prior = torch.tensor([0.2, 0.5, 0.3])
    mom = population_moments(prior, conf)
    c, p = conf.numpy(), prior.numpy()
    for a, b in itertools.permutations(range(4), 2):
        want = sum(p[k] * np.outer(c[a, k], c[b, k]) for k in range(3))
        np.testing.assert_allclose(mom.second[a, b].numpy(), want, atol=1e-15)
    for idx, (a, b, d) in enumerate(itertools.combinations(range(4), 3)):
        want = sum(p[k] * np.einsum("i,j,l->ijl", c[a, k], c[b, k], c[d, k]) for k in range(3))
        np.testing.assert_allclose(mom.third[idx].numpy(), want, atol=1e-15)
    np.testing.assert_allclose(mom.first.numpy(), np.einsum("k,mki->mi", p, c), atol=1e-15)


def test_sample_moments_are_unbiased_for_population_moments():
    # Monte Carlo identity: each sample moment entry is a mean of `count` i.i.d. indicators
    # with success probability p (the population moment), so its standard error is
    # sqrt(p (1 - p) / count); every entry must lie within 5 standard errors (a correct
    # estimator fails one of the ~400 entries with probability < 3e-4).
    prior = torch.tensor([0.5, 0.3, 0.2])
    table, truth = simulate_annotations(20000, WorkerPopulation(5, missing_rate=0.3), 3,
                                        class_prior=prior, seed=11)
    mom = sample_moments(table)
    pop = population_moments(truth["prior"], truth["confusion"], mom.triples)
    checks = [
        (mom.first, pop.first, mom.first_counts[:, None]),
        (mom.second, pop.second, mom.second_counts[:, :, None, None]),
        (mom.third, pop.third, mom.third_counts[:, None, None, None]),
    ]
    for sample, exact, count in checks:
        count = count.expand_as(sample).to(torch.float64)
        used = count > 0
        se = torch.sqrt(exact * (1 - exact) / count.clamp_min(1))
        z = (sample - exact).abs()[used] / se[used]
        assert float(z.max()) < 5.0
    assert int(mom.third_counts.min()) > 5000  # every triple shares many items
