"""The examples in the DDPM modules' docstrings run and give what they show."""

import doctest
import importlib

import pytest

MODULES = [
    "pyromodels.ddpm.prior",
    "pyromodels.ddpm.model",
    "pyromodels.ddpm.joint",
    "pyromodels.ddpm.baselines",
    "pyromodels.ddpm.scores",
    "pyromodels.ddpm.synthetic",
    "pyromodels.experiments.ddpm.paper_numbers",
    "pyromodels.bnp.exact",  # the partition-posterior oracle these tests build on
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
