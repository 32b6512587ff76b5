"""Test-wide settings: float64, a fresh Pyro state per test, argument validation on; and the
fixtures of the benchmark tests, which run the repository's (not installed) ``benchmarks``."""

import importlib
import subprocess
import sys
from pathlib import Path

import matplotlib
import pyro
import pytest
import torch

matplotlib.use("Agg")
# Small tensors: one intra-op thread is faster and keeps two xdist workers from contending.
torch.set_num_threads(1)


@pytest.fixture(scope="session", autouse=True)
def _private_weight_cache(tmp_path_factory):
    """Trained weights go to a directory of this test run, never to the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYROMODELS_CACHE", str(tmp_path_factory.mktemp("weight-cache")))
        yield


@pytest.fixture(autouse=True)
def _fresh_pyro_state():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    pyro.clear_param_store()
    pyro.enable_validation(True)
    yield
    torch.set_default_dtype(old)
    pyro.clear_param_store()


REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def run_quick_benchmarks(tmp_path_factory):
    """``run(only, timeout)`` runs ``python -m benchmarks --quick --only <only>`` from the
    repository root in a fresh interpreter and returns ``(completed process, records path)``."""

    def run(only: str, timeout: float):
        out = tmp_path_factory.mktemp("bench") / "records.jsonl"
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks", "--quick", "--only", only, "--out", str(out)],
            cwd=REPO, capture_output=True, text=True, timeout=timeout,
        )
        return proc, out

    return run


@pytest.fixture
def import_benchmarks(monkeypatch):
    """``load(*names)`` imports ``benchmarks.<name>`` for each name, with the repository root
    on ``sys.path`` for this test only, and returns the modules in that order."""
    monkeypatch.syspath_prepend(str(REPO))
    return lambda *names: tuple(importlib.import_module(f"benchmarks.{name}") for name in names)


@pytest.fixture
def fresh_python():
    """``run(code)`` runs ``code`` in a new interpreter (this one's environment, so the same
    ``pyromodels``) and returns its standard output, stripped; a failure shows its stderr."""

    def run(code: str, timeout: float = 300) -> str:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    return run
