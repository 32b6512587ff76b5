"""Pairwise annotation simulators and the pinwheel: the two coins recovered per worker, the
protocols' structure (#ML = #CL, transitive HITs of 630 pairs, blocks), seeding, bad inputs.

Every tolerance is a multiple of the Monte Carlo standard error (SE) of the statistic checked;
5 SE keeps the chance of a false failure below 1e-5 per check.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pyromodels.data import (
    PairwiseAnnotations,
    partition_rates,
    simulate_block_pairs,
    simulate_hit_partitions,
    simulate_pinwheel,
    simulate_random_pairs,
    simulate_stratified_pairs,
    two_coin_rates,
)

Z = 5.0  # multiples of the Monte Carlo standard error
ALPHA = [0.95, 0.85, 0.7, 0.6]
BETA = [0.9, 0.6, 0.8, 0.75]  # unlike ALPHA, so that swapping the coins fails


def _rates(pairs: PairwiseAnnotations, same: torch.Tensor, m: int):
    """Per worker: (#same, #L=1 among same, #different, #L=0 among different)."""
    w, link = pairs.worker_idx, pairs.link
    out = []
    for k in range(m):
        s, d = same & (w == k), ~same & (w == k)
        out.append((int(s.sum()), int(link[s].sum()), int(d.sum()), int((link[d] == 0).sum())))
    return out


def _check_two_coins(pairs, truth, min_count: int):
    assert torch.equal(truth["same"], truth["z"][pairs.i_idx] == truth["z"][pairs.j_idx])
    for k, (n_s, ones, n_d, zeros) in enumerate(_rates(pairs, truth["same"], len(ALPHA))):
        assert min(n_s, n_d) >= min_count  # enough rows for the check to mean something
        a, b = ALPHA[k], BETA[k]
        assert abs(ones / n_s - a) < Z * math.sqrt(a * (1 - a) / n_s), (k, ones / n_s, a)
        assert abs(zeros / n_d - b) < Z * math.sqrt(b * (1 - b) / n_d), (k, zeros / n_d, b)
    assert truth["alpha"].tolist() == ALPHA and truth["beta"].tolist() == BETA


Z5 = torch.arange(5000) % 5  # 5 clusters of 1,000 items


@pytest.mark.parametrize("simulate, size, min_count", [
    (simulate_random_pairs, 5000, 800),      # about 1 in 5 uniform pairs shares a cluster
    (simulate_block_pairs, 5000, 800),       # 4,999 pairs along a block of all items
    (simulate_stratified_pairs, 1500, 1500),  # exactly 1,500 of each kind
])
def test_empirical_coins_match_each_workers_alpha_and_beta(simulate, size, min_count):
    pairs, truth = simulate(Z5, len(ALPHA), size, alpha=ALPHA, beta=BETA, seed=11)
    _check_two_coins(pairs, {**truth, "z": Z5}, min_count)


def test_random_pairs_are_distinct_uniform_pairs_of_the_annotated_items():
    z = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    pairs, truth = simulate_random_pairs(z, 3, 15, annotated=6, seed=4)
    assert pairs.counts_per_worker().tolist() == [15, 15, 15]
    assert pairs.num_items == 8 and len(truth["annotated"]) == 6
    shown = set(truth["annotated"].tolist())
    assert set(pairs.i_idx.tolist()) | set(pairs.j_idx.tolist()) <= shown
    # 15 = C(6, 2): each worker judges every pair of the annotated items exactly once
    for k in range(3):
        rows = pairs.worker_idx == k
        keys = {(min(a, b), max(a, b))
                for a, b in zip(pairs.i_idx[rows].tolist(), pairs.j_idx[rows].tolist())}
        assert len(keys) == 15
    listed, _ = simulate_random_pairs(z, 1, 3, annotated=[1, 4, 7], seed=0)
    assert set(listed.i_idx.tolist()) | set(listed.j_idx.tolist()) == {1, 4, 7}


def test_block_pairs_follow_the_pinwheel_protocol():
    m, size = 400, 11
    pairs, truth = simulate_block_pairs(torch.arange(100) % 5, m, size, annotated=30, seed=5)
    blocks = truth["blocks"]
    assert tuple(blocks.shape) == (m, size) and pairs.counts_per_worker().unique().tolist() == [10]
    assert set(blocks.reshape(-1).tolist()) <= set(truth["annotated"].tolist())
    first_later = []
    for k in range(m):
        block = blocks[k].tolist()
        assert len(set(block)) == size
        rows = pairs.worker_idx == k
        i, j = pairs.i_idx[rows].tolist(), pairs.j_idx[rows].tolist()
        assert i == block[:-1]  # one pair starts at each position but the last
        positions = [block.index(b) for b in j]
        assert all(q > p for p, q in enumerate(positions))
        assert positions[-1] == size - 1
        first_later.append(positions[0])
    # the partner of position 0 is uniform on 1 .. 10: mean 5.5, variance (10^2 - 1) / 12
    mean, var = np.mean(first_later), (10**2 - 1) / 12
    assert abs(mean - 5.5) < Z * math.sqrt(var / m)


def test_stratified_pairs_have_as_many_same_as_different_pairs_per_worker():
    z = torch.tensor([0] * 10 + [1] * 20 + [2] * 30)  # same-cluster pairs: 45, 190, 435
    m, per_kind = 50, 40
    pairs, truth = simulate_stratified_pairs(z, m, per_kind, alpha=0.8, beta=0.7, seed=6)
    same, w = truth["same"], pairs.worker_idx
    for k in range(m):
        assert int(same[w == k].sum()) == per_kind and int((~same)[w == k].sum()) == per_kind
    # same-cluster pairs are uniform over such pairs: cluster k w.p. C(n_k, 2) / 670
    clusters = z[pairs.i_idx[same]]
    n = len(clusters)
    for k, count in enumerate([45, 190, 435]):
        p = count / 670
        share = float((clusters == k).float().mean())
        assert abs(share - p) < Z * math.sqrt(p * (1 - p) / n)


def _is_partition(links: torch.Tensor) -> bool:
    """Whether a symmetric 0/1 matrix with a unit diagonal is transitive."""
    reach = (links.double() @ links.double()) > 0
    return bool(torch.equal(reach, links.bool()))


def test_hit_labels_are_transitive_partitions_of_630_pairs():
    z = torch.arange(400) % 10
    pairs, truth = simulate_hit_partitions(z, 3, [1, 2, 3], error=[0.1, 0.3, 0.6], seed=7)
    hits, size = truth["hit_items"], 36
    assert tuple(hits.shape) == (6, size) and truth["hit_worker"].tolist() == [0, 1, 1, 2, 2, 2]
    assert torch.bincount(truth["hit"]).tolist() == [630] * 6
    for h in range(6):
        rows = truth["hit"] == h
        assert bool((pairs.worker_idx[rows] == truth["hit_worker"][h]).all())
        pos = {item: p for p, item in enumerate(hits[h].tolist())}
        links = torch.eye(size, dtype=torch.long)
        for a, b, v in zip(pairs.i_idx[rows].tolist(), pairs.j_idx[rows].tolist(),
                           pairs.link[rows].tolist()):
            links[pos[a], pos[b]] = links[pos[b], pos[a]] = v
        assert int(links.sum()) == size + 2 * int(pairs.link[rows].sum())  # all pairs present
        assert _is_partition(links)
        labels = truth["hit_labels"][h]
        assert torch.equal(links.bool(), labels[:, None] == labels[None, :])
    for k in range(3):  # a worker never sees an item twice
        seen = hits[truth["hit_worker"] == k].reshape(-1)
        assert len(seen.unique()) == len(seen)


def test_hit_links_follow_the_implied_two_coin_rates():
    z = torch.arange(4000) % 10
    error = [0.05, 0.2, 0.5, 0.9]
    pairs, truth = simulate_hit_partitions(z, 4, 40, error=error, seed=8)
    alpha, beta = partition_rates(torch.tensor(error), 10)
    assert torch.equal(truth["alpha"], alpha) and torch.equal(truth["beta"], beta)
    # pairs of one HIT are dependent: a ratio estimate with its SE over the 40 HITs
    same, link, hit = truth["same"], pairs.link, truth["hit"]
    for k in range(4):
        hits = torch.nonzero(truth["hit_worker"] == k).flatten().tolist()
        for rows_of_kind, hits_pos, target in ((same, link == 1, float(alpha[k])),
                                               (~same, link == 0, float(beta[k]))):
            n = np.array([int((rows_of_kind & (hit == h)).sum()) for h in hits], dtype=float)
            a = np.array([int((rows_of_kind & hits_pos & (hit == h)).sum()) for h in hits],
                         dtype=float)
            est = a.sum() / n.sum()
            se = math.sqrt(((a - est * n) ** 2).sum() * len(n) / (len(n) - 1)) / n.sum()
            assert abs(est - target) < Z * se, (k, est, target, se)


def test_partition_rates_closed_form():
    # K = 2, error 0.5: own label w.p. 0.75, the other w.p. 0.25
    alpha, beta = partition_rates(0.5, 2)
    assert math.isclose(float(alpha), 0.75**2 + 0.25**2)
    assert math.isclose(float(beta), 1 - 2 * 0.75 * 0.25)
    a, b = partition_rates([0.0], 7)  # no noise: the true partition
    assert a.tolist() == [1.0] and b.tolist() == [1.0]


@pytest.mark.parametrize("simulate, args", [
    (simulate_random_pairs, (torch.arange(30) % 3, 4, 10)),
    (simulate_block_pairs, (torch.arange(30) % 3, 4, 10)),
    (simulate_stratified_pairs, (torch.arange(30) % 3, 4, 10)),
    (simulate_hit_partitions, (torch.arange(100) % 3, 2, 2)),
])
def test_pair_simulators_are_seeded(simulate, args):
    (a, ta), (b, tb), (c, _) = (simulate(*args, seed=s) for s in (3, 3, 4))
    assert a.to_frame().equals(b.to_frame()) and torch.equal(ta["same"], tb["same"])
    assert not a.to_frame().equals(c.to_frame())
    assert isinstance(a, PairwiseAnnotations) and a.num_items == len(args[0])


def test_pinwheel_shapes_labels_and_seeding():
    X, truth = simulate_pinwheel(seed=0)
    z = truth["z"]
    assert X.dtype == torch.float64 and tuple(X.shape) == (500, 2) and z.dtype == torch.long
    assert torch.bincount(z).tolist() == [100] * 5
    assert not torch.equal(z[:100], torch.zeros(100, dtype=torch.long))  # shuffled
    again, t2 = simulate_pinwheel(seed=0)
    other, _ = simulate_pinwheel(seed=1)
    assert torch.equal(X, again) and torch.equal(z, t2["z"]) and not torch.equal(X, other)
    small, ts = simulate_pinwheel(3, 7, seed=2)
    assert tuple(small.shape) == (21, 2) and torch.bincount(ts["z"]).tolist() == [7, 7, 7]


def test_pinwheel_points_invert_to_the_gaussian_they_came_from():
    n, rate = 4000, 0.25
    X, truth = simulate_pinwheel(4, 1000, rate=rate, seed=3)
    # x = 10 R(theta)^T f turns f by -theta: f = |x| / 10 (cos phi, sin phi) with phi = angle(x)
    # + theta and theta = 2 pi k / 4 + rate exp(f_1), a fixed point in phi
    radius, angle = X.norm(dim=1) / 10, torch.atan2(X[:, 1], X[:, 0])
    base = 2 * math.pi * truth["z"].double() / 4
    phi = torch.zeros(n, dtype=torch.float64)
    for _ in range(200):
        step = torch.remainder(angle + base + rate * torch.exp(radius * torch.cos(phi)) + math.pi,
                               2 * math.pi) - math.pi
        change, phi = float((step - phi).abs().max()), step
    assert change < 1e-12
    f = torch.stack([radius * torch.cos(phi), radius * torch.sin(phi)], 1)
    # f ~ N((1, 0), diag(0.3^2, 0.05^2)): means and standard deviations within 5 SE
    for col, mean, sd in ((0, 1.0, 0.3), (1, 0.0, 0.05)):
        assert abs(float(f[:, col].mean()) - mean) < Z * sd / math.sqrt(n)
        assert abs(float(f[:, col].std()) - sd) < Z * sd / math.sqrt(2 * n)


@pytest.mark.parametrize("call, match", [
    (lambda: two_coin_rates(3, [0.9, 0.8], 0.9),
     r"^alpha must be one probability or one per worker \(3 values\), got shape \(2,\)$"),
    (lambda: two_coin_rates(2, 0.9, [0.5, 1.2]), r"^beta must lie in \[0, 1\], got \[0\.5, 1\.2\]$"),
    (lambda: partition_rates(-0.1, 3), r"^error must lie in \[0, 1\], got -0\.1"),
    (lambda: simulate_random_pairs([0], 2, 1, seed=0),
     r"^z must hold the clusters of at least 2 items, got 1$"),
    (lambda: simulate_random_pairs([0, 1, 0], 2, 4, seed=0),
     r"^pairs_per_worker must be an integer <= 3, got 4$"),
    (lambda: simulate_random_pairs([0, 1, 0], 2, 1, annotated=[0, 0], seed=0),
     r"^annotated must list distinct item codes$"),
    (lambda: simulate_random_pairs([0, 1, 0], 2, 1, annotated=[2], seed=0),
     r"^annotated must hold at least 2 items, got 1$"),
    (lambda: simulate_random_pairs([0, 1, 0], 2, 1, annotated=[0, 3], seed=0),
     r"^annotated must lie in \[0, 2\] \(len\(z\)=3\), found 3$"),
    (lambda: simulate_random_pairs([0, 1, 0], 2, 1, annotated=4, seed=0),
     r"^annotated must be an integer <= 3, got 4$"),
    (lambda: simulate_block_pairs([0, 1, 0], 2, 4, seed=0),
     r"^items_per_worker must be an integer <= 3, got 4$"),
    (lambda: simulate_stratified_pairs([0, 0, 1, 1], 2, 3, seed=0),
     r"^pairs_per_kind must be at most 2: the annotated items have 2 same-cluster and 4 "
     r"different-cluster pairs, got 3$"),
    (lambda: simulate_hit_partitions([0, 1] * 40, 2, 3, seed=0),
     r"^hits_per_worker \* items_per_hit must not exceed the 80 annotated items \(a worker "
     r"sees each item at most once\), got 3 \* 36 = 108$"),
    (lambda: simulate_hit_partitions([0, 1] * 40, 2, [1, 2, 1], seed=0),
     r"^hits_per_worker must be one number or one per worker \(2 values\), got 3$"),
    (lambda: simulate_hit_partitions([0, 1] * 40, 2, [1, 0], seed=0),
     r"^hits_per_worker must be at least 1 for every worker, got \[1, 0\]$"),
    (lambda: simulate_hit_partitions([0, 1, 2] * 40, 2, num_labels=2, seed=0),
     r"^num_labels must be at least max\(2, max\(z\) \+ 1\) = 3, got 2$"),
    (lambda: simulate_hit_partitions([0, 1] * 40, 2, error=[0.1], seed=0),
     r"^error must be one probability or one per worker \(2 values\), got shape \(1,\)$"),
    (lambda: simulate_pinwheel(tangential_std=0.0, seed=0), r"^tangential_std must be > 0, got 0\.0$"),
    (lambda: simulate_pinwheel(rate=-1.0, seed=0), r"^rate must be >= 0, got -1\.0$"),
])
def test_simulator_errors_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
