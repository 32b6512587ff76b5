r"""Dawid-Skene EM iterations against crowd-kit, and the memory one iteration needs.

Data: :func:`pyromodels.data.simulate_annotations` with ``K = 5`` classes and
``labels_per_item = 5`` (full: ``N = 100,000`` items, ``M = 1,000`` workers, ``L = 500,000``
labels; quick: ``N = 2,000``, ``M = 100``), float64.

* ``crowd.ds_em_iteration`` (seconds per iteration). Ours: ``iterations`` calls of
  :meth:`pyromodels.crowd.dawid_skene.DawidSkene.em_step` (E-step by
  :func:`~pyromodels.crowd.emissions.log_emissions`, M-step by
  :func:`~pyromodels.crowd.emissions.confusion_counts`) from crowd-kit's start (one M-step
  from the soft majority vote). Peers, both from the same start:

  - ``crowdkit.DawidSkene._e_step+_m_step``: crowd-kit 1.4's own E-step and M-step (and the
    prior update between them), ``iterations`` times: exactly the work of one of our steps;
  - ``crowdkit.DawidSkene.fit``: ``DawidSkene(n_iter=iterations, tol=-inf).fit``, divided by
    ``iterations``: what a user pays per iteration, including the majority-vote start and the
    per-iteration evidence lower bound crowd-kit computes to decide when to stop.

  Checks: the accuracy against the simulated truth after ``iterations`` iterations, ours
  against crowd-kit's ``fit`` (to 0.001); and ``peak_memory`` (see :func:`peak_tensor_bytes`).
* ``crowd.ds_em_iteration`` at ``L = 10,000,000`` labels, registered only for a CUDA device
  (20 copies of the full table, so ``N = 2,000,000`` items and the same workers); no peer,
  checked against the same step on the CPU.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import math
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
from pyromodels.crowd import ds_em
from pyromodels.crowd.dawid_skene import DawidSkene
from pyromodels.data import AnnotationTable, simulate_annotations

from .bench_reference_mixture import _lazy
from .harness import Case, agreement

__all__ = ["cases", "tile_table", "peak_tensor_bytes", "rss_peak_delta", "memory_record"]

SEED = 20240917
K = 5
LABELS_PER_ITEM = 5
FULL = (100_000, 1_000)  # items, workers
QUICK = (2_000, 100)
#: copies of the table in the CUDA-only case: 20 x 500,000 = 10,000,000 labels
CUDA_COPIES = 20
QUICK_CUDA_COPIES = 2
#: accuracies are fractions of N items; 0.001 is 100 items of 100,000
ACCURACY_TOLERANCE = 1e-3
#: target: one iteration's peak allocations within 3 times the input codes
MEMORY_FACTOR = 3.0
#: the same step on two devices: float64 sums in another order differ by ~1e-15 per cell
DEVICE_TOLERANCE = 1e-10


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
    return simulate_annotations(num_items, num_workers, K, labels_per_item=LABELS_PER_ITEM,
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
    including allocator overhead and anything allocated outside torch.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
        before = _proc_status("VmRSS")
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
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


def memory_record(fn, input_bytes: int, device: torch.device) -> dict:
    """An agreement-style record: ``passed`` when ``fn``'s peak tensor bytes are within
    ``MEMORY_FACTOR`` times ``input_bytes``; ``max_abs_diff`` holds the peak bytes and
    ``tolerance`` the bound, with the ratio, the method and (CPU) the RSS cross-check."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        peak, method, rss = torch.cuda.max_memory_allocated(device) - base, "cuda", None
    else:
        peak, _ = peak_tensor_bytes(fn)
        method, rss = "torch dispatch: live tensor storages", rss_peak_delta(fn)
    bound = MEMORY_FACTOR * input_bytes
    return {"against": f"{MEMORY_FACTOR:g} x the input codes (item, worker, label int64)",
            "max_abs_diff": float(peak), "tolerance": float(bound), "passed": bool(peak <= bound),
            "peak_bytes": int(peak), "input_bytes": int(input_bytes), "ratio": peak / input_bytes,
            "method": method, "rss_peak_delta_bytes": rss}


def _input_bytes(table: AnnotationTable) -> int:
    return sum(t.numel() * t.element_size()
               for t in (table.item_idx, table.worker_idx, table.label_idx))


# ------------------------------------------------------------------------------ checks
def _accuracy(labels, truth) -> float:
    return float(np.mean(np.asarray(labels) == np.asarray(truth)))


def _check(size, device, iterations):
    def check():
        pb = _problem(*size, 1, device)
        params = _steps(pb.data, pb.start, iterations - 1)  # crowd-kit's last E-step is on these
        ours = ds_em.e_step(pb.data, params)[0].argmax(-1).cpu()
        ck = _crowdkit_fit(pb.frame, iterations)
        theirs = ck.labels_.loc[np.arange(pb.table.num_items)].to_numpy()
        truth = pb.truth.numpy()
        against = f"crowdkit.DawidSkene(n_iter={iterations}).fit accuracy"
        acc = agreement([_accuracy(ours, truth)], [_accuracy(theirs, truth)], ACCURACY_TOLERANCE,
                        against)
        step = lambda: DawidSkene().em_step(pb.data, pb.start)  # noqa: E731
        dev = torch.device(device)
        return {"accuracy": acc, "peak_memory": memory_record(step, _input_bytes(pb.table), dev)}

    return check


def _device_check(size, copies, device):
    def check():
        big = _problem(*size, copies, device)
        cpu = _problem(*size, copies, "cpu")
        ours = DawidSkene().em_step(big.data, big.start)
        reference = DawidSkene().em_step(cpu.data, cpu.start)
        against = "the same EM step on the CPU"
        mem = memory_record(lambda: DawidSkene().em_step(big.data, big.start),
                            _input_bytes(big.table), torch.device(device))
        return {"confusion": agreement(ours["confusion"], reference["confusion"],
                                       DEVICE_TOLERANCE, against),
                "prior": agreement(ours["prior"], reference["prior"], DEVICE_TOLERANCE, against),
                "peak_memory": mem}

    return check


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The Dawid-Skene cases; the 10-million-label case only when ``device`` is CUDA."""
    dev = torch.device("cpu") if device is None else device
    size = QUICK if quick else FULL
    iterations = 2 if quick else 5
    timing = {"warmup": 1, "repeats": 2 if quick else 3}
    n, m = size
    base = {"N": n, "M": m, "K": K, "L": n * LABELS_PER_ITEM, "dtype": "float64"}
    out = [Case(
        "crowd.ds_em_iteration", {**base, "iterations_per_call": iterations},
        ours=_ours(size, 1, str(dev), iterations),
        peers={"crowdkit.DawidSkene._e_step+_m_step": _crowdkit_steps(size, iterations),
               "crowdkit.DawidSkene.fit": _crowdkit_full(size, iterations)},
        metric="seconds_per_iter", iterations=iterations, check=_check(size, str(dev), iterations),
        **timing,
    )]
    if dev.type == "cuda":
        copies = QUICK_CUDA_COPIES if quick else CUDA_COPIES
        cuda_iterations = 2 if quick else 20
        params = {**base, "N": n * copies, "L": n * LABELS_PER_ITEM * copies,
                  "iterations_per_call": cuda_iterations}
        out.append(Case(
            "crowd.ds_em_iteration", params, ours=_ours(size, copies, str(dev), cuda_iterations),
            metric="seconds_per_iter", iterations=cuda_iterations,
            check=_device_check(size, copies, str(dev)), warmup=2, repeats=timing["repeats"],
        ))
    return out
