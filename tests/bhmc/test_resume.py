"""BHMC and RBHMC chains in pieces and checkpoints: a chain run in pieces is the chain run at
once, and a fit interrupted after any piece and resumed from its checkpoint ends exactly as
the uninterrupted fit."""

import dataclasses
import math

import pytest
import torch

from pyromodels.bhmc import BHMC, BHMCPrior
from pyromodels.bhmc import resume as resume_module
from pyromodels.bhmc.resume import run_pieces

PRIOR = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=4, loc=0.0,
                  scale=1.0)
RBHMC = {"C": 0.5, "eps0": 1.0}


@pytest.fixture(scope="module")
def x():
    return BHMC(PRIOR).simulate(12, 2, torch.Generator().manual_seed(11)).x


def _assert_same_record(a, b):
    for field in dataclasses.fields(a):
        left, right = getattr(a, field.name), getattr(b, field.name)
        if isinstance(left, torch.Tensor):
            assert torch.equal(left, right), field.name
        elif isinstance(left, float):
            assert left == right, field.name
        else:  # a state: the same tree, labels and components
            assert torch.equal(left.tree.paths, right.tree.paths), field.name
            assert torch.equal(left.c, right.c) and torch.equal(left.theta, right.theta)


@pytest.mark.parametrize("regularised", [False, True])
@pytest.mark.parametrize("every", [1, 3, 4, 7])
def test_a_chain_in_pieces_is_the_chain_run_at_once(x, regularised, every):
    # 4 warm-up sweeps and 5 kept: pieces that end inside, at and across the warm-up's end
    settings = RBHMC if regularised else {}
    whole = run_pieces(x, PRIOR, 4, 5, torch.Generator().manual_seed(2), None, **settings)
    seen = []
    pieces = run_pieces(x, PRIOR, 4, 5, torch.Generator().manual_seed(2), every, **settings,
                        on_piece=lambda done, record: seen.append(done))
    _assert_same_record(pieces, whole)
    assert seen == list(range(every, 9, every)) + [9]
    assert math.isfinite(pieces.best_cdl if not regularised else pieces.best_rcdl)


def test_the_best_state_is_chosen_after_warm_up_only(x):
    # a warm-up sweep better than every kept one must not be chosen, in pieces or not
    for every in (None, 2):
        record = run_pieces(x, PRIOR, 6, 3, torch.Generator().manual_seed(5), every)
        assert record.best_cdl == float(record.cdl[6:].max())


class _Interrupt:
    """``run_piece`` that raises ``KeyboardInterrupt`` instead of running piece ``at``."""

    def __init__(self, at: int):
        self.at, self.calls = at, 0
        self.original = resume_module.run_piece

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return self.original(*args, **kwargs)


@pytest.mark.parametrize("regularised", [False, True])
@pytest.mark.parametrize("stop_at", [2, 4, 5])
def test_an_interrupted_fit_resumes_to_the_uninterrupted_result(x, tmp_path, monkeypatch,
                                                                regularised, stop_at):
    # 2 chains of 3 + 4 sweeps in pieces of 3: pieces 1-3 are chain 0, 4-6 chain 1; stopping
    # at piece 2 is mid-chain, at 4 between chains, at 5 mid-chain in the second chain
    options = {"num_warmup": 3, "num_samples": 4, "num_chains": 2, "seed": 13,
               "progress": False, **(RBHMC if regularised else {})}
    reference = BHMC(PRIOR).fit(x, **options)
    path = tmp_path / "run.pt"
    monkeypatch.setattr(resume_module, "run_piece", _Interrupt(stop_at))
    with pytest.raises(KeyboardInterrupt):
        BHMC(PRIOR).fit(x, checkpoint=path, checkpoint_every=3, **options)
    monkeypatch.undo()
    assert path.is_file()
    counter = _Interrupt(0)  # never interrupts: counts the pieces the resumed run samples
    monkeypatch.setattr(resume_module, "run_piece", counter)
    resumed = BHMC(PRIOR).fit(x, checkpoint=path, checkpoint_every=3, resume=path, **options)
    assert counter.calls == 6 - (stop_at - 1)  # 3 pieces a chain; only the missing ones run
    monkeypatch.undo()
    for name, value in reference.samples.items():
        assert torch.equal(resumed.samples[name], value), name
    for name in ("cdl_trace", "paths"):
        assert torch.equal(resumed.params[name], reference.params[name]), name
    assert resumed.params["best_score"] == reference.params["best_score"]
    assert resumed.params["chain_best_scores"] == reference.params["chain_best_scores"]
    assert torch.equal(resumed.sample_stats["acceptance_rate"],
                       reference.sample_stats["acceptance_rate"])
    assert resumed.attrs["seed"] == 13
    # the finished run's checkpoint resumes to the same result without sampling again
    monkeypatch.setattr(resume_module, "run_piece", _Interrupt(1))
    again = BHMC(PRIOR).fit(x, resume=path, **options)
    assert torch.equal(again.samples["cdl"], reference.samples["cdl"])


def test_a_checkpoint_of_another_run_is_refused(x, tmp_path):
    path = tmp_path / "run.pt"
    options = {"num_warmup": 1, "num_samples": 2, "num_chains": 1, "seed": 3, "progress": False}
    BHMC(PRIOR).fit(x, checkpoint=path, **options)
    with pytest.raises(ValueError, match="resume: the checkpoint's run has C=None"):
        BHMC(PRIOR).fit(x, resume=path, C=1.0, **options)
    with pytest.raises(ValueError, match="resume: the checkpoint was written for other data"):
        BHMC(PRIOR).fit(x + 1.0, resume=path, **options)
    with pytest.raises(ValueError, match="resume: the checkpoint's run has num_samples=2"):
        BHMC(PRIOR).fit(x, resume=path, **{**options, "num_samples": 3})
    with pytest.raises(ValueError, match="written with seed 3, not 4"):
        BHMC(PRIOR).fit(x, resume=path, **{**options, "seed": 4})
    with pytest.raises(ValueError, match="checkpoint_every needs checkpoint"):
        BHMC(PRIOR).fit(x, checkpoint_every=2, **options)
    with pytest.raises(ValueError, match="resume must be an existing checkpoint file"):
        BHMC(PRIOR).fit(x, resume=tmp_path / "missing.pt", **options)
