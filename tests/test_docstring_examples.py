"""Every example in the package's docstrings runs and shows what it says, as a user would run
it: a fresh Python session's default dtype (float32), in an empty working directory."""

import doctest
import importlib
import pkgutil

import pytest
import torch

import pyromodels

MODULES = sorted(m.name for m in pkgutil.walk_packages(pyromodels.__path__, "pyromodels.")
                 if not m.name.endswith("__main__"))  # __main__ runs the command line
PACKAGES = {m.name for m in pkgutil.walk_packages(pyromodels.__path__, "pyromodels.") if m.ispkg}

#: where every module must show at least one example (packages' __init__ aside)
EXAMPLES_REQUIRED_IN = ("pyromodels.bnp.", "pyromodels.nn.", "pyromodels.trees.", "pyromodels.ddpm.",
                        "pyromodels.bhmc.", "pyromodels.experiments.bhmc.",
                        "pyromodels.metrics.hierarchy", "pyromodels.experiments.ddpm.paper_numbers")
#: modules there without examples, and why
NO_EXAMPLES = {
    "pyromodels.bnp.dp_kernels": "compiled passes, reached only through bnp.sweep",
    "pyromodels.experiments.bhmc.reproduction": "runs minutes of chains; its smoke run is tested",
}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    torch.set_default_dtype(torch.float32)  # restored by the conftest fixture
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
    required = (name.startswith(EXAMPLES_REQUIRED_IN) and name not in PACKAGES
                and name not in NO_EXAMPLES)
    if required:
        assert result.attempted > 0, f"{name} shows no example"
