"""Bad input to the blocked Gibbs sampler gets errors that name the argument."""

import pytest
import torch

from pyromodels.bnp import (
    BlockedState,
    blocked_init,
    blocked_labels,
    blocked_sweep,
    stick_posterior,
    truncated_dp_mixture,
)
from pyromodels.conjugate import NormalGamma


@pytest.fixture
def setup():
    prior = NormalGamma(torch.zeros(2), 1.0, 2.0, 1.0)
    z = torch.randn(6, 2, generator=torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(1)
    return z, prior, gen, blocked_init(z, 2, prior, 1.0, 5, gen)


@pytest.mark.parametrize("alpha", [0.0, -1.0])
def test_alpha_must_be_positive(setup, alpha):
    z, prior, gen, _ = setup
    with pytest.raises(ValueError, match="alpha must be > 0"):
        blocked_init(z, 2, prior, alpha, 5, gen)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        stick_posterior(torch.zeros(3, dtype=torch.long), alpha, 4)


def test_truncation_must_be_a_positive_integer(setup):
    z, prior, gen, _ = setup
    with pytest.raises(ValueError, match="truncation must be an integer >= 1"):
        blocked_init(z, 1, prior, 1.0, 0, gen)
    with pytest.raises(TypeError, match="truncation must be an integer"):
        blocked_init(z, 1, prior, 1.0, 4.0, gen)
    with pytest.raises(ValueError, match="truncation must be an integer >= 1"):
        truncated_dp_mixture(None, prior, 1.0, 0, num_points=3)


def test_z_must_be_finite(setup):
    z, prior, gen, state = setup
    z[2, 1] = float("nan")
    with pytest.raises(ValueError, match="z must be finite"):
        blocked_init(z, 2, prior, 1.0, 5, gen)
    with pytest.raises(ValueError, match="z must be finite"):
        blocked_sweep(z, state, prior, gen)
    with pytest.raises(ValueError, match="z must be 2-dimensional"):
        blocked_sweep(torch.zeros(6), state, prior, gen)


def test_labels_must_be_in_range(setup):
    z, prior, gen, state = setup
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 4\] for 5 classes, found 5"):
        blocked_init(z, torch.tensor([0, 1, 5, 0, 0, 0]), prior, 1.0, 5, gen)
    with pytest.raises(ValueError, match="labels must be non-negative integer labels"):
        blocked_init(z, torch.tensor([0, -1, 0, 0, 0, 0]), prior, 1.0, 5, gen)
    with pytest.raises(ValueError, match=r"labels must have shape \(6,\)"):
        blocked_init(z, torch.tensor([0, 1]), prior, 1.0, 5, gen)
    with pytest.raises(ValueError, match="num_components must be an integer <= 5"):
        blocked_init(z, 6, prior, 1.0, 5, gen)
    bad = BlockedState(state.labels + 5, state.v, state.mu, state.lam, state.alpha)
    with pytest.raises(ValueError, match=r"state.labels must lie in \[0, 4\]"):
        blocked_sweep(z, bad, prior, gen)
    with pytest.raises(TypeError, match="labels must be a 1-dimensional int64 tensor"):
        blocked_labels(torch.tensor([0.0, 1.0]))


def test_state_and_prior_must_fit_the_data(setup):
    z, prior, gen, state = setup
    with pytest.raises(TypeError, match="state must be a BlockedState"):
        blocked_sweep(z, {"labels": state.labels}, prior, gen)
    bad = BlockedState(state.labels, state.v, state.mu[:, :1], state.lam, state.alpha)
    with pytest.raises(ValueError, match=r"state must hold v \(T,\), mu \(T, d\)"):
        blocked_sweep(z, bad, prior, gen)
    bad = BlockedState(state.labels, state.v, state.mu, state.lam, torch.tensor(-1.0))
    with pytest.raises(ValueError, match="state.alpha must be > 0"):
        blocked_sweep(z, bad, prior, gen)
    with pytest.raises(ValueError, match="prior has dimension 3 but z has d = 2"):
        blocked_sweep(z, state, NormalGamma(torch.zeros(3), 1.0, 2.0, 1.0), gen)
    with pytest.raises(TypeError, match="prior must be a NormalGamma"):
        blocked_sweep(z, state, "normal-gamma", gen)
    with pytest.raises(ValueError, match=r"prior must be a single NormalGamma"):
        blocked_sweep(z, state, NormalGamma(torch.zeros(4, 2), 1.0, 2.0, 1.0), gen)


def test_hyperprior_and_chunks(setup):
    z, prior, gen, state = setup
    with pytest.raises(TypeError, match=r"resample_alpha must be None or a pair \(shape, rate\)"):
        blocked_sweep(z, state, prior, gen, resample_alpha=2.0)
    with pytest.raises(ValueError, match="resample_alpha rate must be > 0"):
        blocked_sweep(z, state, prior, gen, resample_alpha=(1.0, 0.0))
    with pytest.raises(ValueError, match="chunk_rows must be an integer >= 1"):
        blocked_sweep(z, state, prior, gen, chunk_rows=0)


def test_program_arguments(setup):
    z, prior, _, _ = setup
    with pytest.raises(ValueError, match="num_points must be given when z is None"):
        truncated_dp_mixture(None, prior, 1.0, 3)
    with pytest.raises(ValueError, match=r"num_points must equal len\(z\) = 6, got 4"):
        truncated_dp_mixture(z, prior, 1.0, 3, num_points=4)


def test_generator_is_required(setup):
    z, prior, _, state = setup
    with pytest.raises(TypeError, match="generator must be a torch.Generator, got NoneType"):
        blocked_sweep(z, state, prior, None)
    with pytest.raises(TypeError, match="generator must be a torch.Generator, got int"):
        blocked_init(z, 2, prior, 1.0, 5, 0)


def test_state_must_live_on_the_data_device(setup):
    z, prior, gen, state = setup
    meta = BlockedState(state.labels.to("meta"), state.v, state.mu, state.lam, state.alpha)
    with pytest.raises(ValueError, match="state.labels must live on z's device"):
        blocked_sweep(z, meta, prior, gen)
