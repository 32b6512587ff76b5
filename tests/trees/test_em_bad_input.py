"""Clear errors from the EM fitting of latent trees on bad input."""

import pytest
import torch

from pyromodels.core import run_em, run_stepwise_em
from pyromodels.trees import LatentTree, LatentTreeModel
from pyromodels.trees.em import params_from_dict

TREE = LatentTree.single(2, 3)


def _z(n=10, width=3):
    return torch.randn(n, width, generator=torch.Generator().manual_seed(0),
                       dtype=torch.float64)


@pytest.mark.parametrize("run", [
    lambda z: run_em(LatentTreeModel(TREE), z, progress=False),
    lambda z: run_stepwise_em(LatentTreeModel(TREE), z, progress=False),
])
def test_points_are_checked_at_the_boundary(run):
    with pytest.raises(ValueError, match="3 columns"):
        run(_z(width=4))
    bad = _z()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        run(bad)
    bad[3, 1] = float("inf")
    with pytest.raises(ValueError, match="finite"):
        run(bad)
    with pytest.raises(ValueError, match="2 dimensions|ndim|dimension"):
        run(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="at least 2 rows"):
        run(_z(n=1))
    with pytest.raises(TypeError, match="numeric"):
        run([["a", "b", "c"]] * 3)


def test_model_settings_are_named():
    with pytest.raises(TypeError, match="tree"):
        LatentTreeModel([2, 3])
    with pytest.raises(ValueError, match="covariance"):
        LatentTreeModel(TREE, covariance="diag")
    with pytest.raises(ValueError, match="alpha"):
        LatentTreeModel(TREE, alpha=0.0)
    with pytest.raises(ValueError, match="floor"):
        LatentTreeModel(TREE, floor=-0.01)


def test_a_parameter_dict_missing_an_entry_is_named():
    model = LatentTreeModel(TREE)
    values = model.em_init(_z(), torch.Generator().manual_seed(0))
    del values["means.1"]
    with pytest.raises(ValueError, match=r"means\.1"):
        params_from_dict(TREE, values)
    with pytest.raises(TypeError, match="dict"):
        params_from_dict(TREE, [1, 2])
