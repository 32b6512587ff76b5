"""``pyromodels reproduce ltvae``: the smoke scale produces every table with finite figures,
resumes from its stored units without fitting again, and scores by both accuracies."""

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from pyromodels.cli import main
from pyromodels.experiments.ltvae import ltvae_entry, ltvae_reproduction, ltvae_units
from pyromodels.experiments.ltvae.ltvae_report import TABLES
from pyromodels.metrics import clustering_accuracy, majority_accuracy
from pyromodels.report import read_metrics

pytestmark = pytest.mark.filterwarnings("ignore::pyromodels.core.errors.ConvergenceWarning")

_UNITS = ("clustering_unit", "likelihood_unit", "facets_unit")


def _counting(monkeypatch):
    """Wrap the unit functions so that each call (one fit) is counted."""
    calls = {name: 0 for name in _UNITS}
    for name in _UNITS:
        original = getattr(ltvae_units, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(ltvae_units, name, counted)
    return calls


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    monkeypatch = pytest.MonkeyPatch()
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("PYROMODELS_CACHE", str(cache))
    calls = _counting(monkeypatch)
    settings = ltvae_reproduction.SCALE_SETTINGS["smoke"]
    first = ltvae_reproduction.run(settings, "ltvae-smoke", progress=False, seed=0)
    before = dict(calls)
    again = ltvae_reproduction.run(settings, "ltvae-smoke", progress=False, seed=0)
    after = dict(calls)
    monkeypatch.undo()
    return first, again, before, after, cache


def test_smoke_scale_produces_every_table_with_finite_figures(smoke_runs):
    first = smoke_runs[0]
    assert list(first.tables) == list(TABLES)
    settings = ltvae_reproduction.SCALE_SETTINGS["smoke"]
    table2 = first.tables["Table 2: clustering accuracy"]
    assert table2["method"].tolist() == list(ltvae_units.CLUSTERING_METHODS) * len(
        settings["clustering"]["sets"])
    for column in ("ACC Hungarian (%)", "ACC majority (%)", "NMI"):
        assert np.isfinite(table2[column]).all()
    # the majority map is the best of all maps, the one-to-one ones among them
    assert (table2["ACC majority (%)"] >= table2["ACC Hungarian (%)"] - 1e-9).all()
    table1 = first.tables["Table 1: test log-likelihood"]
    assert table1["model"].tolist() == list(ltvae_units.LIKELIHOOD_MODELS)
    assert np.isfinite(table1["L_k"]).all() and (table1["L_k"] < 0).all()
    assert (table1["k"] == settings["likelihood"]["k"]).all()
    times = first.tables["Table 3: seconds"]
    assert (times[["with structure learning (s)", "fixed structure (s)"]] > 0).all().all()
    for name in ("Table 4: facet NMI", "Table 5: facet NMI"):
        nmi = first.tables[name]
        assert nmi.index[0] == "Groundtruth" and list(nmi.columns) == list(nmi.index)
        assert np.isfinite(nmi.to_numpy()).all() and ((nmi >= 0) & (nmi <= 1)).all().all()
    paper5 = first.tables["Table 5 (paper, STL-10)"]
    assert paper5.shape == (5, 5) and paper5.loc["Facet 1", "Groundtruth"] == 0.8613
    assert np.allclose(paper5.to_numpy(), paper5.to_numpy().T)
    assert "stands in for it" in first.summary
    assert first.figures and all(isinstance(f, Figure) for f in first.figures.values())
    assert all(name.startswith(("Fig. 5: facet ", "Fig. 5 (digits): facet "))
               for name in first.figures)
    assert any(name.startswith("Fig. 5 (digits)") for name in first.figures)
    assert "86.32" in first.tables["Table 2: clustering accuracy"].to_string()
    assert "clustering.net.epochs" in set(first.tables["settings"]["setting"])


def test_the_metrics_are_finite(smoke_runs):
    def numbers(value):
        if isinstance(value, dict):
            for item in value.values():
                yield from numbers(item)
        else:
            yield value

    values = list(numbers(smoke_runs[0].metrics))
    assert len(values) > 10 and all(math.isfinite(v) for v in values)


def test_a_second_run_reads_every_unit_back_without_fitting(smoke_runs):
    first, again, before, after, _ = smoke_runs
    sets = len(ltvae_reproduction.SCALE_SETTINGS["smoke"]["clustering"]["sets"])
    assert before == {"clustering_unit": 4 * sets, "likelihood_unit": 3, "facets_unit": 2}
    assert after == before
    for name, table in first.tables.items():
        pd.testing.assert_frame_equal(table, again.tables[name])


def test_hungarian_and_majority_agree_on_a_one_to_one_clustering():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 400)
    labels = (y + 2) % 5  # a relabelling ...
    noisy = rng.random(400) < 0.2
    labels[noisy] = rng.integers(0, 5, noisy.sum())  # ... with noise: majorities stay distinct
    assert clustering_accuracy(y, labels) == pytest.approx(majority_accuracy(y, labels))
    merged = np.where(labels == 4, 3, labels)  # four clusters for five classes: they differ
    assert majority_accuracy(y, merged) >= clustering_accuracy(y, merged)


def test_the_entry_registers_the_reproduction_and_checks_its_scale():
    assert ltvae_entry.ENTRY.reproduce is ltvae_reproduction.reproduce
    assert ltvae_entry.ENTRY.scales == ("smoke", "small", "medium", "paper")
    assert set(ltvae_entry.ENTRY.scales) == set(ltvae_reproduction.SCALE_SETTINGS)
    with pytest.raises(ValueError, match="scale"):
        ltvae_reproduction.reproduce(scale="huge", progress=False)


def test_the_command_line_reproduces_at_smoke_scale_from_the_stored_units(
        smoke_runs, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PYROMODELS_CACHE", str(smoke_runs[4]))
    calls = _counting(monkeypatch)
    out = tmp_path / "report"
    assert main(["reproduce", "ltvae", "--scale", "smoke", "--no-progress",
                 "--out", str(out)]) == 0
    assert sum(calls.values()) == 0
    _, metrics = read_metrics(out)
    assert set(metrics["ltvae-smoke"]) == {"table1", "table2", "table3", "table4", "table5"}
    # a reproduction without a smoke scale refuses it before running
    assert main(["reproduce", "gaussian-mixture", "--scale", "smoke"]) == 2
    assert "not 'smoke'" in capsys.readouterr().err


def test_images_split_and_binarise_are_fixed_by_the_seed():
    x, y = ltvae_units.load_images("digits", 50, 3)
    x2, y2 = ltvae_units.load_images("digits", 50, 3)
    assert x.shape == (50, 64) and 0 <= x.min() and x.max() <= 1
    np.testing.assert_array_equal(y, y2)
    train, test = ltvae_units.split(50, 0.2)
    assert len(test) == 10 and np.intersect1d(train, test).size == 0
    b = ltvae_units.binarise(x, 0)
    assert set(np.unique(b)) <= {0.0, 1.0}
    np.testing.assert_array_equal(b, ltvae_units.binarise(x2, 0))
    with pytest.raises(ValueError, match="name"):
        ltvae_units.load_images("cifar", 10, 0)


@pytest.mark.parametrize("name, count", [("mnist-5k", 5000), ("fashion-10k", 10000)])
def test_the_medium_scale_images_load_as_rows_in_the_unit_interval(name, count):
    x, y = ltvae_units.load_images(name, None, 0)
    side = ltvae_units.IMAGE_SETS[name]
    assert x.shape == (count, side * side) and x.dtype == np.float32
    assert 0 <= x.min() and x.max() <= 1
    assert sorted(set(y.tolist())) == list(range(10))


@pytest.mark.parametrize("covariance", ["full", "fixed"])
def test_the_clustering_and_facet_fits_use_the_settings_covariances(monkeypatch, covariance):
    import pyromodels.ltvae

    made = []

    class Recording(pyromodels.ltvae.LTVAE):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self.covariance)

    monkeypatch.setattr(pyromodels.ltvae, "LTVAE", Recording)
    smoke = ltvae_reproduction.SCALE_SETTINGS["smoke"]
    ltvae_units.clustering_unit("digits", "LTVAE (fixed structure)",
                                {**smoke["clustering"], "covariance": covariance}, 0)
    ltvae_units.facets_unit({**smoke["facets"], "covariance": covariance}, 0)
    assert made == [covariance, covariance]


def test_a_scale_without_table5_leaves_its_tables_out(monkeypatch, tmp_path):
    """The small scale has no Table 5: its report has every other table, none of Table 5's."""
    from pyromodels.experiments.ltvae import ltvae_report

    assert "table5" not in ltvae_reproduction.SCALE_SETTINGS["small"]
    assert ltvae_reproduction.SCALE_SETTINGS["medium"]["table5"]["set"] == "digits"
    monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path))
    settings = {k: v for k, v in ltvae_reproduction.SCALE_SETTINGS["smoke"].items()
                if k != "table5"}
    out = ltvae_reproduction.run(settings, "ltvae-smoke", progress=False, seed=0)
    assert list(out.tables) == [t for t in ltvae_report.TABLES if not t.startswith("Table 5")]
    assert "table5" not in out.metrics
