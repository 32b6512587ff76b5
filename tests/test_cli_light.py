"""The command line answers ``--help``, ``list`` and usage errors without heavy imports.

Each case runs ``python -m pyromodels ARGS`` in a fresh interpreter through a small wrapper
that then prints which modules the run imported: torch, Pyro, the plotting stack and every
model family must be absent. This tests what is imported, not how long it takes.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

WRAPPER = """
import json, runpy, sys
sys.argv = ["pyromodels", *json.loads(sys.argv[1])]
try:
    runpy.run_module("pyromodels", run_name="__main__")
except SystemExit as exc:
    status = exc.code
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""

#: what the light paths may import of pyromodels
LIGHT = {"pyromodels", "pyromodels.__main__", "pyromodels.checks", "pyromodels.lazy", "pyromodels.registry",
         "pyromodels.models_index", "pyromodels.experiments", "pyromodels.experiments.catalogue",
         "pyromodels.cli", "pyromodels.cli.commands", "pyromodels.cli.common",
         "pyromodels.cli.fit", "pyromodels.cli.parallel", "pyromodels.cli.parser"}
HEAVY = ("torch", "pyro", "arviz", "matplotlib", "pandas", "scipy", "sklearn", "numba")


def _run(argv: list[str]) -> tuple[int, list[str]]:
    done = subprocess.run([sys.executable, "-c", WRAPPER, json.dumps(argv)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.strip().splitlines()[-1])
    return record["status"], record["modules"]


@pytest.mark.parametrize(("argv", "status"), [
    (["--help"], 0),
    (["list"], 0),
    (["fit", "--help"], 0),
    (["fit", "dawid-skene", "--help"], 0),
    (["fit", "ddpm", "--help"], 0),
    (["fit", "bayes-scdc", "--help"], 0),
    (["fit", "pairwise-dawid-skene", "--help"], 0),
    (["fit", "bayes-scdc", "--num-samples", "5"], 2),
    (["fit", "pairwise-dawid-skene", "--epochs", "3"], 2),
    (["fit", "pairwise-dawid-skene", "--data", "x.csv"], 2),
    (["fit", "latent-tree", "--help"], 0),
    (["fit", "ltvae", "--help"], 0),
    (["fit", "latent-tree", "--epochs", "3"], 2),
    (["fit", "ltvae", "--num-samples", "5"], 2),
    (["fit", "ltvae", "--cardinality", "1"], 2),
    (["fit", "ltvae", "--search", "bic"], 2),
    (["fit", "ltvae", "--search-every", "2"], 2),
    (["fit", "nope"], 2),
    (["fit", "dawid-skene", "--method", "bogus"], 2),
    (["fit", "ddpm", "--num-steps", "5"], 2),
    (["fit", "gaussian-mixture", "--edges", "e.csv"], 2),
    (["fit", "dawid-skene", "--data", "/no/such/file.csv"], 2),
    (["fit", "dawid-skene", "--num-samples", "0"], 2),
    (["demo", "--only", "nope"], 2),
    (["reproduce", "gaussian-mixture", "--scale", "paper"], 2),
    (["bogus"], 2),
])
def test_help_list_and_usage_errors_import_no_model(argv, status):
    got, modules = _run(argv)
    assert got == status
    heavy = [m for m in modules if m.split(".")[0] in HEAVY]
    assert not heavy[:5], f"{argv} imported {heavy[:5]}"
    ours = sorted(m for m in modules if m.split(".")[0] == "pyromodels" and m not in LIGHT)
    assert not ours, f"{argv} imported {ours}"
