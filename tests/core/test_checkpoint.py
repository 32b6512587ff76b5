"""Checkpoint and resume: an interrupted run continued from its checkpoint equals the
uninterrupted run bit for bit, checkpoints are checked on load, and files are written whole."""

import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.core import Model, nuts, run_em, run_gibbs, run_nuts, run_svi
from pyromodels.core.checkpoint import load_checkpoint, write_checkpoint
from pyromodels.mixture import GaussianMixtureModel


class NormalScale(Model):
    """Normal observations with unknown location and (positive, so transformed) scale."""

    def model(self, data):
        loc = pyro.sample("loc", dist.Normal(0.0, 10.0))
        scale = pyro.sample("scale", dist.LogNormal(0.0, 1.0))
        with pyro.plate("points", len(data)):
            pyro.sample("y", dist.Normal(loc, scale), obs=data)


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


def _interrupt_nuts_at(monkeypatch, n):
    """Make the ``n``-th NUTS transition raise KeyboardInterrupt."""
    calls, original = [0], nuts._EnergyRecordingNUTS.sample

    def sample(self, params):
        calls[0] += 1
        if calls[0] == n:
            raise KeyboardInterrupt
        return original(self, params)

    monkeypatch.setattr(nuts._EnergyRecordingNUTS, "sample", sample)


def _assert_same(a, b):
    assert set(a.samples) == set(b.samples)
    for k in a.samples:
        assert torch.equal(a.samples[k], b.samples[k]), k
    for k in a.sample_stats:
        assert torch.equal(a.sample_stats[k], b.sample_stats[k]), k


def test_gibbs_interrupted_and_resumed_equals_the_uninterrupted_run(points, tmp_path):
    opts = dict(num_samples=8, num_warmup=4, num_chains=2, seed=5, progress=False, scan="random")
    full = run_gibbs(GaussianMixtureModel(2), points, **opts)
    ck = tmp_path / "gibbs.ckpt"
    # the 11th kept draw is in the second chain: the interrupt comes mid-chain
    with pytest.raises(KeyboardInterrupt):
        run_gibbs(GaussianMixtureModel(2), points, checkpoint=ck, callbacks=[_interrupt_at(11)],
                  **opts)
    assert ck.is_file() and not list(tmp_path.glob("*.tmp"))
    seen = []
    resumed = run_gibbs(GaussianMixtureModel(2), points, resume=ck,
                        callbacks=[lambda step, info: seen.append(step)], **opts)
    _assert_same(full, resumed)
    assert len(seen) == 16 - 10  # only the draws after the checkpoint were drawn again


def test_gibbs_run_of_n_resumed_for_n_more_equals_a_run_of_2n(points, tmp_path):
    opts = dict(num_warmup=3, num_chains=1, seed=2, progress=False)
    full = run_gibbs(GaussianMixtureModel(2), points, num_samples=10, **opts)
    ck = tmp_path / "gibbs.ckpt"
    run_gibbs(GaussianMixtureModel(2), points, num_samples=5, checkpoint=ck, **opts)
    longer = run_gibbs(GaussianMixtureModel(2), points, num_samples=10, resume=ck, **opts)
    _assert_same(full, longer)


def _assert_same_params(a, b):
    assert set(a.params) == set(b.params)
    for k in a.params:
        assert torch.equal(a.params[k], b.params[k]), k


def test_svi_interrupted_and_resumed_equals_the_uninterrupted_run(points, tmp_path):
    opts = dict(num_steps=20, num_samples=5, seed=1, progress=False)
    full = run_svi(GaussianMixtureModel(2), points, **opts)
    ck = tmp_path / "svi.ckpt"
    with pytest.raises(KeyboardInterrupt):
        run_svi(GaussianMixtureModel(2), points, checkpoint=ck, checkpoint_every=3,
                callbacks=[_interrupt_at(11)], **opts)
    seen = []
    resumed = run_svi(GaussianMixtureModel(2), points, resume=ck,
                      callbacks=[lambda step, info: seen.append(step)], **opts)
    assert seen[0] == 10  # the interrupted step 10 is the first one run again
    assert torch.equal(full.losses, resumed.losses)
    _assert_same_params(full, resumed)
    _assert_same(full, resumed)


def test_svi_run_of_n_resumed_for_n_more_equals_a_run_of_2n(points, tmp_path):
    opts = dict(num_samples=5, seed=4, progress=False)
    full = run_svi(GaussianMixtureModel(2), points, num_steps=16, **opts)
    ck = tmp_path / "svi.ckpt"
    run_svi(GaussianMixtureModel(2), points, num_steps=8, checkpoint=ck, **opts)
    longer = run_svi(GaussianMixtureModel(2), points, num_steps=16, resume=ck, **opts)
    assert torch.equal(full.losses, longer.losses)
    _assert_same_params(full, longer)
    _assert_same(full, longer)


@pytest.mark.parametrize("stop_at", [3, 9], ids=["in-warm-up", "after-warm-up"])
def test_nuts_interrupted_and_resumed_equals_the_uninterrupted_run(points, tmp_path, stop_at,
                                                                  monkeypatch):
    opts = dict(num_samples=4, num_warmup=6, num_chains=2, seed=3, progress=False, lp=False)
    model = NormalScale()
    points = points[:, 0]
    full = run_nuts(model, points, **opts)
    ck = tmp_path / "nuts.ckpt"
    # each chain makes 10 transitions: interrupt the second chain's transition stop_at + 1
    _interrupt_nuts_at(monkeypatch, 10 + stop_at + 1)
    with pytest.raises(KeyboardInterrupt):
        run_nuts(model, points, checkpoint=ck, **opts)
    monkeypatch.undo()
    state = load_checkpoint(ck)["state"]
    assert (state["chain"], state["done"]) == (1, stop_at)
    resumed = run_nuts(model, points, resume=ck, **opts)
    _assert_same(full, resumed)


def test_nuts_run_of_n_resumed_for_n_more_equals_a_run_of_2n(points, tmp_path):
    opts = dict(num_warmup=5, num_chains=1, seed=8, progress=False)
    full = run_nuts(NormalScale(), points[:, 0], num_samples=6, **opts)
    ck = tmp_path / "nuts.ckpt"
    run_nuts(NormalScale(), points[:, 0], num_samples=3, checkpoint=ck, **opts)
    longer = run_nuts(NormalScale(), points[:, 0], num_samples=6, resume=ck, **opts)
    _assert_same(full, longer)


def test_em_interrupted_between_starts_resumes_at_the_start_boundary(points, tmp_path):
    opts = dict(n_init=3, max_iter=5, seed=6, progress=False, warn_not_converged=False)
    full = run_em(GaussianMixtureModel(2), points, **opts)
    ck = tmp_path / "em.ckpt"
    starts = []

    def interrupt_in_third_start(step, info):
        starts.append(info["restart"])
        if info["restart"] == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_em(GaussianMixtureModel(2), points, checkpoint=ck,
               callbacks=[interrupt_in_third_start], **opts)
    starts.clear()
    resumed = run_em(GaussianMixtureModel(2), points, resume=ck,
                     callbacks=[lambda step, info: starts.append(info["restart"])], **opts)
    assert set(starts) == {2}  # the finished starts are not run again
    _assert_same_params(full, resumed)
    assert torch.equal(full.losses, resumed.losses)
    assert full.diagnostics["restart_objectives"] == resumed.diagnostics["restart_objectives"]


def test_em_run_of_n_starts_resumed_for_n_more_equals_a_run_of_2n(points, tmp_path):
    opts = dict(max_iter=4, seed=9, progress=False, warn_not_converged=False)
    full = run_em(GaussianMixtureModel(2), points, n_init=4, **opts)
    ck = tmp_path / "em.ckpt"
    run_em(GaussianMixtureModel(2), points, n_init=2, checkpoint=ck, **opts)
    longer = run_em(GaussianMixtureModel(2), points, n_init=4, resume=ck, **opts)
    _assert_same_params(full, longer)
    assert full.diagnostics["restart_objectives"] == longer.diagnostics["restart_objectives"]


@pytest.fixture
def gibbs_checkpoint(points, tmp_path):
    ck = tmp_path / "gibbs.ckpt"
    run_gibbs(GaussianMixtureModel(2), points, num_samples=3, num_warmup=1, num_chains=1,
              seed=1, progress=False, checkpoint=ck)
    return ck


@pytest.mark.parametrize(("change", "message"), [
    ({"seed": 2}, "written with seed 1, not 2"),
    ({"num_warmup": 2}, "num_warmup=1, this run num_warmup=2"),
    ({"num_samples": 2}, "num_samples=3 or more, this run num_samples=2"),
    ({"thin": 2}, "thin=1, this run thin=2"),
])
def test_resume_with_other_settings_is_a_value_error_naming_resume(points, gibbs_checkpoint,
                                                                   change, message):
    opts = dict(num_samples=3, num_warmup=1, num_chains=1, seed=1, progress=False)
    with pytest.raises(ValueError, match=f"^resume: .*{message}"):
        run_gibbs(GaussianMixtureModel(2), points, resume=gibbs_checkpoint, **{**opts, **change})


def test_resume_of_another_engine_model_or_data_is_a_value_error(points, gibbs_checkpoint,
                                                                  tmp_path):
    with pytest.raises(ValueError, match="^resume: the checkpoint is of engine 'gibbs', not 'svi'"):
        run_svi(GaussianMixtureModel(2), points, num_steps=2, seed=1, resume=gibbs_checkpoint)
    svi_checkpoint = tmp_path / "svi.ckpt"
    run_svi(NormalScale(), points[:, 0], num_steps=2, num_samples=2, seed=1, progress=False,
            checkpoint=svi_checkpoint)
    with pytest.raises(ValueError, match="^resume: the checkpoint is of model .*NormalScale, not "
                                         ".*GaussianMixtureModel"):
        run_svi(GaussianMixtureModel(2), points, num_steps=2, num_samples=2, seed=1,
                progress=False, resume=str(svi_checkpoint))
    opts = dict(num_samples=3, num_warmup=1, num_chains=1, seed=1, progress=False)
    with pytest.raises(ValueError, match="^resume: the checkpoint was written for other data"):
        run_gibbs(GaussianMixtureModel(2), points[:20], resume=gibbs_checkpoint, **opts)


def test_resume_of_a_missing_or_foreign_file_is_a_value_error(points, tmp_path):
    with pytest.raises(ValueError, match="^resume must be an existing checkpoint file"):
        run_gibbs(GaussianMixtureModel(2), points, resume=tmp_path / "none.ckpt")
    other = tmp_path / "other.ckpt"
    torch.save({"format": "pyromodels.Checkpoint/1"}, other)
    with pytest.raises(ValueError, match="^resume: .* is not a pyromodels checkpoint .*\\(it is a "
                                         "torch file: checkpoints of the formats before"):
        run_gibbs(GaussianMixtureModel(2), points, resume=other)
    other.write_text("not a pickle")
    with pytest.raises(ValueError, match="^resume: .* is not a pyromodels checkpoint"):
        run_gibbs(GaussianMixtureModel(2), points, resume=other)


def test_checkpoint_arguments_are_checked(points):
    with pytest.raises(ValueError, match="checkpoint_every needs checkpoint"):
        run_svi(NormalScale(), points[:, 0], num_steps=2, checkpoint_every=1)
    with pytest.raises(TypeError, match="checkpoint must be a file path"):
        run_svi(NormalScale(), points[:, 0], num_steps=2, checkpoint=3)
    with pytest.raises(TypeError, match="checkpoint_every must be an integer"):
        run_svi(NormalScale(), points[:, 0], num_steps=2, checkpoint="x.ckpt", checkpoint_every=1.0)


def test_a_failed_write_leaves_the_previous_checkpoint_whole(tmp_path):
    ck = tmp_path / "run.ckpt"
    write_checkpoint(ck, {"value": torch.arange(3)})
    with pytest.raises(Exception):  # noqa: B017 - a lambda cannot be pickled, whatever the error
        write_checkpoint(ck, {"value": lambda: None})
    assert torch.equal(torch.load(ck)["value"], torch.arange(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.ckpt"]
