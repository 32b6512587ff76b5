"""The commands other than ``fit``: list, demo, reproduce and report."""

from __future__ import annotations

import argparse
import logging
import sys
import textwrap
from pathlib import Path

from .. import registry
from .common import UsageError, check_out, check_result, use_agg, write_and_print
from .parallel import parallel_runs

__all__ = ["cmd_list", "cmd_demo", "cmd_reproduce", "cmd_report"]

logger = logging.getLogger(__name__)


#: the width that ``pyromodels list`` keeps to
LIST_WIDTH = 100


def cmd_list(args: argparse.Namespace) -> int:
    """Print the declared models as a table that fits :data:`LIST_WIDTH` columns: name, methods
    (the default first, starred) and, wrapped in the last column, the title and below it the
    paper."""
    models = registry.infos()
    if not models:
        print("no models are registered")
        return 0
    rows = [("NAME", "METHODS", "TITLE", "paper")]
    for model in models:
        methods = [model.default_method + "*"]
        methods += [e for e in model.engines if e != model.default_method]
        rows.append((model.name, ",".join(methods), model.title, model.paper))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    indent = widths[0] + widths[1] + 4
    for name, methods, title, paper in rows:
        lines = textwrap.wrap(title, LIST_WIDTH - indent, break_on_hyphens=False)
        lines += textwrap.wrap(paper, LIST_WIDTH - indent, break_on_hyphens=False,
                               initial_indent="  ", subsequent_indent="  ")
        print(f"{name.ljust(widths[0])}  {methods.ljust(widths[1])}  {lines[0]}")
        for line in lines[1:]:
            print(" " * indent + line)
    print("\n* the default method. Fit one: pyromodels fit NAME [--method METHOD]; its data "
          "format\nand options: pyromodels fit NAME --help")
    return 0


def _demo_entries(only: list[str] | None, out) -> tuple[list[registry.ModelEntry], object]:
    """The entries whose demos run, and ``--out`` checked: the names are checked against the
    declarations, and ``--out`` with them, before any model is imported."""
    if only is not None:
        for name in only:
            registry.info(name)
    out = check_out(out) if out is not None else None
    if only is None:
        selected = [e for e in registry.entries() if e.demo is not None]
        if not selected:
            raise UsageError("no registered model has a demo")
        return selected, out
    selected = []
    for name in dict.fromkeys(only):  # a name given twice runs once
        entry = registry.get(name)
        if entry.demo is None:
            raise UsageError(f"model {entry.name!r} has no demo")
        selected.append(entry)
    return selected, out


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the registered demos (all, or those named by ``--only``) and write one report."""
    selected, out = _demo_entries(args.only, args.out)
    from ..core.progress import progress_bar

    use_agg()
    results = []
    with progress_bar(len(selected), "demos", args.progress) as bar:
        for entry in selected:
            bar.set_postfix_str(entry.name)
            logger.info("running the demo of %s", entry.name)
            result = entry.demo(smoke=args.smoke, progress=args.progress, seed=args.seed)
            results.append(check_result(result, entry, "demo"))
            bar.update()
    out = out if out is not None else Path("reports") / "demo"
    write_and_print(results, out, "pyromodels demo" + (" (smoke)" if args.smoke else ""))
    return 0


def _reproduced(model: str, scale: str) -> list[str]:
    """The names of the models whose reproductions run (``model`` one, or ``all``), checked
    against their declarations; an entry of ``all`` without ``scale`` is skipped with a
    line on standard error."""
    if model != "all":
        declared = registry.info(model)
        if scale not in declared.scales:
            raise UsageError(f"model {declared.name!r} reproduces at scales "
                             f"{list(declared.scales)}, not {scale!r}")
        return [declared.name]
    names = []
    for declared in registry.infos():
        if scale in declared.scales:
            names.append(declared.name)
        else:
            print(f"pyromodels: {declared.name} has no {scale!r} scale; skipped",
                  file=sys.stderr)
    return names


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Reproduce one paper's experiments (or ``all`` of them) at the chosen scale; write the report.

    ``--n-jobs`` and ``--scheduler`` (see :mod:`.parallel`) are applied first, so an
    unreachable scheduler is reported within seconds, before the report machinery and any
    model are loaded."""
    names = _reproduced(args.model, args.scale)
    with parallel_runs(args.n_jobs, args.scheduler):
        out = check_out(args.out) if args.out is not None else None
        entries = [registry.get(name) for name in names]
        if args.model == "all":
            entries = [e for e in entries if e.reproduce is not None]
            if not entries:
                raise UsageError(f"no registered model has a paper reproduction at scale "
                                 f"{args.scale!r}")
        elif entries[0].reproduce is None:
            raise UsageError(f"model {entries[0].name!r} has no paper reproduction")
        use_agg()
        results = []
        for e in entries:
            result = e.reproduce(scale=args.scale, progress=args.progress, seed=args.seed)
            results.append(check_result(result, e, "reproduction"))
    if out is None:
        out = Path("reports") / "reproduce" / f"{args.model}-{args.scale}"
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
