"""The ``pyromodels`` command: list, fit, demo, reproduce and report.

Usage::

    pyromodels list
    pyromodels fit dawid-skene --data answers.csv --gold gold.csv   # EM, its natural method
    pyromodels fit dawid-skene --help             # the model's methods, data format, options
    pyromodels fit gaussian-mixture --method gibbs --num-samples 500 --out reports/gmm
    pyromodels demo --smoke                       # every registered demo, one report
    pyromodels reproduce crowd --scale medium
    pyromodels report reports/demo                # path and metrics of an existing report

Commands that write a report print one line, ``report: <absolute path of index.html>``.
A user error (unknown model, a method the model lacks, missing or malformed data, a bad
argument, an ``--out`` that cannot be written, no report or a partial one) exits with
status 2 and a one-line message on standard error; Ctrl-C exits with status 130 and one line.
Any other error is a bug, and keeps its traceback.

The arguments are parsed and checked against the models' declarations
(:mod:`pyromodels.registry`) before any model, torch or Pyro is imported: ``--help``,
``list``, ``fit MODEL --help`` and every usage error answer at once.
"""

from __future__ import annotations

import logging
import sys
import warnings

from .. import registry
from .commands import cmd_demo, cmd_list, cmd_report, cmd_reproduce
from .common import UsageError
from .fit import cmd_fit
from .parser import ENGINE_OPTIONS, build_parser

__all__ = ["main", "build_parser", "UsageError", "ENGINE_OPTIONS"]

#: what the command reports as a user error: its own argument checks (UsageError), unknown
#: model names, and data that cannot be found (a missing data set, $PYROMODELS_DATA unset or
#: pointing elsewhere); data and argument checks elsewhere raise UsageError from their
#: ValueError or TypeError
USER_ERRORS = (UsageError, registry.UnknownModelError, FileNotFoundError)

_COMMANDS = {
    "list": cmd_list,
    "fit": cmd_fit,
    "demo": cmd_demo,
    "reproduce": cmd_reproduce,
    "report": cmd_report,
}


def _one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line."""
    return " ".join(str(exc).split())


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning on standard error as one line, ``pyromodels: warning: <message>``, as the
    command reports errors (Python's form names a library line the user never wrote)."""
    print(f"pyromodels: warning: {_one_line(message)}", file=sys.stderr if file is None else file)


def _run(argv: list[str] | None) -> int:
    registry.load_builtin()  # the declarations only: the parser offers their options
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help and on malformed arguments
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:  # each command checks --out once its arguments are checked, before any fit
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _COMMANDS[args.command](args)
    except USER_ERRORS as exc:
        print(f"pyromodels: error: {_one_line(exc)}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    """Run the ``pyromodels`` command on ``argv`` (default ``sys.argv[1:]``); return its status.

    The exit status is 0 on success, 2 for a user error (one line on standard error:
    ``pyromodels: error: <message>``) and 130 when interrupted (Ctrl-C: one line,
    ``pyromodels: interrupted``); any other exception is a bug and keeps its traceback.

    Example:
        >>> main(["list"])  # doctest: +SKIP
        0
    """
    try:
        return _run(argv)
    except KeyboardInterrupt:
        print("pyromodels: interrupted", file=sys.stderr)
        return 130
