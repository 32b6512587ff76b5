"""The outputs of a crowd fit: labels, entropies, worker confusions and gold scores."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.data import AnnotationTable
from pyromodels.report.crowd import crowd_outputs, entropy, label_table


@pytest.fixture
def table():
    df = pd.DataFrame({"task": ["b", "a", "c", "a"], "worker": ["w2", "w1", "w1", "w2"],
                       "label": ["x", "y", "y", "x"]})
    return AnnotationTable.from_dataframe(df)


def test_labels_are_indexed_by_the_users_ids(table):
    p = torch.tensor([[0.5, 0.5], [0.9, 0.1], [0.0, 1.0]])
    frame = label_table(table, p)
    assert frame["task"].tolist() == ["a", "b", "c"]
    assert frame["label"].tolist()[1:] == ["x", "y"]
    assert frame.columns.tolist() == ["task", "label", "p_x", "p_y", "entropy"]
    np.testing.assert_allclose(frame["entropy"], [math.log(2), -0.9 * math.log(0.9)
                                                  - 0.1 * math.log(0.1), 0.0])
    np.testing.assert_allclose(entropy(p), frame["entropy"])
    with pytest.raises(ValueError, match=r"probabilities must have shape \(3, 2\)"):
        label_table(table, p[:2])


def test_sampled_confusions_get_intervals_and_gold_scores(table):
    draws = torch.distributions.Dirichlet(torch.ones(2, 2, 2)).sample((4, 25))
    probs = torch.tensor([[0.2, 0.8], [0.9, 0.1], [0.3, 0.7]])
    gold = pd.Series(["y", "y", "q"], index=["a", "b", "zz"])
    out = crowd_outputs(table, probs, draws, gold=gold, interval=0.5)
    assert len(out.confusion) == 8 and set(out.confusion["worker"]) == {"w1", "w2"}
    flat = draws.reshape(100, 2, 2, 2).double().numpy()
    row = out.confusion.iloc[1]  # worker w1, true x, answer y
    assert row["mean"] == pytest.approx(flat[:, 0, 0, 1].mean())
    assert row["lower"] == pytest.approx(np.quantile(flat[:, 0, 0, 1], 0.25))
    assert out.metrics["gold"] == {"accuracy": 0.5, "macro_f1": pytest.approx(1 / 3),
                                   "num_scored": 2, "num_without_gold": 1}
    point = crowd_outputs(table, probs, draws[:1, :1])
    assert point.confusion.columns.tolist() == ["worker", "true", "answer", "estimate"]
    assert "gold" not in point.metrics
