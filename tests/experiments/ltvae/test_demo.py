"""The ``ltvae`` entry of ``pyromodels demo``: the smoke demo's panels, tables and metrics."""

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

from pyromodels.experiments.ltvae import demo as ltvae_demo
from pyromodels.experiments.ltvae import ltvae_entry

pytestmark = pytest.mark.filterwarnings("ignore::pyromodels.core.errors.ConvergenceWarning")


@pytest.fixture(scope="module")
def smoke():
    return ltvae_demo.demo(smoke=True, progress=False, seed=0)


def test_the_demo_is_registered():
    assert ltvae_entry.ENTRY.demo is ltvae_demo.demo


def test_smoke_demo_has_its_panels(smoke):
    assert smoke.name == "ltvae"
    assert list(smoke.figures) == list(ltvae_demo.FIGURES)
    assert all(isinstance(f, Figure) for f in smoke.figures.values())
    assert list(smoke.tables) == list(ltvae_demo.TABLES)


def test_every_facet_is_scored_against_both_true_facets(smoke):
    table = smoke.tables["facet NMI vs the true facets"]
    assert len(table) == 2 * smoke.metrics["facets"]
    assert sorted(set(table["true facet"])) == [1, 2]
    scores = table[["NMI (hard, geometric)", "soft NMI (App. D)"]].to_numpy()
    assert np.isfinite(scores).all() and ((scores >= 0) & (scores <= 1)).all()
    assert all(math.isfinite(v) for v in smoke.metrics["nmi"].values())
    assert "Learned structure: " in smoke.summary
