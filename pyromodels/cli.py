"""The ``pyromodels`` command: list, fit, demo, reproduce and report.

Usage::

    pyromodels list
    pyromodels fit gaussian-mixture --method gibbs --num-samples 500 --out reports/gmm
    pyromodels demo --smoke                       # every registered demo, one report
    pyromodels reproduce dawid-skene --scale medium
    pyromodels report reports/demo                # path and metrics of an existing report

Commands that write a report print one line, ``report: <absolute path of index.html>``.
A user error (unknown model, a method the model lacks, missing data, no report) exits with
status 2 and a one-line message on standard error.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from . import registry
from .checks import check_int, check_positive
from .core.progress import progress_bar

if TYPE_CHECKING:
    from .report import DemoResult

__all__ = ["main", "build_parser"]

logger = logging.getLogger(__name__)

SCALES = registry.SCALES

# Command-line engine options: destination -> the core engines whose runner takes it. A method
# outside this table (a model's own engine) receives the options given, and checks them itself.
ENGINE_OPTIONS: dict[str, tuple[str, ...]] = {
    "num_samples": ("svi", "nuts", "gibbs"),
    "num_warmup": ("nuts", "gibbs"),
    "num_chains": ("nuts", "gibbs"),
    "num_steps": ("svi",),
    "lr": ("svi",),
    "max_iter": ("em",),
    "n_init": ("em",),
    "device": ("svi", "nuts", "gibbs", "em"),
}
_CORE_ENGINES = ("svi", "nuts", "gibbs", "em")


class UsageError(Exception):
    """A mistake in the command line; reported in one line with exit status 2."""


def _count(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        return check_int(int(text), "value", minimum=1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None


def _seed(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        return check_int(int(text), "seed", minimum=0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None


def _positive_float(text: str) -> float:
    """argparse type: a finite real number > 0."""
    try:
        return check_positive(float(text), "value")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}") from None


def _add_run_options(parser: argparse.ArgumentParser, out_help: str) -> None:
    parser.add_argument("--out", type=Path, default=None, help=out_help)
    parser.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--no-progress", dest="progress", action="store_false", help="hide progress bars"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``pyromodels`` command."""
    parser = argparse.ArgumentParser(
        prog="pyromodels", description="A probabilistic-programming model zoo on Pyro."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("list", help="list the registered models")

    fit = sub.add_parser("fit", help="fit one model with one method and write its report")
    fit.add_argument("model", help="a registered model name (see `pyromodels list`)")
    fit.add_argument("--method", required=True, help="the inference method, one of the model's")
    fit.add_argument(
        "--data", default=None, metavar="PATH", help="data file (default: the model's data set)"
    )
    _add_run_options(fit, "report directory (default reports/fit/MODEL-METHOD)")
    engine = fit.add_argument_group("engine options (passed only when given)")
    engine.add_argument("--num-samples", type=_count, metavar="N", help="posterior draws per chain")
    engine.add_argument(
        "--num-warmup", type=_count, metavar="N", help="warm-up iterations per chain"
    )
    engine.add_argument("--num-chains", type=_count, metavar="N", help="number of chains")
    engine.add_argument("--num-steps", type=_count, metavar="N", help="SVI optimisation steps")
    engine.add_argument("--lr", type=_positive_float, metavar="RATE", help="SVI learning rate")
    engine.add_argument("--max-iter", type=_count, metavar="N", help="EM iterations at most")
    engine.add_argument("--n-init", type=_count, metavar="N", help="EM restarts")
    engine.add_argument("--device", help="torch device, for example cpu or cuda")

    demo = sub.add_parser("demo", help="run every registered demo and write one report")
    _add_run_options(demo, "report directory (default reports/demo)")
    demo.add_argument("--smoke", action="store_true", help="tiny sizes, for a quick check")
    demo.add_argument("--only", nargs="+", metavar="NAME", help="run only these models' demos")

    rep = sub.add_parser("reproduce", help="reproduce a paper's experiments and write a report")
    rep.add_argument("model", help="a registered model name, or all")
    rep.add_argument(
        "--scale", choices=SCALES, default="small", help="problem size (default small)"
    )
    _add_run_options(rep, "report directory (default reports/reproduce/MODEL-SCALE)")

    show = sub.add_parser("report", help="show the path and metrics of an existing report")
    show.add_argument("dir", type=Path, help="a report directory")
    return parser


def _use_agg() -> None:
    """Draw figures off-screen: the command line only ever writes them into reports."""
    import matplotlib

    matplotlib.use("Agg")


def _engine_options(args: argparse.Namespace, method: str) -> dict:
    """The engine options given on the command line, checked against ``method``."""
    given = {k: getattr(args, k) for k in ENGINE_OPTIONS if getattr(args, k) is not None}
    if method in _CORE_ENGINES:
        for key in given:
            if method not in ENGINE_OPTIONS[key]:
                flag = "--" + key.replace("_", "-")
                raise UsageError(
                    f"{flag} does not apply to method {method!r} "
                    f"(it applies to: {', '.join(ENGINE_OPTIONS[key])})"
                )
    return given


def _write_and_print(results: list, out: Path, title: str) -> None:
    from .report import write_report

    index = write_report(results, out, title)
    print(f"report: {index}")


def _check_result(result, entry: registry.ModelEntry, what: str) -> DemoResult:
    from .report import DemoResult  # the report package loads ArviZ: import it once it is used

    if not isinstance(result, DemoResult):
        raise TypeError(
            f"the {what} of model {entry.name!r} must return a DemoResult, "
            f"got {type(result).__name__}"
        )
    return result


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
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    """Fit one model with one method and write the report of that fit."""
    from .report import result_from_posterior

    entry = registry.get(args.model)
    if args.method not in entry.engines:
        raise UsageError(
            f"model {entry.name!r} has no method {args.method!r}; "
            f"its methods: {', '.join(entry.engines)}"
        )
    options = _engine_options(args, args.method)
    if entry.loader is None:
        raise UsageError(f"model {entry.name!r} has no data loader, so `fit` cannot load its data")
    if args.data is not None and not Path(args.data).exists():
        raise UsageError(f"data file not found: {args.data}")
    try:
        data = entry.loader(args.data)
    except (ValueError, TypeError, OSError) as exc:
        source = args.data if args.data is not None else "its default data set"
        raise UsageError(f"cannot load data for {entry.name!r} from {source}: {exc}") from exc
    _use_agg()
    model = entry.factory()
    posterior = model.fit(
        data, method=args.method, seed=args.seed, progress=args.progress, **options
    )
    name = f"{entry.name}-{args.method}"
    out = args.out if args.out is not None else Path("reports") / "fit" / name
    result = result_from_posterior(posterior, name)
    _write_and_print([result], out, f"pyromodels fit: {entry.title} ({args.method})")
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
    _use_agg()
    results = []
    with progress_bar(len(selected), "demos", args.progress) as bar:
        for entry in selected:
            bar.set_postfix_str(entry.name)
            logger.info("running the demo of %s", entry.name)
            result = entry.demo(smoke=args.smoke, progress=args.progress, seed=args.seed)
            results.append(_check_result(result, entry, "demo"))
            bar.update()
    out = args.out if args.out is not None else Path("reports") / "demo"
    _write_and_print(results, out, "pyromodels demo" + (" (smoke)" if args.smoke else ""))
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
    _use_agg()
    results = []
    for e in entries:
        result = e.reproduce(scale=args.scale, progress=args.progress, seed=args.seed)
        results.append(_check_result(result, e, "reproduction"))
    out = (
        args.out
        if args.out is not None
        else Path("reports") / "reproduce" / f"{args.model}-{args.scale}"
    )
    title = "all models" if args.model == "all" else entries[0].title
    _write_and_print(results, out, f"pyromodels reproduce: {title} ({args.scale} scale)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Print an existing report's index path and its metrics, one line per value."""
    from .report import flatten_metrics, format_value, read_metrics

    try:
        index, metrics = read_metrics(args.dir)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    print(f"report: {index}")
    for name, values in metrics.items():
        print(name)
        for key, value in flatten_metrics(values):
            print(f"  {key}: {format_value(value)}")
    return 0


_COMMANDS = {
    "list": cmd_list,
    "fit": cmd_fit,
    "demo": cmd_demo,
    "reproduce": cmd_reproduce,
    "report": cmd_report,
}


def main(argv: list[str] | None = None) -> int:
    """Run the ``pyromodels`` command on ``argv`` (default ``sys.argv[1:]``); return its status.

    Example:
        >>> main(["list"])  # doctest: +SKIP
        0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help and on malformed arguments
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command != "report":
            registry.load_builtin()
        return _COMMANDS[args.command](args)
    except (UsageError, registry.UnknownModelError) as exc:
        print(f"pyromodels: error: {exc}", file=sys.stderr)
        return 2
