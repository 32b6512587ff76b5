"""The result record: validation of its fields and the JSON-ready copy of its metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.report import DemoResult, check_metrics


def test_check_metrics_converts_numpy_scalars_exactly():
    metrics = {
        "nuts": {"ess": np.float32(0.5), "divergences": np.int64(3), "ok": np.bool_(True)},
        "per_class": (np.float64(0.25), 1, None, "x"),
    }
    out = check_metrics(metrics)
    assert out == {
        "nuts": {"ess": 0.5, "divergences": 3, "ok": True},
        "per_class": [0.25, 1, None, "x"],
    }
    assert type(out["nuts"]["ess"]) is float
    assert type(out["nuts"]["divergences"]) is int
    assert type(out["nuts"]["ok"]) is bool


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ({"svi": {"elbo": torch.tensor(1.0)}}, r"metrics\['svi'\]\['elbo'\] must be a number"),
        ({"svi": np.ones(2)}, r"metrics\['svi'\] must be a number.*x.tolist\(\)"),
        ({1: 2.0}, "metrics keys must be strings, got int 1"),
        ({"a": [1, object()]}, r"metrics\['a'\]\[1\] must be a number"),
    ],
)
def test_check_metrics_rejects_non_json_values(metrics, message):
    with pytest.raises(TypeError, match=message):
        check_metrics(metrics)
    with pytest.raises(TypeError, match=message):
        DemoResult(name="r", metrics=metrics)


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"name": "a/b"}, ValueError, "name must start with a letter or digit"),
        ({"summary": 3}, TypeError, "summary must be a string, got int"),
        ({"metrics": [1]}, TypeError, "metrics must be a dict, got list"),
        (
            {"tables": {"t": [[1]]}},
            TypeError,
            r"tables\['t'\] must be a pandas DataFrame, got list",
        ),
        ({"tables": {"": pd.DataFrame()}}, ValueError, "tables keys must be non-empty strings"),
        ({"figures": {"f": "png"}}, TypeError, r"figures\['f'\] must be a matplotlib Figure"),
        ({"inference_data": {"a b": None}}, ValueError, "inference_data key must start with"),
        ({"inference_data": {"nuts": {}}}, TypeError, r"inference_data\['nuts'\] must be an Infer"),
    ],
)
def test_demo_result_validation(fields, error, message):
    arguments = {"name": "result", **fields}
    with pytest.raises(error, match=message):
        DemoResult(**arguments)


def test_demo_result_accepts_captions_with_spaces():
    result = DemoResult(name="ok", tables={"posterior summary": pd.DataFrame({"a": [1.0]})})
    assert list(result.tables) == ["posterior summary"]
