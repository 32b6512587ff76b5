"""Table II inputs: citation graphs labelled by classifier ensembles, music genre with a kNN
graph on audio features."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.core.seeding import derive_seed
from pyromodels.data import load_crowd, load_planetoid
from pyromodels.experiments.crowd.inputs.graphs import (
    CLASSIFIERS,
    build_music_genre,
    build_planetoid,
    knn_graph,
    load_music_features,
)

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"


@pytest.fixture(scope="module")
def cora():
    return build_planetoid("cora", seed=0, path=DATA / "cora")


def test_cora_sizes_and_full_response_matrix(cora):
    assert cora.summary() == {"name": "cora", "N": 2708, "M": 10, "K": 7, "labels": 27_080,
                              "scored": 2708, "edges": 5278, "mean_degree": 2 * 5278 / 2708}
    assert list(cora.table.workers) == list(CLASSIFIERS)
    assert cora.classes == [str(k) for k in range(7)]
    assert cora.eval_mask is None and cora.sequences is None
    assert torch.equal(cora.gold, torch.from_numpy(load_planetoid("cora", DATA / "cora").labels))
    assert cora.metric == {"scheme": "macro", "average": "pooled", "classes": "present"}
    for rows in cora.info["train_items"]:
        assert len(rows) == 150 == len(set(rows))


def test_task_moves_between_devices(cora):
    moved = cora.to("cpu")
    assert moved is not cora and moved.graph.device == torch.device("cpu")
    assert torch.equal(moved.table.to_dense(), cora.table.to_dense())
    assert moved.eval_mask is None and torch.equal(moved.gold, cora.gold)
    assert moved.graph.num_edges == cora.graph.num_edges


def test_classifiers_learn_something_and_differ(cora):
    dense = cora.table.to_dense()
    accuracy = (dense == cora.gold[:, None]).double().mean(0)
    share = torch.bincount(cora.gold).max() / cora.num_items  # always guessing the top class
    assert (accuracy > share).sum() >= 8
    assert len({tuple(dense[:, m].tolist()) for m in range(10)}) == 10


def test_seed_determinism(cora):
    again = build_planetoid("cora", seed=0, path=DATA / "cora")
    assert torch.equal(again.table.to_dense(), cora.table.to_dense())
    other = build_planetoid("cora", seed=1, path=DATA / "cora", num_train=40)
    assert other.info["train_items"] != cora.info["train_items"]
    assert not torch.equal(other.table.to_dense(), cora.table.to_dense())


def test_citeseer_drops_the_placeholder_nodes():
    raw = load_planetoid("citeseer", DATA / "citeseer")
    task = build_planetoid("citeseer", seed=0, path=DATA / "citeseer")
    placeholders = np.flatnonzero(raw.labels < 0)
    assert len(placeholders) == 15
    assert (task.num_items, task.num_classes) == (3312, 6)
    assert not np.isin(task.table.items.to_numpy(), placeholders).any()
    edges = raw.graph.edges.numpy()
    kept = ~np.isin(edges, placeholders).any(axis=1)
    assert task.graph.num_edges == int(kept.sum()) == 4536
    # edges are the raw edges between kept nodes, in the tasks's node ids
    ids = task.graph.nodes.to_numpy()[task.graph.edges.numpy()]
    assert sorted(map(tuple, np.sort(ids, 1))) == sorted(map(tuple, np.sort(edges[kept], 1)))
    assert (task.table.to_dense() >= 0).all()


def test_pubmed_keeps_the_whole_graph_and_labels_only_featured_nodes():
    """The pinned choice: all 19,717 nodes and 44,324 edges; responses and scoring only on the
    1,060 nodes that have features."""
    raw = load_planetoid("pubmed", DATA / "pubmed")
    task = build_planetoid("pubmed", seed=0, path=DATA / "pubmed")
    assert (task.num_items, task.graph.num_edges, task.num_classes) == (19_717, 44_324, 3)
    featured = torch.from_numpy(raw.feature_available)
    assert int(featured.sum()) == 1060
    assert torch.equal(task.eval_mask, featured)
    assert torch.equal(task.evaluation_mask(), featured)
    labelled = torch.bincount(task.table.item_idx, minlength=task.num_items)
    assert torch.equal(labelled, featured.long() * 10)
    assert all(set(rows) <= set(np.flatnonzero(raw.feature_available)) and len(rows) == 300
               for rows in task.info["train_items"])
    assert "eval_mask" in task.notes


def test_knn_graph_matches_brute_force():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 5))
    for k in (1, 3, 6):
        graph = knn_graph(x, k)
        dist = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(dist, np.inf)
        near = np.argsort(dist, axis=1)[:, :k]
        expected = {tuple(sorted((i, int(j)))) for i in range(40) for j in near[i]}
        got = {tuple(sorted(e)) for e in graph.edges.tolist()}
        assert got == expected and graph.num_edges == len(expected)
    with pytest.raises(ValueError, match=r"k must be an integer <= 39"):
        knn_graph(x, 40)


def test_music_genre_graph_and_relabelled_items():
    task = build_music_genre(k=3, seed=0, path=DATA / "music_genre")
    answers, gold = load_crowd("music_genre")
    assert task.summary() == {"name": "music_genre", "N": 700, "M": 44, "K": 10,
                              "labels": 2945, "scored": 700, "edges": 1677,
                              "mean_degree": 2 * 1677 / 700}
    assert abs(task.graph.mean_degree - 4.8) < 0.01  # the paper's mean degree
    assert isinstance(task.table.items, pd.RangeIndex)  # song names (holding the genre) gone
    # the judgements are the source's, item by item: compare (worker, label, gold) multisets
    ours = task.table.to_frame().assign(gold=np.asarray(task.classes)[task.gold.numpy()][
        task.table.item_idx.numpy()])[["worker", "label", "gold"]]
    theirs = answers.assign(gold=gold.reindex(answers["task"]).to_numpy())[
        ["worker", "label", "gold"]]
    key = ["worker", "label", "gold"]
    assert ours.sort_values(key).to_numpy().tolist() == theirs.sort_values(key).to_numpy().tolist()
    # the graph joins songs with close features: rebuild it from the features by brute force
    features = load_music_features(DATA / "music_genre")
    x = features.to_numpy()
    z = (x - x.mean(0)) / x.std(0)
    base = knn_graph(z, 3)
    # item i is song songs[perm[i]] for the seeded permutation the builder documents
    perm = np.random.default_rng(derive_seed(0, "music_genre")).permutation(700)
    song_of_item = np.asarray(sorted(gold.index))[perm]
    assert (np.asarray(task.classes)[task.gold.numpy()] == gold.loc[song_of_item]).all()
    mapped = {tuple(sorted(features.index.get_indexer(song_of_item[list(e)])))
              for e in task.graph.edges.tolist()}
    assert mapped == {tuple(sorted(e)) for e in base.edges.tolist()}


def test_bad_names():
    with pytest.raises(ValueError, match=r"name must be one of \['cora', 'citeseer', 'pubmed'\]"):
        build_planetoid("reddit")
    with pytest.raises(FileNotFoundError, match="music genre audio features not found"):
        load_music_features(DATA / "nowhere")
