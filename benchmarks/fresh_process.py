"""Peak memory of the fresh-process (``start=cold``) runs.

A fresh-process script (run by :func:`benchmarks.bench_bnp_dp.run_script`) starts with
:data:`PEAK_RSS_SOURCE`, which defines :func:`peak_rss_mib`, :func:`reset_peak_rss` and
:func:`memory_figures` in it, calls the first two just before its fit and prints, besides the
phases it times, the :data:`MEMORY_KEYS` (MiB) that the third gives after it:

* ``peak_rss_before_fit_mib``: its peak resident set size just before the fit (interpreter,
  imports and data);
* ``fit_peak_rss_mib``: its peak resident set size during the fit, the high-water mark having
  been reset to the resident size at the fit's start (``null`` where it cannot be reset: off
  Linux);
* ``peak_rss_mib``: the process's peak over its whole life, the larger of the two.

:func:`fresh_record` turns the runs into the check's record: the phases' medians under
``phases``, as :func:`~benchmarks.bench_bnp_dp.cold_record` gives them, and each memory figure's
largest value over the processes as a key of the record.

Why not ``getrusage(RUSAGE_SELF).ru_maxrss``: on Linux a process that ``subprocess`` started
(``vfork`` then ``exec``) inherits its parent's peak as a floor of ``ru_maxrss``, so a small
fresh process started by a large benchmark process reports the benchmark's peak. The
``VmHWM`` line of ``/proc/self/status`` is the process's own high-water mark.
"""

from __future__ import annotations

import inspect

from .bench_bnp_dp import cold_record

__all__ = ["MEMORY_KEYS", "PEAK_RSS_SOURCE", "fresh_record", "memory_figures", "peak_rss_mib",
           "reset_peak_rss"]

#: the memory figures a fresh-process script prints (MiB), kept out of ``phases``
MEMORY_KEYS = ("peak_rss_mib", "peak_rss_before_fit_mib", "fit_peak_rss_mib")


def peak_rss_mib() -> float:
    """This process's peak resident set size since it started (or since
    :func:`reset_peak_rss`), in MiB: ``VmHWM`` of ``/proc/self/status`` on Linux, else
    ``getrusage``'s ``ru_maxrss`` (bytes on macOS, KiB elsewhere)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    import sys

    scale = 2**20 if sys.platform == "darwin" else 2**10
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def reset_peak_rss() -> bool:
    """Set this process's peak resident set size to its current one (Linux: ``5`` written to
    ``/proc/self/clear_refs``); whether that could be done."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def memory_figures(before: float, reset: bool) -> dict:
    """The :data:`MEMORY_KEYS` at the end of a fit that started after ``before =
    peak_rss_mib()`` and ``reset = reset_peak_rss()``."""
    now = peak_rss_mib()
    return {"peak_rss_mib": max(before, now), "peak_rss_before_fit_mib": before,
            "fit_peak_rss_mib": now if reset else None}


#: the source of :func:`peak_rss_mib`, :func:`reset_peak_rss` and :func:`memory_figures`, to
#: put at the top of a fresh-process script
PEAK_RSS_SOURCE = "\n\n".join(inspect.getsource(f)
                               for f in (peak_rss_mib, reset_peak_rss, memory_figures))


def fresh_record(runs: list, warm, against: str) -> dict:
    """:func:`~benchmarks.bench_bnp_dp.cold_record` of fresh processes that also printed
    :data:`MEMORY_KEYS`: those leave ``phases`` and each becomes a key of the record, its
    largest value over the processes (MiB; ``None`` when a process printed ``null``).

    Args:
        runs: each process's ``(printed figures, result)``.
        warm: the result of the same work in this process.
        against: what the check compares with.
    """
    missing = sorted({key for key in MEMORY_KEYS for figures, _ in runs if key not in figures})
    if missing:
        raise ValueError(f"every fresh process must print {list(MEMORY_KEYS)}, missing {missing}")
    timed = [({k: v for k, v in figures.items() if k not in MEMORY_KEYS}, result)
             for figures, result in runs]
    rec = cold_record(timed, warm, against)
    for key in MEMORY_KEYS:
        values = [figures[key] for figures, _ in runs]
        rec[key] = None if any(v is None for v in values) else max(float(v) for v in values)
    return rec
