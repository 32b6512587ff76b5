"""Properties of the graph contract (Graph).

Random simple graphs round-trip: the degrees count the edge ends, every view (neighbour
lists, CSR arrays, torch and scipy adjacency) describes the same edge set, and reading the
scipy adjacency back gives the graph again. Invalid edge lists, sizes and matrices raise
ValueError or TypeError naming the argument.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyromodels.data import AnnotationTable, Graph

PROFILE = settings.get_profile("properties")


@st.composite
def simple_graphs(draw, symmetric=None):
    """``(num_nodes, edges, symmetric)``: a graph without loops or repeats, each undirected
    edge in a random orientation, rows in a random order."""
    symmetric = draw(st.booleans()) if symmetric is None else symmetric
    n = draw(st.integers(1, 8))
    if symmetric:
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    else:
        pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs))) if pairs else []
    flips = draw(st.lists(st.booleans(), min_size=len(edges), max_size=len(edges)))
    if symmetric:
        edges = [(j, i) if f else (i, j) for (i, j), f in zip(edges, flips)]
    return n, edges, symmetric


def arc_set(n, edges, symmetric) -> set:
    return set(edges) | ({(j, i) for i, j in edges} if symmetric else set())


@PROFILE
@given(simple_graphs())
def test_every_view_describes_the_same_edges(case):
    n, edges, symmetric = case
    g = Graph.from_edges(edges, num_nodes=n, symmetric=symmetric)
    arcs = arc_set(n, edges, symmetric)
    assert g.num_edges == len(edges) and g.edges.tolist() == [list(e) for e in edges]
    assert set(map(tuple, g.arcs().T.tolist())) == arcs and g.arcs().shape[1] == len(arcs)
    out_degree = [sum(1 for a, _ in arcs if a == i) for i in range(n)]
    assert g.degree().tolist() == out_degree
    assert g.mean_degree == len(arcs) / n
    for i in range(n):
        assert g.neighbors(i).tolist() == sorted(b for a, b in arcs if a == i)
        assert g.neighbor_lists()[i].tolist() == g.neighbors(i).tolist()
    assert g.indptr.tolist() == [0, *np.cumsum(out_degree).tolist()]
    dense = np.zeros((n, n))
    for a, b in arcs:
        dense[a, b] = 1
    assert np.array_equal(g.to_scipy().toarray(), dense)
    assert np.array_equal(g.adjacency("coo").to_dense().numpy(), dense)
    assert np.array_equal(g.adjacency("csr").to_dense().numpy(), dense)


@PROFILE
@given(simple_graphs(), st.sampled_from(["sparse", "dense"]))
def test_the_scipy_adjacency_reads_back_as_the_same_graph(case, kind):
    n, edges, symmetric = case
    g = Graph.from_edges(edges, num_nodes=n, symmetric=symmetric)
    matrix = g.to_scipy() if kind == "sparse" else g.to_scipy().toarray()
    again = Graph.from_scipy(matrix, symmetric=symmetric)
    assert again.num_nodes == n and again.num_edges == len(edges)
    assert set(map(tuple, again.arcs().T.tolist())) == arc_set(n, edges, symmetric)


@PROFILE
@given(simple_graphs(symmetric=True))
def test_node_ids_match_the_items_of_a_table_built_in_the_same_order(raises_naming, case):
    n, edges, _ = case
    ids = [f"item-{k:02d}" for k in range(n)]
    table = AnnotationTable.from_dataframe(pd.DataFrame({"task": ids, "worker": "w", "label": 0}))
    g = Graph.from_edges(edges, num_nodes=n, nodes=table.items)
    assert g.check_matches(table) is g
    if n > 1:
        shuffled = Graph.from_edges(edges, num_nodes=n, nodes=ids[::-1])
        raises_naming(lambda: shuffled.check_matches(table), "graph nodes")


# ------------------------------------------------------------------ invalid input
@PROFILE
@given(simple_graphs(), st.data())
def test_bad_edge_lists_are_errors_naming_edges(raises_naming, case, data):
    n, edges, symmetric = case
    edges = [list(e) for e in edges]
    node = data.draw(st.integers(0, n - 1))
    kind = data.draw(st.sampled_from(["loop", "repeat", "reversed", "range", "negative",
                                      "width", "float", "text", "nan", "1d", "bool"]))
    if kind == "reversed" and (not symmetric or not edges):
        kind = "loop"
    if kind == "repeat" and not edges:
        kind = "range"
    bad = {
        "loop": lambda: edges + [[node, node]],
        "repeat": lambda: edges + [edges[0]],
        "reversed": lambda: edges + [edges[-1][::-1]],
        "range": lambda: edges + [[node, n]],
        "negative": lambda: edges + [[-1, node]],
        "width": lambda: [e + [0] for e in edges] or [[0, 1, 2]],
        "float": lambda: [[a + 0.5, b] for a, b in edges] or [[0.5, 1.0]],
        "text": lambda: [[str(a), str(b)] for a, b in edges] or [["0", "1"]],
        "nan": lambda: edges + [[float("nan"), node]],
        "1d": lambda: [node, node],
        "bool": lambda: [[True, False]],
    }[kind]()
    raises_naming(lambda: Graph.from_edges(bad, num_nodes=n, symmetric=symmetric), "edges")


BAD_NUM_NODES = st.one_of(st.integers(-3, 0), st.floats(1.0, 9.0), st.booleans(),
                          st.just("4"), st.none())


@PROFILE
@given(simple_graphs(), BAD_NUM_NODES)
def test_a_bad_node_count_is_an_error_naming_num_nodes(raises_naming, case, bad):
    _, edges, symmetric = case
    raises_naming(lambda: Graph.from_edges(edges, num_nodes=bad, symmetric=symmetric),
                  "num_nodes")


@PROFILE
@given(simple_graphs(), st.data())
def test_bad_options_are_errors_naming_the_option(raises_naming, case, data):
    n, edges, symmetric = case
    kind = data.draw(st.sampled_from(["symmetric", "nodes", "duplicate nodes", "node",
                                      "layout", "dtype"]))
    if kind == "symmetric":
        value = data.draw(st.sampled_from([1, 0, "yes", None]))
        raises_naming(lambda: Graph.from_edges(edges, n, symmetric=value), "symmetric")
    elif kind == "nodes":
        size = data.draw(st.sampled_from([n - 1, n + 1]))
        raises_naming(lambda: Graph.from_edges(edges, n, nodes=[f"v{k}" for k in range(size)]),
                      "nodes")
    elif kind == "duplicate nodes":
        ids = ["same"] * n if n > 1 else [None]
        raises_naming(lambda: Graph.from_edges(edges, n, nodes=ids), "nodes")
    else:
        g = Graph.from_edges(edges, n, symmetric=symmetric)
        if kind == "node":
            node = data.draw(st.sampled_from([-1, n, 0.0, "0", True]))
            raises_naming(lambda: g.neighbors(node), "node")
        elif kind == "layout":
            raises_naming(lambda: g.adjacency(layout="dense"), "layout")
        else:
            dtype = data.draw(st.sampled_from(["float64", np.float64, float]))
            raises_naming(lambda: g.adjacency(dtype=dtype), "dtype")


@PROFILE
@given(st.integers(1, 5), st.data())
def test_bad_adjacency_matrices_are_errors_naming_matrix(raises_naming, n, data):
    kind = data.draw(st.sampled_from(["shape", "weight", "negative", "asymmetric", "nan",
                                      "text", "vector"]))
    dense = np.zeros((n + 1, n + 1))
    i, j = data.draw(st.sampled_from([(a, b) for a in range(n + 1) for b in range(n + 1)
                                      if a != b]))
    if kind == "shape":
        bad = np.zeros((n, n + 1))
    elif kind in ("weight", "negative", "nan"):
        dense[i, j] = dense[j, i] = {"weight": 2.0, "negative": -1.0, "nan": np.nan}[kind]
        bad = dense
    elif kind == "asymmetric":
        dense[i, j] = 1.0
        bad = dense
    elif kind == "text":
        bad = np.full((n + 1, n + 1), "0")
    else:
        bad = np.zeros(n + 1)
    as_sparse = data.draw(st.booleans()) and kind not in ("text", "vector")
    raises_naming(lambda: Graph.from_scipy(sp.csr_matrix(bad) if as_sparse else bad), "matrix")


@PROFILE
@given(simple_graphs(symmetric=False))
def test_a_directed_graph_keeps_arcs_of_both_orientations_apart(case):
    n, edges, _ = case
    g = Graph.from_edges(edges, num_nodes=n, symmetric=False)
    assert torch.equal(g.arcs(), g.edges.T)
    assert g.degree().tolist() == np.bincount([a for a, _ in edges], minlength=n).tolist()
