"""The examples in the RBHMC experiment modules' docstrings run and give what they show."""

import doctest
import importlib

import pytest

MODULES = ["pyromodels.experiments.bhmc.data", "pyromodels.experiments.bhmc.paper_numbers",
           "pyromodels.experiments.bhmc.settings", "pyromodels.experiments.bhmc.protocol"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
