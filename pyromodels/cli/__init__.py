"""The ``pyromodels`` command: list, fit, demo, reproduce and report.

Usage::

    pyromodels list
    pyromodels fit dawid-skene --method gibbs --data answers.csv --gold gold.csv
    pyromodels fit dawid-skene --help             # the model's methods, data format, options
    pyromodels fit gaussian-mixture --method gibbs --num-samples 500 --out reports/gmm
    pyromodels demo --smoke                       # every registered demo, one report
    pyromodels reproduce crowd --scale medium
    pyromodels report reports/demo                # path and metrics of an existing report

Commands that write a report print one line, ``report: <absolute path of index.html>``.
A user error (unknown model, a method the model lacks, missing or malformed data, a bad
argument, no report) exits with status 2 and a one-line message on standard error.
"""

from __future__ import annotations

import logging
import sys

from .. import registry
from .commands import cmd_demo, cmd_list, cmd_report, cmd_reproduce
from .common import UsageError
from .fit import cmd_fit
from .parser import ENGINE_OPTIONS, build_parser

__all__ = ["main", "build_parser", "UsageError", "ENGINE_OPTIONS"]

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
