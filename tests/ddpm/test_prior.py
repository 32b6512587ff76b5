"""DPMixturePrior: the paper's presets, validation with pinned messages, and the base measure."""

import math

import pytest
import torch

from pyromodels.conjugate import NormalGamma
from pyromodels.ddpm import PAPER_PRESETS, PAPER_SCHEDULES, DPMixturePrior, PaperSchedule


@pytest.mark.parametrize(
    "dataset, kappa0, alpha0, beta0, alpha, e_dpm, e_flow",
    [
        ("mnist", 0.3, 10000, 250000, 1e-5, 2, 1),
        ("har", 1, 200000, 10000, 1e-4, 12, 3),
        ("reuters10k", 1, 5000, 10000, 1e-5, 12, 3),
        ("stl", 1, 100000, 10000, 1e-5, 10, 3),
    ],
)
def test_presets_are_appendix_b(dataset, kappa0, alpha0, beta0, alpha, e_dpm, e_flow):
    prior = DPMixturePrior.paper_preset(dataset)
    assert (prior.kappa0, prior.alpha0, prior.beta0, prior.alpha) == (kappa0, alpha0, beta0, alpha)
    assert prior.mu0 == 0.0
    assert PAPER_SCHEDULES[dataset] == PaperSchedule(e_dpm, e_flow)
    assert set(PAPER_PRESETS) == set(PAPER_SCHEDULES) == {"mnist", "har", "reuters10k", "stl"}


def test_implied_cluster_scale_of_the_presets():
    # the presets (DDPM paper, App. B) imply a cluster sd sqrt(beta0/alpha0):
    # MNIST 5.0, HAR 0.224, REU 1.414, STL 0.316
    sd = {k: math.sqrt(p.beta0 / p.alpha0) for k, p in PAPER_PRESETS.items()}
    assert sd["mnist"] == pytest.approx(5.0)
    assert sd["har"] == pytest.approx(0.2236, abs=1e-4)
    assert sd["reuters10k"] == pytest.approx(1.4142, abs=1e-4)
    assert sd["stl"] == pytest.approx(0.3162, abs=1e-4)


def test_preset_with_mu0_and_normal_gamma():
    prior = DPMixturePrior.paper_preset("har", mu0=(1.0, 2.0))
    ng = prior.normal_gamma(2)
    assert isinstance(ng, NormalGamma)
    assert ng.loc.tolist() == [1.0, 2.0]
    assert (float(ng.kappa), float(ng.a), float(ng.b)) == (1.0, 200000.0, 10000.0)
    assert prior.with_mu0(3.0).loc(2).tolist() == [3.0, 3.0]


def test_empirical_mu0_is_the_data_mean():
    prior = DPMixturePrior(mu0="empirical")
    data = torch.tensor([[0.0, 1.0], [2.0, 5.0]])
    assert prior.loc(2, data).tolist() == [1.0, 3.0]
    assert prior.normal_gamma(2, data).loc.tolist() == [1.0, 3.0]


def test_prior_is_frozen_and_hashable():
    prior = DPMixturePrior(mu0=[0.0, 1.0])
    assert prior.mu0 == (0.0, 1.0)
    assert hash(prior) == hash(DPMixturePrior(mu0=(0.0, 1.0)))
    with pytest.raises(AttributeError):
        prior.alpha = 2.0


@pytest.mark.parametrize("name", ["kappa0", "alpha0", "beta0", "alpha"])
def test_scalars_must_be_positive(name):
    with pytest.raises(ValueError, match=f"{name} must be > 0, got -1.0"):
        DPMixturePrior(**{name: -1.0})
    with pytest.raises(ValueError, match=f"{name} must be finite"):
        DPMixturePrior(**{name: math.inf})
    with pytest.raises(TypeError, match=f"{name} must be a real number"):
        DPMixturePrior(**{name: "1"})


def test_bad_mu0_and_bad_presets():
    with pytest.raises(ValueError, match="mu0 must be a real number, a 1-d vector or 'empirical'"):
        DPMixturePrior(mu0="mean")
    with pytest.raises(ValueError, match="mu0 must be finite"):
        DPMixturePrior(mu0=math.nan)
    with pytest.raises(TypeError, match="mu0 must be a real number"):
        DPMixturePrior(mu0=None)
    with pytest.raises(ValueError, match="mu0 must be 1-dimensional"):
        DPMixturePrior(mu0=[[0.0]])
    with pytest.raises(ValueError, match="mu0 has length 2 but dim is 3"):
        DPMixturePrior(mu0=(0.0, 1.0)).loc(3)
    with pytest.raises(ValueError, match=r"data must have 3 columns \(dim\)"):
        DPMixturePrior(mu0="empirical").loc(3, torch.zeros(4, 2))
    with pytest.raises(ValueError, match="dataset must be one of"):
        DPMixturePrior.paper_preset("cifar")
    with pytest.raises(ValueError, match="e_dpm must be an integer >= 1"):
        PaperSchedule(0, 1)
