"""The examples in the tree and nested-CRP modules' docstrings run and give what they show."""

import doctest
import importlib

import pytest

MODULES = ["pyromodels.bnp.tree", "pyromodels.bnp.tree_collapse", "pyromodels.bnp.tree_paths",
           "pyromodels.bnp.ncrp", "pyromodels.bnp.tree_plot"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
