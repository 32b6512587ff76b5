"""The LTVAE paper's synthetic two-facet data: shapes, seeding, independence of the facets,
each facet's clusters seen in its own coordinates only, the true tree, bad arguments.

Tolerances are multiples Z of the Monte Carlo standard error (SE) of the statistic checked;
Z = 5 keeps the chance of a false failure below 1e-6 per check at a fixed seed.
"""

from __future__ import annotations

import math

import pytest
import torch

from pyromodels.data import simulate_two_facets
from pyromodels.trees import LatentTree, TreeParams, tree_log_likelihood

Z = 5.0
N = 5000
WEIGHTS = [[0.3, 0.7], [0.6, 0.4]]


@pytest.fixture(scope="module")
def data():
    return simulate_two_facets(N, facet_weights=WEIGHTS, seed=11)


def test_shapes_and_ranges(data):
    x, truth = data
    assert x.dtype == torch.float64 and tuple(x.shape) == (N, 100)
    assert tuple(truth["z"].shape) == (N, 4) and truth["z"].dtype == torch.float64
    facets = truth["facets"]
    assert facets.dtype == torch.long and tuple(facets.shape) == (N, 2)
    assert set(facets.unique().tolist()) == {0, 1}
    assert tuple(truth["W"].shape) == (10, 4) and tuple(truth["U"].shape) == (100, 10)
    assert tuple(truth["means"].shape) == (2, 2, 2)
    # noiseless: x = sigmoid(U sigmoid(W z)) exactly, inside (0, 1)
    assert bool(((x > 0) & (x < 1)).all())
    expect = torch.sigmoid(torch.sigmoid(truth["z"] @ truth["W"].T) @ truth["U"].T)
    assert torch.equal(x, expect)
    x2, truth2 = simulate_two_facets(7, hidden=3, width=5, seed=0)
    assert tuple(x2.shape) == (7, 5) and tuple(truth2["W"].shape) == (3, 4)


def test_seeding():
    x1, t1 = simulate_two_facets(300, seed=4)
    x2, t2 = simulate_two_facets(300, seed=4)
    assert torch.equal(x1, x2) and torch.equal(t1["facets"], t2["facets"])
    assert torch.equal(t1["z"], t2["z"])
    x3, t3 = simulate_two_facets(300, seed=5)
    assert not torch.equal(x1, x3) and not torch.equal(t1["z"], t3["z"])
    # the network is drawn first: the same seed gives the same network for any size
    _, t4 = simulate_two_facets(20, seed=4)
    assert torch.equal(t1["W"], t4["W"]) and torch.equal(t1["U"], t4["U"])


def _dependence(a: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    """``P^(a=1, b=1) - P^(a=1) P^(b=1)`` and its SE under independence.

    For a 2x2 table this one cell decides all four (their deviations are equal up to sign);
    under independence its variance is ``p_a (1 - p_a) p_b (1 - p_b) / n`` to first order.
    """
    a, b = a.double(), b.double()
    pa, pb = float(a.mean()), float(b.mean())
    dev = float((a * b).mean()) - pa * pb
    return dev, math.sqrt(pa * (1 - pa) * pb * (1 - pb) / a.numel())


def test_facets_are_independent_with_the_given_priors(data):
    _, truth = data
    y1, y2 = truth["facets"][:, 0], truth["facets"][:, 1]
    for f, w in enumerate(WEIGHTS):
        p = w[1]
        share = float(truth["facets"][:, f].double().mean())
        assert abs(share - p) < Z * math.sqrt(p * (1 - p) / N), (f, share)
    dev, se = _dependence(y1, y2)
    assert abs(dev) < Z * se, (dev, se)
    # the statistic has the power to see a dependence: a facet against itself
    dev_self, se_self = _dependence(y1, y1)
    assert abs(dev_self) > 20 * se_self


def _t(values: torch.Tensor, groups: torch.Tensor) -> float:
    """Welch's t statistic of ``values`` between the two ``groups`` (0 and 1)."""
    a, b = values[groups == 0], values[groups == 1]
    return float((b.mean() - a.mean()) / torch.sqrt(a.var() / a.numel() + b.var() / b.numel()))


def test_each_facet_is_seen_in_its_own_coordinates_only(data):
    _, truth = data
    z, facets, s, sigma = truth["z"], truth["facets"], 2.0, 1.0
    own = {0: (0, 1), 1: (2, 3)}
    for f in range(2):
        g = facets[:, f]
        n1 = int(g.sum())
        n0 = N - n1
        # own coordinates: the means differ by 2 s, so t = 2 s / (sigma sqrt(1/n0 + 1/n1))
        # up to N(0, 1) noise from the means and a relative error ~ sqrt(1/(2N)) from the
        # variance estimates (about 1.4 at t ~ 140)
        t_expect = 2 * s / (sigma * math.sqrt(1 / n0 + 1 / n1))
        se = math.sqrt(1 + t_expect ** 2 / (2 * N))
        for c in own[f]:
            assert abs(_t(z[:, c], g) - t_expect) < Z * se, (f, c)
        # the other facet's coordinates do not depend on this facet: t ~ N(0, 1)
        for c in own[1 - f]:
            assert abs(_t(z[:, c], g)) < Z, (f, c)


def test_observed_data_carry_both_facets(data):
    x, truth = data
    # were x independent of facet f, each column's t would be N(0, 1) and the largest of 100
    # would exceed Z + 1 = 6 with probability below 100 * 2e-9; each facet must beat that
    for f in range(2):
        best = max(abs(_t(x[:, j], truth["facets"][:, f])) for j in range(x.shape[1]))
        assert best > Z + 1, (f, best)


def test_noise_is_added_last_with_the_given_scale():
    x0, t0 = simulate_two_facets(400, seed=8)
    x1, t1 = simulate_two_facets(400, noise_std=0.1, seed=8)
    assert torch.equal(t0["z"], t1["z"])
    noise = x1 - x0
    m = noise.numel()
    # SE of a sample standard deviation of Gaussian noise: tau / sqrt(2 m)
    assert abs(float(noise.std()) - 0.1) < Z * 0.1 / math.sqrt(2 * m)


def test_true_tree_matches_the_data(data):
    _, truth = data
    tree = LatentTree.from_dict(truth["tree"])
    tree.check_width(truth["z"].shape[1])
    with pytest.raises(ValueError, match="must have 4 columns"):
        tree.check_width(5)
    assert tree.names == ("Y1", "Y2") and tree.cardinalities == (2, 2)
    assert tree.parents == (None, 0)
    assert tree.pouches == ((0, 1), (2, 3)) and tree.pouch_parents == (0, 1)
    assert tree == LatentTree.from_edges({"Y1": 2, "Y2": 2}, [("Y1", "Y2")],
                                         [("Y1", [0, 1]), ("Y2", [2, 3])])


def test_true_tree_params_give_the_generating_density(data):
    # independent facets: log p(z) is the sum of two 2-component mixtures, one per pouch
    _, truth = data
    tree = LatentTree.from_dict(truth["tree"])
    params = TreeParams(tree, **truth["tree_params"])
    z, sigma = truth["z"], truth["within_std"]
    expect = torch.zeros(z.shape[0], dtype=torch.float64)
    for f, cols in enumerate(([0, 1], [2, 3])):
        comp = torch.stack([
            torch.distributions.MultivariateNormal(
                truth["means"][f, k], sigma ** 2 * torch.eye(2, dtype=torch.float64)
            ).log_prob(z[:, cols]) + math.log(WEIGHTS[f][k])
            for k in range(2)], 1)
        expect += torch.logsumexp(comp, 1)
    torch.testing.assert_close(tree_log_likelihood(params, z), expect, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"num_points": 0}, ValueError, "num_points must be an integer >= 1"),
    ({"num_points": 10.0}, TypeError, "num_points must be an integer"),
    ({"separation": 0.0}, ValueError, "separation must be > 0"),
    ({"within_std": -1.0}, ValueError, "within_std must be > 0"),
    ({"facet_weights": [0.5, 0.5]}, ValueError, "facet_weights"),
    ({"facet_weights": [[0.5, 0.6], [0.5, 0.5]]}, ValueError, "facet_weights"),
    ({"facet_weights": [[1.2, -0.2], [0.5, 0.5]]}, ValueError, "facet_weights"),
    ({"hidden": 0}, ValueError, "hidden must be an integer >= 1"),
    ({"width": 0}, ValueError, "width must be an integer >= 1"),
    ({"noise_std": -0.1}, ValueError, "noise_std must be >= 0"),
    ({"seed": -1}, ValueError, "seed must be an integer >= 0"),
    ({"seed": "1"}, TypeError, "seed must be an integer"),
])
def test_bad_arguments_raise(kwargs, error, match):
    args = {"num_points": 10, "seed": 0, **kwargs}
    with pytest.raises(error, match=match):
        simulate_two_facets(**args)
