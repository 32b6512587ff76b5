"""The argument parser of the ``pyromodels`` command, and the help of one model's ``fit``.

Argument errors are reported like every other user error: one line on standard error,
``pyromodels: error: <message>``, and exit status 2. The parser and the help are built from
the models' declarations (:func:`pyromodels.registry.infos`): nothing here imports a model,
so ``--help``, ``list`` and usage errors answer without loading torch.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from .. import registry
from ..checks import check_int, check_positive
from .parallel import add_parallel_options

__all__ = ["Parser", "build_parser", "fit_help", "ENGINE_OPTIONS", "CHECKPOINT_ENGINES",
           "FIT_OPTIONS", "argument_dests", "engine_options_of", "flag"]

SCALES = registry.SCALES

#: Command-line engine options: destination -> the engines whose fit takes it (``mcem`` is
#: DDPM's Monte Carlo EM: ``--rounds``, ``--n-init`` restarts and ``--lr`` of the flow's Adam
#: steps). A model's help lists the options of its own engines only; an option given to a
#: method that does not take it is a usage error.
ENGINE_OPTIONS: dict[str, tuple[str, ...]] = {
    "num_samples": ("svi", "nuts", "gibbs"),
    "num_warmup": ("nuts", "gibbs"),
    "num_chains": ("nuts", "gibbs"),
    "num_steps": ("svi",),
    "lr": ("svi", "mcem", "natgrad"),
    "max_iter": ("em",),
    "n_init": ("em", "mcem"),
    "rounds": ("mcem",),
    "device": ("svi", "nuts", "gibbs", "em", "natgrad"),
}
#: the engines whose runs ``--checkpoint-every`` saves and ``--resume`` continues
CHECKPOINT_ENGINES = ("svi", "nuts", "gibbs", "em", "mcem", "natgrad")


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


def _open_probability(text: str) -> float:
    """argparse type: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


#: the structure searches ``--search`` names (``pyromodels.ltvae.search.SEARCHES``, written
#: here so that parsing imports no model family)
SEARCHES = ("east",)


def _search(text: str) -> str:
    """argparse type: the name of a structure search, one of :data:`SEARCHES`."""
    if text not in SEARCHES:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(SEARCHES)}, got {text!r}")
    return text


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
#: those it takes in ``ModelInfo.options`` (its constructor arguments are its ``arguments``)
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
    "gold": ("FILE", str, "gold labels, a CSV with task (or item) and label columns: the "
             "report scores the fit's labels against them (accuracy, macro-F1)"),
    "regularisation": ("C", _positive_float, "RBHMC's regularisation constant C > 0: fit the "
                       "max-margin regularised model (default: plain BHMC)"),
    "margin": ("EPS0", _nonnegative_float, "RBHMC's margin eps0 >= 0 (default 1; needs "
               "--regularisation)"),
    "pairs": ("FILE", str, "pairwise links between the points of --data: a CSV with columns "
              "item_a, item_b (row numbers 0..N-1 of the data), worker, link (1 = same "
              "cluster, 0 = not); default: none (a clustering of the features alone)"),
    "epochs": ("N", _count, "passes over the data (default 20; bayes-scdc: 60, the globals "
               "held for the first two thirds; ltvae: 60); --checkpoint-every counts epochs"),
    "batch_size": ("N", _count, "items per SVI step (default 128; bayes-scdc: 50)"),
    "coin_init": ("P", _open_probability, "every worker's initial sensitivity and "
                  "specificity, in (0, 1) (default: drawn from Beta(1, 1), as the paper)"),
    "kl_warmup_epochs": ("N", _count, "epochs over which SCDC's local KL terms rise linearly "
                         "to full weight, fewer than --epochs (default 0: the paper's plain "
                         "ELBO; a long warm-up keeps the fit out of posterior collapse)"),
    "search": ("NAME", _search, "learn the latent tree's structure during the fit: east "
               "(PLTM-EAST's BIC hill-climbing from the current tree, on the encoder means of "
               "all the data, every --search-every epochs; default: no search, the tree stays "
               "one latent node)"),
    "search_every": ("N", _count, "epochs between structure searches (default 5, the paper's; "
                     "needs --search)"),
}


def _add_run_options(parser: argparse.ArgumentParser, out_help: str) -> None:
    parser.add_argument("--out", type=Path, default=None, help=out_help)
    parser.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--no-progress", dest="progress", action="store_false", help="hide progress bars"
    )


def _real(text: str) -> float:
    """argparse type: a finite real number."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


#: the argparse type of each kind of declared constructor argument
_ARGUMENT_TYPES = {"positive": _positive_float, "nonnegative": _nonnegative_float,
                   "real": _real, "count": _count, "components": _components}

#: the engine options: destination -> (metavar, type, help)
_ENGINE_HELP: dict[str, tuple[str, object, str]] = {
    "num_samples": ("N", _count, "posterior draws per chain"),
    "num_warmup": ("N", _count, "warm-up iterations per chain"),
    "num_chains": ("N", _count, "number of chains"),
    "num_steps": ("N", _count, "SVI optimisation steps"),
    "lr": ("RATE", _positive_float, "learning rate (SVI's; Monte Carlo EM's Adam steps on the "
           "flow; natgrad's Adam steps on the networks, default 0.01 for networks of at most "
           "64 units a layer, else 1e-3; ltvae's, default 0.01)"),
    "max_iter": ("N", _count, "EM iterations at most"),
    "n_init": ("N", _count, "restarts (the best one is kept)"),
    "rounds": ("N", _count, "Monte Carlo EM rounds"),
    "device": ("DEVICE", str, "torch device, for example cpu or cuda"),
}


def engine_options_of(engines: tuple[str, ...], model: registry.ModelInfo | None = None) -> list[str]:
    """The engine options (destinations) that apply to one of ``engines``, and that
    ``model`` takes when it declares its ``engine_options``."""
    chosen = [dest for dest, takers in ENGINE_OPTIONS.items() if set(takers) & set(engines)]
    if model is not None and model.engine_options is not None:
        chosen = [dest for dest in chosen if dest in model.engine_options]
    return chosen


def _union_arguments(infos) -> dict[str, registry.Argument]:
    """Every declared constructor argument of ``infos`` by destination; one destination
    declared with two kinds is an error of the declarations."""
    found: dict[str, registry.Argument] = {}
    for model in infos:
        for argument in model.arguments:
            known = found.setdefault(argument.dest, argument)
            if (known.kind, known.metavar) != (argument.kind, argument.metavar):
                raise ValueError(f"argument {argument.dest!r} is declared with two kinds: "
                                 f"{known.kind} {known.metavar} and {argument.kind} "
                                 f"{argument.metavar}")
    return found


def argument_dests() -> tuple[str, ...]:
    """The destinations of every declared model's constructor arguments."""
    return tuple(_union_arguments(registry.infos()))


def _applies(dest: str, engines: tuple[str, ...]) -> str:
    """`` (methods: ...)`` naming which of ``engines`` take the engine option ``dest``, when
    not all of them do."""
    takers = [e for e in engines if e in ENGINE_OPTIONS[dest]]
    if takers == list(engines):
        return ""
    return f" ({'methods' if len(takers) > 1 else 'method'} {', '.join(takers)})"


def _add_fit_arguments(parser: argparse.ArgumentParser, model: registry.ModelInfo | None) -> None:
    """The ``fit`` arguments: those of every declared model (``model`` ``None``), or only
    ``model``'s own."""
    parser.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    if model is None:
        method_help = ("the inference method, one of the model's (default: the model's "
                       "natural one; see `pyromodels fit MODEL --help`)")
    else:
        method_help = f"the inference method (default {model.default_method})"
    parser.add_argument("--method", metavar="{" + ",".join(model.engines) + "}" if model else None,
                        help=method_help)
    if model is None or model.reads_data:
        parser.add_argument("--data", default=None, metavar="PATH",
                            help="data file (its format: `pyromodels fit MODEL --help`; "
                                 "default: the model's data set where it has one)")
    _add_run_options(parser, "report directory (default reports/fit/MODEL-METHOD)")
    chosen = [o for o in FIT_OPTIONS if model is None or o in model.options]
    if chosen:
        group = parser.add_argument_group("model options (the model's own, see its help)")
        for dest in chosen:
            metavar, kind, text = FIT_OPTIONS[dest]
            group.add_argument(flag(dest), dest=dest, metavar=metavar, type=kind, help=text)
    arguments = (_union_arguments(registry.infos()).values() if model is None
                 else model.arguments)
    if arguments:
        group = parser.add_argument_group("model arguments (priors and sizes; default: the "
                                          "model's own)")
        for argument in arguments:
            group.add_argument(flag(argument.dest), dest=argument.dest, metavar=argument.metavar,
                               type=_ARGUMENT_TYPES[argument.kind], help=argument.help)
    engine = parser.add_argument_group("engine options (passed only when given)")
    for dest in ENGINE_OPTIONS:
        if model is None or dest in engine_options_of(model.engines, model):
            metavar, kind, text = _ENGINE_HELP[dest]
            if model is not None:
                text += _applies(dest, model.engines)
            engine.add_argument(flag(dest), dest=dest, metavar=metavar, type=kind, help=text)
    if model is None or set(model.engines) & set(CHECKPOINT_ENGINES):
        engine.add_argument(
            "--checkpoint-every", type=_count, metavar="N",
            help="write the run's state into the report directory every N steps (sweeps, "
                 "transitions, SVI steps, EM starts or Monte Carlo EM rounds), at the end and "
                 "on Ctrl-C; `pyromodels fit --resume DIR` continues it")
        parser.add_argument(
            "--resume", type=Path, metavar="DIR", default=None,
            help="continue the fit checkpointed in the report directory DIR, with the "
                 "arguments saved there (give no other fit arguments)")


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
    _add_fit_arguments(fit, None)

    demo = sub.add_parser("demo", help="run every registered demo and write one report")
    _add_run_options(demo, "report directory (default reports/demo)")
    demo.add_argument("--smoke", action="store_true", help="tiny sizes, for a quick check")
    demo.add_argument("--only", nargs="+", metavar="NAME", help="run only these models' demos")

    rep = sub.add_parser("reproduce", help="reproduce a paper's experiments and write a report")
    rep.add_argument("model", help="a registered model name, or all")
    rep.add_argument(
        "--scale", choices=registry.ALL_SCALES, default="small",
        help="problem size (default small; smoke: seconds, where a reproduction offers it)"
    )
    _add_run_options(rep, "report directory (default reports/reproduce/MODEL-SCALE)")
    add_parallel_options(rep)

    show = sub.add_parser("report", help="show the path and metrics of an existing report")
    show.add_argument("dir", type=Path, help="a report directory")
    return parser


def fit_help(model: registry.ModelInfo | None) -> str:
    """The help of ``pyromodels fit MODEL`` for the declaration ``model`` (its methods, data
    format and options), or of ``pyromodels fit`` with the declared models listed (``None``)."""
    if model is None:
        fit = Parser(prog="pyromodels fit", add_help=False,
                     usage="pyromodels fit MODEL [--method METHOD] [options]",
                     description="Fit one model with one method and write its report.",
                     epilog="models (`pyromodels fit MODEL --help` for one model's data "
                            "format and options): " + "; ".join(
                                f"{e.name} ({', '.join(e.engines)})"
                                for e in registry.infos() if e.data_format))
        _add_fit_arguments(fit, None)
        return fit.format_help()
    text = (f"{model.title}. Methods: {', '.join(model.engines)} (default "
            f"{model.default_method}).")
    if model.data_format:
        text += f" Data: {model.data_format}."
    fit = Parser(prog=f"pyromodels fit {model.name}", add_help=False, description=text,
                 usage=f"pyromodels fit {model.name} [--method {{{','.join(model.engines)}}}] "
                       "[options]")
    _add_fit_arguments(fit, model)
    return fit.format_help()
