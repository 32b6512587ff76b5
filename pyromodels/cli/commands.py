"""The commands other than ``fit``: list, demo, reproduce and report."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .. import registry
from ..core.progress import progress_bar
from .common import UsageError, check_result, use_agg, write_and_print

__all__ = ["cmd_list", "cmd_demo", "cmd_reproduce", "cmd_report"]

logger = logging.getLogger(__name__)


def cmd_list(args: argparse.Namespace) -> int:
    """Print the registered models as a table: name, engines, paper, title."""
    rows = [("NAME", "ENGINES", "PAPER", "TITLE")]
    rows += [(e.name, ",".join(e.engines), e.paper, e.title) for e in registry.entries()]
    if len(rows) == 1:
        print("no models are registered")
        return 0
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3])
    print("\nfit one: pyromodels fit NAME --method METHOD; its data format and options: "
          "pyromodels fit NAME --help")
    return 0


def _demo_entries(only: list[str] | None) -> list[registry.ModelEntry]:
    if only is None:
        selected = [e for e in registry.entries() if e.demo is not None]
        if not selected:
            raise UsageError("no registered model has a demo")
        return selected
    selected = []
    for name in dict.fromkeys(only):  # a name given twice runs once
        entry = registry.get(name)
        if entry.demo is None:
            raise UsageError(f"model {entry.name!r} has no demo")
        selected.append(entry)
    return selected


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the registered demos (all, or those named by ``--only``) and write one report."""
    selected = _demo_entries(args.only)
    use_agg()
    results = []
    with progress_bar(len(selected), "demos", args.progress) as bar:
        for entry in selected:
            bar.set_postfix_str(entry.name)
            logger.info("running the demo of %s", entry.name)
            result = entry.demo(smoke=args.smoke, progress=args.progress, seed=args.seed)
            results.append(check_result(result, entry, "demo"))
            bar.update()
    out = args.out if args.out is not None else Path("reports") / "demo"
    write_and_print(results, out, "pyromodels demo" + (" (smoke)" if args.smoke else ""))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Reproduce one paper's experiments (or ``all`` of them) at the chosen scale; write the report."""
    if args.model == "all":
        entries = [e for e in registry.entries() if e.reproduce is not None]
        for e in entries:
            if args.scale not in e.scales:
                print(f"pyromodels: {e.name} has no {args.scale!r} scale; skipped", file=sys.stderr)
        entries = [e for e in entries if args.scale in e.scales]
        if not entries:
            raise UsageError(f"no registered model has a paper reproduction at scale {args.scale!r}")
    else:
        entry = registry.get(args.model)
        if entry.reproduce is None:
            raise UsageError(f"model {entry.name!r} has no paper reproduction")
        if args.scale not in entry.scales:
            raise UsageError(
                f"model {entry.name!r} reproduces at scales {list(entry.scales)}, not {args.scale!r}"
            )
        entries = [entry]
    use_agg()
    results = []
    for e in entries:
        result = e.reproduce(scale=args.scale, progress=args.progress, seed=args.seed)
        results.append(check_result(result, e, "reproduction"))
    out = (
        args.out
        if args.out is not None
        else Path("reports") / "reproduce" / f"{args.model}-{args.scale}"
    )
    title = "all models" if args.model == "all" else entries[0].title
    write_and_print(results, out, f"pyromodels reproduce: {title} ({args.scale} scale)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Print an existing report's index path and its metrics, one line per value, once it is
    known to be one whole report (a partial or mixed one is a user error)."""
    from ..report import flatten_metrics, format_value, read_report

    try:
        index, metrics, _ = read_report(args.dir)  # checks it is one whole report
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(f"report: {index}")
    for name, values in metrics.items():
        print(name)
        for key, value in flatten_metrics(values):
            print(f"  {key}: {format_value(value)}")
    return 0
