"""Checkpoint and resume: an interrupted run continued from its checkpoint equals the
uninterrupted run bit for bit, checkpoints are checked on load, and files are written whole."""

import pytest
import torch

from pyromodels.core import run_em, run_gibbs, run_nuts, run_svi
from pyromodels.core.checkpoint import write_checkpoint
from pyromodels.mixture import BayesianGaussianMixture


@pytest.fixture
def points():
    gen = torch.Generator().manual_seed(0)
    return torch.cat([torch.randn(15, 2, generator=gen) - 2, torch.randn(15, 2, generator=gen) + 2])


def _interrupt_at(n):
    """A callback that raises KeyboardInterrupt at its ``n``-th call."""
    calls = [0]

    def callback(step, info):
        calls[0] += 1
        if calls[0] == n:
            raise KeyboardInterrupt

    return callback


def _assert_same(a, b):
    assert set(a.samples) == set(b.samples)
    for k in a.samples:
        assert torch.equal(a.samples[k], b.samples[k]), k
    for k in a.sample_stats:
        assert torch.equal(a.sample_stats[k], b.sample_stats[k]), k


def test_gibbs_interrupted_and_resumed_equals_the_uninterrupted_run(points, tmp_path):
    opts = dict(num_samples=8, num_warmup=4, num_chains=2, seed=5, progress=False, scan="random")
    full = run_gibbs(BayesianGaussianMixture(2), points, **opts)
    ck = tmp_path / "gibbs.ckpt"
    # the 11th kept draw is in the second chain: the interrupt comes mid-chain
    with pytest.raises(KeyboardInterrupt):
        run_gibbs(BayesianGaussianMixture(2), points, checkpoint=ck, callbacks=[_interrupt_at(11)],
                  **opts)
    assert ck.is_file() and not list(tmp_path.glob("*.tmp"))
    seen = []
    resumed = run_gibbs(BayesianGaussianMixture(2), points, resume=ck,
                        callbacks=[lambda step, info: seen.append(step)], **opts)
    _assert_same(full, resumed)
    assert len(seen) == 16 - 10  # only the draws after the checkpoint were drawn again


def test_gibbs_run_of_n_resumed_for_n_more_equals_a_run_of_2n(points, tmp_path):
    opts = dict(num_warmup=3, num_chains=1, seed=2, progress=False)
    full = run_gibbs(BayesianGaussianMixture(2), points, num_samples=10, **opts)
    ck = tmp_path / "gibbs.ckpt"
    run_gibbs(BayesianGaussianMixture(2), points, num_samples=5, checkpoint=ck, **opts)
    longer = run_gibbs(BayesianGaussianMixture(2), points, num_samples=10, resume=ck, **opts)
    _assert_same(full, longer)


def _assert_same_params(a, b):
    assert set(a.params) == set(b.params)
    for k in a.params:
        assert torch.equal(a.params[k], b.params[k]), k


def test_svi_interrupted_and_resumed_equals_the_uninterrupted_run(points, tmp_path):
    opts = dict(num_steps=20, num_samples=5, seed=1, progress=False)
    full = run_svi(BayesianGaussianMixture(2), points, **opts)
    ck = tmp_path / "svi.ckpt"
    with pytest.raises(KeyboardInterrupt):
        run_svi(BayesianGaussianMixture(2), points, checkpoint=ck, checkpoint_every=3,
                callbacks=[_interrupt_at(11)], **opts)
    seen = []
    resumed = run_svi(BayesianGaussianMixture(2), points, resume=ck,
                      callbacks=[lambda step, info: seen.append(step)], **opts)
    assert seen[0] == 10  # the interrupted step 10 is the first one run again
    assert torch.equal(full.losses, resumed.losses)
    _assert_same_params(full, resumed)
    _assert_same(full, resumed)


def test_svi_run_of_n_resumed_for_n_more_equals_a_run_of_2n(points, tmp_path):
    opts = dict(num_samples=5, seed=4, progress=False)
    full = run_svi(BayesianGaussianMixture(2), points, num_steps=16, **opts)
    ck = tmp_path / "svi.ckpt"
    run_svi(BayesianGaussianMixture(2), points, num_steps=8, checkpoint=ck, **opts)
    longer = run_svi(BayesianGaussianMixture(2), points, num_steps=16, resume=ck, **opts)
    assert torch.equal(full.losses, longer.losses)
    _assert_same_params(full, longer)
    _assert_same(full, longer)
