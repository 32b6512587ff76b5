"""Message passing against brute-force enumeration over every joint latent state, float64."""

import pytest
import torch

from pyromodels.trees import (
    LatentTree,
    TreeParams,
    brute_force,
    tree_log_likelihood,
    tree_map,
    tree_posterior,
)

from .conftest import random_case

TOL = 1e-10


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_likelihood_and_marginals_equal_enumeration(shape, seed):
    params, z = random_case(shape, seed)
    exact = brute_force(params, z)
    post = tree_posterior(params, z)
    assert post.log_likelihood.dtype == torch.float64
    assert torch.allclose(post.log_likelihood, exact.log_likelihood, atol=TOL, rtol=0)
    assert torch.allclose(tree_log_likelihood(params, z), exact.log_likelihood, atol=TOL, rtol=0)
    for j in range(params.tree.num_latents):
        assert post.node_marginals[j].shape == (z.shape[0], params.tree.cardinalities[j])
        assert torch.allclose(post.node_marginals[j], exact.node_marginals[j], atol=TOL, rtol=0)
        if params.tree.parents[j] is None:
            assert post.edge_marginals[j] is None
        else:
            assert torch.allclose(post.edge_marginals[j], exact.edge_marginals[j], atol=TOL,
                                  rtol=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_map_equals_enumeration(shape, seed):
    params, z = random_case(shape, seed)
    exact = brute_force(params, z)
    states, log_joint = tree_map(params, z)
    assert states.dtype == torch.long and states.shape == (z.shape[0], params.tree.num_latents)
    assert torch.allclose(log_joint, exact.map_log_joint, atol=TOL, rtol=0)
    # the state found scores the maximum (ties, if any, may pick another maximiser)
    rows = [exact.states.tolist().index(s) for s in states.tolist()]
    found = exact.log_joint[torch.arange(z.shape[0]), torch.tensor(rows)]
    assert torch.allclose(found, exact.map_log_joint, atol=TOL, rtol=0)


def test_pairwise_marginals_sum_to_the_node_marginals(shape):
    params, z = random_case(shape, 5)
    post = tree_posterior(params, z)
    for j, p in enumerate(params.tree.parents):
        if p is not None:
            edge = post.edge_marginals[j]
            assert torch.allclose(edge.sum(-1), post.node_marginals[p], atol=TOL, rtol=0)
            assert torch.allclose(edge.sum(-2), post.node_marginals[j], atol=TOL, rtol=0)


@pytest.mark.parametrize("pouch", [False, True])
def test_single_node_tree_is_a_gaussian_mixture(pouch):
    tree = LatentTree.single(4, 3, pouch=pouch)
    params = TreeParams.random(tree, torch.Generator().manual_seed(3))
    z = torch.randn(20, 3, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    if pouch:
        comp = torch.distributions.MultivariateNormal(params.means[0],
                                                      covariance_matrix=params.covariances[0])
    else:
        loc = torch.cat(params.means, dim=1)  # (K, J)
        sd = torch.cat([t[:, :, 0] for t in params.scale_trils], dim=1)
        comp = torch.distributions.Independent(torch.distributions.Normal(loc, sd), 1)
    gmm = torch.distributions.MixtureSameFamily(
        torch.distributions.Categorical(probs=params.root_probs), comp)
    assert torch.allclose(tree_log_likelihood(params, z), gmm.log_prob(z), atol=TOL, rtol=0)
    resp = tree_posterior(params, z).node_marginals[0]
    log_w = params.root_probs.log() + comp.log_prob(z.unsqueeze(1))
    assert torch.allclose(resp, log_w.softmax(-1), atol=TOL, rtol=0)


def test_float32_agrees_with_float64():
    params, z = random_case("three_level", 7)
    low = tree_posterior(params.to(dtype=torch.float32), z.float())
    high = tree_posterior(params, z)
    assert low.log_likelihood.dtype == torch.float32
    assert torch.allclose(low.log_likelihood.double(), high.log_likelihood, atol=1e-3, rtol=1e-5)
    for a, b in zip(low.node_marginals, high.node_marginals):
        assert torch.allclose(a.double(), b, atol=1e-4)


def test_far_points_stay_finite():
    """Points far in the tails underflow in probability space, not in log space."""
    params, _ = random_case("chain", 0)
    z = torch.full((3, params.tree.num_coordinates), 200.0, dtype=torch.float64)
    post = tree_posterior(params, z)
    exact = brute_force(params, z)
    assert torch.isfinite(post.log_likelihood).all()
    assert torch.allclose(post.log_likelihood, exact.log_likelihood, rtol=1e-12, atol=0)
    for a, b in zip(post.node_marginals, exact.node_marginals):
        assert torch.allclose(a, b, atol=1e-8)


def test_zero_probabilities_are_exact_not_nan():
    """Structural zeros in the root prior and a CPT give -inf log terms, not NaN."""
    params, z = random_case("chain", 6)
    root = torch.tensor([1.0, 0.0], dtype=torch.float64)
    cpt = params.cpts[1].clone()
    cpt[0] = torch.tensor([0.0, 0.3, 0.7], dtype=torch.float64)
    zeroed = TreeParams(params.tree, root, [None, cpt, params.cpts[2]], params.means,
                        params.scale_trils)
    post = tree_posterior(zeroed, z)
    exact = brute_force(zeroed, z)
    assert torch.allclose(post.log_likelihood, exact.log_likelihood, atol=TOL, rtol=0)
    for a, b in zip(post.node_marginals, exact.node_marginals):
        assert not a.isnan().any() and torch.allclose(a, b, atol=TOL, rtol=0)
    assert (post.node_marginals[0][:, 1] == 0).all() and (post.node_marginals[1][:, 0] == 0).all()
    states, log_joint = tree_map(zeroed, z)
    assert (states[:, 0] == 0).all() and (states[:, 1] != 0).all()
    assert torch.allclose(log_joint, exact.map_log_joint, atol=TOL, rtol=0)


def test_pouch_responsibilities_are_the_parents_marginals():
    params, z = random_case("three_level", 9)
    post = tree_posterior(params, z)
    exact = brute_force(params, z)
    resp = post.pouch_responsibilities(params)
    assert len(resp) == len(params.tree.pouches)
    for b, p in enumerate(params.tree.pouch_parents):
        assert torch.allclose(resp[b], exact.node_marginals[p], atol=TOL, rtol=0)
