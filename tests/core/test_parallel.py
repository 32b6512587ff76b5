"""Independent runs through joblib: results do not depend on n_jobs or the backend."""

import io
import time
import warnings

import joblib
import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.core import Model, run_em, run_gibbs, run_nuts
from pyromodels.core.parallel import _run_one, check_n_jobs, resolve_n_jobs, run_jobs
from pyromodels.mixture import GaussianMixtureModel


def _points(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.cat([torch.randn(15, 2, generator=g, dtype=torch.float64) - 3,
                      torch.randn(10, 2, generator=g, dtype=torch.float64) + 3])


@pytest.fixture(scope="module")
def dask_client():
    # two worker processes of one thread: runs that trace Pyro programs need processes
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


def _gibbs(**kw):
    return run_gibbs(GaussianMixtureModel(2), _points(), num_samples=4, num_warmup=3,
                     num_chains=3, seed=11, progress=False, diagnostic_warnings=False, **kw)


def _same_samples(a, b):
    assert a.samples.keys() == b.samples.keys()
    for k in a.samples:
        assert torch.equal(a.samples[k], b.samples[k]), k
    assert torch.equal(a.sample_stats["lp"], b.sample_stats["lp"])


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_mixture_gibbs_chains_are_bit_identical_serial_loky_and_dask(dask_client):
    serial = _gibbs()
    _same_samples(serial, _gibbs(n_jobs=2))
    with joblib.parallel_config(backend="dask"):
        assert resolve_n_jobs(None) == 2  # the runs go to the cluster's two workers
        _same_samples(serial, _gibbs())
    # the chains differ from each other: the comparison is not of three copies of one chain
    assert not torch.equal(serial.samples["locs"][0], serial.samples["locs"][1])


def _em(**kw):
    x = torch.randn(40, 2, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    return run_em(GaussianMixtureModel(3), x, n_init=3, max_iter=3, seed=5,
                  progress=False, warn_not_converged=False, **kw)


def test_em_n_init_is_bit_identical_serial_loky_and_dask(dask_client):
    serial = _em()
    objectives = serial.diagnostics["restart_objectives"]
    assert len(set(objectives)) == 3  # three different starts
    for other in (_em(n_jobs=2), _dask_em()):
        assert other.diagnostics["restart_objectives"] == objectives
        assert torch.equal(other.losses, serial.losses)
        for k in serial.samples:
            assert torch.equal(other.samples[k], serial.samples[k]), k


def _dask_em():
    with joblib.parallel_config(backend="dask"):
        return _em()


@pytest.mark.parametrize("call", [lambda: check_n_jobs(0), lambda: _gibbs(n_jobs=0),
                                  lambda: _em(n_jobs=0),
                                  lambda: run_jobs(abs, [1], n_jobs=0, progress=False)])
def test_n_jobs_zero_is_a_value_error_naming_n_jobs(call):
    with pytest.raises(ValueError, match="^n_jobs must be None, a positive number .* got 0"):
        call()


def test_n_jobs_of_another_type_is_a_type_error():
    with pytest.raises(TypeError, match="^n_jobs must be None or an integer, got float"):
        check_n_jobs(2.0)


def test_none_takes_the_enclosing_parallel_config():
    assert resolve_n_jobs(None) == 1
    with joblib.parallel_config(n_jobs=3):
        assert resolve_n_jobs(None) == 3


def _threads(task, shared):
    return torch.get_num_threads(), torch.get_default_dtype()


def test_a_run_in_a_worker_uses_one_torch_thread_and_the_callers_dtype():
    before, dtype = torch.get_num_threads(), torch.get_default_dtype()
    torch.set_num_threads(2)
    try:  # what a worker runs around each run, called here
        assert _run_one(_threads, 7, None, None, False, torch.float32) == (7, (1, torch.float32))
        assert torch.get_num_threads() == 2 and torch.get_default_dtype() == dtype
    finally:
        torch.set_num_threads(before)


def _shifted(task, shared):
    return (shared["x"] + task).sum().item(), shared["x"].dtype, type(shared["x"]).__name__


def test_shared_tensors_reach_loky_workers_as_the_same_tensors():
    x = torch.arange(200_000, dtype=torch.float64) / 7  # 1.6 MB: memory-mapped once
    expected = [_shifted(t, {"x": x}) for t in (1, 2)]
    assert run_jobs(_shifted, [1, 2], shared={"x": x}, n_jobs=2, progress=False) == expected


def _echo(task, shared):
    return task


def test_one_line_per_finished_run_when_stderr_is_not_a_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    out = run_jobs(_echo, ["a", "b", "c"], n_jobs=2, desc="chains",
                   labels=["chain 0", "chain 1", "chain 2"])
    assert out == ["a", "b", "c"]
    lines = err.getvalue().splitlines()
    assert sorted(lines) == sorted(f"chains: chain {i} finished ({k}/3)"
                                   for i, k in zip(range(3), _orders(lines)))
    assert [line.split("(")[1] for line in lines] == ["1/3)", "2/3)", "3/3)"]


def _orders(lines):
    """The finishing count each chain's line carries (the order of finishing may vary)."""
    by_chain = {int(line.split()[2]): int(line.split("(")[1].split("/")[0]) for line in lines}
    return [by_chain[i] for i in range(3)]


def test_no_lines_without_progress_or_with_one_worker(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    run_jobs(_echo, [1, 2], n_jobs=2, progress=False)
    run_jobs(_echo, [1, 2], n_jobs=1)
    assert err.getvalue() == ""


def test_the_threading_backend_is_refused():
    with joblib.parallel_config(backend="threading"), \
            pytest.raises(ValueError, match="^joblib's 'threading' backend runs the runs as "
                                            "threads of one process"):
        run_jobs(_echo, [1, 2], n_jobs=2, progress=False)


def test_parallel_gibbs_checkpoint_resumes_to_the_serial_result(tmp_path):
    ck = tmp_path / "gibbs.ckpt"
    parallel = _gibbs(n_jobs=2, checkpoint=ck)
    _same_samples(_gibbs(), parallel)
    resumed = run_gibbs(GaussianMixtureModel(2), _points(), resume=ck, num_samples=4,
                        num_warmup=3, num_chains=3, progress=False, diagnostic_warnings=False)
    _same_samples(parallel, resumed)


class _NormalLoc(Model):
    """Normal observations with an unknown location."""

    def model(self, data):
        loc = pyro.sample("loc", dist.Normal(0.0, 10.0))
        with pyro.plate("points", len(data)):
            pyro.sample("y", dist.Normal(loc, 1.0), obs=data)


def test_nuts_chains_in_loky_workers_equal_the_serial_chains(tmp_path):
    opts = dict(num_samples=3, num_warmup=3, num_chains=2, seed=2, progress=False, lp=False,
                diagnostic_warnings=False)
    y = _points()[:, 0]
    serial = run_nuts(_NormalLoc(), y, **opts)
    ck = tmp_path / "nuts.ckpt"
    parallel = run_nuts(_NormalLoc(), y, n_jobs=2, checkpoint=ck, **opts)
    assert torch.equal(serial.samples["loc"], parallel.samples["loc"])
    assert not torch.equal(serial.samples["loc"][0], serial.samples["loc"][1])
    resumed = run_nuts(_NormalLoc(), y, resume=ck, **opts)
    assert torch.equal(serial.samples["loc"], resumed.samples["loc"])


# last: it stops the loky workers, which the other tests reuse
def _sleep(seconds, shared):
    time.sleep(seconds)
    return seconds


def test_an_interrupt_stops_the_workers_after_the_finished_runs_were_handed_over():
    seen, interrupted = [], []

    def on_result(index, result):
        seen.append((index, result))
        interrupted.append(time.perf_counter())
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), warnings.catch_warnings():
        warnings.simplefilter("error")  # joblib's note on cancelled tasks is not shown
        run_jobs(_sleep, [0, 60, 60, 60], n_jobs=2, progress=False, on_result=on_result)
    # the two runs still sleeping were stopped, not awaited
    assert time.perf_counter() - interrupted[0] < 10
    assert seen == [(0, 0)]


def test_one_process_runs_need_no_joblib(fresh_python):
    """Before joblib is imported no configuration of it can be active: a fit with its chains in
    this process does not pay for importing it."""
    code = ("import sys; from pyromodels.core.parallel import resolve_n_jobs, run_jobs; "
            "assert resolve_n_jobs(None) == resolve_n_jobs(1) == 1; "
            "assert run_jobs(lambda t, s: t * 2, [1, 2], progress=False) == [2, 4]; "
            "print('joblib' in sys.modules)")
    assert fresh_python(code) == "False"
