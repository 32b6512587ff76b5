"""The latent tree reproduction (``pyromodels reproduce latent-tree``): its smoke settings
run end to end and resume from stored units; the structures are compared up to naming."""

import json

import pandas as pd
import pytest

from pyromodels.experiments.catalogue import LATENT_TREE
from pyromodels.experiments.ltvae import reproduction, tree_entry
from pyromodels.trees import LatentTree

#: the smoke search stops at its max_steps on purpose (seconds, not a converged search)
pytestmark = pytest.mark.filterwarnings("ignore::pyromodels.core.errors.ConvergenceWarning")

_TWO = {"latents": [{"name": "Y1", "cardinality": 2, "parent": None},
                    {"name": "Y2", "cardinality": 2, "parent": "Y1"}],
        "pouches": [{"parent": "Y1", "coordinates": [0, 1]},
                    {"parent": "Y2", "coordinates": [2, 3]}],
        "num_coordinates": 4}


def test_the_registered_reproduction_runs_and_resumes(monkeypatch, tmp_path):
    monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path))
    assert tree_entry.ENTRY.reproduce is reproduction.reproduce
    settings = reproduction.SCALE_SETTINGS["smoke"]
    first = reproduction.run(settings, "latent-tree-smoke", progress=False, seed=0)
    assert set(first.tables) == {"pltm_sets", "synthetic_seeds", "synthetic_recovery"}
    pltm = first.tables["pltm_sets"]
    assert pltm["set"].tolist() == list(settings["pltm"]["sets"])
    structure = pltm["structure"].iloc[0]
    assert structure.startswith("Y(") and "petalwidth" in structure
    assert ((pltm["best_nmi"] >= 0) & (pltm["best_nmi"] <= 1)).all()
    seeds = first.tables["synthetic_seeds"]
    assert len(seeds) == settings["synthetic"]["seeds"]
    rate = first.tables["synthetic_recovery"]["rate"].iloc[0]
    assert rate == pytest.approx(seeds["recovered"].mean())
    assert first.metrics["synthetic"]["recovery_rate"] == pytest.approx(rate)
    assert "kept out of this report on purpose" in first.summary
    stored = list((tmp_path / "latent-tree-reproduction").glob("*.json"))
    assert len(stored) == len(settings["pltm"]["sets"]) + settings["synthetic"]["seeds"]
    assert all("result" in json.loads(p.read_text()) for p in stored)

    def refuse(*args, **kwargs):
        raise AssertionError("a stored unit was computed again")

    monkeypatch.setattr(reproduction, "pltm_unit", refuse)
    monkeypatch.setattr(reproduction, "synthetic_unit", refuse)
    again = reproduction.run(settings, "latent-tree-smoke", progress=False, seed=0)
    for name, table in first.tables.items():
        pd.testing.assert_frame_equal(table, again.tables[name])
    with pytest.raises(AssertionError, match="computed again"):  # a new seed is a new unit
        reproduction.run(settings, "latent-tree-smoke", progress=False, seed=1)


def test_reproduce_checks_its_scale():
    assert set(LATENT_TREE.scales) <= set(reproduction.SCALE_SETTINGS)
    for scale in ("huge", "smoke"):
        with pytest.raises(ValueError, match="scale"):
            reproduction.reproduce(scale=scale, progress=False)


def test_structures_are_compared_up_to_naming():
    truth = LatentTree.from_dict(_TWO)
    renamed = LatentTree.from_dict({
        "latents": [{"name": "B", "cardinality": 3, "parent": None},
                    {"name": "A", "cardinality": 2, "parent": "B"}],
        "pouches": [{"parent": "B", "coordinates": [3]}, {"parent": "B", "coordinates": [2]},
                    {"parent": "A", "coordinates": [1, 0]}],
        "num_coordinates": 4})
    assert reproduction.coordinate_groups(renamed) == reproduction.coordinate_groups(truth)
    assert reproduction.coordinate_groups(truth) == [[0, 1], [2, 3]]
    mixed = LatentTree.from_dict({**_TWO, "pouches": [{"parent": "Y1", "coordinates": [0, 2]},
                                                      {"parent": "Y2", "coordinates": [1, 3]}]})
    assert reproduction.coordinate_groups(mixed) != reproduction.coordinate_groups(truth)
    assert reproduction.coordinate_groups(LatentTree.single(2, 4)) == [[0, 1, 2, 3]]


def test_structure_text_names_nodes_cardinalities_and_pouches():
    text = reproduction.structure_text(LatentTree.from_dict(_TWO), ["a", "b", "c", "d"])
    assert text == "Y1(2, root): {a, b} | Y2(2, under Y1): {c, d}"
    assert reproduction.structure_text(LatentTree.single(3, 2)) == "Y(3, root): {z[0]}; {z[1]}"


def test_every_scale_names_its_screening_so_stored_units_keep_apart():
    # a unit's key holds its search settings: one screened otherwise must not be read back
    for scale, settings in reproduction.SCALE_SETTINGS.items():
        for protocol in ("pltm", "synthetic"):
            assert settings[protocol]["search"]["screen"] == "local", (scale, protocol)
