r"""Dawid-Skene EM data-parallel on a Dask cluster, against the in-memory fit.

Data: the crowd simulator's Dawid-Skene labels (``M = 2,400`` workers with the default
:class:`pyromodels.data.WorkerPopulation`'s confusions from
:func:`~pyromodels.data.random_confusions`, drawn once from the seed; 6 distinct workers per
task drawn uniformly; the labels by :func:`~pyromodels.data.simulate_crowd.emit_labels`;
``K = 5`` classes), written once as parquet files to a cache folder
(``$PYROMODELS_BENCH_CACHE``, default ``<tmp>/pyromodels-bench``), one file per chunk of
1,000,000 tasks (6,000,000 labels), so the table is never all in memory while it is written
(:func:`labels_parquet`). The workers of each task come from
:func:`~pyromodels.crowd.simulate.distinct_workers`, ``O(N r)``, rather than from
:func:`~pyromodels.data.simulate_crowd.who_labels`, which sorts an ``N x M`` matrix of keys
(20 GB for one chunk of 1,000,000 tasks and 2,400 workers). Every fit is
``DawidSkeneEstimator()`` with its defaults, in float64.

* ``dask.ds_em_fit`` (seconds per fit), ``N = 1,000,000`` tasks, ``L = 6,000,000`` labels
  (quick: ``N = 2,000``, ``M = 100``):

  - ``engine=memory``: ``fit(frame)`` on the pandas frame of the parquet files (read before
    the clock starts). Check ``peak_memory``: the peak resident set size of one fit, the
    high-water mark reset at its start (Linux; ``max_abs_diff`` in bytes), against
    :data:`MEMORY_FACTOR` times the frame's bytes plus 64 MiB.
  - ``engine=dask``: ``fit(path)`` on a ``LocalCluster`` of 2 worker processes (1 thread,
    ``memory_limit`` 4 GB each), the parquet folder read by the workers. Check
    ``agrees_with_memory``: the confusion matrices and class probabilities against the
    in-memory fit, to ``1e-8``, with ``n_iter`` equal; ``worker_peak_memory``: the largest
    peak resident set size of a worker process over its life (``VmHWM``, read with
    ``client.run``), against the ``memory_limit``; the record adds each worker's figure
    (``worker_peak_rss_mib``).

* ``dask.ds_em_parquet`` (seconds per fit), ``L = 100,000,000`` labels (``N = 16,666,667``
  tasks; quick: 60,000 labels, ``M = 100``) from parquet on disk on the same 2-worker
  cluster. Check ``worker_peak_memory`` as above, from a fit of its own (the record also
  holds that fit's ``wall_s``, ``n_iter`` and ``num_tasks``). The timed callable's warm-up
  call only writes the cache and starts the cluster (the check has usually done both); each
  timed call is one whole fit.

The cluster is started once per process and closed at exit. Run the full sizes on a quiet
machine: ``python -m benchmarks --out results.jsonl --only dask.ds`` (disk: about 1 GB of
parquet for the 100,000,000 labels).
"""

from __future__ import annotations

import atexit
import os
import tempfile
import time
import warnings

import numpy as np
import pandas as pd
import torch

from pyromodels.core.device import default_dtype
from pyromodels.core.seeding import derive_seed, make_generator
from pyromodels.crowd.estimators import DawidSkeneEstimator
from pyromodels.crowd.simulate import distinct_workers
from pyromodels.data import WorkerPopulation, random_confusions
from pyromodels.data.simulate_crowd import emit_labels

from .fresh_process import peak_rss_mib, reset_peak_rss
from .harness import Case, agreement

__all__ = ["cases", "labels_parquet", "cluster_client", "worker_peak_rss_mib"]

SEED = 20261128
K = 5
LABELS_PER_ITEM = 6
WORKERS = 2_400
QUICK_WORKERS = 100
#: tasks of the 6,000,000-label case (quick: 12,000 labels)
FIT_ITEMS, QUICK_FIT_ITEMS = 1_000_000, 2_000
#: tasks of the 100,000,000-label case (quick: 60,000 labels)
BIG_ITEMS, QUICK_BIG_ITEMS = 16_666_667, 10_000
#: tasks per parquet file (quick: 2,000)
CHUNK_ITEMS, QUICK_CHUNK_ITEMS = 1_000_000, 2_000
CLUSTER_WORKERS = 2
MEMORY_LIMIT = "4GB"
MEMORY_LIMIT_BYTES = 4 * 10**9
#: target: an in-memory fit's peak within this many times the frame's bytes, plus
#: :data:`MEMORY_SLACK` (the allocator's and the estimator's fixed costs, which dominate at
#: the quick sizes)
MEMORY_FACTOR = 4.0
MEMORY_SLACK = 64 * 2**20
#: the cluster's fit against the in-memory one (float64 sums in another order)
AGREEMENT_TOLERANCE = 1e-8

_STATE: dict = {}


def _cache_root() -> str:
    return os.environ.get("PYROMODELS_BENCH_CACHE",
                          os.path.join(tempfile.gettempdir(), "pyromodels-bench"))


def labels_parquet(num_items: int, num_workers: int, chunk_items: int) -> str:
    """The folder of parquet files of the simulated labels (columns ``task``, ``worker``,
    ``label``, integers), written once: one file per ``chunk_items`` tasks, each simulated
    with the same worker population (confusions from :data:`SEED`) and its own generator; a
    ``_complete`` marker says the folder is whole."""
    folder = os.path.join(_cache_root(), f"ds-N{num_items}-M{num_workers}-K{K}-"
                                         f"r{LABELS_PER_ITEM}-s{SEED}")
    marker = os.path.join(folder, "_complete")
    if os.path.exists(marker):
        return folder
    os.makedirs(folder, exist_ok=True)
    population = WorkerPopulation(num_workers, labels_per_item=LABELS_PER_ITEM)
    confusion = random_confusions(num_workers, K, dominance=population.dominance,
                                  concentration=population.concentration,
                                  num_random=population.num_random,
                                  force_dominant=population.force_dominant,
                                  seed=derive_seed(SEED, "confusion"))
    prior = torch.full((K,), 1.0 / K, dtype=torch.float64)
    for i, start in enumerate(range(0, num_items, chunk_items)):
        n = min(chunk_items, num_items - start)
        gen = make_generator(derive_seed(SEED, "chunk", i))
        z = torch.multinomial(prior, n, replacement=True, generator=gen)
        rng = np.random.default_rng(derive_seed(SEED, "workers", i))
        workers = torch.from_numpy(distinct_workers(rng, n, num_workers, LABELS_PER_ITEM).reshape(-1))
        items = torch.arange(n).repeat_interleave(LABELS_PER_ITEM)
        frame = emit_labels(z, confusion, items, workers, gen).to_frame()
        frame["task"] += start
        frame.to_parquet(os.path.join(folder, f"part-{i:05d}.parquet"), index=False)
    with open(marker, "w") as fh:
        fh.write("complete\n")
    return folder


def _close_cluster() -> None:
    client, cluster = _STATE.pop("client", None), _STATE.pop("cluster", None)
    if client is not None:
        client.close()
    if cluster is not None:
        cluster.close()


def cluster_client():
    """The benchmark's ``LocalCluster`` client (2 worker processes, 1 thread and
    :data:`MEMORY_LIMIT` each), started once and closed at exit."""
    if "client" not in _STATE:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=CLUSTER_WORKERS, threads_per_worker=1,
                               processes=True, memory_limit=MEMORY_LIMIT,
                               dashboard_address=":0")
        _STATE["cluster"], _STATE["client"] = cluster, Client(cluster)
        atexit.register(_close_cluster)
    return _STATE["client"]


def worker_peak_rss_mib(client) -> dict:
    """``{worker address: peak resident set size (MiB)}`` of each worker process over its
    life (``VmHWM``)."""
    def peak() -> float:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    return client.run(peak)


def _fit(source):
    with warnings.catch_warnings(), default_dtype(torch.float64):
        warnings.simplefilter("ignore")  # sparse workers in the quick sizes
        return DawidSkeneEstimator().fit(source)


def _frame(folder: str) -> pd.DataFrame:
    if _STATE.get("frame_of") != folder:
        _STATE["frame"], _STATE["frame_of"] = pd.read_parquet(folder), folder
    return _STATE["frame"]


def _memory_fit(folder_of):
    def call():
        return _fit(_frame(folder_of()))
    return call


def _memory_check(folder_of):
    def check():
        frame = _frame(folder_of())
        reset_peak_rss()
        base = peak_rss_mib()
        fit = _fit(frame)
        peak = (peak_rss_mib() - base) * 2**20
        _STATE["memory_fit"] = fit
        bound = MEMORY_FACTOR * frame.memory_usage(deep=True).sum() + MEMORY_SLACK
        return {"peak_memory": {"against": f"{MEMORY_FACTOR} x the frame's bytes + 64 MiB",
                                "max_abs_diff": float(peak), "tolerance": float(bound),
                                "passed": bool(peak <= bound)}}
    return check


def _worker_record(client) -> dict:
    peaks = worker_peak_rss_mib(client)
    top = max(peaks.values()) * 2**20
    return {"against": f"memory_limit {MEMORY_LIMIT} per worker", "max_abs_diff": float(top),
            "tolerance": float(MEMORY_LIMIT_BYTES), "passed": bool(top <= MEMORY_LIMIT_BYTES),
            "worker_peak_rss_mib": sorted(peaks.values())}


def _dask_fit(folder_of):
    def call():
        cluster_client()
        return _fit(folder_of())
    return call


def _dask_check(folder_of):
    def check():
        client, folder = cluster_client(), folder_of()
        ours = _fit(folder)
        ref = _STATE.get("memory_fit") or _fit(_frame(folder))
        probas = ours.probas_.compute().loc[ref.probas_.index]
        diff = np.concatenate([np.ravel(ours.confusions_ - ref.confusions_),
                               np.ravel(probas.to_numpy() - ref.probas_.to_numpy())])
        same = agreement(np.abs(diff).max(keepdims=True), np.zeros(1), AGREEMENT_TOLERANCE,
                         "DawidSkeneEstimator().fit(frame) in memory")
        same["passed"] = bool(same["passed"] and ours.n_iter_ == ref.n_iter_)
        same["n_iter"] = [int(ours.n_iter_), int(ref.n_iter_)]
        return {"agrees_with_memory": same, "worker_peak_memory": _worker_record(client)}
    return check


def _big_fit(folder_of):
    calls = []

    def call():
        if not calls:  # the warm-up: the cache and the cluster only
            calls.append(folder_of())
            cluster_client()
            return None
        return _fit(calls[0])
    return call


def _big_check(folder_of):
    def check():
        folder = folder_of()
        client = cluster_client()
        start = time.perf_counter()
        fit = _fit(folder)
        wall = time.perf_counter() - start
        record = _worker_record(client)
        record.update(wall_s=wall, n_iter=int(fit.n_iter_),
                      num_tasks=int(fit.probas_.shape[0].compute()))
        return {"worker_peak_memory": record}
    return check


def cases(quick: bool) -> list[Case]:
    """The 6,000,000-label cases (in memory and on the cluster) and the 100,000,000-label
    one from parquet (quick: tiny sizes)."""
    workers = QUICK_WORKERS if quick else WORKERS
    chunk = QUICK_CHUNK_ITEMS if quick else CHUNK_ITEMS
    n_fit = QUICK_FIT_ITEMS if quick else FIT_ITEMS
    n_big = QUICK_BIG_ITEMS if quick else BIG_ITEMS
    timing = {"warmup": 1, "repeats": 2 if quick else 1}
    base = {"N": n_fit, "M": workers, "K": K, "L": n_fit * LABELS_PER_ITEM,
            "dtype": "float64"}
    cluster = {"workers": CLUSTER_WORKERS, "memory_limit": MEMORY_LIMIT}

    def fit_folder():  # written on first use, not when the cases are collected
        return labels_parquet(n_fit, workers, chunk)

    def big_folder():
        return labels_parquet(n_big, workers, chunk)

    return [
        Case("dask.ds_em_fit", {**base, "engine": "memory"}, ours=_memory_fit(fit_folder),
             check=_memory_check(fit_folder), **timing),
        Case("dask.ds_em_fit", {**base, "engine": "dask", **cluster},
             ours=_dask_fit(fit_folder), check=_dask_check(fit_folder), **timing),
        Case("dask.ds_em_parquet", {"N": n_big, "M": workers, "K": K,
                                    "L": n_big * LABELS_PER_ITEM, "dtype": "float64",
                                    **cluster},
             ours=_big_fit(big_folder), check=_big_check(big_folder), **timing),
    ]
