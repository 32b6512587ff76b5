"""The SCDC reproduction: its metrics, the peers' constraints, and the registered protocols
running end to end (at the ``smoke`` settings) and resuming from stored units."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import adjusted_mutual_info_score, normalized_mutual_info_score

from pyromodels import registry
from pyromodels.data.pairwise import PairwiseAnnotations
from pyromodels.experiments.scdc import protocols, reproduction
from pyromodels.experiments.scdc.assemble import _face, mean_sd
from pyromodels.experiments.scdc.peers import consistent_constraints


def _brute_force_accuracy(truth, labels) -> float:
    """The best one-to-one map of clusters to classes by trying every injective map."""
    classes, clusters = np.unique(truth), np.unique(labels)
    best = 0
    targets = list(classes) + [None] * len(clusters)  # a cluster may map to no class
    for image in itertools.permutations(targets, len(clusters)):
        chosen = [c for c in image if c is not None]
        if len(set(chosen)) != len(chosen):
            continue
        hits = sum(int(np.sum((labels == k) & (truth == c)))
                   for k, c in zip(clusters, image, strict=True) if c is not None)
        best = max(best, hits)
    return best / len(truth)


@pytest.mark.parametrize("case", range(6))
def test_accuracy_is_the_best_permutation(case):
    rng = np.random.default_rng(case)
    n, k_true, k_pred = 12, 2 + case % 3, 2 + (case * 2) % 4
    truth, labels = rng.integers(0, k_true, n), rng.integers(0, k_pred, n)
    got = protocols.scores(truth, labels)["acc"]
    assert got == pytest.approx(_brute_force_accuracy(truth, labels), abs=1e-12)
    renamed = (labels + 3) % k_pred  # invariant to the clusters' names
    assert protocols.scores(truth, renamed)["acc"] == pytest.approx(got, abs=1e-12)


def test_nmi_is_geometric_and_ami_is_sklearns():
    rng = np.random.default_rng(1)
    truth, labels = rng.integers(0, 4, 60), rng.integers(0, 6, 60)
    got = protocols.scores(truth, labels)
    assert got["nmi"] == pytest.approx(
        normalized_mutual_info_score(truth, labels, average_method="geometric"), abs=1e-12)
    assert got["ami"] == pytest.approx(adjusted_mutual_info_score(truth, labels), abs=1e-12)
    # the geometric and arithmetic normalisations differ here: the test can tell them apart
    assert abs(got["nmi"] - normalized_mutual_info_score(truth, labels)) > 1e-4


def test_learned_clusters_counts_clusters_over_one_percent():
    labels = np.array([0] * 150 + [1] * 48 + [2] * 2)  # 2 of 200 points is exactly 1%
    assert protocols.learned_clusters(labels) == 3
    assert protocols.learned_clusters(np.r_[labels, [1]]) == 2  # 2 of 201 is under 1%


def test_a_fit_without_labels_scores_none():
    assert protocols.scores([0, 1], None) == {"acc": None, "nmi": None, "ami": None,
                                              "clusters": None}


def test_constraints_are_majorities_without_contradictions():
    # pair (0, 1): two must-links against one cannot-link; (1, 2) must; (0, 2) cannot, which
    # contradicts 0 ~ 1 ~ 2 and is dropped; (3, 4) tied and dropped; (2, 3) cannot
    frame = pd.DataFrame({"item_a": [0, 1, 0, 1, 0, 3, 4, 2],
                          "item_b": [1, 0, 1, 2, 2, 4, 3, 3],
                          "worker": ["a", "b", "c", "a", "a", "a", "b", "b"],
                          "link": [1, 1, 0, 1, 0, 1, 0, 0]})
    pairs = PairwiseAnnotations.from_dataframe(frame, items=np.arange(5))
    must, cannot = consistent_constraints(pairs)
    assert sorted(must) == [(0, 1), (1, 2)]
    assert cannot == [(2, 3)]


def test_mean_sd_groups():
    frame = pd.DataFrame({"m": ["a", "a", "b"], "v": [1.0, 3.0, 5.0]})
    out = mean_sd(frame, ["m"], ["v"])
    assert out.loc["a", "v_mean"] == 2.0 and out.loc["a", "v_sd"] == pytest.approx(2 ** 0.5)
    assert out.loc["b", "v_sd"] == 0.0 and out.loc["b", "runs"] == 1


def test_true_worker_weights_are_twice_the_logits():
    assert np.allclose(protocols.TRUE_WEIGHTS, [5.8889, 4.3944, 3.4692, 2.7726, 2.1972],
                       atol=1e-4)


def test_the_registered_reproduction_runs_and_resumes(monkeypatch, tmp_path):
    monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path))
    entry = registry.get("scdc")
    assert entry.reproduce is reproduction.reproduce
    settings = reproduction.SCALE_SETTINGS["smoke"]
    first = reproduction.run(settings, "scdc-smoke", progress=False, seed=3)
    assert set(first.tables) >= {"pinwheel", "face_nmi", "table1", "face_worker_weights"}
    ours = first.tables["pinwheel"]
    ours = ours[~ours["method"].str.startswith("paper")]
    assert ((ours["acc_mean"] > 0) & (ours["acc_mean"] <= 1)).all()
    face = first.tables["face_nmi"]
    assert set(face["method"]) == {"scdc", *settings["face"]["peers_run"]}
    assert set(face["annotated"]) == {"all", 100}
    assert "take the must-links' transitive closure" in first.summary  # PCKMeans ran
    stored = list((tmp_path / "scdc-reproduction").glob("*.json"))
    units = 2 + 2 * (1 + len(settings["face"]["peers_run"])) + 2
    assert len(stored) == units
    assert all("result" in json.loads(p.read_text()) for p in stored)

    def refuse(*args, **kwargs):
        raise AssertionError("a stored unit was computed again")

    for name in ("pinwheel_unit", "face_unit", "table1_unit"):
        monkeypatch.setattr(protocols, name, refuse)
    again = reproduction.run(settings, "scdc-smoke", progress=False, seed=3)
    for name, table in first.tables.items():
        pd.testing.assert_frame_equal(table, again.tables[name])


def test_reproduce_checks_its_scale():
    with pytest.raises(ValueError, match="scale"):
        reproduction.reproduce(scale="huge", progress=False)


def test_a_new_model_slot_runs_and_keeps_the_stored_units(monkeypatch, tmp_path):
    """A model added to MODEL_SLOTS runs at every scale that names no models, and the units
    stored before it was added are read back, not computed again."""
    monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path))
    settings = reproduction.SCALE_SETTINGS["smoke"]
    reproduction.run(settings, "scdc-smoke", progress=False, seed=1)
    before = set((tmp_path / "scdc-reproduction").glob("*.json"))

    def constant(x, pairs, *, num_clusters, settings, seed):
        return np.zeros(len(x), dtype=np.int64), {}

    monkeypatch.setitem(protocols.MODEL_SLOTS, "constant", constant)
    assert protocols.protocol_models("table1") == ("scdc", "bayes-scdc",
                                                   "pairwise-dawid-skene", "constant")
    assert "observed-bayes-scdc" in protocols.protocol_models("pinwheel")
    every = {**settings}
    for block in ("pinwheel", "face", "table1"):
        every[block] = {**settings[block], "models": ("scdc", "constant")}
    out = reproduction.run(every, "scdc-smoke", progress=False, seed=1)
    after = set((tmp_path / "scdc-reproduction").glob("*.json"))
    assert before < after
    pin = out.tables["pinwheel"].set_index(["setting", "method"])
    assert pin.loc[("with links", "constant"), "clusters_mean"] == 1
    assert pin.loc[("with links", "constant"), "acc_mean"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="slots of MODEL_SLOTS"):
        protocols.protocol_models("face", ("nope",))


def test_bayes_and_pairwise_slots_run_in_every_protocol(monkeypatch, tmp_path):
    """BayesSCDC runs with and without links, the pairwise worker model (links only,
    features ignored) wherever there are links, Table 1 included; both report worker
    weights."""
    monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path))
    settings = reproduction.SCALE_SETTINGS["smoke"]
    new = ("bayes-scdc", "pairwise-dawid-skene")
    assert protocols.NEEDS_LINKS >= {"pairwise-dawid-skene"}
    assert not set(new) & protocols.FEATURES_ONLY
    every = {**settings, "face": {**settings["face"], "models": new, "peers_run": ()}}
    for block in ("pinwheel", "table1"):
        every[block] = {**settings[block], "models": new}
    out = reproduction.run(every, "scdc-smoke", progress=False, seed=2)
    assert "transitive closure" not in out.summary  # no constrained k-means peer ran
    pin = out.tables["pinwheel"].set_index(["setting", "method"])
    for key in [("with links", m) for m in new] + [("without links", "bayes-scdc")]:
        assert 0 < pin.loc[key, "acc_mean"] <= 1 and pin.loc[key, "runs"] == 1
    assert ("without links", "pairwise-dawid-skene") not in pin.index
    table1 = out.tables["table1"]
    ours = table1[~table1["method"].str.startswith("paper")]
    assert set(zip(ours["method"], ours["links"])) == {
        ("bayes-scdc", False), ("bayes-scdc", True), ("pairwise-dawid-skene", True)}
    weights = out.tables["face_worker_weights"]
    assert set(weights["method"]) == set(new)
    assert np.isfinite(weights["estimate_mean"]).all()
    # every setting's fit is one stored unit: 3 on the pinwheel, 2 x 2 on the Face protocol,
    # 3 on Table 1
    assert len(list((tmp_path / "scdc-reproduction").glob("*.json"))) == 3 + 4 + 3


def test_the_peers_leave_numpys_error_handling_alone(monkeypatch):
    """Importing active-semi-supervised-clustering's MPCKMeans calls np.seterr('raise'); a peer
    fit must not leave that behind for the rest of the process."""
    import sys

    from pyromodels.experiments.scdc.peers import PEERS

    for name in [m for m in sys.modules if m.startswith("active_semi_clustering")]:
        monkeypatch.delitem(sys.modules, name)  # imported afresh below, as in a new process

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-3, 1, (20, 2)), rng.normal(3, 1, (20, 2))])
    frame = pd.DataFrame({"item_a": [0, 0, 20], "item_b": [1, 20, 21], "worker": [0, 0, 0],
                          "link": [1, 0, 1]})
    pairs = PairwiseAnnotations.from_dataframe(frame, items=np.arange(40))
    before = np.geterr()
    assert before["under"] != "raise"
    for name in ("pckmeans", "mpckmeans"):
        labels, _ = PEERS[name](x, pairs, num_clusters=2, settings={"peer_iterations": 5},
                                seed=0)
        assert labels is None or len(labels) == 40
        assert np.geterr() == before, name


def test_table1_runs_each_set_as_its_own_units(monkeypatch, tmp_path):
    """Table 1 on two sets: each set's images are read at its own size, its units are stored
    apart (a set's settings do not name the other set), and the table has a row per set."""
    monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path))
    settings = reproduction.SCALE_SETTINGS["smoke"]
    table = {**settings["table1"], "models": ("pairwise-dawid-skene",),
             "sets": {"mnist": 150, "fashion": 120}}
    blocks = reproduction.table1_blocks(table)
    assert [(b["set"], b["items"], b["annotated"]) for b in blocks] == [
        ("mnist", 150, min(150, 36 * table["hits"])), ("fashion", 120, min(120, 36 * table["hits"]))]
    assert all("sets" not in b for b in blocks)
    read = []
    real = reproduction.table1_data
    monkeypatch.setattr(reproduction, "table1_data",
                        lambda name, items: read.append((name, items)) or real(name, items))
    every = {**settings, "table1": table,
             "pinwheel": {**settings["pinwheel"], "models": ("pairwise-dawid-skene",)},
             "face": {**settings["face"], "models": ("pairwise-dawid-skene",), "peers_run": ()}}
    out = reproduction.run(every, "scdc-smoke", progress=False, seed=0)
    assert read == [("mnist", 150), ("fashion", 120)]
    ours = out.tables["table1"]
    ours = ours[~ours["method"].str.startswith("paper")]
    assert sorted(ours["set"]) == ["fashion", "mnist"]
    assert set(out.metrics["table1"]) == {"mnist pairwise-dawid-skene with links",
                                          "fashion pairwise-dawid-skene with links"}
    # pinwheel 1 + face 2 + a unit per set on Table 1
    assert len(list((tmp_path / "scdc-reproduction").glob("*.json"))) == 1 + 2 + 2


@pytest.mark.parametrize("name,classes", [("mnist", 10), ("fashion", 10)])
def test_table1_data_is_binarised_images(name, classes):
    x, y = reproduction.table1_data(name, 300)
    assert x.shape == (300, 784) and x.dtype == np.float32
    assert set(np.unique(x)) == {0.0, 1.0}
    assert len(np.unique(y)) == classes and y.dtype == np.int64
    again, _ = reproduction.table1_data(name, 300)
    assert np.array_equal(x, again)
    with pytest.raises(ValueError, match="items"):
        reproduction.table1_data(name, 0)
    with pytest.raises(ValueError, match="name"):
        reproduction.table1_data("cifar", 10)


def test_scdc_pinwheel_kl_warmup_reaches_the_fit(monkeypatch):
    """From ``medium`` on SCDC fits the pinwheel with a KL warm-up shorter than its fit; the
    protocol passes it to ``SCDC.fit`` (and the plain ELBO, 0, where a scale gives none)."""
    from pyromodels.scdc import SCDC

    medium = reproduction.SCALE_SETTINGS["medium"]["pinwheel"]["scdc"]
    assert 0 < medium["kl_warmup_epochs"] < medium["epochs"]
    assert "kl_warmup_epochs" not in reproduction.SCALE_SETTINGS["small"]["pinwheel"]["scdc"]
    seen = []

    def fake_fit(self, o, pairs, **kwargs):
        seen.append(kwargs["kl_warmup_epochs"])
        raise RuntimeError("stop")

    monkeypatch.setattr(SCDC, "fit", fake_fit)
    x = np.zeros((10, 2), dtype=np.float32)
    for settings, expected in ((medium, medium["kl_warmup_epochs"]),
                               (reproduction.SCALE_SETTINGS["small"]["pinwheel"]["scdc"], 0)):
        with pytest.raises(RuntimeError, match="stop"):
            protocols.fit_scdc_labels(x, None, num_clusters=3, settings=settings, seed=0)
        assert seen.pop() == expected


def _bayes_fit_argument(monkeypatch, settings: dict, name: str):
    """The argument ``name`` that the protocol's BayesSCDC fit at ``settings`` passes to
    ``BayesSCDC.fit`` (the fit itself is stopped at once)."""
    from pyromodels.scdc import BayesSCDC

    seen = []

    def fake_fit(self, o, pairs, **kwargs):
        seen.append(kwargs[name])
        raise RuntimeError("stop")

    monkeypatch.setattr(BayesSCDC, "fit", fake_fit)
    x = np.zeros((10, 4), dtype=np.float32)
    with pytest.raises(RuntimeError, match="stop"):
        protocols.fit_bayes_labels(x, None, num_clusters=3, settings=settings, seed=0)
    return seen.pop()


def test_bayes_scdc_face_kl_warmup_reaches_the_fit(monkeypatch):
    """From ``medium`` on BayesSCDC fits the Face protocol with a KL warm-up of three
    quarters of its epochs; the protocol passes it to ``BayesSCDC.fit``, and 0 where a
    scale's settings give none (the pinwheel's, Table 1's, the ``small`` Face's 3 epochs)."""
    for scale in ("medium", "paper"):
        face = reproduction.SCALE_SETTINGS[scale]["face"]["bayes-scdc"]
        assert face["kl_warmup_epochs"] == 3 * face["epochs"] // 4 == 45
    cases = [(reproduction.SCALE_SETTINGS["medium"]["face"]["bayes-scdc"], 45),
             (reproduction.SCALE_SETTINGS["medium"]["pinwheel"]["bayes-scdc"], 0),
             (reproduction.SCALE_SETTINGS["medium"]["table1"]["bayes-scdc"], 0),
             (reproduction.SCALE_SETTINGS["small"]["face"]["bayes-scdc"], 0)]
    for settings, expected in cases:
        settings = {**settings, "hidden": (4,)}
        assert _bayes_fit_argument(monkeypatch, settings, "kl_warmup_epochs") == expected


def test_table1_bayes_scdc_networks_take_the_papers_step(monkeypatch):
    """Table 1's BayesSCDC trains its 2 x 500 networks at the paper's step 1e-3, as SCDC's
    there (the pinwheel's 0.01 collapses the MNIST recognition network), and the protocol
    passes that step to ``BayesSCDC.fit``; the pinwheel keeps 0.01."""
    for scale in ("medium", "paper"):
        table = reproduction.SCALE_SETTINGS[scale]["table1"]
        assert table["bayes-scdc"]["lr"] == table["scdc"]["lr"] == 1e-3
        assert reproduction.SCALE_SETTINGS[scale]["pinwheel"]["bayes-scdc"]["lr"] == 1e-2
        settings = {**table["bayes-scdc"], "hidden": (4,), "epochs": 1}
        assert _bayes_fit_argument(monkeypatch, settings, "lr") == 1e-3


def test_the_constrained_kmeans_units_run_after_every_other_unit_in_report_order(monkeypatch,
                                                                                 tmp_path):
    """The pure-Python constrained k-means peers are computed last (after Table 1), so an
    interrupted run has the other curves; the Face rows still come in the report's order."""
    monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path))
    settings = reproduction.SCALE_SETTINGS["smoke"]
    computed = []

    def recorder(name):
        def fit(x, pairs, *, num_clusters, settings, seed):
            computed.append(name)
            return np.zeros(len(x), dtype=np.int64), {}
        return fit

    monkeypatch.setitem(protocols.MODEL_SLOTS, "constant", recorder("constant"))
    for peer in ("pckmeans", "mpckmeans"):
        monkeypatch.setitem(protocols.PEERS, peer, recorder(peer))
    real_table1 = protocols.table1_unit
    monkeypatch.setattr(protocols, "table1_unit",
                        lambda *a: computed.append("table1") or real_table1(*a))
    face = {**settings["face"], "models": ("constant",),
            "peers_run": ("pckmeans", "mpckmeans", "itml-kmeans"), "per_worker": [40, 60]}
    every = {**settings, "face": face,
             "pinwheel": {**settings["pinwheel"], "models": ("constant",)},
             "table1": {**settings["table1"], "models": ("constant",)}}
    rows = reproduction._units(every, 0, None)
    table1 = [i for i, c in enumerate(computed) if c == "table1"]
    peers = [i for i, c in enumerate(computed) if c in ("pckmeans", "mpckmeans")]
    assert len(peers) == 8 and min(peers) > max(table1)
    assert [(r["per_worker"], r["annotated"], r["method"]) for r in rows["face"]] == [
        (size, annotated, method) for size in (40, 60) for annotated in ("all", face["subset"])
        for method in ("constant", "pckmeans", "mpckmeans", "itml-kmeans")]


def test_face_units_side_by_side_equal_the_units_one_after_another(monkeypatch, tmp_path):
    """Under ``joblib.parallel_config(n_jobs=2)`` the Face units run in two worker processes,
    each stores its unit in the cache folder of the run, and the rows equal those of the same
    units run in this process."""
    import joblib

    settings = reproduction.SCALE_SETTINGS["smoke"]
    face = {**settings["face"], "models": ("pairwise-dawid-skene",), "peers_run": ("pckmeans",)}
    tasks = reproduction._face_tasks(face, 1, 0)
    rows = {}
    for run, n_jobs in (("serial", 1), ("parallel", 2)):
        monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path / run))
        done = {}
        with joblib.parallel_config(n_jobs=n_jobs):
            reproduction._face_rows(face, tasks, 0, done, None)
        rows[run] = done
        assert len(list((tmp_path / run / "scdc-reproduction").glob("*.json"))) == len(tasks)
    assert set(rows["parallel"]) == set(rows["serial"]) == set(tasks)
    for task in tasks:
        serial, parallel = rows["serial"][task], rows["parallel"][task]
        assert {k: v for k, v in parallel.items() if k != "seconds"} == {
            k: v for k, v in serial.items() if k != "seconds"}, task


def test_table1_units_side_by_side_equal_the_units_one_after_another(monkeypatch, tmp_path):
    """Table 1's units (and the pinwheel's, through the same runner) run in worker processes
    under ``joblib.parallel_config(n_jobs=2)``, the images sent once, with the rows of the
    same units run in this process."""
    import joblib

    block = reproduction.table1_blocks({**reproduction.SCALE_SETTINGS["smoke"]["table1"],
                                        "models": ("pairwise-dawid-skene",),
                                        "sets": {"mnist": 150}})[0]
    data = reproduction.table1_data("mnist", 150)
    rows = {}
    for run, n_jobs in (("serial", 1), ("parallel", 2)):
        monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path / run))
        with joblib.parallel_config(n_jobs=n_jobs):
            rows[run] = reproduction._links_rows("table1", block, 2, 0, (False, True),
                                                 protocols.table1_unit, data)
        assert len(list((tmp_path / run / "scdc-reproduction").glob("*.json"))) == 2
    strip = [{k: v for k, v in row.items() if "second" not in k} for row in rows["serial"]]
    assert strip == [{k: v for k, v in row.items() if "second" not in k}
                     for row in rows["parallel"]]
    assert [(r["seed"], r["links"]) for r in rows["serial"]] == [(0, True), (1, True)]


def test_a_diverged_fit_is_kept_as_a_failed_unit_and_counted():
    """A network whose outputs a distribution refuses (torch's argument check) is a failed
    fit with the reason, no labels and a count in the tables; other errors propagate."""
    import torch

    def diverging(x, pairs, *, num_clusters, settings, seed):
        torch.distributions.Normal(torch.zeros(3), torch.zeros(3))  # a scale of 0
        raise AssertionError("not reached")

    labels, extra = protocols.diverged_as_failed(diverging, None, None, num_clusters=2,
                                                 settings={}, seed=0)
    assert labels is None and extra["failed"].startswith("the fit diverged (Expected parameter")

    def broken(*args, **kwargs):
        raise ValueError("num_clusters must be >= 2")

    with pytest.raises(ValueError, match="num_clusters"):
        protocols.diverged_as_failed(broken, num_clusters=1)
    frame = pd.DataFrame({"method": ["a", "a", "a", "b"], "nmi": [0.5, None, 0.7, 0.2]})
    table = mean_sd(frame, ["method"], ["nmi"])
    assert table.loc["a", "runs"] == 3 and table.loc["a", "no_labels"] == 1
    assert table.loc["a", "nmi_mean"] == pytest.approx(0.6)
    assert table.loc["b", "no_labels"] == 0


def test_worker_weights_average_the_runs_that_have_them():
    """A failed run (a diverged fit, kept with its reason) has no labels and no weights: the
    weights table averages the other runs and says how many."""
    row = {"set": "digits", "annotated": True, "per_worker": 200, "method": "bayes-scdc"}
    rows = [{**row, "nmi": 0.5, "ami": 0.5, "worker_weights": [5.0, 4.0, 3.0, 2.0, 1.0]},
            {**row, "nmi": 0.7, "ami": 0.7, "worker_weights": [7.0, 6.0, 5.0, 4.0, 3.0]},
            {**row, "nmi": None, "ami": None, "worker_weights": None},
            {**row, "method": "pckmeans", "nmi": 0.4, "ami": 0.4}]
    nmi, weights = _face(rows)
    assert set(weights["method"]) == {"bayes-scdc"}
    first = weights[weights["worker"] == 0].iloc[0]
    assert first["runs"] == 2 and first["estimate_mean"] == pytest.approx(6.0)
    assert first["estimate_sd"] == pytest.approx(np.std([5.0, 7.0], ddof=1))
    assert nmi.set_index("method").loc["bayes-scdc", "no_labels"] == 1


def test_peer_limits_leave_out_a_slow_peers_seeds_and_whole_data_sizes():
    """``peer_limits`` drops a peer's seeds past its limit and its whole-data units past the
    size, keeps its 100-item units at every size and every other method's units, and leaves
    every kept unit's key as it was without limits (so stored units are read back)."""
    face = {**reproduction.SCALE_SETTINGS["smoke"]["face"], "per_worker": (200, 600, 1000),
            "models": ("scdc",), "peers_run": ("pckmeans", "mpckmeans")}
    limited = {**face, "peer_limits": {"mpckmeans": {"seeds": 2, "whole_data_up_to": 600}}}
    every, kept = reproduction._face_tasks(face, 3, 0), reproduction._face_tasks(limited, 3, 0)
    dropped = set(every) - set(kept)
    assert dropped == {t for t in every if t[3] == "mpckmeans"
                       and (t[4] >= 2 or (t[2] is None and t[1] > 600))}
    assert ("digits", 1000, 100, "mpckmeans", 1) in kept
    assert ("digits", 1000, None, "pckmeans", 2) in kept
    assert [t for t in every if t in set(kept)] == kept
    for task in kept:
        assert reproduction._face_key(limited, task, 0) == reproduction._face_key(face, task, 0)


def test_peer_limits_by_set_and_on_the_100_items():
    """A limit may name the sets a peer runs on, cap its 100-item curve, and give a size per
    set (0: none there); sizes and sets not named are not limited."""
    face = {**reproduction.SCALE_SETTINGS["smoke"]["face"], "sets": ("digits", "fashion"),
            "per_worker": (200, 600, 1000), "models": ("scdc",), "peers_run": ("pckmeans", "mpckmeans")}
    limited = {**face, "peer_limits": {
        "pckmeans": {"whole_data_up_to": {"fashion": 200}, "subset_up_to": {"digits": 0}},
        "mpckmeans": {"sets": ("digits",), "subset_up_to": 600}}}
    every, kept = reproduction._face_tasks(face, 2, 0), reproduction._face_tasks(limited, 2, 0)
    dropped = set(every) - set(kept)
    assert dropped == {t for t in every if
                       (t[3] == "pckmeans" and t[0] == "fashion" and t[2] is None and t[1] > 200)
                       or (t[3] == "pckmeans" and t[0] == "digits" and t[2] is not None)
                       or (t[3] == "mpckmeans" and (t[0] == "fashion" or (t[2] is not None and t[1] > 600)))}
    assert ("digits", 1000, None, "pckmeans", 1) in kept and ("digits", 1000, None, "mpckmeans", 1) in kept
    assert ("fashion", 1000, 100, "pckmeans", 0) in kept


def test_the_medium_scale_names_its_peer_limits_in_the_report():
    """The medium scale's limits are named in its report summary."""
    from pyromodels.experiments.scdc.assemble import _peer_limits

    medium = reproduction.SCALE_SETTINGS["medium"]
    said = _peer_limits(medium)
    assert ("mpckmeans 3 seeds, the whole data up to 200 links per worker on the digits (none on "
            "Fashion-MNIST), the 100 items up to 1000 links per worker on the digits and 600 on "
            "Fashion-MNIST") in said
    assert "pckmeans the whole data up to 600 links per worker on the digits and 200 on Fashion-MNIST" in said
    assert _peer_limits(reproduction.SCALE_SETTINGS["paper"]) == ""


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("slot", ["scdc", "bayes-scdc"])
def test_seconds_per_epoch_are_cpu_seconds_that_a_stopped_fit_does_not_inflate(monkeypatch,
                                                                                 slot):
    """A fit whose process is stopped a while (here: the fit sleeps 0.6 s after its epochs)
    reports its own CPU seconds, not the wall time of the stop; Table 1's units say so in
    their key, so units timed by wall clock are not reused."""
    import time

    from pyromodels.scdc import SCDC, BayesSCDC

    cls = SCDC if slot == "scdc" else BayesSCDC
    real_fit = cls.fit

    def stopped_fit(self, *args, **kwargs):
        out = real_fit(self, *args, **kwargs)
        time.sleep(0.6)
        return out

    monkeypatch.setattr(cls, "fit", stopped_fit)
    settings = {**reproduction.SCALE_SETTINGS["smoke"]["table1"][slot], "hidden": (4,),
                "epochs": 2, "batch_size": 20}
    x = np.random.default_rng(0).random((40, 6)).astype(np.float32)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: its CPU seconds are at most the wall seconds
    try:
        wall = time.perf_counter()
        _, extra = protocols.MODEL_SLOTS[slot](x, None, num_clusters=3, settings=settings,
                                               seed=0)
        wall = time.perf_counter() - wall
    finally:
        torch.set_num_threads(threads)
    assert wall > 0.6
    # two epochs: the sleep, if counted, would give at least 0.3 s per epoch
    assert 0 < extra["seconds_per_epoch"] < (wall - 0.6) / 2 + 0.05
    assert reproduction.SCALE_SETTINGS["medium"]["table1"]["epoch_seconds"] == "cpu"
