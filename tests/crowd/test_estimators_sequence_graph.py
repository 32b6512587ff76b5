"""The DataFrame facades of the sequential model (sequence and position columns) and of the
networked model (an edge list): the same fits as the models, indexed by the user's ids."""

import pickle

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.crowd import (
    NetworkedDawidSkene,
    NetworkedDawidSkeneEstimator,
    SequentialDawidSkene,
    SequentialDawidSkeneEstimator,
)
from pyromodels.data import WorkerPopulation, simulate_networked_annotations
from pyromodels.data.simulate_crowd import simulate_sequential_annotations


def sequence_frame(seed=0):
    seqs, _ = simulate_sequential_annotations([25, 30, 20], 4, 3, stickiness=0.6, seed=seed)
    table = seqs.data
    seq_of, pos_of = seqs.sequence_ids().numpy(), seqs.positions().numpy()
    items = table.item_idx.numpy()
    df = pd.DataFrame({
        "doc": np.array(["doc-a", "doc-b", "doc-c"])[seq_of[items]],
        "token": pos_of[items] * 10,  # any sortable positions, not 0..T-1
        "annotator": [f"ann-{w}" for w in table.worker_idx.tolist()],
        "tag": np.array(["B", "I", "O"])[table.label_idx.numpy()],
    }).sample(frac=1.0, random_state=1)  # rows in no particular order
    return df, seqs


SEQ_COLUMNS = {"sequence": "doc", "position": "token", "worker": "annotator", "label": "tag"}


def test_sequential_facade_is_the_models_em_fit_indexed_by_sequence_and_position():
    df, seqs = sequence_frame()
    assert seqs.data.counts_per_item().min() > 0  # every position labelled: same chain
    est = SequentialDawidSkeneEstimator(**SEQ_COLUMNS).fit(df)
    post = SequentialDawidSkene().fit(seqs, method="em", seed=0, progress=False, max_iter=100,
                                      tol=1e-5)
    assert est.labels_.index.names == ["doc", "token"] and len(est.labels_) == 75
    assert est.labels_.index[:2].tolist() == [("doc-a", 0), ("doc-a", 10)]
    assert est.labels_.index[25] == ("doc-b", 0)
    np.testing.assert_array_equal(est.labels_.to_numpy(),
                                  np.array(["B", "I", "O"])[post.params["labels"].numpy()])
    np.testing.assert_allclose(est.probas_.to_numpy(), post.params["posterior"].numpy(), atol=1e-12)
    np.testing.assert_allclose(est.transitions_.to_numpy(), post.params["transition"].numpy())
    assert est.transitions_.index.name == "previous" and est.transitions_.columns.name == "next"
    np.testing.assert_allclose(est.initial_.to_numpy(), post.params["initial"].numpy())
    np.testing.assert_allclose(est.errors_.groupby(level=0).sum(), 1.0, atol=1e-12)
    assert est.errors_.index.names == ["annotator", "tag"]
    conf = post.params["confusion"].numpy()
    np.testing.assert_allclose(est.confusions_.to_numpy(), conf.reshape(-1, 3))
    assert est.converged_ is True and est.n_iter_ == len(est.loss_history_) - 1
    again = pickle.loads(pickle.dumps(est))
    pd.testing.assert_series_equal(again.labels_, est.labels_)


def test_sequential_facade_gibbs_and_bad_input():
    df, _ = sequence_frame()
    em = SequentialDawidSkeneEstimator(**SEQ_COLUMNS).fit(df)
    est = SequentialDawidSkeneEstimator(method="gibbs", num_samples=40, num_warmup=20,
                                        num_chains=1, random_state=2, **SEQ_COLUMNS).fit(df)
    assert est.posterior_.attrs["seed"] == 2 and est.n_iter_ == 60
    np.testing.assert_allclose(est.probas_.sum(axis=1), 1.0)
    assert (est.labels_ == em.labels_).mean() > 0.9
    with pytest.raises(ValueError, match=r"df is missing column\(s\) \['sequence'\]; .* Name "
                       "the right columns with sequence="):
        SequentialDawidSkeneEstimator(**{**SEQ_COLUMNS, "sequence": "sequence"}).fit(df)
    with pytest.raises(ValueError, match=r"df\['token'\] holds missing values"):
        SequentialDawidSkeneEstimator(**SEQ_COLUMNS).fit(df.assign(token=np.nan))
    with pytest.raises(ValueError, match="method must be one of"):
        SequentialDawidSkeneEstimator(method="svi", **SEQ_COLUMNS).fit(df)


def graph_frames(seed=0):
    table, graph, _ = simulate_networked_annotations(
        80, WorkerPopulation(4, labels_per_item=3), 3, mean_degree=3, seed=seed)
    df = table.to_frame()
    df["task"] = "item-" + df["task"].astype(str).str.zfill(2)
    edges = pd.DataFrame(graph.edges.numpy(), columns=["from", "to"])
    edges = ("item-" + edges.astype(str).apply(lambda c: c.str.zfill(2)))
    return df, edges, table, graph


def test_networked_facade_is_the_models_em_fit():
    df, edges, table, graph = graph_frames()
    est = NetworkedDawidSkeneEstimator(source="from", target="to").fit(df, edges)
    post = NetworkedDawidSkene().fit((table, graph), method="em", seed=0, progress=False,
                                     max_iter=100, tol=1e-5)
    assert list(est.labels_.index[:2]) == ["item-00", "item-01"] and est.labels_.index.name == "task"
    np.testing.assert_array_equal(est.labels_.to_numpy(), post.params["labels"].numpy())
    np.testing.assert_allclose(est.probas_.to_numpy(), post.params["posteriors"].numpy())
    torch.testing.assert_close(est.graph_.edges, graph.edges)
    np.testing.assert_allclose(est.confusions_.to_numpy(),
                               post.params["confusion"].numpy().reshape(-1, 3))
    assert est.converged_ is not None and est.posterior_.method == "em"
    again = pickle.loads(pickle.dumps(est))
    pd.testing.assert_frame_equal(again.probas_, est.probas_)


def test_networked_facade_keeps_tasks_known_only_from_the_edges():
    df, edges, _, _ = graph_frames()
    extra = pd.DataFrame({"from": ["item-00", "item-01"], "to": ["zz-new", "zz-new"]})
    est = NetworkedDawidSkeneEstimator(source="from", target="to", method="gibbs",
                                       num_samples=30, num_warmup=10, num_chains=1)
    est.fit(df, pd.concat([edges, extra], ignore_index=True))
    assert est.labels_.index[-1] == "zz-new" and len(est.labels_) == 81
    assert est.table_.counts_per_item()[-1] == 0
    np.testing.assert_allclose(est.probas_.sum(axis=1), 1.0)


def test_networked_facade_bad_edges():
    df, edges, _, _ = graph_frames()
    est = NetworkedDawidSkeneEstimator(source="from", target="to")
    with pytest.raises(TypeError, match="edges is required: a DataFrame with columns 'from' and 'to'"):
        est.fit(df)
    with pytest.raises(TypeError, match="edges must be a pandas DataFrame"):
        est.fit(df, edges.to_numpy())
    with pytest.raises(ValueError, match=r"edges is missing column\(s\) \['to'\]"):
        est.fit(df, edges.rename(columns={"to": "dst"}))
    with pytest.raises(ValueError, match=r"edges\['from'\] holds missing ids"):
        est.fit(df, edges.assign(**{"from": None}))
    with pytest.raises(ValueError, match="edges repeats 1 undirected edge"):
        est.fit(df, pd.concat([edges, edges.iloc[:1][["to", "from"]].set_axis(["from", "to"], axis=1)]))
