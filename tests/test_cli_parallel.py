"""``pyromodels reproduce --n-jobs N --scheduler ADDRESS``: the joblib configuration of a run."""

import time

import joblib
import pytest

from pyromodels import registry
from pyromodels.cli import main
from pyromodels.cli.parallel import CONNECT_TIMEOUT_S, SCHEDULER_ENV, parallel_runs
from pyromodels.core.parallel import configured_n_jobs, resolve_n_jobs
from pyromodels.registry import ModelEntry
from pyromodels.report import DemoResult

SEEN = {}


def _recording_reproduce(*, scale, progress, seed):
    from joblib.parallel import get_active_backend

    SEEN.update(n_jobs=configured_n_jobs(), backend=type(get_active_backend()[0]).__name__)
    return DemoResult(name="recorder", metrics={"scale": scale})


@pytest.fixture
def recorder(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_DECLARED", {})
    monkeypatch.setattr(registry, "load_builtin", lambda: None)
    registry.register(ModelEntry(name="recorder", title="Recorder", paper="reference",
                                 engines=("em",), factory=dict,
                                 reproduce=_recording_reproduce))
    SEEN.clear()
    yield
    registry.unregister("recorder")


def test_n_jobs_reaches_every_fit_of_the_reproduction(recorder, tmp_path):
    assert main(["reproduce", "recorder", "--n-jobs", "3", "--out", str(tmp_path / "r"),
                 "--no-progress"]) == 0
    assert SEEN["n_jobs"] == 3
    assert configured_n_jobs() is None  # restored after the command


def test_without_n_jobs_the_reproduction_keeps_its_own_choice(recorder, tmp_path, monkeypatch):
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    assert main(["reproduce", "recorder", "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    assert SEEN["n_jobs"] is None


def test_n_jobs_zero_is_a_usage_error(recorder, capsys):
    assert main(["reproduce", "recorder", "--n-jobs", "0"]) == 2
    assert "--n-jobs: expected a positive number of workers" in capsys.readouterr().err


@pytest.mark.parametrize("via_env", [False, True])
def test_an_unreachable_scheduler_is_a_quick_clear_error(recorder, capsys, monkeypatch,
                                                          via_env):
    address = "tcp://127.0.0.1:9"  # the discard port: nothing listens there
    argv = ["reproduce", "recorder", "--no-progress"]
    if via_env:
        monkeypatch.setenv(SCHEDULER_ENV, address)
    else:
        argv += ["--scheduler", address]
    start = time.perf_counter()
    assert main(argv) == 2
    assert time.perf_counter() - start < CONNECT_TIMEOUT_S + 5
    err = capsys.readouterr().err
    assert err.startswith(f"pyromodels: error: --scheduler: cannot connect to the Dask "
                          f"scheduler at {address!r} within {CONNECT_TIMEOUT_S} s")
    assert SEEN == {}  # nothing ran


def test_a_scheduler_sends_the_runs_to_its_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None, scheduler_port=0) as cluster:
        with parallel_runs(None, cluster.scheduler_address):
            from joblib.parallel import get_active_backend

            assert type(get_active_backend()[0]).__name__ == "DaskDistributedBackend"
            assert resolve_n_jobs(None) == 2  # the cluster's two worker threads
        assert joblib.parallel.get_active_backend()[1] is None
