"""The engines' thread count: chosen for the problem's size, fixed by num_threads or the
environment, and the caller's count restored after a fit, a failure and an interruption."""

import pytest
import torch

from pyromodels.core import GibbsBlock, GibbsSweep, Model, run_em, run_gibbs
from pyromodels.core.threads import (
    ELEMENTS_PER_THREAD,
    THREADS_ENV,
    choose_threads,
    data_size,
    fit_threads,
)
from pyromodels.data import AnnotationTable

CALLER = 2  # the caller's count in these tests (conftest sets 1)


@pytest.fixture
def caller_threads():
    old = torch.get_num_threads()
    torch.set_num_threads(CALLER)
    yield CALLER
    torch.set_num_threads(old)


class Counting(Model):
    """A toy model whose Gibbs block and EM step record torch's thread count as they run."""

    engines = ("gibbs", "em")

    def __init__(self, fail: type[BaseException] | None = None):
        self.seen: list[int] = []
        self.fail = fail

    def _record(self):
        self.seen.append(torch.get_num_threads())
        if self.fail is not None:
            raise self.fail("stop here")

    def init_state(self, data, generator):
        return {"m": torch.zeros(())}

    def gibbs_sweep(self, data):
        def block(state, data, generator):
            self._record()
            return {"m": data.mean()}

        return GibbsSweep([GibbsBlock("m", ("m",), block)])

    def em_init(self, data, generator):
        return {"m": torch.zeros(())}

    def em_step(self, data, params):
        self._record()
        return {"m": data.mean()}

    def em_objective(self, data, params):
        return -float((params["m"] - data.mean()) ** 2)


def _gibbs(model, data, **kw):
    return run_gibbs(model, data, num_samples=3, num_warmup=1, num_chains=1, seed=0,
                     progress=False, lp_every=0, **kw)


def _em(model, data, **kw):
    return run_em(model, data, max_iter=3, seed=0, progress=False,
                  warn_not_converged=False, **kw)


@pytest.mark.parametrize("run", [_gibbs, _em])
def test_small_problem_runs_on_one_thread_and_restores_the_callers(caller_threads, run):
    model = Counting()
    run(model, torch.randn(200, 2))
    assert model.seen and set(model.seen) == {1}
    assert torch.get_num_threads() == caller_threads


@pytest.mark.parametrize("run", [_gibbs, _em])
def test_num_threads_fixes_the_count(caller_threads, run):
    model = Counting()
    run(model, torch.randn(200, 2), num_threads=2)
    assert set(model.seen) == {2}
    assert torch.get_num_threads() == caller_threads


def test_large_problem_keeps_the_callers_count(caller_threads):
    model = Counting()
    _gibbs(model, torch.zeros(CALLER * ELEMENTS_PER_THREAD))
    assert set(model.seen) == {CALLER}


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
@pytest.mark.parametrize("run", [_gibbs, _em])
def test_callers_count_restored_after_a_failure(caller_threads, run, error):
    model = Counting(fail=error)
    with pytest.raises(error, match="stop here"):
        run(model, torch.randn(200, 2))
    assert model.seen == [1]
    assert torch.get_num_threads() == caller_threads


def test_environment_variable_fixes_the_count(caller_threads, monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "2")
    model = Counting()
    _em(model, torch.randn(200, 2))
    assert set(model.seen) == {2}
    assert choose_threads(None, num_threads=1) == 1  # an argument wins over the environment
    monkeypatch.setenv(THREADS_ENV, "many")
    with pytest.raises(ValueError, match=THREADS_ENV):
        choose_threads(None)


def test_rule_and_sizes():
    table = AnnotationTable.from_arrays([0, 0, 1], [0, 1, 0], [1, 0, 1])
    assert data_size(table) == 3 * 3 + 2 + 2 + 2  # three code columns and the id lists
    assert data_size({"x": torch.zeros(3, 4), "y": [torch.zeros(5)], "z": "text"}) == 17
    assert choose_threads(torch.zeros(10), current=8) == 1
    assert choose_threads(torch.zeros(3 * ELEMENTS_PER_THREAD), current=8) == 3
    assert choose_threads(torch.zeros(100 * ELEMENTS_PER_THREAD), current=8) == 8


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_bad_num_threads_is_named(bad):
    with pytest.raises((ValueError, TypeError), match="num_threads"):
        with fit_threads(torch.zeros(2), num_threads=bad):
            pass


@pytest.mark.parametrize("method", ["gibbs", "mcem"])
def test_family_fits_with_a_loop_of_their_own_choose_threads(caller_threads, monkeypatch, method):
    from pyromodels.ddpm import DPMixture, gibbs, mcem

    module = gibbs if method == "gibbs" else mcem
    seen, original = [], module.make_generator

    def recording(*args, **kwargs):  # the fits make their generators inside the loop
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, "make_generator", recording)
    x = torch.randn(30, 2, generator=torch.Generator().manual_seed(0))
    options = ({"num_samples": 2, "num_warmup": 1, "num_chains": 1} if method == "gibbs"
               else {"settings": mcem.MCEMSettings(rounds=2, gibbs_sweeps=1)})
    DPMixture().fit(x, method=method, seed=0, progress=False, **options)
    assert seen and set(seen) == {1}
    first = len(seen)
    DPMixture().fit(x, method=method, seed=0, progress=False, num_threads=2, **options)
    assert len(seen) > first and set(seen[first:]) == {2}
    assert torch.get_num_threads() == caller_threads
