"""Packages that load their names on first use: every listed name resolves to the object its
module defines, unknown names are an AttributeError, and the lists stay complete."""

import importlib

import pytest

LAZY = ("pyromodels", "pyromodels.core", "pyromodels.crowd", "pyromodels.crowd.ds",
        "pyromodels.crowd.estimators", "pyromodels.data", "pyromodels.ltvae",
        "pyromodels.scdc", "pyromodels.trees")


@pytest.mark.parametrize("package", LAZY)
def test_every_exported_name_resolves_and_is_listed_by_dir(package):
    mod = importlib.import_module(package)
    for name in mod.__all__:
        if name == "__version__":
            continue
        value = getattr(mod, name)
        assert value is not None
        assert getattr(mod, name) is value  # kept after the first use
        assert name in dir(mod)


@pytest.mark.parametrize("package", LAZY)
def test_unknown_names_are_an_attribute_error(package):
    mod = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        mod.no_such_name  # noqa: B018


def test_star_import_gives_every_public_name():
    names = {}
    exec("from pyromodels.crowd import *", names)  # noqa: S102
    import pyromodels.crowd as crowd

    assert set(crowd.__all__) <= set(names)


def test_subpackages_are_attributes_without_an_import():
    import pyromodels.crowd
    import pyromodels.data

    assert pyromodels.crowd.hmm.SequentialDawidSkene.__name__ == "SequentialDawidSkene"
    assert pyromodels.crowd.mrf.__name__ == "pyromodels.crowd.mrf"
    assert pyromodels.data.loaders.__name__ == "pyromodels.data.loaders"


def test_the_data_package_lists_every_loader():
    import pyromodels.data
    from pyromodels.data import loaders

    assert tuple(loaders.__all__) == pyromodels.data.LOADERS


def test_the_positive_definite_transform_is_registered_by_every_model():
    from torch.distributions import biject_to, constraints

    from pyromodels.core.model import Model
    from pyromodels.core.transforms import VechToPositiveDefinite

    assert Model is not None
    assert isinstance(biject_to(constraints.positive_definite), VechToPositiveDefinite)
