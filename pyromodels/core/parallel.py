"""Independent runs (chains, restarts, a reproduction's units) in parallel through joblib.

Every engine that runs several independent pieces of work (Gibbs and NUTS chains, EM starts,
Monte Carlo EM restarts, BHMC chains) hands them to :func:`run_jobs`, which hands them to
joblib. No scheduler of our own: joblib decides where the runs go.

**n_jobs** has joblib's meaning: ``None`` takes the ``n_jobs`` of an enclosing
``joblib.parallel_config(...)`` (1 when there is none; under the Dask backend, the cluster's
worker threads), ``-1`` all cores, ``-2`` all but one, an integer ``>= 1`` that many
workers; ``0`` is an error. When this comes to one worker (or there is one run), the runs run
one after another in the calling process, as joblib itself does.

**Backends.** Several workers are loky processes by default. Whatever backend is active
through ``joblib.parallel_config`` is used instead: ``with joblib.parallel_config(
backend="dask")`` with a ``dask.distributed.Client`` connected sends the runs to that
cluster's workers (see ``guides/scale-out.md``). Runs need worker *processes*: Pyro keeps its
effect-handler stack and its random generator in globals that the threads of one process
share, so two runs tracing a program at once in one process corrupt each other. joblib's
``"threading"`` backend is therefore refused (a ``ValueError``), and Dask workers should be
processes with one thread each (``LocalCluster(processes=True, threads_per_worker=1)``,
``dask worker --nthreads 1``).

**Reproducibility.** Each run's seed is derived by the caller from the fit's seed (with
:func:`~pyromodels.core.seeding.derive_seed`) *before* dispatch and travels with the run, so
a result never depends on ``n_jobs``, on the backend or on which worker ran what: the same
seed gives the same result bit for bit (on the same torch thread count and device; see
:mod:`pyromodels.core.threads`). Engines that draw from Pyro's global generator (NUTS) need
worker *processes* for this: threads of one process share that generator.

**Shared data** (``shared``) are sent once, not rebuilt or copied per run. With loky, the
contiguous CPU tensors in ``shared`` (in dicts, lists, tuples and dataclasses, four levels
deep) travel as NumPy arrays, which joblib writes once to a memory-mapped file (those over
1 MB) that every worker maps copy-on-write; the worker sees them as tensors again, with the
same values and dtype. With Dask, ``shared`` is scattered once to the cluster with
``client.scatter`` and every run receives a reference to it.

**Worker settings.** Each run in a worker uses one torch thread (the workers already share
the cores) and the caller's torch default dtype (``torch.set_default_dtype``), which a fresh
worker process would not otherwise have.

**Progress.** With ``progress=True`` and several workers, one bar counts the finished runs
(tqdm, see :mod:`pyromodels.core.progress`), updated as each run finishes, whatever the
order; when standard error is not a terminal (a log file, a batch job) the bar's place is
taken by one line per finished run on standard error, ``<desc>: <run> finished (k/n)``. Runs
in the calling process (one worker) show their own bars instead.

**Ctrl-C.** A ``KeyboardInterrupt`` stops the runs: joblib terminates its loky workers (and
cancels the Dask tasks) and the interrupt propagates. The results of the runs that had
finished were already handed to ``on_result`` as each arrived, which is where the engines
commit them to their checkpoint (``checkpoint=``), so a resumed fit runs only the rest.

Example:
    >>> def square(task, shared):
    ...     return task * task + shared
    >>> run_jobs(square, [1, 2, 3], shared=10, n_jobs=1, progress=False)
    [11, 14, 19]
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import sys
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from ..checks import check_bool
from .progress import bars_drawn, progress_bar

__all__ = ["check_n_jobs", "resolve_n_jobs", "configured_n_jobs", "run_jobs", "in_run_order"]

_DEPTH = 4  # how deep shared data are searched for tensors


def check_n_jobs(n_jobs) -> int | None:
    """``n_jobs`` checked: ``None`` or a nonzero integer (joblib's meaning, see the module doc).

    Raises:
        TypeError: not ``None`` or an integer.
        ValueError: ``0``.
    """
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer):
        raise TypeError(f"n_jobs must be None or an integer, got {type(n_jobs).__name__}")
    if n_jobs == 0:
        raise ValueError("n_jobs must be None, a positive number of workers or a negative "
                         "count from all cores (-1: all cores), got 0")
    return int(n_jobs)


def resolve_n_jobs(n_jobs) -> int:
    """The number of workers ``n_jobs`` comes to under the active joblib configuration.

    Example:
        >>> resolve_n_jobs(None), resolve_n_jobs(2)
        (1, 2)
    """
    n_jobs = check_n_jobs(n_jobs)
    if n_jobs == 1 or n_jobs is None and "joblib" not in sys.modules:
        return 1  # no joblib configuration can be active before joblib is imported
    import joblib

    return int(joblib.effective_n_jobs(n_jobs))


def configured_n_jobs() -> int | None:
    """The ``n_jobs`` set by an enclosing ``joblib.parallel_config`` (``None`` when unset),
    for code whose default is not joblib's 1."""
    from joblib.parallel import get_active_backend

    return get_active_backend()[1]


def _check_backend() -> None:
    """Refuse joblib's thread backend (see the module doc)."""
    from joblib.parallel import get_active_backend

    backend = get_active_backend()[0]
    if type(backend).__name__ == "ThreadingBackend":
        raise ValueError("joblib's 'threading' backend runs the runs as threads of one "
                         "process, which share Pyro's global state; use the default loky "
                         "backend (processes) or Dask workers that are processes")


def _dask_client():
    """The Dask client of the active joblib backend, or ``None`` for any other backend."""
    from joblib.parallel import get_active_backend

    backend = get_active_backend()[0]
    return getattr(backend, "client", None) if type(backend).__name__.startswith("Dask") else None


@dataclasses.dataclass(frozen=True)
class _Packed:
    """A tensor travelling as a NumPy array (which joblib memory-maps)."""

    array: np.ndarray


def _map_tree(obj, leaf: Callable, depth: int = 0):
    """``obj`` with ``leaf`` applied to every value, through dicts, lists, tuples and
    dataclasses (copied, never changed in place)."""
    if depth > _DEPTH:
        return obj
    if isinstance(obj, dict):
        return {k: _map_tree(v, leaf, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list | tuple) and type(obj) in (list, tuple):
        return type(obj)(_map_tree(v, leaf, depth + 1) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type | _Packed):
        out = copy.copy(obj)
        for f in dataclasses.fields(obj):
            if hasattr(obj, f.name):
                object.__setattr__(out, f.name, _map_tree(getattr(obj, f.name), leaf, depth + 1))
        return out
    return leaf(obj)


def _pack(value):
    import torch

    if (isinstance(value, torch.Tensor) and value.device.type == "cpu" and not value.requires_grad
            and value.is_contiguous() and value.dtype not in (torch.bfloat16, torch.complex32)
            and value.numel() > 0):
        return _Packed(value.numpy())
    return value


def _unpack(value):
    if isinstance(value, _Packed):
        import torch

        return torch.from_numpy(np.asarray(value.array))
    return value


def _run_one(func: Callable, index: int, task, shared, packed: bool, dtype):
    """One run in a worker: one torch thread, the caller's default dtype, ``shared``
    unpacked; returns ``(index, result)``."""
    import torch

    from .threads import fit_threads

    if packed:
        shared = _map_tree(shared, _unpack)
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with fit_threads(None, 1):
            return index, func(task, shared)
    finally:
        torch.set_default_dtype(old)


def _report(bar, lines: bool, desc: str, label: str, finished: int, total: int) -> None:
    bar.update()
    if lines:
        print(f"{desc}: {label} finished ({finished}/{total})", file=sys.stderr, flush=True)


def in_run_order(handle: Callable) -> Callable:
    """An ``on_result`` for :func:`run_jobs` that passes each result to ``handle(result)`` in
    the runs' order, holding back those that finish before an earlier run: a checkpoint of
    chains must hold a prefix of them.

    Example:
        >>> seen = []
        >>> on_result = in_run_order(seen.append)
        >>> for index, result in [(1, "b"), (0, "a"), (2, "c")]:
        ...     on_result(index, result)
        >>> seen
        ['a', 'b', 'c']
    """
    pending: dict[int, object] = {}
    position = [0]

    def on_result(index: int, result) -> None:
        pending[index] = result
        while position[0] in pending:
            handle(pending.pop(position[0]))
            position[0] += 1

    return on_result


def run_jobs(func: Callable, tasks: Sequence, *, n_jobs: int | None = None, shared=None,
             progress: bool = True, desc: str = "runs", labels: Sequence[str] | None = None,
             on_result: Callable | None = None) -> list:
    """Run ``func(task, shared)`` for every task, through joblib; the results in task order.

    Args:
        func: a picklable function ``func(task, shared) -> result`` (a module-level function;
            its result must be picklable too).
        tasks: one entry per run, each with everything that run needs besides ``shared``,
            its seed included (derived before this call).
        n_jobs: workers, joblib's meaning (see the module doc).
        shared: data every run reads, sent to the workers once (see the module doc).
        progress: with several workers, count the finished runs on a bar, or as lines on
            standard error when it is not a terminal (see the module doc).
        desc: the bar's label.
        labels: a name per task for the log lines (default ``"run i"``).
        on_result: ``on_result(index, result)``, called in this process as each run
            finishes (in any order), before the next result is awaited: the place to
            checkpoint finished runs.

    Returns:
        ``[func(task, shared) for task in tasks]``.

    Raises:
        ValueError: ``n_jobs`` is 0, or ``labels`` does not name every task.
        KeyboardInterrupt: after the workers were stopped (see the module doc).
    """
    tasks = list(tasks)
    progress = check_bool(progress, "progress")
    workers = resolve_n_jobs(n_jobs)
    labels = [f"run {i}" for i in range(len(tasks))] if labels is None else list(labels)
    if len(labels) != len(tasks):
        raise ValueError(f"labels must name each of the {len(tasks)} tasks, got {len(labels)}")
    results: dict[int, object] = {}
    show = progress and len(tasks) > 1 and workers > 1
    lines = show and not bars_drawn(True)
    outputs = _results(func, tasks, shared, workers)
    with progress_bar(len(tasks), desc, show) as bar:
        try:
            for index, result in outputs:
                results[index] = result
                if on_result is not None:
                    on_result(index, result)
                _report(bar, lines, desc, labels[index], len(results), len(tasks))
        finally:  # on an error or Ctrl-C: stop the workers, without joblib's advice on it
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "[0-9]+ tasks which were still being",
                                        UserWarning)
                outputs.close()
    return [results[i] for i in range(len(tasks))]


def _results(func: Callable, tasks: list, shared, workers: int):
    """``(index, result)`` pairs as the runs finish."""
    if workers == 1 or len(tasks) <= 1:  # joblib too runs one worker's runs in process
        for index, task in enumerate(tasks):
            yield index, func(task, shared)
        return
    import torch
    from joblib import Parallel, delayed

    _check_backend()
    client = _dask_client()
    packed = client is None
    if packed:
        shared = _map_tree(shared, _pack)
    else:  # scattered once; every run gets a reference (a list keeps it one object)
        shared = client.scatter([shared], hash=False)[0]
    parallel = Parallel(n_jobs=min(workers, len(tasks)), return_as="generator_unordered",
                        mmap_mode="c")
    dtype = torch.get_default_dtype()
    calls = (delayed(_run_one)(func, index, task, shared, packed, dtype)
             for index, task in enumerate(tasks))
    with contextlib.closing(parallel(calls)) as outputs:
        yield from outputs
