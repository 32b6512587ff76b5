"""Forward and conditional sampling: empirical frequencies within binomial error of the exact
laws (fixed seeds; thresholds four standard errors)."""

import itertools
import math

import pytest
import torch

from pyromodels.trees import sample_tree

from .conftest import random_case

N = 20_000
Z_SCORE = 4.0


def prior_joint(params):
    """Every joint state (S, l) and its prior probability (S,), by enumeration."""
    tree = params.tree
    states = list(itertools.product(*(range(k) for k in tree.cardinalities)))
    probs = []
    for y in states:
        p = params.root_probs[y[tree.root]]
        for j, parent in enumerate(tree.parents):
            if parent is not None:
                p = p * params.cpts[j][y[parent], y[j]]
        probs.append(p)
    return torch.tensor(states), torch.stack(probs)


def assert_frequencies(draws: torch.Tensor, probs: torch.Tensor, what: str):
    """Each state's frequency in ``draws`` within Z_SCORE binomial standard errors."""
    n = draws.shape[0]
    for k, p in enumerate(probs.tolist()):
        freq = float((draws == k).double().mean())
        se = math.sqrt(max(p * (1 - p), 1e-12) / n)
        assert abs(freq - p) < Z_SCORE * se + 1e-12, (what, k, freq, p)


def test_latent_marginals_match_the_prior(shape):
    params, _ = random_case(shape, 11)
    z, y = sample_tree(params, N, torch.Generator().manual_seed(12))
    assert z.shape == (N, params.tree.num_coordinates) and z.dtype == params.dtype
    assert y.dtype == torch.long
    states, probs = prior_joint(params)
    for j in range(params.tree.num_latents):
        marg = torch.stack([probs[states[:, j] == k].sum()
                            for k in range(params.tree.cardinalities[j])])
        assert_frequencies(y[:, j], marg, f"node {j}")


def test_points_given_their_states_are_the_leaf_gaussians():
    params, _ = random_case("chain", 13)
    z, y = sample_tree(params, N, torch.Generator().manual_seed(14))
    for block, p, mean, tril in zip(params.tree.pouches, params.tree.pouch_parents,
                                    params.means, params.scale_trils):
        state = y[:, p]
        resid = (z[:, list(block)] - mean[state]).unsqueeze(-1)
        white = torch.linalg.solve_triangular(tril[state], resid, upper=False).squeeze(-1)
        # standard normal coordinates: mean 0 (se 1/sqrt(N)), variance 1 (se sqrt(2/N))
        assert (white.mean(0).abs() < Z_SCORE / math.sqrt(N)).all()
        assert ((white.var(0) - 1).abs() < Z_SCORE * math.sqrt(2 / N)).all()
        if len(block) > 1:
            corr = (white[:, 0] * white[:, 1]).mean()
            assert abs(float(corr)) < Z_SCORE / math.sqrt(N)


@pytest.mark.parametrize("shape_name,node", [("chain", 2), ("three_level", "D"), ("star", 0)])
def test_conditional_generation_draws_the_exact_conditional(shape_name, node):
    params, _ = random_case(shape_name, 15)
    tree = params.tree
    j = tree.index(node)
    state = tree.cardinalities[j] - 1
    z, y = sample_tree(params, N, torch.Generator().manual_seed(16), condition={node: state})
    assert (y[:, j] == state).all()
    states, probs = prior_joint(params)
    keep = states[:, j] == state
    states, probs = states[keep], probs[keep] / probs[keep].sum()
    for i in range(tree.num_latents):
        if i != j:
            marg = torch.stack([probs[states[:, i] == k].sum()
                                for k in range(tree.cardinalities[i])])
            assert_frequencies(y[:, i], marg, f"node {i} given {node}={state}")
    # the pouches under the conditioned node follow its state's Gaussian
    for b in tree.leaves[j]:
        mean = params.means[b][state]
        se = params.covariances[b][state].diagonal().sqrt() / math.sqrt(N)
        assert ((z[:, list(tree.pouches[b])].mean(0) - mean).abs() < Z_SCORE * se).all()


def test_sampling_is_reproducible_and_leaves_the_global_stream_alone():
    params, _ = random_case("star", 17)
    torch.manual_seed(0)
    before = torch.random.get_rng_state()
    a = sample_tree(params, 50, torch.Generator().manual_seed(3))
    b = sample_tree(params, 50, torch.Generator().manual_seed(3))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert torch.equal(torch.random.get_rng_state(), before)
