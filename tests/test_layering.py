"""The import rules of guides/architecture.md hold: the import-linter contracts in pyproject.toml
and, for every ``kernels`` package, imports of nothing of ours but ``pyromodels.checks``."""

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("pyromodels", cache_dir=None)


def test_the_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_every_kernels_package_imports_only_checks_and_itself(graph):
    packages = sorted(m for m in graph.modules if m.rsplit(".", 1)[-1] == "kernels")
    assert {"pyromodels.crowd.ds.kernels", "pyromodels.crowd.hmm.kernels",
            "pyromodels.crowd.mrf.kernels"} <= set(packages)
    for package in packages:
        for module in graph.find_descendants(package) | {package}:
            for imported in graph.find_modules_directly_imported_by(module):
                inside = imported == package or imported.startswith(package + ".")
                assert inside or imported == "pyromodels.checks", f"{module} imports {imported}"
