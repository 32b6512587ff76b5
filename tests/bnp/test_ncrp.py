"""The nested CRP against independent oracles: sequential seating in any order, enumeration of
every nested partition, Monte Carlo frequencies with bounds derived from their sampling error,
the CRP mean of the number of level-1 nodes, and the path proposal against its exact
conditional p(V) / p(V without n)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from pyromodels.bnp import (
    NEW,
    Tree,
    crp_expected_clusters,
    ncrp_log_prob,
    path_conditional_log_probs,
    path_proposal,
    sample_ncrp_paths,
    set_partitions,
)


def sequential_seating_log_prob(paths, order, alpha: float) -> float:
    """Seat the data in ``order``; read the counts straight off the earlier rows' prefixes.

    Datum i at level l joins the child holding ``N_c`` of the earlier data that share its
    prefix up to l, out of ``N_p`` sharing the prefix up to l - 1: probability
    ``N_c / (N_p + alpha)``, or ``alpha / (N_p + alpha)`` when ``N_c = 0`` (a new node; below
    a new node ``N_p = 0`` and the factor is 1)."""
    rows = [tuple(r) for r in torch.as_tensor(paths).tolist()]
    total = 0.0
    for k, i in enumerate(order):
        earlier = [rows[j] for j in order[:k]]
        for lv in range(1, len(rows[i])):
            n_p = sum(r[:lv] == rows[i][:lv] for r in earlier)
            n_c = sum(r[: lv + 1] == rows[i][: lv + 1] for r in earlier)
            total += math.log((n_c if n_c else alpha) / (n_p + alpha))
    return total


def nested_partitions(num_points: int, depth: int) -> list[list[list[int]]]:
    """Every tree of ``depth`` levels over ``num_points`` data as paths (ids made up from the
    blocks: a node is identified by its path prefix)."""
    def split(members: list[int], lv: int) -> list[dict[int, tuple]]:
        if lv > depth:
            return [{m: () for m in members}]
        out = []
        for labels in set_partitions(len(members)):
            blocks = [[m for m, b in zip(members, labels) if b == k]
                      for k in range(max(labels) + 1)]
            for subs in itertools.product(*(split(b, lv + 1) for b in blocks)):
                out.append({m: (k,) + sub[m] for k, sub in enumerate(subs) for m in sub})
        return out

    trees = []
    for suffix in split(list(range(num_points)), 1):
        ids: dict[tuple, int] = {(): 0}
        rows = []
        for m in range(num_points):
            key = suffix[m]
            rows.append([ids.setdefault(key[:lv], len(ids)) for lv in range(depth + 1)])
        trees.append(rows)
    return trees


def nested_key(paths) -> tuple:
    """The nested partition of a tree: the data partition at every level, blocks numbered in
    order of first appearance."""
    columns = torch.as_tensor(paths).T.tolist()[1:]
    out = []
    for col in columns:
        seen: dict[int, int] = {}
        out.append(tuple(seen.setdefault(z, len(seen)) for z in col))
    return tuple(out)


def tv_bound(p: np.ndarray, draws: int, seed: int = 0, n_se: float = 5.0) -> float:
    """Bound on the total variation between ``draws`` independent categorical draws' frequencies
    and ``p``: the frequencies are multinomial(draws, p) / draws; their TV is simulated 4000
    times and the bound is the mean plus ``n_se`` standard deviations (for a correct sampler it
    is exceeded with probability of order 1e-6 under the normal approximation of a sum of many
    half-normal terms)."""
    rng = np.random.default_rng(seed)
    sims = rng.multinomial(draws, p, size=4000) / draws
    tv = 0.5 * np.abs(sims - p).sum(1)
    return float(tv.mean() + n_se * tv.std(ddof=1))


@pytest.mark.parametrize("num_points, depth, count", [(4, 2, 60), (3, 3, 22)])
def test_log_prob_sums_to_one_over_every_tree(num_points, depth, count):
    trees = nested_partitions(num_points, depth)
    # Number of trees T_L(N): sum over the level-1 partitions of the product of T_{L-1} of the
    # blocks, T_1 = Bell: T_2(4) = 15 + 4*5 + 3*2*2 + 6*2 + 1 = 60, T_2(2) = 3, T_2(3) = 12,
    # T_3(3) = 12 + 3*3*1 + 1 = 22.
    assert len(trees) == count == len({nested_key(t) for t in trees})
    for alpha in (0.4, 2.5):
        logp = torch.stack([ncrp_log_prob(Tree.from_paths(t), alpha) for t in trees])
        assert float(torch.logsumexp(logp, 0).exp()) == pytest.approx(1.0, abs=1e-12)


def test_log_prob_equals_sequential_seating_in_any_order():
    rng = np.random.default_rng(3)
    trees = nested_partitions(4, 2)
    for paths in trees[::3]:
        tree = Tree.from_paths(paths)
        for alpha in (0.2, 1.7):
            want = float(ncrp_log_prob(tree, alpha))
            for _ in range(3):
                order = rng.permutation(4).tolist()
                got = sequential_seating_log_prob(paths, order, alpha)
                assert got == pytest.approx(want, abs=1e-12)
    # a bigger sampled tree, depth 3, with unseated data left out
    paths = sample_ncrp_paths(9, 3, 1.1, torch.Generator().manual_seed(5))
    want = float(ncrp_log_prob(Tree.from_paths(paths), 1.1))
    assert sequential_seating_log_prob(paths, rng.permutation(9).tolist(), 1.1) == \
        pytest.approx(want, abs=1e-12)
    part = paths.clone()
    part[[2, 6]] = NEW
    seated = [i for i in range(9) if i not in (2, 6)]
    assert float(ncrp_log_prob(Tree.from_paths(part), 1.1)) == pytest.approx(
        sequential_seating_log_prob(paths, seated, 1.1), abs=1e-12)
    assert float(ncrp_log_prob(Tree(2, 3), 1.0)) == 0.0


def _distance_from_the_ncrp(draw, alpha, draws):
    """Total variation between the nCRP law of 3 data on trees of depth 2 and the frequencies
    of ``draws`` calls of ``draw()`` (each returning the 3 paths); also the law itself and the
    frequencies by tree."""
    trees = nested_partitions(3, 2)
    keys = [nested_key(t) for t in trees]
    p = np.exp([float(ncrp_log_prob(Tree.from_paths(t), alpha)) for t in trees])
    seen = dict.fromkeys(keys, 0)
    for _ in range(draws):
        seen[nested_key(draw())] += 1
    freq = np.array([seen[k] for k in keys]) / draws
    return 0.5 * np.abs(freq - p).sum(), p, dict(zip(keys, freq))


def test_sampler_frequencies_match_the_tree_probabilities():
    alpha, draws = 0.7, 20000
    gen = torch.Generator().manual_seed(11)
    tv, p, freq = _distance_from_the_ncrp(lambda: sample_ncrp_paths(3, 2, alpha, gen), alpha, draws)
    assert tv < tv_bound(p, draws), (tv, freq)


def test_sampler_ids_follow_opening_order_and_level_one_nodes_follow_the_crp_mean():
    paths = sample_ncrp_paths(6, 3, 1.0, torch.Generator().manual_seed(2))
    assert paths.shape == (6, 4) and paths.dtype == torch.int64
    flat = [z for z in paths.flatten().tolist()]
    first = list(dict.fromkeys(flat))  # ids in order of first appearance, row by row
    assert first == list(range(len(first)))
    # E[K] = sum_i alpha / (alpha + i - 1) and Var[K] = sum_i p_i (1 - p_i): K is a sum of
    # independent Bernoulli(p_i) "new node" indicators. The mean of T draws is within 5 standard
    # errors sqrt(Var[K] / T) of E[K] except with probability 6e-7.
    n, alpha, draws = 25, 1.5, 600
    probs = [alpha / (alpha + i) for i in range(n)]
    mean, var = crp_expected_clusters(n, alpha), sum(q * (1 - q) for q in probs)
    gen = torch.Generator().manual_seed(7)
    k = [int(sample_ncrp_paths(n, 2, alpha, gen)[:, 1].unique().numel()) for _ in range(draws)]
    assert abs(np.mean(k) - mean) < 5 * math.sqrt(var / draws)
    assert abs(np.var(k) - var) < 0.25 * var  # sd of a sample variance of 600: about 7%


def _example_tree() -> Tree:
    # Datum 5 is alone below node 6 (level 1); datum 0 alone in leaf 3; datum 7 unseated.
    return Tree.from_paths([[0, 1, 2, 3], [0, 1, 2, 4], [0, 1, 2, 4], [0, 1, 5, 8],
                            [0, 1, 5, 8], [0, 6, 7, 9], [0, 1, 2, 4], [NEW] * 4])


@pytest.mark.parametrize("n", range(8))
def test_conditional_equals_the_ratio_of_tree_probabilities(n):
    tree, alpha = _example_tree(), 0.8
    paths, logp = path_conditional_log_probs(tree, n, alpha)
    assert float(torch.logsumexp(logp, 0)) == pytest.approx(0.0, abs=1e-12)
    assert len({tuple(r) for r in paths.tolist()}) == paths.shape[0]
    base = tree.copy()
    if base.path(n) is not None:
        base.remove_path(n)
    log_rest = float(ncrp_log_prob(base, alpha))
    for row, lp in zip(paths, logp.tolist()):
        t = base.copy()
        t.add_path(n, row)
        assert lp == pytest.approx(float(ncrp_log_prob(t, alpha)) - log_rest, abs=1e-12)
    # every way to seat n appears: the living leaves plus a new child under each living
    # internal node of the tree without n
    assert paths.shape[0] == len(base.nodes_at_level(3)) + sum(
        len(base.nodes_at_level(lv)) for lv in range(3))


def test_proposal_log_prob_and_frequencies_match_the_conditional():
    tree, alpha, n, draws = _example_tree(), 0.8, 5, 20000
    paths, logp = path_conditional_log_probs(tree, n, alpha)
    index = {tuple(r): j for j, r in enumerate(paths.tolist())}
    gen = torch.Generator().manual_seed(13)
    hits = np.zeros(len(index))
    for _ in range(draws):
        prop = path_proposal(tree, n, alpha, gen)
        j = index[tuple(prop.path.tolist())]
        hits[j] += 1
        if hits[j] == 1:
            assert float(prop.log_prob) == pytest.approx(float(logp[j]), abs=1e-12)
    p = logp.exp().numpy()
    assert (hits > 0).sum() == len(p)  # the rarest option has p about 0.02 here
    tv = 0.5 * np.abs(hits / draws - p).sum()
    assert tv < tv_bound(p, draws), tv
    assert tree == _example_tree()  # the proposal leaves the tree alone


def test_a_sweep_of_proposals_leaves_the_ncrp_invariant():
    # Geweke-style with independent replicates: each replicate starts from an exact prior draw
    # and moves every datum once to its proposal (with the likelihood switched off the proposal
    # is the exact conditional, so every move is accepted). The end states are independent
    # draws that must again follow p(V); their frequencies get the multinomial TV bound.
    alpha, draws = 0.9, 8000
    gen = torch.Generator().manual_seed(17)

    def swept_prior_draw():
        tree = Tree.from_paths(sample_ncrp_paths(3, 2, alpha, gen))
        for n in (2, 0, 1):
            tree.move_path(n, path_proposal(tree, n, alpha, gen).path)
        return tree.paths

    tv, p, _ = _distance_from_the_ncrp(swept_prior_draw, alpha, draws)
    assert tv < tv_bound(p, draws, seed=1)


def test_proposal_applies_with_move_path_and_undo():
    tree, gen = _example_tree(), torch.Generator().manual_seed(0)
    for n in (0, 5, 3):
        prop = path_proposal(tree, n, 1.0, gen)
        edit = tree.move_path(n, prop.path)
        assert all(z == w or w == NEW for z, w in zip(edit.new_path, prop.path.tolist()))
        tree.validate()
        tree.undo(edit)
    assert tree.paths.tolist() == _example_tree().paths.tolist()
    prop = path_proposal(tree, 7, 1.0, gen)  # an unseated datum is seated with add_path
    tree.add_path(7, prop.path)
    tree.validate()


@pytest.mark.parametrize("call, error, match", [
    (lambda: sample_ncrp_paths(3, 0, 1.0, torch.Generator()), ValueError,
     "depth must be an integer >= 1, got 0"),
    (lambda: sample_ncrp_paths(0, 2, 1.0, torch.Generator()), ValueError,
     "num_points must be an integer >= 1"),
    (lambda: sample_ncrp_paths(3, 2, 0.0, torch.Generator()), ValueError, "alpha must be > 0"),
    (lambda: sample_ncrp_paths(3, 2, 1.0, 0), TypeError, "generator must be a torch.Generator"),
    (lambda: ncrp_log_prob(_example_tree(), -1.0), ValueError, "alpha must be > 0, got -1.0"),
    (lambda: ncrp_log_prob([[0, 1]], 1.0), TypeError, "tree must be a pyromodels.bnp.Tree"),
    (lambda: path_proposal(_example_tree(), 8, 1.0, torch.Generator()), ValueError,
     "n must be an integer <= 7, got 8"),
    (lambda: path_proposal(_example_tree(), 0, 1.0, None), TypeError,
     "generator must be a torch.Generator"),
    (lambda: path_conditional_log_probs(_example_tree(), 0, float("inf")), ValueError,
     "alpha must be finite"),
])
def test_bad_input_messages(call, error, match):
    with pytest.raises(error, match=match):
        call()
