"""Gradients of log p(z) by autograd against finite differences and the paper's Eq. 6, and
the Pyro program's enumerated log-likelihood against message passing."""

import pyro
import pytest
import torch

from pyromodels.trees import (
    TreeParams,
    pyro_log_likelihood,
    tree_log_likelihood,
    tree_posterior,
)

from .conftest import random_case

STEP = 1e-6


def central_difference(f, x: torch.Tensor, index) -> float:
    up, down = x.detach().clone(), x.detach().clone()
    up[index] += STEP
    down[index] -= STEP
    return (float(f(up)) - float(f(down))) / (2 * STEP)


@pytest.mark.parametrize("seed", [0, 1])
def test_gradient_in_z_equals_finite_differences_and_eq6(shape, seed):
    params, z = random_case(shape, seed, num_points=4)
    z = z.requires_grad_()
    tree_log_likelihood(params, z).sum().backward()
    grad = z.grad

    def total(x):
        return tree_log_likelihood(params, x).sum()

    for index in [(0, 0), (1, params.tree.num_coordinates - 1), (3, 1)]:
        assert abs(float(grad[index]) - central_difference(total, z, index)) < 1e-6
    # Eq. 6: for each pouch, sum_k P(Y_parent = k | z) Sigma_k^{-1} (mu_k - z_b)
    post = tree_posterior(params, z.detach())
    for block, p, mean, cov in zip(params.tree.pouches, params.tree.pouch_parents, params.means,
                                   params.covariances):
        diff = mean.unsqueeze(0) - z.detach()[:, list(block)].unsqueeze(1)  # (N, K, d)
        g = torch.linalg.solve(cov.unsqueeze(0), diff.unsqueeze(-1)).squeeze(-1)
        eq6 = (post.node_marginals[p].unsqueeze(-1) * g).sum(1)
        assert torch.allclose(grad[:, list(block)], eq6, atol=1e-10, rtol=0)


def test_gradient_in_theta_equals_finite_differences():
    params, z = random_case("three_level", 3, num_points=5)
    tree = params.tree
    # probabilities through logits, so a perturbation keeps them on the simplex
    root_logits = params.root_probs.log().clone()
    cpt_logits = [None if c is None else c.log().clone() for c in params.cpts]
    means = [m.clone() for m in params.means]
    trils = [t.clone() for t in params.scale_trils]

    def total(root, cpt1, mean2, tril0):
        cpts = [None if c is None else c.softmax(-1) for c in cpt_logits]
        cpts[1] = cpt1.softmax(-1)
        ms, ts = list(means), list(trils)
        ms[2], ts[0] = mean2, tril0
        theta = TreeParams(tree, root.softmax(-1), cpts, ms, ts)
        return tree_log_likelihood(theta, z).sum()

    args = [root_logits, cpt_logits[1], means[2], trils[0]]
    leaves = [a.detach().clone().requires_grad_() for a in args]
    total(*leaves).backward()
    checks = [(0, (1,)), (1, (1, 2)), (2, (0, 0)), (3, (1, 1, 0)), (3, (0, 0, 0))]
    for which, index in checks:
        def moved(x, which=which):
            return total(*[x if i == which else a for i, a in enumerate(args)])

        fd = central_difference(moved, args[which], index)
        assert abs(float(leaves[which].grad[index]) - fd) < 1e-6, (which, index)


@pytest.mark.parametrize("seed", [0, 1])
def test_pyro_program_log_likelihood_equals_message_passing(shape, seed):
    params, z = random_case(shape, seed)
    expected = tree_log_likelihood(params, z).sum()
    got = pyro_log_likelihood(params, z)
    assert got.dim() == 0 and not got.requires_grad
    assert abs(float(got - expected)) < 1e-10


def test_pyro_log_likelihood_is_differentiable_like_message_passing():
    params, z = random_case("chain", 4)
    a = z.clone().requires_grad_()
    b = z.clone().requires_grad_()
    pyro_log_likelihood(params, a).backward()
    tree_log_likelihood(params, b).sum().backward()
    assert torch.allclose(a.grad, b.grad, atol=1e-10, rtol=0)


def test_pyro_marginals_and_map_equal_message_passing():
    """Pyro's enumeration marginals (``compute_marginals``) and ``infer_discrete`` at
    temperature 0 give the node marginals and the MAP joint state of the passes."""
    from pyro.infer import TraceEnum_ELBO, infer_discrete

    from pyromodels.trees import empty_guide, tree_map, tree_model

    params, z = random_case("three_level", 8, num_points=5)
    tree = params.tree
    post = tree_posterior(params, z)
    marginals = TraceEnum_ELBO(max_plate_nesting=1).compute_marginals(
        tree_model, empty_guide, params, z)
    for j, name in enumerate(tree.names):
        probs = marginals[f"y_{name}"].log_prob(
            torch.arange(tree.cardinalities[j]).unsqueeze(-1)).exp().T  # (N, K_j)
        assert torch.allclose(probs, post.node_marginals[j], atol=1e-10, rtol=0)
    decoded = infer_discrete(tree_model, first_available_dim=-2, temperature=0)
    trace = pyro.poutine.trace(decoded).get_trace(params, z)
    states, _ = tree_map(params, z)
    for j, name in enumerate(tree.names):
        assert torch.equal(trace.nodes[f"y_{name}"]["value"].long(), states[:, j])


def test_pyro_program_draws_points_and_scores_the_joint_like_enumeration():
    """Run without enumeration, the program draws (y, z); its log joint per point is the
    brute-force log p(z, y) of the drawn state."""
    from pyromodels.trees import brute_force, tree_model

    params, _ = random_case("star", 9)
    tree = params.tree
    pyro.set_rng_seed(0)
    trace = pyro.poutine.trace(tree_model).get_trace(params, None, 6)
    z = trace.nodes["_RETURN"]["value"]
    assert z.shape == (6, tree.num_coordinates)
    for b, block in enumerate(tree.pouches):
        assert torch.equal(z[:, list(block)], trace.nodes[f"z_{b}"]["value"])
    y = torch.stack([trace.nodes[f"y_{n}"]["value"] for n in tree.names], dim=1)
    trace.compute_log_prob()
    per_point = sum(site["log_prob"] for site in trace.nodes.values()
                    if site["type"] == "sample")
    exact = brute_force(params, z)
    rows = torch.tensor([exact.states.tolist().index(s) for s in y.tolist()])
    assert torch.allclose(per_point, exact.log_joint[torch.arange(6), rows], atol=1e-10, rtol=0)
