r"""Dawid-Skene EM iterations against crowd-kit, and the memory one iteration needs.

Data: :func:`pyromodels.data.simulate_annotations` with ``K = 5`` classes and
``labels_per_item = 5`` (full: ``N = 100,000`` items, ``M = 1,000`` workers, ``L = 500,000``
labels; quick: ``N = 2,000``, ``M = 100``), float64.

* ``crowd.ds_em_step`` (seconds per iteration): the E-step and M-step alone. Ours:
  ``iterations`` calls of :meth:`pyromodels.crowd.ds.model.DawidSkene.em_step` (on the CPU
  the compiled pass of :mod:`pyromodels.crowd.ds.kernels.compiled`; on a GPU the sparse products of
  :mod:`pyromodels.crowd.emissions`) from crowd-kit's start (one M-step from the soft majority
  vote). Peer, from the same start: ``crowdkit.DawidSkene._e_step+_m_step``, crowd-kit 1.4's
  own E-step and M-step (and the prior update between them), ``iterations`` times.
* ``crowd.ds_em_iteration`` (seconds per iteration): a whole fit of ``FIT_ITERATIONS = 25``
  iterations as a user runs it, divided by 25. Ours:
  ``DawidSkene().fit(table, method="em", max_iter=25)``
  (majority-vote start, the objective of every iterate for the convergence test, the final
  posteriors). Peer: ``crowdkit.DawidSkene(n_iter=iterations, tol=-inf).fit`` (majority-vote
  start and the evidence lower bound of every iterate for its convergence test).

  Checks: the accuracy against the simulated truth after ``iterations`` iterations, ours
  against crowd-kit's ``fit`` (to 0.001); and ``peak_memory`` of one step on a fresh copy of
  the table, so that the per-table caches are built and counted (see :func:`memory_record`).
* ``crowd.ds_fit_predict`` (seconds per call, CPU runs), from a DataFrame to labels as a user
  meets it: ``DawidSkeneEstimator(n_iter=20).fit_predict(frame)`` against crowd-kit's
  ``DawidSkene(n_iter=20).fit_predict(frame)`` (each with its default tolerance), on the same
  integer task / worker / label frame. ``start=warm``: in this process, after one warm-up
  call. ``start=cold`` (full runs only): every call runs a fresh Python process that imports
  the aggregator's module, reads the frame from a pickle written once to a temporary folder,
  fits and writes the labels (:data:`COLD_SCRIPT`); the figure is that process's wall time,
  interpreter start and imports included (the compiled passes come from numba's disk cache,
  filled by the warm-up call if needed). Its check records the phases each process reports
  for itself (``phases``: median ``import_s``, ``read_s``, ``fit_s`` and
  ``read_to_labels_s`` of ``COLD_PHASE_RUNS`` more processes a side), and that our fresh
  process gives the labels of the in-process fit.
* ``crowd.ds_em_step`` at ``L = 10,000,000`` labels, registered only for a CUDA device
  (20 copies of the full table, so ``N = 2,000,000`` items and the same workers); no peer,
  checked against the same step on the CPU.
"""

from __future__ import annotations

import atexit
import ctypes
import dataclasses
import functools
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import tracemalloc
import warnings
import weakref

import numpy as np
import pandas as pd
import torch
from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene
from crowdkit.aggregation import MajorityVote as CrowdKitMajorityVote
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from pyromodels.core.device import default_dtype
from pyromodels.crowd.ds.em import e_step
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.crowd.estimators import DawidSkeneEstimator
from pyromodels.data import AnnotationTable, WorkerPopulation, simulate_annotations

from .bench_reference_mixture import _lazy
from .harness import Case, agreement

__all__ = ["cases", "cold_run", "tile_table", "peak_tensor_bytes", "rss_peak_delta",
           "memory_record"]

SEED = 20240917
K = 5
LABELS_PER_ITEM = 5
FULL = (100_000, 1_000)  # items, workers
QUICK = (2_000, 100)
#: copies of the table in the CUDA-only case: 20 x 500,000 = 10,000,000 labels
CUDA_COPIES = 20
QUICK_CUDA_COPIES = 2
#: EM iterations of the whole-fit case: about what a fit takes on these data (ours stops
#: after 28 at its default tol 1e-8, crowd-kit's default after 9 at its tol 1e-5)
FIT_ITERATIONS = 25
#: accuracies are fractions of N items; 0.001 is 100 items of 100,000
ACCURACY_TOLERANCE = 1e-3
#: target: one iteration's peak allocations within 3 times the input codes
MEMORY_FACTOR = 3.0
#: the same step on two devices: float64 sums in another order differ by ~1e-15 per cell
DEVICE_TOLERANCE = 1e-10
#: ``n_iter`` of the DataFrame-to-labels cases, on both sides
FACADE_ITERATIONS = 20
#: fresh processes a side whose own phase timings the cold case's check records
COLD_PHASE_RUNS = 3
#: what a cold process runs: ``python -c COLD_SCRIPT MODULE CLASS N_ITER FRAME LABELS``; it
#: prints its phases as JSON (``import_s`` from its first line, interpreter start excluded)
COLD_SCRIPT = """
import time
start = time.perf_counter()
import importlib, json, sys, warnings
import pandas as pd
module, name, n_iter, frame, out = sys.argv[1:]
aggregator = getattr(importlib.import_module(module), name)
imported = time.perf_counter()
df = pd.read_pickle(frame)
read = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    labels = aggregator(n_iter=int(n_iter)).fit_predict(df)
done = time.perf_counter()
labels.to_pickle(out)
print(json.dumps({"import_s": imported - start, "read_s": read - imported,
                  "fit_s": done - read, "read_to_labels_s": done - imported}))
"""
#: the two sides of the DataFrame-to-labels cases: (module, class) of the aggregator
AGGREGATORS = {"ours": ("pyromodels.crowd.estimators", "DawidSkeneEstimator"),
               "crowdkit.DawidSkene.fit_predict": ("crowdkit.aggregation", "DawidSkene")}


@dataclasses.dataclass(frozen=True)
class Problem:
    """Simulated labels prepared for ours and for crowd-kit."""

    table: AnnotationTable
    truth: torch.Tensor  # (N,) true classes
    data: object  # DSData (float64) on the benchmark device
    start: dict  # crowd-kit's start: one M-step from the soft majority vote
    frame: pd.DataFrame  # task / worker / label integer codes, for crowd-kit


@functools.cache
def _simulated(num_items: int, num_workers: int):
    workers = WorkerPopulation(num_workers, labels_per_item=LABELS_PER_ITEM)
    return simulate_annotations(num_items, workers, K,
                                seed=SEED)


def tile_table(table: AnnotationTable, z: torch.Tensor, copies: int):
    """``copies`` copies of ``table`` one after the other (item codes shifted by the number of
    items each time) and the truth ``z`` repeated alike."""
    n = table.num_items
    shift = (torch.arange(copies) * n).repeat_interleave(table.num_labels)
    items = table.item_idx.repeat(copies) + shift
    big = AnnotationTable.from_arrays(items, table.worker_idx.repeat(copies),
                                      table.label_idx.repeat(copies), num_items=n * copies,
                                      num_workers=table.num_workers, num_classes=table.num_classes)
    return big, z.repeat(copies)


@functools.cache
def _problem(num_items: int, num_workers: int, copies: int, device: str) -> Problem:
    table, truth = _simulated(num_items, num_workers)
    z = truth["z"]
    if copies > 1:
        table, z = tile_table(table, z, copies)
    model = DawidSkene()
    with default_dtype(torch.float64):
        data = model.prepare(table, device=device)
        start = model.em_init(data, None)
    frame = pd.DataFrame({"task": table.item_idx.numpy(), "worker": table.worker_idx.numpy(),
                          "label": table.label_idx.numpy()})
    return Problem(table, z, data, start, frame)


def _steps(data, params: dict, iterations: int) -> dict:
    model = DawidSkene()
    for _ in range(iterations):
        params = model.em_step(data, params)
    return params


# ------------------------------------------------------------------------------ timed calls
def _ours(size, copies, device, iterations):
    def factory():
        pb = _problem(*size, copies, device)
        return lambda: _steps(pb.data, pb.start, iterations)

    return _lazy(factory)


def _fit(table: AnnotationTable, device: str, iterations: int):
    # tol far below float64 rounding: the fit runs exactly `iterations` EM steps
    kwargs = {"method": "em", "max_iter": iterations, "tol": 1e-300, "seed": 0,
              "progress": False, "warn_not_converged": False, "device": device}
    with default_dtype(torch.float64):
        return DawidSkene().fit(table, **kwargs)


def _ours_fit(size, device, iterations):
    def factory():
        table = _problem(*size, 1, "cpu").table
        return lambda: _fit(table, device, iterations)

    return _lazy(factory)


def _crowdkit_steps(size, iterations):
    def factory():
        frame = _problem(*size, 1, "cpu").frame
        probas = CrowdKitMajorityVote().fit_predict_proba(frame)
        priors0, errors0 = probas.mean(), CrowdKitDawidSkene._m_step(frame, probas)

        def run():
            priors, errors = priors0.copy(), errors0
            for _ in range(iterations):
                probas = CrowdKitDawidSkene._e_step(frame, priors, errors)
                priors = probas.mean()
                errors = CrowdKitDawidSkene._m_step(frame, probas)
            return probas

        return run

    return _lazy(factory)


def _crowdkit_fit(frame: pd.DataFrame, iterations: int) -> CrowdKitDawidSkene:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # crowd-kit's own pandas deprecation warnings
        return CrowdKitDawidSkene(n_iter=iterations, tol=-math.inf).fit(frame)


def _crowdkit_full(size, iterations):
    def factory():
        frame = _problem(*size, 1, "cpu").frame
        return lambda: _crowdkit_fit(frame, iterations)

    return _lazy(factory)


# ------------------------------------------------------------------------------ DataFrame to labels
def _warm_fit_predict(size, who: str):
    def factory():
        frame = _problem(*size, 1, "cpu").frame
        if who == "ours":
            return lambda: DawidSkeneEstimator(n_iter=FACADE_ITERATIONS).fit_predict(frame)

        def crowdkit():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # crowd-kit's own pandas deprecation warnings
                return CrowdKitDawidSkene(n_iter=FACADE_ITERATIONS).fit_predict(frame)

        return crowdkit

    return _lazy(factory)


@functools.cache
def _frame_file(num_items: int, num_workers: int) -> str:
    """The problem's frame pickled once into a temporary folder (removed at exit)."""
    folder = tempfile.mkdtemp(prefix="pyromodels-bench-")
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, "frame.pkl")
    _problem(num_items, num_workers, 1, "cpu").frame.to_pickle(path)
    return path


def cold_run(size, who: str) -> tuple[dict, pd.Series]:
    """Run one side's :data:`COLD_SCRIPT` in a fresh process on the problem's frame, with the
    thread count of this process; return ``(phases, labels)``."""
    module, name = AGGREGATORS[who]
    frame = _frame_file(*size)
    out = os.path.join(os.path.dirname(frame), f"labels-{os.getpid()}.pkl")
    threads = str(torch.get_num_threads())
    env = {**os.environ, **{var: threads for var in (
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")}}
    done = subprocess.run([sys.executable, "-c", COLD_SCRIPT, module, name,
                           str(FACADE_ITERATIONS), frame, out],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the cold {who} process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1]), pd.read_pickle(out)


def _cold_fit_predict(size, who: str):
    return lambda: cold_run(size, who)


def _fit_predict_check(size, cold: bool):
    def check():
        pb = _problem(*size, 1, "cpu")
        warm = DawidSkeneEstimator(n_iter=FACADE_ITERATIONS).fit_predict(pb.frame)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = CrowdKitDawidSkene(n_iter=FACADE_ITERATIONS).fit_predict(pb.frame)
        order = np.arange(len(pb.truth))
        acc = agreement([_accuracy(warm.loc[order], pb.truth)],
                        [_accuracy(theirs.loc[order], pb.truth)], ACCURACY_TOLERANCE,
                        f"crowdkit.DawidSkene(n_iter={FACADE_ITERATIONS}).fit_predict accuracy")
        if not cold:
            return {"accuracy": acc}
        done = {who: [cold_run(size, who) for _ in range(COLD_PHASE_RUNS)] for who in AGGREGATORS}
        phases = {who: {key: statistics.median(r[0][key] for r in rs) for key in rs[0][0]}
                  for who, rs in done.items()}
        ours = done["ours"][0][1]
        same = agreement(ours.loc[order].to_numpy() != warm.loc[order].to_numpy(),
                         np.zeros(len(order)), 0.0,
                         "the labels of the warm in-process fit (1 = a label differs)")
        same["phases"] = phases
        return {"accuracy": acc, "cold_labels": same}

    return check


# ------------------------------------------------------------------------------ memory
class _LiveTensorBytes(TorchDispatchMode):
    """Counts the bytes of the tensor storages that operators allocate, while they live."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, list] = {}  # storage address -> [bytes, live tensors using it]
        self.current = 0
        self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {_address(t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self._track(t, inputs)
        return out

    def _track(self, t: torch.Tensor, inputs: set) -> None:
        key = _address(t)
        if key in self.live:  # a view of, or an in-place result on, a counted storage
            self.live[key][1] += 1
        elif key in inputs or key == 0:  # a view of, or in-place result on, an older tensor
            return
        else:
            size = _nbytes(t)
            self.live[key] = [size, 1]
            self.current += size
            self.peak = max(self.peak, self.current)
        weakref.finalize(t, self._release, key)

    def _release(self, key: int) -> None:
        entry = self.live.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.current -= entry[0]
            del self.live[key]


def _nbytes(t: torch.Tensor) -> int:
    """Bytes held by ``t``: its storage, or the index and value arrays of a sparse tensor."""
    if t.layout == torch.sparse_csr:
        parts = (t.crow_indices(), t.col_indices(), t.values())
    elif t.layout == torch.sparse_coo:
        parts = (t._indices(), t._values())
    else:
        return t.untyped_storage().nbytes()
    return sum(p.numel() * p.element_size() for p in parts)


def _address(t: torch.Tensor) -> int:
    if t.layout in (torch.sparse_csr, torch.sparse_coo):
        return (t.values() if t.layout == torch.sparse_csr else t._values()).data_ptr()
    return t.untyped_storage().data_ptr()


def peak_tensor_bytes(fn) -> tuple[int, object]:
    """``(peak bytes, fn())``: the largest total size of tensors allocated by ``fn`` alive at once.

    Every operator call is intercepted (a ``TorchDispatchMode``): a result whose storage is new
    adds its size until its last tensor is garbage; views and in-place results add nothing.
    Scratch memory inside a single kernel is not seen. On a CUDA device the caching
    allocator's peak (``torch.cuda.max_memory_allocated``) is exact and is used instead by
    :func:`memory_record`.

    Example:
        >>> peak, _ = peak_tensor_bytes(lambda: torch.zeros(1000, dtype=torch.float64) + 1)
        >>> peak
        16000
    """
    mode = _LiveTensorBytes()
    with mode:
        result = fn()
    return mode.peak, result


def rss_peak_delta(fn) -> int | None:
    """Growth of the peak resident set size while ``fn`` runs (Linux with glibc), else ``None``.

    Free heap memory is handed back first (``malloc_trim``) and the kernel's peak counter is
    reset (``/proc/self/clear_refs``), so the figure counts the pages ``fn`` touches anew,
    including allocator overhead and anything allocated outside torch. The baseline is the
    peak counter just after the reset (the resident size then), not the resident size read
    before it: pages the process gave back in between would otherwise be counted against
    ``fn``.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        before = _proc_status("VmHWM")
    except OSError:
        return None
    fn()
    return _proc_status("VmHWM") - before


def _proc_status(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"/proc/self/status has no {field}")


def memory_record(make_step, input_bytes: int, device: torch.device) -> dict:
    """An agreement-style record: ``passed`` when a step's peak memory is within
    ``MEMORY_FACTOR`` times ``input_bytes``; ``max_abs_diff`` holds the peak bytes and
    ``tolerance`` the bound, with the ratio, the method and (CPU) the RSS cross-check.

    ``make_step()`` returns a new zero-argument step whose caches are cold, so every
    measurement sees the same work. On the CPU the peak is the peak of the live tensor
    storages (:func:`peak_tensor_bytes`) plus the peak of NumPy's allocations
    (``tracemalloc``, which NumPy reports to), each from its own step: an upper bound of the
    two together. On a CUDA device it is the caching allocator's peak."""
    if device.type == "cuda":
        step = make_step()
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        step()
        torch.cuda.synchronize(device)
        peak, method, rss = torch.cuda.max_memory_allocated(device) - base, "cuda", None
    else:
        tensors, _ = peak_tensor_bytes(make_step())
        step = make_step()
        tracemalloc.start()
        try:
            step()
            arrays = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        peak = tensors + arrays
        method = "torch dispatch (live tensor storages) + tracemalloc (NumPy arrays)"
        rss = rss_peak_delta(make_step())
    bound = MEMORY_FACTOR * input_bytes
    return {"against": f"{MEMORY_FACTOR:g} x the input codes (item, worker, label int64)",
            "max_abs_diff": float(peak), "tolerance": float(bound), "passed": bool(peak <= bound),
            "peak_bytes": int(peak), "input_bytes": int(input_bytes), "ratio": peak / input_bytes,
            "method": method, "rss_peak_delta_bytes": rss}


def _fresh_step(table: AnnotationTable, device: str, start: dict):
    """One EM step from ``start`` on a new copy of ``table``, whose per-table caches are still
    to be built."""
    copy = AnnotationTable.from_arrays(table.item_idx.clone(), table.worker_idx.clone(),
                                       table.label_idx.clone(), num_items=table.num_items,
                                       num_workers=table.num_workers,
                                       num_classes=table.num_classes)
    model = DawidSkene()
    with default_dtype(torch.float64):
        data = model.prepare(copy, device=device)
    return lambda: model.em_step(data, start)


def _input_bytes(table: AnnotationTable) -> int:
    return sum(t.numel() * t.element_size()
               for t in (table.item_idx, table.worker_idx, table.label_idx))


# ------------------------------------------------------------------------------ checks
def _accuracy(labels, truth) -> float:
    return float(np.mean(np.asarray(labels) == np.asarray(truth)))


def _accuracy_record(ours, frame, truth, iterations) -> dict:
    ck = _crowdkit_fit(frame, iterations)
    theirs = ck.labels_.loc[np.arange(len(truth))].to_numpy()
    against = f"crowdkit.DawidSkene(n_iter={iterations}).fit accuracy"
    return agreement([_accuracy(ours, truth)], [_accuracy(theirs, truth)], ACCURACY_TOLERANCE,
                     against)


def _step_check(size, device, iterations):
    def check():
        pb = _problem(*size, 1, device)
        params = _steps(pb.data, pb.start, iterations - 1)  # crowd-kit's last E-step is on these
        ours = e_step(pb.data, params)[0].argmax(-1).cpu()
        acc = _accuracy_record(ours, pb.frame, pb.truth.numpy(), iterations)
        step = functools.partial(_fresh_step, pb.table, device, pb.start)
        dev = torch.device(device)
        return {"accuracy": acc, "peak_memory": memory_record(step, _input_bytes(pb.table), dev)}

    return check


def _fit_check(size, device, iterations):
    def check():
        pb = _problem(*size, 1, "cpu")
        ours = _fit(pb.table, device, iterations).params["labels"].cpu()
        return {"accuracy": _accuracy_record(ours, pb.frame, pb.truth.numpy(), iterations)}

    return check


def _device_check(size, copies, device):
    def check():
        big = _problem(*size, copies, device)
        cpu = _problem(*size, copies, "cpu")
        ours = DawidSkene().em_step(big.data, big.start)
        reference = DawidSkene().em_step(cpu.data, cpu.start)
        against = "the same EM step on the CPU"
        mem = memory_record(functools.partial(_fresh_step, big.table, device, big.start),
                            _input_bytes(big.table), torch.device(device))
        return {"confusion": agreement(ours["confusion"], reference["confusion"],
                                       DEVICE_TOLERANCE, against),
                "prior": agreement(ours["prior"], reference["prior"], DEVICE_TOLERANCE, against),
                "peak_memory": mem}

    return check


def _fit_predict_cases(size, params: dict, quick: bool) -> list[Case]:
    """The warm case, and (full runs only: each call is a new process, seconds of imports)
    the cold one."""
    peer = "crowdkit.DawidSkene.fit_predict"
    out = [Case("crowd.ds_fit_predict", {**params, "start": "warm"},
                ours=_warm_fit_predict(size, "ours"), peers={peer: _warm_fit_predict(size, peer)},
                check=_fit_predict_check(size, False), repeats=2 if quick else 5)]
    if not quick:
        out.append(Case("crowd.ds_fit_predict", {**params, "start": "cold"},
                        ours=_cold_fit_predict(size, "ours"),
                        peers={peer: _cold_fit_predict(size, peer)},
                        check=_fit_predict_check(size, True), repeats=3))
    return out


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The Dawid-Skene cases; the 10-million-label case only when ``device`` is CUDA."""
    dev = torch.device("cpu") if device is None else device
    size = QUICK if quick else FULL
    iterations = 2 if quick else 5
    fit_iterations = 2 if quick else FIT_ITERATIONS
    timing = {"warmup": 1, "repeats": 2 if quick else 3}
    n, m = size
    base = {"N": n, "M": m, "K": K, "L": n * LABELS_PER_ITEM, "dtype": "float64"}
    params = {**base, "iterations_per_call": iterations}
    out = [
        Case("crowd.ds_em_step", params, ours=_ours(size, 1, str(dev), iterations),
             peers={"crowdkit.DawidSkene._e_step+_m_step": _crowdkit_steps(size, iterations)},
             metric="seconds_per_iter", iterations=iterations,
             check=_step_check(size, str(dev), iterations), **timing),
        Case("crowd.ds_em_iteration", {**base, "iterations_per_call": fit_iterations},
             ours=_ours_fit(size, str(dev), fit_iterations),
             peers={"crowdkit.DawidSkene.fit": _crowdkit_full(size, fit_iterations)},
             metric="seconds_per_iter", iterations=fit_iterations,
             check=_fit_check(size, str(dev), fit_iterations), **timing),
    ]
    if dev.type == "cpu":  # the facade fits on the CPU
        out.extend(_fit_predict_cases(size, {**base, "n_iter": FACADE_ITERATIONS}, quick))
    if dev.type == "cuda":
        copies = QUICK_CUDA_COPIES if quick else CUDA_COPIES
        cuda_iterations = 2 if quick else 20
        params = {**base, "N": n * copies, "L": n * LABELS_PER_ITEM * copies,
                  "iterations_per_call": cuda_iterations}
        out.append(Case(
            "crowd.ds_em_step", params, ours=_ours(size, copies, str(dev), cuda_iterations),
            metric="seconds_per_iter", iterations=cuda_iterations,
            check=_device_check(size, copies, str(dev)), warmup=2, repeats=timing["repeats"],
        ))
    return out
