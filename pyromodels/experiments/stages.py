"""Progress lines of a long reproduction: one line per stage on standard error."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = ["stage_reporter", "run_stages"]


def stage_reporter(name: str, progress: bool) -> Callable[[str], None] | None:
    """``report(message)`` printing ``[name  12.3 s] message`` (seconds since this call) to
    standard error, or ``None`` when ``progress`` is false.

    Example:
        >>> stage_reporter("crowd", False) is None
        True
    """
    if not progress:
        return None
    start = time.perf_counter()

    def report(message: str) -> None:
        print(f"[{name} {time.perf_counter() - start:7.1f} s] {message}", file=sys.stderr)

    return report


def run_stages(name: str, units: Callable, settings: dict, seed: int,
               progress: bool) -> tuple[object, float]:
    """``units(settings, seed, report)`` with ``report`` a :func:`stage_reporter` of ``name``
    (``None`` without ``progress``): ``(its rows, the seconds it took)``."""
    report = stage_reporter(name, progress)
    start = time.perf_counter()
    rows = units(settings, seed, report)
    return rows, time.perf_counter() - start
