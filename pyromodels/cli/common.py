"""What every command shares: the user-error exception, off-screen figures, report writing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import registry

if TYPE_CHECKING:
    from ..report import DemoResult

__all__ = ["UsageError", "use_agg", "write_and_print", "check_result"]


class UsageError(Exception):
    """A mistake in the command line; reported in one line with exit status 2."""


def use_agg() -> None:
    """Draw figures off-screen: the command line only ever writes them into reports."""
    import matplotlib

    matplotlib.use("Agg")


def write_and_print(results: list, out: Path, title: str) -> Path:
    """Write the report of ``results`` into ``out``, print its index line and return the
    report directory."""
    from ..report import write_report

    index = write_report(results, out, title)
    print(f"report: {index}")
    return index.parent


def check_result(result, entry: registry.ModelEntry, what: str) -> DemoResult:
    """``result`` if it is a :class:`~pyromodels.report.DemoResult`; else a ``TypeError``
    naming the entry and the hook (``what``) that returned it."""
    from ..report import DemoResult  # the report package loads ArviZ: import it once it is used

    if not isinstance(result, DemoResult):
        raise TypeError(
            f"the {what} of model {entry.name!r} must return a DemoResult, "
            f"got {type(result).__name__}"
        )
    return result
