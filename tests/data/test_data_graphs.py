"""Graph: sparse views against dense brute force and scipy; validation of edges and ids."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch

from pyromodels.data import AnnotationTable, Graph

EDGES = [[0, 1], [2, 1], [3, 0], [3, 2]]


def _dense(edges, n, symmetric=True):
    a = np.zeros((n, n))
    for i, j in edges:
        a[i, j] = 1
        if symmetric:
            a[j, i] = 1
    return a


def test_undirected_views_match_dense_adjacency():
    g = Graph.from_edges(EDGES, num_nodes=5)
    dense = _dense(EDGES, 5)
    assert g.num_edges == 4
    np.testing.assert_array_equal(g.adjacency().to_dense().numpy(), dense)
    np.testing.assert_array_equal(g.adjacency("csr").to_dense().numpy(), dense)
    np.testing.assert_array_equal(g.to_scipy().toarray(), dense)
    assert g.degree().tolist() == dense.sum(1).astype(int).tolist()
    for i in range(5):
        assert g.neighbors(i).tolist() == np.flatnonzero(dense[i]).tolist()
    assert [n.tolist() for n in g.neighbor_lists()] == [[1, 3], [0, 2], [1, 3], [0, 2], []]
    assert g.mean_degree == pytest.approx(8 / 5)
    assert g.adjacency(dtype=torch.float64).dtype == torch.float64


def test_directed_graph_uses_out_neighbours():
    g = Graph.from_edges(EDGES, num_nodes=4, symmetric=False)
    dense = _dense(EDGES, 4, symmetric=False)
    np.testing.assert_array_equal(g.to_scipy().toarray(), dense)
    assert g.degree().tolist() == [1, 0, 1, 2]
    # both orientations of a pair are distinct arcs
    assert Graph.from_edges([[0, 1], [1, 0]], num_nodes=2, symmetric=False).num_edges == 2


def test_from_scipy_round_trip():
    g = Graph.from_edges(EDGES, num_nodes=5)
    back = Graph.from_scipy(g.to_scipy())
    assert sorted(map(tuple, back.edges.tolist())) == sorted(
        tuple(sorted(e)) for e in EDGES)
    directed = Graph.from_scipy(sp.csr_matrix(_dense(EDGES, 4, symmetric=False)), symmetric=False)
    assert sorted(map(tuple, directed.edges.tolist())) == sorted(map(tuple, EDGES))
    assert Graph.from_scipy(np.zeros((3, 3))).num_edges == 0


def test_empty_graph_and_node_ids():
    g = Graph.from_edges(np.zeros((0, 2), dtype=int), num_nodes=3, nodes=["a", "b", "c"])
    assert g.degree().tolist() == [0, 0, 0] and g.num_edges == 0
    table = AnnotationTable.from_dataframe(
        pd.DataFrame({"task": ["c", "a", "b"], "worker": [1, 1, 1], "label": [0, 1, 0]}))
    assert g.check_matches(table) is g


@pytest.mark.parametrize(
    "edges, n, symmetric, match",
    [
        ([[0, 5]], 5, True, r"edges must hold node codes in \[0, 4\] \(num_nodes=5\), found 5"),
        ([[0, 1], [2, 2]], 3, True, r"edges holds 1 self loop\(s\), e.g. row 1 = \[2, 2\]"),
        ([[0, 1], [1, 0]], 2, True, r"edges repeats 1 undirected edge \(in either orientation\)"),
        ([[0, 1], [0, 1]], 2, False, r"edges repeats 1 arc\(s\), e.g. row 1 = \[0, 1\]"),
        ([[0, 1, 2]], 3, True, r"edges must have shape \(E, 2\), got \(1, 3\)"),
        ([[0, -1]], 3, True, "edges must be non-negative integer labels"),
    ],
)
def test_bad_edges(edges, n, symmetric, match):
    with pytest.raises(ValueError, match=match):
        Graph.from_edges(edges, num_nodes=n, symmetric=symmetric)


def test_bad_scipy_and_ids():
    with pytest.raises(ValueError, match="matrix must equal its transpose for symmetric=True"):
        Graph.from_scipy(sp.csr_matrix(np.array([[0, 1], [0, 0]])))
    with pytest.raises(ValueError, match="matrix must hold only 0/1 entries"):
        Graph.from_scipy(sp.csr_matrix(np.array([[0, 2], [2, 0]])))
    with pytest.raises(ValueError, match=r"matrix must be square, got shape \(2, 3\)"):
        Graph.from_scipy(sp.csr_matrix(np.zeros((2, 3))))
    with pytest.raises(ValueError, match=r"edges holds 2 self loop\(s\), e.g. row 0 = \[0, 0\]"):
        Graph.from_scipy(sp.identity(2, format="csr") * 1)
    with pytest.raises(ValueError, match="nodes must hold num_nodes=3 ids, got 2"):
        Graph.from_edges([[0, 1]], num_nodes=3, nodes=["a", "b"])
    with pytest.raises(ValueError, match="num_nodes must be an integer >= 1"):
        Graph.from_edges([[0, 1]], num_nodes=0)
    with pytest.raises(ValueError, match=r"node must be an integer <= 2"):
        Graph.from_edges([[0, 1]], num_nodes=3).neighbors(3)


def test_check_matches_errors():
    g = Graph.from_edges([[0, 1]], num_nodes=3, nodes=["a", "b", "c"])
    table = AnnotationTable.from_arrays([0, 1], [0, 0], [0, 1])
    with pytest.raises(ValueError, match="graph has 3 nodes but the table has 2 items"):
        g.check_matches(table)
    other = AnnotationTable.from_dataframe(
        pd.DataFrame({"task": ["a", "x", "c"], "worker": [1, 1, 1], "label": [0, 1, 0]}))
    with pytest.raises(ValueError, match=r"differ first at code 1: node id 'b' vs item id 'c'"):
        g.check_matches(other)
    with pytest.raises(TypeError, match="table must have an items index, got list"):
        g.check_matches([1, 2, 3])
