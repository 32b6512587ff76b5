"""The argument parser of the ``pyromodels`` command, and the help of one model's ``fit``.

Argument errors are reported like every other user error: one line on standard error,
``pyromodels: error: <message>``, and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from .. import registry
from ..checks import check_int, check_positive

__all__ = ["Parser", "build_parser", "fit_help", "ENGINE_OPTIONS", "FIT_OPTIONS", "flag"]

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


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, wrapping lines at spaces only: a model name such as
    ``networked-dawid-skene`` is never split at its hyphens."""

    def _split_lines(self, text, width):
        return textwrap.wrap(self._whitespace_matcher.sub(" ", text).strip(), width,
                             break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        return textwrap.fill(self._whitespace_matcher.sub(" ", text).strip(), width,
                             initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit status 2, and whose help never
    splits a word at a hyphen."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        print(f"pyromodels: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def flag(dest: str) -> str:
    """The command-line flag of an option destination: ``task_col`` -> ``--task-col``."""
    return "--" + dest.replace("_", "-")


def _count(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        return check_int(int(text), "value", minimum=1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None


def _components(text: str) -> int:
    """argparse type: an integer >= 2."""
    try:
        return check_int(int(text), "value", minimum=2)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2, got {text!r}") from None


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


def _nonnegative_float(text: str) -> float:
    """argparse type: a finite real number >= 0."""
    try:
        return check_positive(float(text), "value", strict=False)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}") from None


#: the model-specific ``fit`` options: destination -> (metavar, type, help); an entry lists
#: those it takes in ``ModelEntry.options``
FIT_OPTIONS: dict[str, tuple[str, object, str]] = {
    "dataset": ("NAME", str, "a named crowd data set instead of --data: a bundled one (rte, "
                "temp, bluebirds, ducks, dog, web, product, adult, face, music_genre) or a "
                "folder NAME/ with answers.csv under $PYROMODELS_DATA"),
    "task_col": ("COLUMN", str, "the task column of the data (default: task, or item)"),
    "worker_col": ("COLUMN", str, "the worker column of the data (default: worker)"),
    "label_col": ("COLUMN", str, "the label column of the data (default: label)"),
    "sequence_col": ("COLUMN", str, "the column giving each task's sequence (default: sequence)"),
    "position_col": ("COLUMN", str, "the column giving each task's position in its sequence "
                     "(default: position)"),
    "edges": ("FILE", str, "the graph between tasks: a CSV whose first two columns hold the "
              "task ids of each edge"),
    "num_components": ("K", _components, "number of mixture components (default 3)"),
    "gold": ("FILE", str, "gold labels, a CSV with task (or item) and label columns: the "
             "report scores the fit's labels against them (accuracy, macro-F1)"),
    "regularisation": ("C", _positive_float, "RBHMC's regularisation constant C > 0: fit the "
                       "max-margin regularised model (default: plain BHMC)"),
    "margin": ("EPS0", _nonnegative_float, "RBHMC's margin eps0 >= 0 (default 1; needs "
               "--regularisation)"),
}


def _add_run_options(parser: argparse.ArgumentParser, out_help: str) -> None:
    parser.add_argument("--out", type=Path, default=None, help=out_help)
    parser.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--no-progress", dest="progress", action="store_false", help="hide progress bars"
    )


def _add_fit_arguments(parser: argparse.ArgumentParser, methods: tuple[str, ...] | None,
                       options) -> None:
    """The ``fit`` arguments; ``methods`` and ``options`` narrow them to one model's."""
    parser.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    method_help = ("the inference method, one of the model's (see `pyromodels fit MODEL "
                   "--help`)" if methods is None else "the inference method")
    parser.add_argument("--method", metavar="{" + ",".join(methods) + "}" if methods else None,
                        help=method_help)
    parser.add_argument("--data", default=None, metavar="PATH",
                        help="data file (its format: `pyromodels fit MODEL --help`; default: "
                             "the model's data set where it has one)")
    _add_run_options(parser, "report directory (default reports/fit/MODEL-METHOD)")
    chosen = [o for o in FIT_OPTIONS if options is None or o in options]
    if chosen:
        group = parser.add_argument_group("model options (the model's own, see its help)")
        for dest in chosen:
            metavar, kind, text = FIT_OPTIONS[dest]
            group.add_argument(flag(dest), dest=dest, metavar=metavar, type=kind, help=text)
    engine = parser.add_argument_group("engine options (passed only when given)")
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
    engine.add_argument(
        "--checkpoint-every", type=_count, metavar="N",
        help="write the run's state into the report directory every N steps (sweeps, "
             "transitions, SVI steps or EM starts), at the end and on Ctrl-C; "
             "`pyromodels fit --resume DIR` continues it")
    parser.add_argument(
        "--resume", type=Path, metavar="DIR", default=None,
        help="continue the fit checkpointed in the report directory DIR, with the arguments "
             "saved there (give no other fit arguments)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``pyromodels`` command."""
    parser = Parser(
        prog="pyromodels", description="A probabilistic-programming model zoo on Pyro."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("list", help="list the registered models")

    fit = sub.add_parser(
        "fit", add_help=False, help="fit one model with one method and write its report",
        description="Fit one model with one method and write its report. `pyromodels list` "
                    "shows the models; `pyromodels fit MODEL --help` shows a model's methods, "
                    "data format and options.")
    fit.add_argument("model", nargs="?", help="a registered model name (see `pyromodels list`)")
    _add_fit_arguments(fit, None, None)

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


def fit_help(entry: registry.ModelEntry | None) -> str:
    """The help of ``pyromodels fit MODEL`` for ``entry`` (its methods, data format and
    options), or of ``pyromodels fit`` with the registered models listed (``None``)."""
    if entry is None:
        fit = Parser(prog="pyromodels fit", add_help=False,
                     usage="pyromodels fit MODEL --method METHOD [options]",
                     description="Fit one model with one method and write its report.",
                     epilog="models (`pyromodels fit MODEL --help` for one model's data "
                            "format and options): " + "; ".join(
                                f"{e.name} ({', '.join(e.engines)})"
                                for e in registry.entries() if e.loader is not None))
        _add_fit_arguments(fit, None, None)
        return fit.format_help()
    text = f"{entry.title}. Methods: {', '.join(entry.engines)}."
    if entry.data_format:
        text += f" Data: {entry.data_format}."
    fit = Parser(prog=f"pyromodels fit {entry.name}", add_help=False, description=text,
                 usage=f"pyromodels fit {entry.name} --method {{{','.join(entry.engines)}}} "
                       "[options]")
    _add_fit_arguments(fit, entry.engines, entry.options)
    return fit.format_help()
