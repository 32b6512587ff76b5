"""Planetoid loaders on the real npz files, against the documented statistics and raw pickles."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from pyromodels.data import AnnotationTable, load_planetoid

# name: nodes, edges, isolated, feature dim, feature rows, class counts, split sizes,
#       homophily over edges with two labelled ends (rounded), label-propagation test accuracy
PLANETOID = {
    "cora": (2708, 5278, 0, 1433, 2708, [351, 217, 418, 818, 426, 298, 180], (140, 500, 1000),
             (0.81, 2), 0.699),
    "citeseer": (3327, 4552, 48, 3703, 3312, [249, 590, 668, 701, 596, 508], (120, 500, 1000),
                 (0.7377, 4), 0.495),
    "pubmed": (19717, 44324, 0, 500, 1060, [4103, 7739, 7875], (60, 500, 1000), (0.8024, 4),
               0.707),
}


def _label_propagation(data) -> float:
    """100 steps of F <- 0.9 D^-1 A F + 0.1 Y0 from the training labels; test accuracy."""
    graph = data.graph
    adj = graph.adjacency(dtype=torch.float64)
    deg = graph.degree().double()
    inv = torch.where(deg > 0, 1.0 / deg.clamp(min=1), torch.zeros_like(deg))
    y0 = torch.zeros(graph.num_nodes, data.num_classes, dtype=torch.float64)
    y0[torch.tensor(data.idx_train), torch.tensor(data.labels[data.idx_train])] = 1.0
    f = y0.clone()
    for _ in range(100):
        f = 0.9 * inv[:, None] * (adj @ f) + 0.1 * y0
    pred = f.argmax(1).numpy()
    return float(np.mean(pred[data.idx_test] == data.labels[data.idx_test]))


@pytest.mark.parametrize("name", sorted(PLANETOID))
def test_planetoid_statistics(use_shared_data, name):
    nodes, edges, isolated, dim, rows, counts, split, (homo, digits), lp = PLANETOID[name]
    data = load_planetoid(name)
    g = data.graph
    assert (g.num_nodes, g.num_edges, g.symmetric) == (nodes, edges, True)
    assert int((g.degree() == 0).sum()) == isolated
    assert data.features.shape == (nodes, dim) and data.features.dtype == np.float32
    assert int(data.feature_available.sum()) == rows
    # rows without features are all zeros
    assert data.features[~data.feature_available].nnz == 0
    labels = data.labels
    assert data.num_classes == len(counts)
    assert np.bincount(labels[labels >= 0]).tolist() == counts
    assert (len(data.idx_train), len(data.idx_val), len(data.idx_test)) == split
    e = g.edges.numpy()
    both = (labels[e[:, 0]] >= 0) & (labels[e[:, 1]] >= 0)
    assert round(float(np.mean(labels[e[both, 0]] == labels[e[both, 1]])), digits) == homo
    assert round(_label_propagation(data), 3) == lp


def test_cora_graph_equals_the_raw_planetoid_pickle(use_shared_data):
    data = load_planetoid("cora")
    raw = use_shared_data / "cora" / "planetoid" / "ind.cora.graph"
    with open(raw, "rb") as fh:  # a local reference file, read only as a test oracle
        adjacency = pickle.load(fh, encoding="latin1")
    expected = {(min(i, j), max(i, j)) for i, nbrs in adjacency.items() for j in nbrs if i != j}
    got = {tuple(sorted(e)) for e in data.graph.edges.tolist()}
    assert got == expected
    assert data.graph.mean_degree == pytest.approx(2 * 5278 / 2708)
    # node codes line up with a table over the same nodes
    table = AnnotationTable.from_arrays(np.arange(2708), np.zeros(2708, dtype=int),
                                        np.maximum(data.labels, 0))
    assert data.graph.check_matches(table) is data.graph


def test_planetoid_missing_file_and_bad_name(no_data_env, tmp_path):
    with pytest.raises(FileNotFoundError, match=(
            r"Planetoid cora \(cora_planetoid.npz\) not found: looked for cora_planetoid.npz in "
            r"\$PYROMODELS_DATA/cora: .*Set PYROMODELS_DATA to a folder holding "
            r"cora/cora_planetoid.npz")):
        load_planetoid("cora")
    with pytest.raises(FileNotFoundError, match=r"in path: .*elsewhere"):
        load_planetoid("cora", path=tmp_path / "elsewhere")
    with pytest.raises(ValueError, match=r"name must be one of \['cora', 'citeseer', 'pubmed'\]"):
        load_planetoid("reddit")


def test_planetoid_explicit_file_path(shared_data, no_data_env):
    data = load_planetoid("citeseer", path=shared_data / "citeseer" / "citeseer_planetoid.npz")
    assert data.graph.num_nodes == 3327
