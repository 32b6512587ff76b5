"""Every compiled crowd kernel is cached on disk, and no kernel source is generated at run time
(the import rules of the kernels are checked in tests/test_layering.py)."""

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest
from numba.core.dispatcher import Dispatcher

import pyromodels

KERNEL_PACKAGES = ("pyromodels.crowd.ds.kernels", "pyromodels.crowd.hmm.kernels",
                   "pyromodels.crowd.mrf.kernels")


def _modules(package: str) -> list[str]:
    pkg = importlib.import_module(package)
    return [f"{package}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)]


@pytest.mark.parametrize("package", KERNEL_PACKAGES)
def test_every_compiled_kernel_is_cached_on_disk(package):
    compiled = []
    for module in _modules(package):
        for value in vars(importlib.import_module(module)).values():
            if isinstance(value, Dispatcher) and value.__module__ == module:
                compiled.append(value)
                assert value._cache.__class__.__name__ != "NullCache", value.__name__
    assert compiled


def test_no_kernel_source_is_generated_at_run_time():
    root = Path(pyromodels.__file__).parent / "crowd"
    for package in ("ds", "hmm"):
        for path in (root / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            calls = {n.func.id for n in ast.walk(tree)
                     if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            assert not calls & {"exec", "eval", "compile"}, path
