"""The crowd families' kernels import nothing above their own package, and every compiled
function is cached on disk."""

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest
from numba.core.dispatcher import Dispatcher

import pyromodels

KERNEL_PACKAGES = ("pyromodels.crowd.ds.kernels", "pyromodels.crowd.hmm.kernels")
ALLOWED = ("pyromodels.checks",)


def _modules(package: str) -> list[str]:
    pkg = importlib.import_module(package)
    return [f"{package}.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)]


def _imports(module: str) -> list[str]:
    """Every module ``module`` imports from pyromodels, at any depth of its source."""
    path = Path(importlib.import_module(module).__file__)
    package = module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                name = f"{base}.{node.module}" if node.module else base
                out += [name] if node.module else [f"{base}.{a.name}" for a in node.names]
            elif node.module.startswith("pyromodels"):
                out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("pyromodels")]
    return out


@pytest.mark.parametrize("package", KERNEL_PACKAGES)
def test_kernels_import_only_checks_and_their_own_package(package):
    for module in _modules(package):
        for name in _imports(module):
            assert name.startswith(package + ".") or name in ALLOWED, (module, name)


@pytest.mark.parametrize("package", KERNEL_PACKAGES)
def test_kernel_modules_import_each_other_without_cycles(package):
    graph = {m: {n for n in _imports(m) if n in _modules(package)} for m in _modules(package)}
    done, active = set(), []

    def visit(m):
        assert m not in active, f"import cycle: {' -> '.join(active + [m])}"
        if m in done:
            return
        active.append(m)
        for n in graph[m]:
            visit(n)
        active.pop()
        done.add(m)

    for m in graph:
        visit(m)


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
