"""DawidSkeneEstimator's data-parallel EM on a Dask cluster: the same fit as in memory (to
1e-10, the same stopping iteration), tasks whose labels straddle partitions, clear errors for
bad input, a worker restarted mid-fit, and posteriors written to parquet."""

import warnings

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

from pyromodels.crowd.ds import distributed as cluster_em
from pyromodels.crowd.estimators import DawidSkeneEstimator
from pyromodels.data import WorkerPopulation, simulate_annotations
from pyromodels.data.columns import MissingColumnError

TOL = 1e-10


@pytest.fixture
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        yield c


def _frame(seed=0, items=400, workers=20, classes=3):
    table, _ = simulate_annotations(items, WorkerPopulation(workers, labels_per_item=4), classes,
                                    seed=seed)
    frame = table.to_frame().sample(frac=1.0, random_state=seed).reset_index(drop=True)
    frame["task"] = "t" + frame["task"].astype(str)  # string ids, as most tables have
    return frame


def _fit(df, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sparse-worker warnings alike on both sides
        return DawidSkeneEstimator(**options).fit(df)


def _assert_same_fit(ours, ref):
    """``ours`` (a cluster fit) equals ``ref`` (the in-memory fit) to :data:`TOL`."""
    assert ours.n_iter_ == ref.n_iter_ and ours.converged_ == ref.converged_
    np.testing.assert_allclose(ours.loss_history_, ref.loss_history_, rtol=TOL, atol=0)
    pd.testing.assert_series_equal(ours.priors_, ref.priors_, rtol=TOL, atol=TOL)
    pd.testing.assert_frame_equal(ours.confusions_, ref.confusions_, rtol=TOL, atol=TOL)
    pd.testing.assert_frame_equal(ours.errors_, ref.errors_.sort_index(), rtol=TOL, atol=TOL)
    probas = ours.probas_.compute()
    assert probas.index.is_unique and len(probas) == len(ref.probas_)
    probas = probas.loc[ref.probas_.index]
    pd.testing.assert_index_equal(probas.columns, ref.probas_.columns)
    np.testing.assert_allclose(probas.to_numpy(), ref.probas_.to_numpy(), rtol=0, atol=TOL)
    labels = ours.labels_.compute().loc[ref.labels_.index]
    np.testing.assert_array_equal(labels.to_numpy(), ref.labels_.to_numpy())


def test_cluster_fit_equals_in_memory_fit(client):
    frame = _frame()
    ddf = dd.from_pandas(frame, npartitions=4)
    ref = _fit(frame)
    assert ref.n_iter_ > 3  # several steps, so the stopping rule is tested
    ours = _fit(ddf)
    _assert_same_fit(ours, ref)
    with pytest.raises(ValueError, match="fitted on a Dask cluster, which keeps no table_"):
        ours.predict(frame)


def test_fixed_steps_and_start_equal_in_memory(client):
    """``tol=0`` (a fixed number of steps) and ``n_iter=0`` (the start: vote fractions)."""
    frame = _frame(seed=3)
    ddf = dd.from_pandas(frame, npartitions=3)
    for options in ({"n_iter": 4, "tol": 0}, {"n_iter": 0}):
        _assert_same_fit(_fit(ddf, **options), _fit(frame, **options))


def test_task_straddling_partitions(client):
    frame = _frame(seed=1).sort_values("worker", kind="stable").reset_index(drop=True)
    ddf = dd.from_pandas(frame, npartitions=5, sort=False)
    parts = [set(p["task"]) for p in dask.compute(*ddf.to_delayed())]
    straddling = {t for i, a in enumerate(parts) for b in parts[i + 1:] for t in a & b}
    assert len(straddling) > 100  # most tasks have labels in several input partitions
    _assert_same_fit(_fit(ddf), _fit(frame))


@pytest.mark.parametrize("tasks", [["a", "b", "c"], [10, 20, 30]])
def test_fewer_tasks_than_partitions(client, tasks):
    """The shuffle by task leaves partitions without rows: they count nothing."""
    frame = pd.DataFrame({"task": np.repeat(tasks, 3),
                          "worker": ["u", "v", "w"] * 3,
                          "label": ["x", "x", "y", "y", "y", "y", "x", "y", "x"]})
    ddf = dd.from_pandas(frame, npartitions=3).repartition(npartitions=8)
    assert ddf.npartitions == 8
    _assert_same_fit(_fit(ddf), _fit(frame))


def test_configured_columns_and_missing_column(client):
    frame = _frame().rename(columns={"worker": "annotator", "label": "answer"})
    ddf = dd.from_pandas(frame, npartitions=2)
    ours = _fit(ddf, worker="annotator", label="answer")
    ref = _fit(frame, worker="annotator", label="answer")
    _assert_same_fit(ours, ref)
    with pytest.raises(MissingColumnError, match=r"'worker'.*worker="):
        DawidSkeneEstimator(label="answer").fit(ddf)


def test_label_outside_declared_classes_in_one_partition(client):
    frame = _frame()
    frame.loc[len(frame) - 1, "label"] = 7  # the last row: the last partition only
    ddf = dd.from_pandas(frame, npartitions=4)
    with pytest.raises(ValueError, match=r"df\['label'\] holds id\(s\) not in classes: 7"):
        DawidSkeneEstimator(classes=[0, 1, 2]).fit(ddf)


def test_unsupported_options_and_no_client():
    frame = _frame()
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(ValueError, match="method='em'"):
        DawidSkeneEstimator(method="gibbs").fit(ddf)
    with pytest.raises(ValueError, match="distributed.Client"):
        DawidSkeneEstimator().fit(ddf)  # no client in this test
    with pytest.raises(ValueError, match="to_parquet is for a Dask DataFrame"):
        DawidSkeneEstimator().fit(frame, to_parquet="somewhere")


def test_path_that_is_not_parquet_or_csv(client):
    with pytest.raises(ValueError, match=r"df as a path must name parquet files"):
        DawidSkeneEstimator().fit("labels.json")


def test_posteriors_to_parquet_read_back_equal(client, tmp_path):
    frame = _frame(seed=2)
    ddf = dd.from_pandas(frame, npartitions=3)
    lazy = _fit(ddf)
    written = DawidSkeneEstimator()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        written.fit(ddf, to_parquet=tmp_path / "posteriors")
    on_disk = pd.read_parquet(tmp_path / "posteriors")  # the task index restored
    expected = lazy.probas_.compute()
    expected.columns = [str(c) for c in expected.columns]
    expected["agg_label"] = lazy.labels_.compute()
    # the string index reads back as pyarrow's string dtype: the same ids
    pd.testing.assert_frame_equal(on_disk.sort_index(), expected.sort_index(),
                                  check_exact=True, check_dtype=False, check_index_type=False)
    pd.testing.assert_frame_equal(written.probas_.compute().sort_index(),
                                  lazy.probas_.compute().sort_index(), check_exact=True,
                                  check_index_type=False)


def test_fit_from_parquet_and_csv_paths(client, tmp_path):
    frame = _frame(seed=4)
    ref = _fit(frame)
    dd.from_pandas(frame, npartitions=3).to_parquet(tmp_path / "labels")
    _assert_same_fit(_fit(str(tmp_path / "labels")), ref)
    half = len(frame) // 2
    for i, chunk in enumerate((frame.iloc[:half], frame.iloc[half:])):
        chunk.to_csv(tmp_path / f"labels-{i}.csv", index=False)
    _assert_same_fit(_fit(str(tmp_path / "labels-*.csv")), ref)


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_worker_restarted_mid_fit_gives_the_same_fit(monkeypatch):
    """Two worker processes; one is restarted between EM iterations, losing its persisted
    partitions, which Dask recomputes from the graph."""
    frame = _frame(seed=5)
    ref = _fit(frame)
    restarts = []
    passes = cluster_em.cluster_passes

    def restarting_passes(labels):
        vote_counts, em_counts = passes(labels)

        def em_counts_then_restart(pi, conf):
            out = em_counts(pi, conf)
            if len(restarts) == 0:
                holders = labels.client.who_has(labels.parts)
                victim = next(iter(holders[labels.parts[0].key]))
                restarts.append(labels.client.restart_workers([victim], raise_for_error=True))
            return out

        return cluster_em.EMPasses(vote_counts, em_counts_then_restart)

    monkeypatch.setattr(cluster_em, "cluster_passes", restarting_passes)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster):
        ours = _fit(dd.from_pandas(frame, npartitions=4))
        assert len(restarts) == 1
        _assert_same_fit(ours, ref)
