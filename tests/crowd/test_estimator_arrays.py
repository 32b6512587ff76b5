"""DawidSkeneEstimator's EM on NumPy arrays and the C passes: the same fitted attributes as the
torch path (values, dtypes and types), the torch objects built on first use, and a process
that imports the facade and fits never imports torch, Pyro, numba, SciPy's optimisers or
matplotlib (what is imported is tested, never how long it takes)."""

import json
import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.core.device import default_dtype
from pyromodels.crowd.ds.label_checks import SingleWorkerClassWarning, SparseWorkerWarning
from pyromodels.crowd.estimators import DawidSkeneEstimator, array_fit
from pyromodels.data import WorkerPopulation, simulate_annotations

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "pyro", "numba", "scipy.optimize", "matplotlib", "sklearn")
FRAME_ATTRS = ("probas_", "labels_", "errors_", "confusions_", "priors_")


def _frame(seed=0, items=300, workers=15, classes=4):
    table, _ = simulate_annotations(items, WorkerPopulation(workers, labels_per_item=4), classes,
                                    seed=seed)
    return table.to_frame().sample(frac=1.0, random_state=seed)


def _torch_path(monkeypatch):
    monkeypatch.setattr("pyromodels.crowd.estimators.dawid_skene.fit_on_arrays",
                        lambda est, codes: False)


def _fits(df, monkeypatch, **kw):
    """``(array fit, torch fit, their warnings)`` of the same estimator on ``df``."""
    with warnings.catch_warnings(record=True) as got_arrays:
        warnings.simplefilter("always")
        arrays = DawidSkeneEstimator(**kw).fit(df)
    assert "_em_arrays" in vars(arrays) and "posterior_" not in vars(arrays)
    with monkeypatch.context() as patch:
        _torch_path(patch)
        with warnings.catch_warnings(record=True) as got_torch:
            warnings.simplefilter("always")
            reference = DawidSkeneEstimator(**kw).fit(df)
    assert "_em_arrays" not in vars(reference)
    return arrays, reference, ([(type(w.message), str(w.message)) for w in got_arrays],
                               [(type(w.message), str(w.message)) for w in got_torch])


def _assert_same(arrays, reference):
    for name in FRAME_ATTRS:
        got, want = getattr(arrays, name), getattr(reference, name)
        assert type(got) is type(want), name
        if isinstance(want, pd.DataFrame):
            pd.testing.assert_frame_equal(got, want, check_exact=True)
        else:
            pd.testing.assert_series_equal(got, want, check_exact=True)
    assert arrays.loss_history_ == reference.loss_history_
    assert (arrays.n_iter_, arrays.converged_) == (reference.n_iter_, reference.converged_)
    assert type(arrays.n_iter_) is type(reference.n_iter_)
    # the torch objects, built on first use, hold what the torch path's fit holds
    post, want = arrays.posterior_, reference.posterior_
    assert set(post.samples) == set(want.samples) and set(post.params) == set(want.params)
    for key in want.samples:
        assert torch.equal(post.samples[key], want.samples[key]), key
    for key, value in want.params.items():
        assert post.params[key].dtype == value.dtype and torch.equal(post.params[key], value), key
    assert torch.equal(post.losses, want.losses)
    assert {k: post.diagnostics[k] for k in ("converged", "n_iter", "restart_objectives")} == \
        {k: want.diagnostics[k] for k in ("converged", "n_iter", "restart_objectives")}
    assert post.data.backend == want.data.backend == "c"
    assert post.attrs["seed"] == want.attrs["seed"] and post.attrs["tol"] == want.attrs["tol"]
    table, ref_table = arrays.table_, reference.table_
    for name in ("item_idx", "worker_idx", "label_idx"):
        assert torch.equal(getattr(table, name), getattr(ref_table, name))
    assert table.items.equals(ref_table.items) and table.classes.equals(ref_table.classes)
    assert vars(arrays.model_) == vars(reference.model_)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("kw", [
    {},
    {"n_iter": 3},  # stops before converging
    {"n_iter": 0},  # the start itself
    {"n_iter": 4, "tol": 0},  # never stops early
    {"update_prior": False, "diagonal": 0},
    {"diagonal": (0.5, 0.0, 2.0, 1.0)},  # one pseudo-count per class
    {"prior_concentration": 2, "confusion_concentration": 1.5, "em_floor": 0.0, "tol": 1e-8},
])
def test_the_array_path_gives_the_torch_paths_attributes(kw, dtype, monkeypatch):
    with default_dtype(dtype):
        arrays, reference, (w_arrays, w_torch) = _fits(_frame(), monkeypatch, **kw)
        assert w_arrays == w_torch
        assert arrays.posterior_.params["probas"].dtype == dtype  # the working dtype
        assert (arrays.probas_.dtypes == np.float64).all()
        _assert_same(arrays, reference)


def test_string_ids_repeats_and_the_label_warnings(monkeypatch):
    df = _frame(seed=3, items=120, workers=8, classes=3)
    df["task"] = "t" + df["task"].astype(str)
    df["label"] = df["label"].map({0: "cat", 1: "dog", 2: "eel"})
    lone = pd.DataFrame({"task": ["t0", "t1"], "worker": [99, 98], "label": ["fox", "dog"]})
    df = pd.concat([df, lone, df.iloc[:3]], ignore_index=True)  # a lone class, a lone worker
    arrays, reference, (w_arrays, w_torch) = _fits(df, monkeypatch, allow_repeats=True)
    assert {SingleWorkerClassWarning, SparseWorkerWarning} <= {w for w, _ in w_arrays}
    assert w_arrays == w_torch
    _assert_same(arrays, reference)


@pytest.mark.parametrize("kw, reason", [
    ({"method": "gibbs", "num_samples": 5, "num_warmup": 5, "num_chains": 1}, "method"),
    ({"init_confusion": np.full((15, 4, 4), 0.25)}, "init_confusion"),
    ({"confusion_concentration": [[2.0] * 4] * 4}, "an array of concentrations"),
    ({"progress": True}, "progress bars"),
])
def test_other_fits_take_the_torch_path(kw, reason):
    est = DawidSkeneEstimator(**kw).fit(_frame(items=60))
    assert "_em_arrays" not in vars(est), reason
    assert "posterior_" in vars(est)


def test_errors_are_the_torch_paths():
    df = _frame(items=40)
    with pytest.raises(ValueError, match="repeated"):
        DawidSkeneEstimator().fit(pd.concat([df, df.iloc[:1]]))
    with pytest.raises(ValueError, match="prior_concentration must be > 0"):
        DawidSkeneEstimator(prior_concentration=-1.0).fit(df)
    with pytest.raises(ValueError, match="at least 2 classes"):
        DawidSkeneEstimator().fit(df.assign(label=0))


def test_a_refit_or_failed_fit_drops_the_arrays(monkeypatch):
    df = _frame(items=60)
    est = DawidSkeneEstimator().fit(df)
    first = est.probas_
    with pytest.raises(ValueError):
        est.fit(df.assign(label=np.nan))
    assert "_em_arrays" not in vars(est)
    with pytest.raises(AttributeError, match="not fitted"):
        est.posterior_  # noqa: B018
    est.set_params(method="gibbs", num_samples=5, num_warmup=5, num_chains=1).fit(df)
    assert "_em_arrays" not in vars(est) and est.posterior_.method == "gibbs"
    assert first.shape == est.probas_.shape


def test_pickles_and_predicts_before_and_after_the_torch_objects_exist():
    df = _frame(items=80)
    est = DawidSkeneEstimator().fit(df)
    loaded = pickle.loads(pickle.dumps(est))
    assert "posterior_" not in vars(loaded)
    pd.testing.assert_frame_equal(loaded.predict_proba(df), est.predict_proba(df))
    assert isinstance(loaded.posterior_.params["probas"], torch.Tensor)
    assert array_fit.ARRAY_RESULTS == ("posterior_", "model_", "table_")


def _fresh(code: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYROMODELS_NO_C", None)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_pyromodels_imports_no_heavy_module():
    out = _fresh(f"""
        import json, sys
        import pyromodels, pyromodels.crowd, pyromodels.data, pyromodels.core
        print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))
    """)
    assert out == []


def test_a_fresh_process_fits_em_from_a_dataframe_without_torch():
    df = _frame(seed=5)
    code = f"""
        import json, sys
        import pandas as pd
        from pyromodels.crowd import DawidSkeneEstimator
        df = pd.DataFrame({df.to_dict(orient="list")!r})
        est = DawidSkeneEstimator(n_iter=20)
        labels = est.fit_predict(df)
        print(json.dumps({{"heavy": [m for m in {HEAVY!r} if m in sys.modules],
                          "labels": labels.tolist(), "dtype": str(est.probas_.dtypes.iloc[0]),
                          "probas": est.probas_.to_numpy().ravel().tolist(),
                          "history": est.loss_history_}}))
    """
    out = _fresh(code)
    assert out["heavy"] == []
    # a new process has torch's default dtype, float32: the torch path gives the same there
    with default_dtype(torch.float32), pytest.MonkeyPatch.context() as patch:
        _torch_path(patch)
        reference = DawidSkeneEstimator(n_iter=20).fit(df)
    assert out["labels"] == reference.labels_.tolist()
    assert out["dtype"] == "float64"
    assert out["probas"] == reference.probas_.to_numpy().ravel().tolist()
    assert out["history"] == reference.loss_history_
