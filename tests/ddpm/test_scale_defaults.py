"""With ``prior=None`` the DP mixtures cluster ``c x + b`` as they cluster ``x``.

The default prior is written in the data's units (``pyromodels.ddpm.prior.default_prior``;
DDPM also standardizes its features before the flow), so in exact arithmetic the fit of
``c x + b`` makes the same draws as the fit of ``x`` with the same seed. Rounding changes the
numbers the sampler sees by about 1e-16 relative, so a draw can change only if a uniform
variate lands within about 1e-15 of a category boundary: over the few thousand draws here
that has probability about 1e-12, so the partitions must agree exactly (ARI = 1).
"""

import pytest
import torch
from sklearn.metrics import adjusted_rand_score

from pyromodels.ddpm import DDPM, DPMixture, DPMixturePrior, TruncatedDPMixture
from pyromodels.ddpm.mcem import MCEMSettings
from pyromodels.ddpm.prior import default_prior

TRANSFORMS = {"times 1e-8": lambda x: x * 1e-8, "times 1e8": lambda x: x * 1e8,
              "plus 1e6": lambda x: x + 1e6}


def _blobs() -> torch.Tensor:
    """Three tight 2-d blobs of 20 points, 10 within-blob sds apart."""
    g = torch.Generator().manual_seed(0)
    x = 0.3 * torch.randn(60, 2, dtype=torch.float64, generator=g)
    x[20:40, 0] += 3.0
    x[40:, 1] += 3.0
    return x


def _dpm(x):
    settings = MCEMSettings(rounds=5, init_clusters=6)
    return DPMixture().fit(x, settings=settings, seed=0, progress=False).params["labels"]


def _ddpm(x):
    settings = MCEMSettings(rounds=3, init_clusters=6, batch_size=32)
    model = DDPM(num_layers=2, hidden=(8,))
    return model.fit(x, settings=settings, seed=0, progress=False).params["labels"]


def _truncated(x):
    model = TruncatedDPMixture(truncation=6)
    post = model.fit(x, method="gibbs", num_samples=20, num_warmup=10, num_chains=1, seed=0,
                     progress=False)
    return model.predict(post, x).labels


@pytest.mark.parametrize("fit", [_dpm, _ddpm, _truncated], ids=["DPMixture", "DDPM", "Truncated"])
def test_default_prior_clusters_scaled_and_shifted_data_alike(fit):
    x = _blobs()
    reference = fit(x)
    assert reference.unique().numel() == 3  # the three blobs, not one cluster
    for name, transform in TRANSFORMS.items():
        labels = fit(transform(x))
        assert adjusted_rand_score(reference, labels) == 1.0, name


def test_an_explicit_prior_is_used_as_given():
    """The unit prior is not moved: at x * 1e-8 it sees one cluster (the old default)."""
    x = _blobs() * 1e-8
    labels = DPMixture(DPMixturePrior()).fit(x, settings=MCEMSettings(rounds=5, init_clusters=6),
                                              seed=0, progress=False).params["labels"]
    assert labels.unique().numel() == 1


def test_default_prior_is_the_unit_prior_in_the_data_units():
    x = _blobs() * 1e-3 + 5.0
    prior = default_prior(x)
    loc, centred = x.mean(0), x - x.mean(0)
    scale2 = float(centred.pow(2).sum() / (59 * 2))
    assert prior.mu0 == pytest.approx(tuple(loc.tolist()), rel=1e-15)
    assert prior.beta0 == pytest.approx(scale2, rel=1e-12)
    assert (prior.kappa0, prior.alpha0, prior.alpha) == (1.0, 1.0, 1.0)
    post = DPMixture().fit(x, settings=MCEMSettings(rounds=1, init_clusters=2), seed=0,
                           progress=False)
    assert post.attrs["prior"] == repr(prior)


def test_default_prior_needs_spread():
    with pytest.raises(ValueError, match="data has no spread.*give the prior"):
        DPMixture().fit(torch.ones(5, 2, dtype=torch.float64), progress=False)


@pytest.mark.parametrize("prior", [None, DPMixturePrior()])
def test_float32_points_fit_with_a_float64_flow_under_either_prior(prior):
    """Monte Carlo EM reads the points in the flow's dtype; resolving the default prior on the
    starting features must do the same (it fed float32 points to a float64 flow)."""
    from pyromodels.nn import NICE

    gen = torch.Generator().manual_seed(0)
    y = torch.cat([torch.randn(10, 2, generator=gen) - 3, torch.randn(10, 2, generator=gen) + 3]).float()
    flow = NICE(2, num_layers=2, hidden=(8,), seed=0).to(torch.float64)
    post = DPMixture(prior, flow=flow).fit(y, settings=MCEMSettings(rounds=1, init_clusters=2), seed=0,
                                          progress=False)
    assert post.params["labels"].shape == (20,)
