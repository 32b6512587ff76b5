"""The fast message passing (matrix products on shifted exponentials, the distribute pass on
probabilities) against brute-force enumeration where it is hardest: CPT entries of zero or
near zero, tiny covariances and points far from every mean, where terms underflow in
probability space and the flagged points must be recomputed in log space."""

import pytest
import torch

from pyromodels.trees import (
    LatentTree,
    TreeParams,
    brute_force,
    leaf_log_densities,
    tree_log_likelihood,
    tree_map,
    tree_posterior,
)
from pyromodels.trees.message_passing import _fast_collect, _log_space, _node_leaf_terms

from .conftest import SHAPES, random_case

TOL = 1e-10
#: the benchmark's shape (10 latent nodes; 41,472 joint states, too slow for brute force)
BENCH = {"cards": {"r": 3, "a": 2, "b": 4, "c": 3, "a1": 2, "a2": 3, "b1": 4, "b2": 2,
                   "c1": 3, "c2": 2},
         "edges": [("r", "a"), ("r", "b"), ("r", "c"), ("a", "a1"), ("a", "a2"), ("b", "b1"),
                   ("b", "b2"), ("c", "c1"), ("c", "c2")],
         "pouches": [("a1", [0, 1]), ("a1", [2]), ("a2", [3, 4, 5]), ("b1", [6, 7]),
                     ("b1", [8]), ("b2", [9, 10]), ("c1", [11]), ("c1", [12, 13, 14]),
                     ("c2", [15, 16]), ("r", [17]), ("b", [19, 18])]}


def bench_tree():
    return LatentTree.from_edges(BENCH["cards"], BENCH["edges"], BENCH["pouches"])


def extreme_case(tree: LatentTree, seed: int, num_points: int = 8):
    """Random parameters with CPT entries set to 0 and 1e-300 (rows renormalised, one
    positive entry kept) and standard deviations of 0.1 to 0.3 against means a few units
    apart, so that the states of a node differ by thousands of nats (``exp`` underflows);
    points drawn with spreads 1, 3 and 8. ``|log p(z)|`` stays below about ``2e4``, whose
    float64 rounding is far below the tolerance."""
    gen = torch.Generator().manual_seed(seed)
    base = TreeParams.random(tree, gen, concentration=0.3, scale=0.2)
    cpts = []
    for cpt in base.cpts:
        if cpt is None:
            cpts.append(None)
            continue
        cut = torch.rand(cpt.shape, generator=gen, dtype=torch.float64)
        cpt = torch.where(cut < 0.25, 0.0, torch.where(cut < 0.4, 1e-300, cpt))
        cpt[torch.arange(cpt.shape[0]), torch.randint(cpt.shape[1], (cpt.shape[0],),
                                                      generator=gen)] += 0.5
        cpts.append(cpt / cpt.sum(-1, keepdim=True))
    params = TreeParams(tree, base.root_probs, cpts, base.means, base.scale_trils)
    spread = torch.tensor([1.0, 3.0, 8.0], dtype=torch.float64)
    which = torch.randint(3, (num_points, 1), generator=gen)
    z = spread[which] * torch.randn(num_points, tree.num_coordinates, generator=gen,
                                    dtype=torch.float64)
    return params, z


def assert_equal_to_enumeration(params, z):
    exact = brute_force(params, z)
    assert exact.log_likelihood.abs().max() < 1e5  # rounding of log terms well below TOL
    post = tree_posterior(params, z)
    for log_p in (post.log_likelihood, tree_log_likelihood(params, z)):
        assert torch.allclose(log_p, exact.log_likelihood, atol=TOL, rtol=1e-13)
    for j, p in enumerate(params.tree.parents):
        assert torch.allclose(post.node_marginals[j], exact.node_marginals[j], atol=TOL, rtol=0)
        if p is not None:
            assert torch.allclose(post.edge_marginals[j], exact.edge_marginals[j], atol=TOL,
                                  rtol=0)
    _, log_joint = tree_map(params, z)
    assert torch.allclose(log_joint, exact.map_log_joint, atol=TOL, rtol=1e-13)


def flagged(params, z):
    _, _, mask = _fast_collect(params, _node_leaf_terms(params, z), z)
    return torch.zeros(z.shape[0], dtype=torch.bool) if mask is None else mask


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_extreme_parameters_equal_enumeration(shape, seed):
    params, z = extreme_case(SHAPES[shape](), seed)
    assert_equal_to_enumeration(params, z)


@pytest.mark.parametrize("seed", range(3))
def test_extreme_parameters_on_the_benchmark_shape_equal_the_log_space_passes(seed):
    """Against the straightforward logsumexp passes (no enumeration at this size)."""
    params, z = extreme_case(bench_tree(), seed, num_points=30)
    log_p, nodes, edges = _log_space(params, z, marginals=True)
    assert log_p.abs().max() < 1e5
    post = tree_posterior(params, z)
    assert torch.allclose(post.log_likelihood, log_p, atol=TOL, rtol=1e-13)
    assert torch.allclose(tree_log_likelihood(params, z), log_p, atol=TOL, rtol=1e-13)
    for j, p in enumerate(params.tree.parents):
        assert torch.allclose(post.node_marginals[j], nodes[j], atol=TOL, rtol=0)
        if p is not None:
            assert torch.allclose(post.edge_marginals[j], edges[j], atol=TOL, rtol=0)


def test_the_cases_exercise_both_the_fast_path_and_the_log_space_fallback():
    """Some extreme points are flagged (and recomputed), ordinary ones are not."""
    params, z = extreme_case(bench_tree(), 0, num_points=40)
    mask = flagged(params, z)
    assert 0 < int(mask.sum()) < z.shape[0]
    ordinary = TreeParams.random(bench_tree(), torch.Generator().manual_seed(1))
    assert not flagged(ordinary, torch.randn(40, 20, dtype=torch.float64)).any()


def test_gradients_at_flagged_points_are_finite_and_exact():
    params, z = extreme_case(SHAPES["three_level"](), 1, num_points=20)
    mask = flagged(params, z)
    ours = z.clone().requires_grad_()
    tree_log_likelihood(params, ours).sum().backward()
    ref = z.clone().requires_grad_()
    brute_force(params, ref).log_likelihood.sum().backward()
    assert mask.any() and torch.isfinite(ours.grad).all()
    assert torch.allclose(ours.grad, ref.grad, rtol=1e-9, atol=1e-9)


def test_pouches_with_unordered_coordinates_equal_enumeration():
    """Pouches listing their coordinates out of order, or one node's pouches interleaved
    with another's, are gathered rather than sliced."""
    tree = LatentTree([3, 2, 2], [None, 0, 0], [[4, 1], [0], [3, 2, 5], [6]], [1, 0, 2, 1])
    params, z = extreme_case(tree, 5)
    assert_equal_to_enumeration(params, z)
    for b, block in enumerate(tree.pouches):
        p = tree.pouch_parents[b]
        gauss = torch.distributions.MultivariateNormal(params.means[b],
                                                       scale_tril=params.scale_trils[b])
        expected = gauss.log_prob(z[:, list(block)].unsqueeze(1))
        assert torch.allclose(leaf_log_densities(params, z)[b], expected, atol=TOL,
                              rtol=1e-13)
        assert expected.shape == (z.shape[0], tree.cardinalities[p])


def test_marginals_are_differentiable_in_the_points_and_the_parameters():
    """The in-place steps of the fast passes keep autograd right: gradcheck of every output
    of ``tree_posterior`` with respect to ``z``, a CPT (through logits) and a mean."""
    params, z = random_case("three_level", 4, num_points=3)
    tree = params.tree

    def outputs(points, logits, mean):
        cpts = list(params.cpts)
        cpts[3] = logits.softmax(-1)
        means = list(params.means)
        means[0] = mean
        theta = TreeParams(tree, params.root_probs, cpts, means, params.scale_trils)
        post = tree_posterior(theta, points)
        return torch.cat([post.log_likelihood, *(m.flatten() for m in post.node_marginals),
                          *(e.flatten() for e in post.edge_marginals if e is not None)])

    args = (z.clone().requires_grad_(), params.cpts[3].log().clone().requires_grad_(),
            params.means[0].clone().requires_grad_())
    assert torch.autograd.gradcheck(outputs, args)


def test_a_node_over_many_pouches_is_split_into_groups():
    """Twelve scalar pouches and a 3-coordinate one on one node (wider than one whitening
    group) give the Gaussian mixture's density."""
    tree = LatentTree([3], [None], [[j] for j in range(12)] + [[12, 13, 14]], [0] * 13)
    params = TreeParams.random(tree, torch.Generator().manual_seed(6), scale=0.5)
    z = 2 * torch.randn(9, 15, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    exact = brute_force(params, z)
    post = tree_posterior(params, z)
    assert torch.allclose(post.log_likelihood, exact.log_likelihood, atol=TOL, rtol=1e-13)
    assert torch.allclose(post.node_marginals[0], exact.node_marginals[0], atol=TOL, rtol=0)
