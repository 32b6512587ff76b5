"""What every command shares: the user-error exception, off-screen figures, report writing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import registry

if TYPE_CHECKING:
    from ..report import DemoResult

__all__ = ["UsageError", "use_agg", "check_out", "write_and_print", "check_result"]


class UsageError(Exception):
    """A mistake in the command line; reported in one line with exit status 2."""


def check_out(out) -> Path:
    """``--out`` as an absolute path once it is known that a report can be written there: not
    a file, not the current directory, in a directory that can be written; a
    :class:`UsageError` otherwise. Commands check it before they fit anything."""
    from ..report.atomic import check_target

    try:
        return check_target(out, "--out")
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def use_agg() -> None:
    """Draw figures off-screen: the command line only ever writes them into reports."""
    import matplotlib

    matplotlib.use("Agg")


def write_and_print(results: list, out: Path, title: str, files: dict | None = None) -> Path:
    """Write the report of ``results`` (and the CSV ``files``, name -> DataFrame) into ``out``,
    print its index line and return the report directory. A report that cannot be written
    (``out`` unusable, the disk full) is a :class:`UsageError`; ``out`` is left as it was."""
    from ..report import write_report

    out = check_out(out)  # a default --out is checked here, a given one before the fit too
    try:
        index = write_report(results, out, title, files=files)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {out}: {exc}") from exc
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
