"""The warped synthetic clusters: shapes, proportions, reproducibility, warps, errors."""

import math

import pytest
import torch
from torch.distributions.transforms import AffineTransform, ExpTransform

from pyromodels.ddpm import simulate_warped_clusters


def test_shapes_and_the_identity_warp():
    data = simulate_warped_clusters(50, 3, 4, seed=0)
    assert data.y.shape == data.z.shape == (50, 3)
    assert data.labels.shape == (50,) and data.labels.dtype == torch.long
    assert data.centres.shape == (4, 3) and data.num_clusters == 4
    assert torch.equal(data.y, data.z) and data.y.dtype == torch.float64
    assert data.y.data_ptr() != data.z.data_ptr()


def test_reproducible_for_a_seed_and_independent_of_global_rng():
    torch.manual_seed(1)
    a = simulate_warped_clusters(40, 2, 3, seed=7)
    torch.manual_seed(2)
    b = simulate_warped_clusters(40, 2, 3, seed=7)
    c = simulate_warped_clusters(40, 2, 3, seed=8)
    assert torch.equal(a.y, b.y) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.y, c.y)


def test_fixed_proportions_are_respected():
    # each share is a binomial proportion with sd sqrt(w (1 - w) / N); 4 sd per cluster
    w = torch.tensor([0.5, 0.3, 0.15, 0.05])
    n = 4000
    data = simulate_warped_clusters(n, 2, 4, seed=3, proportions=w)
    share = torch.bincount(data.labels, minlength=4).double() / n
    assert bool((share - w).abs().lt(4 * torch.sqrt(w * (1 - w) / n)).all())


def test_points_scatter_about_their_centres_with_the_given_sd():
    # sum of squared deviations / sigma^2 ~ chi^2 with N d degrees of freedom: mean N d, sd
    # sqrt(2 N d); the mean square is 1 +- 4 sqrt(2 / (N d)).
    n, d, sigma = 3000, 2, 0.7
    data = simulate_warped_clusters(n, d, 3, seed=4, cluster_sd=sigma, centre_sd=10.0)
    ms = float(((data.z - data.centres[data.labels]) ** 2).mean()) / sigma**2
    assert abs(ms - 1.0) < 4 * math.sqrt(2 / (n * d))


def test_crp_labels_use_every_cluster():
    data = simulate_warped_clusters(200, 2, None, seed=5, crp_alpha=2.0)
    k = data.num_clusters
    assert k > 1 and set(data.labels.tolist()) == set(range(k))
    assert int(data.labels[0]) == 0


def test_transform_and_callable_warps():
    flow = ExpTransform().inv  # f(y) = log y, so y = exp(z)
    data = simulate_warped_clusters(30, 2, 2, seed=6, warp=flow)
    assert torch.allclose(data.y, data.z.exp()) and torch.allclose(flow(data.y), data.z)
    same = simulate_warped_clusters(30, 2, 2, seed=6, inverse_warp=torch.exp)
    assert torch.equal(same.y, data.y)
    affine = simulate_warped_clusters(30, 2, 2, seed=6, warp=AffineTransform(1.0, 2.0))
    assert torch.allclose(affine.y, (data.z - 1.0) / 2.0)


def test_bad_input():
    with pytest.raises(ValueError, match="not both"):
        simulate_warped_clusters(5, 2, 2, seed=0, warp=ExpTransform(), inverse_warp=torch.exp)
    with pytest.raises(TypeError, match="warp must be a torch.distributions.Transform"):
        simulate_warped_clusters(5, 2, 2, seed=0, warp=torch.exp)
    with pytest.raises(TypeError, match="inverse_warp must be a callable z -> y"):
        simulate_warped_clusters(5, 2, 2, seed=0, inverse_warp=3)
    with pytest.raises(ValueError, match="leave num_clusters and proportions as None"):
        simulate_warped_clusters(5, 2, 2, seed=0, crp_alpha=1.0)
    with pytest.raises(ValueError, match="num_clusters is needed unless crp_alpha is given"):
        simulate_warped_clusters(5, 2, None, seed=0)
    with pytest.raises(ValueError, match="proportions must have num_clusters=3 entries, got 2"):
        simulate_warped_clusters(5, 2, 3, seed=0, proportions=[0.5, 0.5])
    with pytest.raises(ValueError, match="proportions"):
        simulate_warped_clusters(5, 2, 2, seed=0, proportions=[0.5, 0.6])
    with pytest.raises(ValueError, match="cluster_sd must be > 0"):
        simulate_warped_clusters(5, 2, 2, seed=0, cluster_sd=0.0)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        simulate_warped_clusters(5, 2, 2, seed=-1)
    with pytest.raises(ValueError, match=r"the warp must map z of shape \(5, 2\)"):
        simulate_warped_clusters(5, 2, 2, seed=0, inverse_warp=lambda z: z[:, :1])
    with pytest.raises(ValueError, match="the warp gave non-finite values of y"):
        simulate_warped_clusters(5, 2, 2, seed=0, inverse_warp=lambda z: z / 0.0)
