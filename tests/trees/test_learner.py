"""Structure learning (PLTM-EAST's hill-climbing) and the clustering facade on planted trees."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.data import simulate_two_facets
from pyromodels.metrics import clustering_accuracy
from pyromodels.trees import (
    LatentTree,
    LatentTreeClustering,
    TreeParams,
    free_parameters,
    learn_structure,
    sample_tree,
    tree_bic,
)

FAST = {"em_restarts": 2, "screen_steps": 5, "em_steps": 100, "progress": False}


def planted(num_points: int, seed: int, states: int = 2):
    """Two facets: A over z0, z1 and B over z2, z3, weakly dependent, means 5 standard
    deviations apart on every coordinate (``states`` states for A, spread evenly)."""
    tree = LatentTree.from_edges({"A": states, "B": 2}, [("A", "B")],
                                 [("A", [0]), ("A", [1]), ("B", [2]), ("B", [3])])
    a = torch.linspace(-2.5 * (states - 1), 2.5 * (states - 1), states,
                       dtype=torch.float64)[:, None]
    b = torch.tensor([[-2.5], [2.5]], dtype=torch.float64)
    cpt = torch.full((states, 2), 0.3, dtype=torch.float64)
    cpt[::2, 0], cpt[1::2, 1] = 0.7, 0.7
    ones = torch.ones(states, 1, 1, dtype=torch.float64)
    params = TreeParams(tree, torch.full((states,), 1 / states, dtype=torch.float64),
                        [None, cpt], [a, -a, b, -b], [ones, ones, ones[:2], ones[:2]])
    z, states_drawn = sample_tree(params, num_points, torch.Generator().manual_seed(seed))
    return z, states_drawn


def facets(tree: LatentTree) -> set:
    """The structure up to node names and the choice of root: for each latent node, its
    cardinality and the set of its pouches' coordinates (from ``to_dict``)."""
    d = tree.to_dict()
    groups = {n["name"]: [] for n in d["latents"]}
    for pouch in d["pouches"]:
        groups[pouch["parent"]].append(tuple(pouch["coordinates"]))
    cards = {n["name"]: n["cardinality"] for n in d["latents"]}
    return {(cards[n], frozenset(g)) for n, g in groups.items()}


TRUTH = {(2, frozenset({(0,), (1,)})), (2, frozenset({(2,), (3,)}))}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovers_the_two_facets(seed):
    z, _ = planted(300, 100 + seed)
    result = learn_structure(z, seed=seed, **FAST)
    assert result.tree.num_latents == 2
    assert facets(result.tree) == TRUTH
    assert result.search.converged


def test_the_full_screen_recovers_the_two_facets_too():
    z, _ = planted(300, 100)
    result = learn_structure(z, seed=0, screen="full", **FAST)
    assert facets(result.tree) == TRUTH
    assert result.search.converged


def test_screening_on_a_subset_of_rows_recovers_the_two_facets():
    z, _ = planted(600, 101)
    result = learn_structure(z, seed=0, screen_points=200, **FAST)
    assert facets(result.tree) == TRUTH
    scores = [result.search.start_score] + [s.score for s in result.history]
    assert all(b > a + 1e-2 for a, b in zip(scores, scores[1:]))
    assert math.isclose(result.bic, tree_bic(result.params, z), rel_tol=1e-9)


@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_the_facets_of_the_two_facet_data(seed):
    # z1, z2 and z3, z4 move together within each facet: a pouching of one pair is a good
    # first move too, after which no node introduction is possible (Y has three neighbours);
    # only a fresh start of the introduced node lets the screening see the second facet
    _, truth = simulate_two_facets(1000, seed=seed)
    result = learn_structure(truth["z"], seed=seed, **FAST)
    assert facets(result.tree) == TRUTH


def test_fixed_covariances_stay_fixed_and_are_not_counted():
    z, _ = planted(300, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no start above alpha * I that EM's first step lowers
        result = learn_structure(z, seed=0, covariance="fixed", alpha=1.0, **FAST)
    eye = torch.eye(1, dtype=torch.float64)
    for tril in result.params.scale_trils:
        assert torch.allclose(tril @ tril.mT, eye.expand_as(tril))
    assert math.isclose(result.bic, tree_bic(result.params, z, "fixed"), rel_tol=1e-9)
    assert facets(result.tree) == TRUTH


def test_bic_never_decreases_along_the_history():
    z, _ = planted(400, 7, states=3)
    result = learn_structure(z, seed=0, **{**FAST, "screen_steps": 20})
    scores = [result.search.start_score] + [s.score for s in result.history]
    assert len(result.history) >= 2  # here a pouching, then a state introduction
    assert all(b > a + 1e-2 for a, b in zip(scores, scores[1:]))
    assert all(math.isclose(s.gain, b - a) for s, a, b in zip(result.history, scores, scores[1:]))
    assert math.isclose(result.bic, tree_bic(result.params, z), rel_tol=1e-9)
    dim = free_parameters(result.tree)
    assert math.isclose(result.log_likelihood, result.bic + 0.5 * dim * math.log(len(z)),
                        rel_tol=1e-9)


def test_checkpoint_and_resume_give_the_identical_result(tmp_path):
    z, _ = planted(400, 7, states=3)
    settings = {**FAST, "screen_steps": 20}
    whole = learn_structure(z, seed=0, **settings)
    assert len(whole.history) >= 2
    path = tmp_path / "search.ckpt"
    first = learn_structure(z, seed=0, checkpoint=path, callbacks=[lambda step, info: True],
                            **settings)
    assert first.search.stopped == "callback" and len(first.history) == 1
    resumed = learn_structure(z, seed=0, resume=path, **settings)
    assert resumed.tree == whole.tree
    assert resumed.bic == whole.bic
    assert [s.move for s in resumed.history] == [s.move for s in whole.history]
    for a, b in zip(resumed.params.tensors(), whole.params.tensors()):
        assert torch.equal(a, b)


def test_resume_refuses_other_learner_settings(tmp_path):
    # the checkpoint records how candidates are screened and fitted: a resumed search with
    # other EM budgets or screening would not be the interrupted search continued
    z, _ = planted(300, 7, states=3)
    path = tmp_path / "search.ckpt"
    learn_structure(z, seed=0, checkpoint=path, callbacks=[lambda step, info: True], **FAST)
    for change in ({"em_steps": FAST.get("em_steps", 200) + 1}, {"screen": "full"},
                   {"covariance": "fixed"}, {"operators": {"expand": ("SI",)}}):
        with pytest.raises(ValueError, match="resume: the checkpoint's run has"):
            learn_structure(z, seed=0, resume=path, **{**FAST, **change})


def test_node_names_stay_stable():
    z, _ = planted(300, 100)
    result = learn_structure(z, seed=0, **FAST)
    # the start's node keeps its name; the node introduction adds the fresh name Y1
    assert result.tree.names == ("Y", "Y1")
    assert [s.move.describe()[:2] for s in result.history] == ["NI"]


def test_facade_labels_match_the_facets():
    z, states = planted(300, 11)
    table = pd.DataFrame(z.numpy() * [1.0, 3.0, 0.5, 10.0] + 4.0, columns=list("abcd"),
                         index=range(5, 305))
    model = LatentTreeClustering(seed=0, **FAST).fit(table)
    assert facets(model.tree_) == TRUTH
    assert list(model.labels_.columns) == list(model.tree_.names)
    assert model.labels_.index.equals(table.index)
    # the Bayes error of a facet is Phi(-2.5 * sqrt(2)) < 3e-4; 0.98 leaves room for the fit
    for name in model.tree_.names:
        j = model.tree_.index(name)
        coords = {c for b in model.tree_.leaves[j] for c in model.tree_.pouches[b]}
        truth = states[:, 0] if coords == {0, 1} else states[:, 1]
        assert clustering_accuracy(truth.numpy(), model.labels_[name].to_numpy()) > 0.98
    assert model.predict(table).equals(model.labels_)
    one = model.predict(table.iloc[[7]])  # a single row is fine for predict
    assert one.equals(model.labels_.iloc[[7]])
    assert model.predict(table.to_numpy()[:3]).to_numpy().tolist() == \
        model.labels_.to_numpy()[:3].tolist()
    with pytest.raises(ValueError, match="fitted columns"):
        model.predict(table[["b", "a", "c", "d"]])
    with pytest.raises(ValueError, match="table must have 4 columns"):
        model.predict(table.to_numpy()[:, :3])
    with pytest.raises(TypeError, match="'d' must be numeric"):
        model.predict(table.assign(d="x"))
    assert math.isfinite(model.bic_) and model.log_likelihood_ > model.bic_
    import matplotlib.pyplot as plt
    assert model.draw() is not None
    plt.close("all")


def test_facade_draws_and_refuses_before_fit():
    model = LatentTreeClustering(seed=0, **FAST)
    with pytest.raises(RuntimeError, match="not fitted"):
        model.predict(np.zeros((2, 4)))
    with pytest.raises(TypeError, match="unknown settings"):
        LatentTreeClustering(restarts=3)


@pytest.mark.parametrize("bad, error, match", [
    ("constant", ValueError, "constant"),
    ("text", TypeError, "'c'"),
    ("nan", ValueError, "NaN"),
])
def test_bad_tables_raise_the_table_checks_errors(bad, error, match):
    z, _ = planted(20, 0)
    table = pd.DataFrame(z.numpy(), columns=list("abcd"))
    if bad == "constant":
        table["c"] = 1.0
    elif bad == "text":
        table["c"] = "x"
    else:
        table.loc[3, "c"] = np.nan
    with pytest.raises(error, match=match):
        LatentTreeClustering(**FAST).fit(table)
    with pytest.raises(error, match=match):
        learn_structure(table, **FAST)


def test_bad_settings_are_named():
    z, _ = planted(20, 0)
    with pytest.raises(ValueError, match="covariance"):
        learn_structure(z, covariance="diag", **FAST)
    with pytest.raises(ValueError, match="alpha"):
        learn_structure(z, covariance="fixed", alpha=0.0, **FAST)
    with pytest.raises(ValueError, match="start covers 3 coordinates but z has 4"):
        learn_structure(z, start=LatentTree.single(2, 3), **FAST)
    with pytest.raises(ValueError, match="operators"):
        learn_structure(z, operators={"expand": ("XX",)}, **FAST)
    with pytest.raises(TypeError, match="start must be"):
        learn_structure(z, start="Y", **FAST)
    with pytest.raises(ValueError, match="screen_points must be an integer >= 2"):
        learn_structure(z, screen_points=1, **FAST)
    with pytest.raises(TypeError, match="screen_points must be an integer"):
        learn_structure(z, screen_points=0.5, **FAST)
    with pytest.raises(ValueError, match="screen must be one of"):
        learn_structure(z, screen="fast", **FAST)
