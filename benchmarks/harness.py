"""A small framework for side-by-side timings: cases, timing, environment record, JSONL writer.

A :class:`Case` names one measurement: our callable, the peers' callables that do the same work,
the metric, and an optional agreement check. :func:`run_case` times every callable with
warm-up calls followed by timed repeats (``time.perf_counter``), and turns the median into the
case's figures::

    figure = median(seconds per call) / iterations_per_call
    ratio[peer] = figure[peer] / figure[ours]

so for a lower-is-better metric a ratio above 1 means ours is faster. Every figure in a record
comes from the same process on the same machine.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import importlib
import importlib.metadata
import inspect
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import threadpoolctl
import torch

from pyromodels.checks import check_in, check_int

__all__ = [
    "METRICS",
    "Case",
    "agreement",
    "time_call",
    "limit_threads",
    "bench_device",
    "describe_device",
    "environment",
    "run_case",
    "discover",
    "collect_cases",
    "format_figure",
    "format_record",
]

#: metrics the harness can measure, each in seconds
METRICS = ("seconds", "seconds_per_iter")


@dataclass(frozen=True)
class Case:
    """One measurement: ours against zero or more peers doing the same work.

    Args:
        name: dotted case name, for example ``"mixture.em_iteration"``.
        params: JSON-serialisable description of the problem (sizes, dtype, ...).
        ours: zero-argument callable doing our work once.
        peers: ``{peer name: zero-argument callable}`` doing the same work (may be empty).
        metric: ``"seconds"`` (one call is one unit) or ``"seconds_per_iter"`` (one call runs
            ``iterations`` iterations and the figure is divided by it).
        lower_is_better: whether a smaller figure is better (true for times).
        check: optional zero-argument callable returning ``{label: record}`` where each record
            comes from :func:`agreement`; it runs once, untimed.
        iterations: iterations per call (``1`` for ``"seconds"``).
        warmup: untimed calls before the repeats (``>= 1``; a callable may build its state on
            the first call).
        repeats: timed calls (``>= 1``).

    Example:
        >>> case = Case("demo.sum", {"n": 3}, ours=lambda: sum(range(3)), repeats=3)
        >>> case.label
        'demo.sum[n=3]'
    """

    name: str
    params: dict
    ours: Callable[[], object]
    peers: dict = field(default_factory=dict)
    metric: str = "seconds"
    lower_is_better: bool = True
    check: Callable[[], dict] | None = None
    iterations: int = 1
    warmup: int = 1
    repeats: int = 5

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.params, dict) or not all(isinstance(k, str) for k in self.params):
            raise TypeError(f"params must be a dict with string keys, got {self.params!r}")
        try:
            json.dumps(self.params, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"params must be JSON-serialisable, got {self.params!r}") from exc
        if not callable(self.ours):
            raise TypeError(f"ours must be a zero-argument callable, got {type(self.ours).__name__}")
        if not isinstance(self.peers, dict):
            raise TypeError(f"peers must be a dict of name -> callable, got {type(self.peers).__name__}")
        for peer, fn in self.peers.items():
            if not isinstance(peer, str) or not peer or peer == "ours":
                raise ValueError(f"peers keys must be non-empty strings other than 'ours', got {peer!r}")
            if not callable(fn):
                raise TypeError(f"peers[{peer!r}] must be a zero-argument callable, got {type(fn).__name__}")
        check_in(self.metric, "metric", METRICS)
        if not isinstance(self.lower_is_better, bool):
            raise TypeError(f"lower_is_better must be a bool, got {self.lower_is_better!r}")
        if self.check is not None and not callable(self.check):
            raise TypeError(
                f"check must be None or a zero-argument callable, got {type(self.check).__name__}"
            )
        check_int(self.iterations, "iterations", minimum=1)
        if self.metric == "seconds" and self.iterations != 1:
            raise ValueError(f"iterations must be 1 for metric 'seconds', got {self.iterations}")
        check_int(self.warmup, "warmup", minimum=1)
        check_int(self.repeats, "repeats", minimum=1)

    @property
    def label(self) -> str:
        """``name[key=value,...]``: the case's unique label (what ``--only`` matches)."""
        inner = ",".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.name}[{inner}]"


def agreement(ours, reference, tolerance: float, against: str) -> dict:
    """Record whether ``ours`` equals ``reference`` to ``tolerance`` in max absolute difference.

    Args:
        ours: array-like or tensor, our answer.
        reference: array-like or tensor of the same shape, the reference answer.
        tolerance: largest accepted ``max |ours - reference|``.
        against: what the reference is (for example ``"scipy.stats.multivariate_normal"``).

    Returns:
        ``{"against", "max_abs_diff", "tolerance", "passed"}``.

    Example:
        >>> agreement([1.0, 2.0], [1.0, 2.0 + 1e-12], 1e-10, "exact")["passed"]
        True
    """
    a = _as_numpy(ours, "ours")
    b = _as_numpy(reference, "reference")
    if a.shape != b.shape:
        raise ValueError(f"ours and reference must have the same shape, got {a.shape} and {b.shape}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not tolerance >= 0:
        raise ValueError(f"tolerance must be a number >= 0, got {tolerance!r}")
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    return {"against": against, "max_abs_diff": diff, "tolerance": float(tolerance),
            "passed": bool(diff <= tolerance)}


def _as_numpy(x, name: str) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite to compare, found NaN or infinity")
    return arr


def time_call(fn: Callable[[], object], warmup: int, repeats: int, synchronize=None) -> dict:
    """Time ``fn``: ``warmup`` untimed calls, then ``repeats`` calls timed with ``perf_counter``.

    Args:
        fn: zero-argument callable.
        warmup: untimed calls first (``>= 0``).
        repeats: timed calls (``>= 1``).
        synchronize: optional zero-argument callable run before starting and before stopping
            the clock (``torch.cuda.synchronize`` for work queued on a GPU).

    Returns:
        ``{"median_s", "min_s", "times_s", "warmup", "repeats"}`` in seconds per call.
    """
    check_int(warmup, "warmup", minimum=0)
    check_int(repeats, "repeats", minimum=1)
    sync = synchronize if synchronize is not None else (lambda: None)
    for _ in range(warmup):
        fn()
        sync()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return {"median_s": statistics.median(times), "min_s": min(times), "times_s": times,
            "warmup": warmup, "repeats": repeats}


@contextlib.contextmanager
def limit_threads(threads: int):
    """Run the block with ``threads`` threads for torch and for every BLAS/OpenMP pool.

    Ours and the peers then use the same number of threads. Idle OpenMP threads spin while
    BLAS threads wait (and the other way round), so leaving several pools at their defaults on a
    small or busy machine can slow small problems a hundredfold; one thread is the default.
    """
    threads = check_int(threads, "threads", minimum=1)
    old = torch.get_num_threads()
    with threadpoolctl.threadpool_limits(limits=threads):
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(old)


def bench_device(spec: str) -> torch.device:
    """Parse ``--device``: ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or ``"auto"`` (CUDA if present).

    A CUDA device asked for on a machine without CUDA is an error, so that no figure is
    recorded under the wrong device.
    """
    if not isinstance(spec, str):
        raise TypeError(f"device must be a string such as 'cpu', 'cuda' or 'auto', got {spec!r}")
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(spec)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {spec!r}") from exc
    check_in(dev.type, "device type", ("cpu", "cuda"))
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={spec!r} was requested but CUDA is not available on this machine")
    return dev


def describe_device(device: torch.device) -> str:
    """``"cpu"`` or the CUDA device's name (``torch.cuda.get_device_name``)."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return "cpu"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment(device: torch.device) -> dict:
    """Versions, processor counts and thread settings of this process (one record per run).

    Call it inside :func:`limit_threads` so that the thread counts recorded are those used.
    """
    env = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "torch_device": str(device),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "versions": {d: _version(d) for d in ("torch", "pyro-ppl", "numpy", "scipy", "scikit-learn")},
    }
    if device.type == "cuda":
        env["cuda"] = torch.version.cuda
    env["threadpools"] = [
        {"api": p.get("internal_api"), "library": p.get("prefix"), "threads": p.get("num_threads")}
        for p in threadpoolctl.threadpool_info()
    ]
    return env


def run_case(case: Case, device: torch.device, env: dict) -> dict:
    """Check, then time ours and every peer; return the case's JSON record."""
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else None
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    agree = case.check() if case.check is not None else {}
    _check_agreement(agree, case.label)
    timing = {"ours": time_call(case.ours, case.warmup, case.repeats, sync)}
    for peer, fn in case.peers.items():
        timing[peer] = time_call(fn, case.warmup, case.repeats, sync)
    for t in timing.values():
        t["iterations_per_call"] = case.iterations
    figures = {who: t["median_s"] / case.iterations for who, t in timing.items()}
    ours = figures.pop("ours")
    return {
        "case": case.name,
        "label": case.label,
        "params": case.params,
        "device": describe_device(device),
        "metric": case.metric,
        "lower_is_better": case.lower_is_better,
        "ours": ours,
        "peers": figures,
        "ratio": {peer: fig / ours for peer, fig in figures.items()},
        "agreement": agree,
        "timing": timing,
        "env": env,
        "load_average_1m": load,
        "timestamp": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def _check_agreement(agree, label: str) -> None:
    if not isinstance(agree, dict):
        raise TypeError(
            f"check of {label} must return a dict of agreement records, got {type(agree).__name__}"
        )
    for key, rec in agree.items():
        if not isinstance(rec, dict) or not isinstance(rec.get("passed"), bool):
            raise TypeError(f"check of {label} returned {key!r}: {rec!r}; build records with agreement()")


def discover(package: str = "benchmarks") -> list:
    """Import every ``bench_*.py`` module of ``package`` that exposes ``cases``, sorted by name."""
    pkg = importlib.import_module(package)
    root = Path(pkg.__file__).resolve().parent
    modules = []
    for path in sorted(root.glob("bench_*.py")):
        mod = importlib.import_module(f"{package}.{path.stem}")
        if not callable(getattr(mod, "cases", None)):
            raise TypeError(f"{package}.{path.stem} must define cases(quick: bool) -> list[Case]")
        modules.append(mod)
    return modules


def collect_cases(modules: Iterable, quick: bool, device: torch.device, only: str | None = None) -> list:
    """Every module's cases (``device`` is passed to ``cases`` when it takes one), filtered by ``only``.

    ``only`` keeps the cases whose :attr:`Case.label` contains it; matching nothing is an error.
    """
    found = []
    for mod in modules:
        kwargs = {"quick": quick}
        if "device" in inspect.signature(mod.cases).parameters:
            kwargs["device"] = device
        cases = mod.cases(**kwargs)
        if not isinstance(cases, list) or not all(isinstance(c, Case) for c in cases):
            raise TypeError(f"{mod.__name__}.cases must return a list of Case")
        found.extend(cases)
    labels = [c.label for c in found]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise ValueError(f"case labels must be unique, found duplicates {dupes}")
    if only is not None:
        found = [c for c in found if only in c.label]
        if not found:
            raise ValueError(f"--only {only!r} matches no case; labels are {labels}")
    return found


def format_figure(value: float, metric: str) -> str:
    """A time in the nearest unit (``"12.3 ms"``)."""
    if not math.isfinite(value):
        return str(value)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def format_record(rec: dict) -> str:
    """Readable table rows for one record: the case, ours, each peer with its ratio, each check."""
    unit = "/iter" if rec["metric"] == "seconds_per_iter" else ""
    better = "lower" if rec["lower_is_better"] else "higher"
    lines = [f"{rec['label']}  ({rec['metric']}, {better} is better, ratio = peer / ours)"]
    lines.append(f"    {'ours':<34}{format_figure(rec['ours'], rec['metric']) + unit:>16}")
    for peer, fig in rec["peers"].items():
        lines.append(f"    {peer:<34}{format_figure(fig, rec['metric']) + unit:>16}"
                     f"   ratio {rec['ratio'][peer]:8.2f}")
    for key, r in rec["agreement"].items():
        status = "ok" if r["passed"] else "FAILED"
        lines.append(f"    check {key}: {status}, max|diff| {r['max_abs_diff']:.1e} "
                     f"(tolerance {r['tolerance']:.0e}) against {r['against']}")
    return "\n".join(lines)
