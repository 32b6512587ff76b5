"""The mixture is scale-equivariant: fitting ``c x`` gives ``c locs`` and ``precisions / c^2``."""

import pytest
import torch

from pyromodels.core import make_generator
from pyromodels.mixture import GaussianMixtureModel, resolve_prior
from pyromodels.mixture.init import kmeans_init
from pyromodels.mixture.scale import data_scale

SCALES = [1e-30, 1e-10, 1e10, 1e30]
# the same seed gives the same arithmetic on numbers scaled by c; each operation rounds
# independently, so results agree to within about 100 ulp here (measured: 50 to 95 ulp over
# EM's first steps in float64 and float32); 1e3 ulp leaves a tenfold margin
RTOL = 1e3 * torch.finfo(torch.float64).eps


def _em_path(x, steps=4, seed=0):
    """EM's start and its first ``steps`` iterations (a fixed count, so that no stopping rule
    enters the comparison)."""
    model = GaussianMixtureModel(2)
    data = model.prepare(x)
    params = model.em_init(data, make_generator(seed))
    path = [params]
    for _ in range(steps):
        params = model.em_step(data, params)
        path.append(params)
    return path


def _assert_scaled(ours, ref, c, rtol):
    assert torch.allclose(ours["weights"], ref["weights"], rtol=rtol, atol=0)
    assert torch.allclose(ours["locs"] / c, ref["locs"], rtol=rtol, atol=rtol * ref["locs"].abs().max())
    assert torch.allclose(ours["precisions"] * c**2, ref["precisions"], rtol=rtol, atol=0)


@pytest.mark.parametrize("c", SCALES)
def test_em_start_and_iterations_are_scale_equivariant(blobs, c):
    x = blobs[0].double()
    for ours, ref in zip(_em_path(c * x), _em_path(x), strict=True):
        _assert_scaled(ours, ref, c, RTOL)


@pytest.mark.parametrize("c", SCALES)
def test_gibbs_draws_are_scale_equivariant(blobs, c):
    x = blobs[0].double()

    def draws(data):
        kw = {"num_samples": 8, "num_warmup": 8, "num_chains": 1, "seed": 0, "progress": False}
        return GaussianMixtureModel(2).fit(data, method="gibbs", **kw).samples

    ours, ref = draws(c * x), draws(x)
    assert torch.equal(ours["z"], ref["z"])
    _assert_scaled(ours, ref, c, RTOL)


@pytest.mark.parametrize("c", SCALES)
def test_default_prior_scales_with_the_data(blobs, c):
    x = blobs[0].double()
    ours, ref = resolve_prior(c * x), resolve_prior(x)
    assert torch.allclose(ours.mean_prior / c, ref.mean_prior, rtol=RTOL, atol=0)
    assert torch.allclose(ours.covariance_prior / c**2, ref.covariance_prior, rtol=RTOL, atol=0)


@pytest.mark.parametrize("c, shift", [(1e-200, 0.0), (1e200, 0.0), (1.0, 1e12), (1e-30, -1e-20)])
def test_kmeans_start_does_not_depend_on_scale_or_location(blobs, c, shift):
    x = blobs[0].double()
    ref = kmeans_init(x, 3, make_generator(0))
    assert torch.equal(kmeans_init(c * x + shift, 3, make_generator(0)), ref)


def test_em_is_translation_equivariant_far_from_the_origin(blobs):
    # the posterior update works about the prior mean: with raw second moments, an offset
    # 1e8 times the spread left the update's inverse scale not positive definite
    x, shift = blobs[0].double(), 1e8
    rounding = torch.finfo(torch.float64).eps * shift  # of each shifted point
    for a, b in zip(_em_path(x + shift), _em_path(x), strict=True):
        # errors of the order of the input's rounding, relative to the spread for precisions
        assert torch.allclose(a["locs"] - shift, b["locs"], rtol=0, atol=10 * rounding)
        assert torch.allclose(a["precisions"], b["precisions"], rtol=10 * rounding / data_scale(x), atol=0)


def test_float32_is_scale_equivariant_to_its_own_precision(blobs):
    x = blobs[0].float()
    rtol = 1e3 * torch.finfo(torch.float32).eps
    for c in (1e-10, 1e10):
        for ours, ref in zip(_em_path(c * x), _em_path(x), strict=True):
            _assert_scaled(ours, ref, c, rtol)


@pytest.mark.parametrize(
    "c, dtype, match",
    [
        (1e200, torch.float64, r"data has scale 3.\d+e\+200 \(root mean variance\), above the largest "
         r"scale the mixture fits in float64 for 60 points in 2 dimensions"),
        (1e-200, torch.float64, r"data has scale 3.\d+e-200 \(root mean variance\), below the smallest "
         r"scale the mixture fits in float64"),
        (1e20, torch.float32, "above the largest scale the mixture fits in float32"),
        (1e-20, torch.float32, "below the smallest scale the mixture fits in float32"),
    ],
)
def test_data_beyond_the_dtypes_range_is_refused_naming_its_scale(blobs, c, dtype, match):
    with pytest.raises(ValueError, match=match):
        GaussianMixtureModel(2).fit(c * blobs[0].to(dtype), method="em", progress=False)


def test_identical_points_need_a_covariance_prior():
    x = torch.full((10, 2), 5.0, dtype=torch.float64)
    match = r"data has no spread: all its 10 points are identical, .* give covariance_prior"
    with pytest.raises(ValueError, match=match):
        GaussianMixtureModel(2).fit(x, method="em", progress=False)
    # with a prior scale given, the degenerate answer is well defined: both means at the point
    post = GaussianMixtureModel(2, covariance_prior=torch.eye(2)).fit(x, method="em", progress=False)
    assert torch.equal(post.samples["locs"], torch.full((1, 1, 2, 2), 5.0, dtype=torch.float64))


def test_tiny_asymmetric_covariance_prior_is_refused():
    # an absolute tolerance let any matrix below 1e-10 pass as symmetric
    psi = 1e-30 * torch.tensor([[1.0, 0.5], [0.0, 1.0]], dtype=torch.float64)
    x = 1e-15 * torch.randn(10, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="covariance_prior must be symmetric"):
        GaussianMixtureModel(2, covariance_prior=psi).prepare(x)
    # a symmetric one at that scale is fine
    GaussianMixtureModel(2, covariance_prior=0.5 * (psi + psi.T)).prepare(x)
