"""The examples in the nn parts' docstrings run and print what they show."""

import doctest
import importlib

import pytest

MODULES = ["mlp", "coupling", "nice", "autoencoder", "cache", "pretrain"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(f"pyromodels.nn.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
