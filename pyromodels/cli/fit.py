"""``pyromodels fit MODEL --method METHOD``: fit one registered model and write its report.

The model's declaration says what data it reads, its natural method (the default of
``--method``) and which of the model-specific options it takes
(:data:`~pyromodels.registry.LOADER_OPTIONS` go to its loader, its declared constructor
``arguments`` to its factory, ``--gold`` to its ``describe`` hook,
:data:`~pyromodels.registry.FIT_ARGUMENTS` to the model's ``fit``, renamed). Every argument
is checked against the declaration before the model's module is imported, so a usage error
costs no import of torch. The report is written as for every command; the files the hook
adds (a fit's ``labels.csv``, say) are written beside ``index.html``, as part of the report.

With ``--checkpoint-every N`` the run's state goes to ``checkpoint.pt`` in the report
directory (see :mod:`pyromodels.core.checkpoint`) and the command's arguments to
``checkpoint-args.json`` beside it; ``pyromodels fit --resume DIR`` reads both and continues
the run, which then ends as the uninterrupted run would have.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from .. import registry
from .common import UsageError, check_out, use_agg, write_and_print
from .parser import (
    CHECKPOINT_ENGINES,
    ENGINE_OPTIONS,
    FIT_OPTIONS,
    argument_dests,
    fit_help,
    flag,
)

__all__ = ["cmd_fit"]

#: model-specific options whose value is a file that must exist
_FILE_OPTIONS = ("edges", "gold", "pairs")
#: the checkpoint and the saved arguments, in the report directory
CHECKPOINT, ARGUMENTS = "checkpoint.pt", "checkpoint-args.json"


def _saved_keys() -> tuple[str, ...]:
    """The arguments that --checkpoint-every saves and --resume restores."""
    return ("model", "method", "data", "seed", "checkpoint_every", *FIT_OPTIONS,
            *argument_dests(), *ENGINE_OPTIONS)


def _engine_options(args: argparse.Namespace, method: str, model: registry.ModelInfo) -> dict:
    """The engine options given on the command line, checked against ``method`` and the
    options ``model`` takes."""
    given = {k: getattr(args, k) for k in ENGINE_OPTIONS if getattr(args, k) is not None}
    for key in given:
        if model.engine_options is not None and key not in model.engine_options:
            listed = ", ".join(flag(o) for o in model.engine_options) or "none"
            raise UsageError(f"{flag(key)} does not apply to model {model.name!r} "
                             f"(its engine options: {listed})")
        if method not in ENGINE_OPTIONS[key]:
            raise UsageError(
                f"{flag(key)} does not apply to method {method!r} "
                f"(it applies to: {', '.join(ENGINE_OPTIONS[key])})"
            )
    return given


def _model_options(args: argparse.Namespace, model: registry.ModelInfo) -> dict:
    """The model-specific options and constructor arguments given, checked against the
    model's own."""
    keys = (*FIT_OPTIONS, *argument_dests())
    given = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
    own = (*model.options, *(a.dest for a in model.arguments))
    for key in given:
        if key not in own:
            listed = ", ".join(flag(o) for o in own) or "none"
            raise UsageError(f"{flag(key)} does not apply to model {model.name!r} "
                             f"(its options: {listed})")
    for key in _FILE_OPTIONS:
        if key in given and not Path(given[key]).is_file():
            raise UsageError(f"{flag(key)} file not found: {given[key]}")
    if "margin" in given and "regularisation" not in given:
        raise UsageError("--margin sets RBHMC's margin: it needs --regularisation C")
    if "search_every" in given and "search" not in given:
        raise UsageError("--search-every sets how often the structure search runs: it needs "
                         "--search NAME")
    return given


def _without_source(message: str, source) -> str:
    """``message`` without a leading mention of ``source``: the caller names it once."""
    text = str(source)
    if source is not None and message.startswith(text):
        return message[len(text):].lstrip(":, ")
    return message


def _load(entry: registry.ModelEntry, args: argparse.Namespace, options: dict):
    if entry.loader is None:
        raise UsageError(f"model {entry.name!r} has no data loader, so `fit` cannot load its data")
    loader_options = {k: v for k, v in options.items() if k in registry.LOADER_OPTIONS}
    try:
        return entry.loader(args.data, **loader_options)
    except (ValueError, TypeError, OSError) as exc:
        if args.data is not None:
            source = args.data
        elif "dataset" in options:
            source = f"data set {options['dataset']!r}"
        else:
            source = "its default data set"
        message = _without_source(str(exc), args.data)
        raise UsageError(f"cannot load data for {entry.name!r} from {source}: {message}") from exc


def _gold(options: dict):
    if "gold" not in options:
        return {}
    from ..data.crowd_files import read_gold

    try:
        return {"gold": read_gold(options["gold"])}
    except ValueError as exc:
        raise UsageError(f"cannot read gold labels from {options['gold']}: {exc}") from exc


def _save_arguments(args: argparse.Namespace, out: Path) -> None:
    """Write the arguments of this fit to ``out/checkpoint-args.json`` (file paths made
    absolute, so that ``--resume`` works from any directory)."""
    saved = {k: getattr(args, k) for k in _saved_keys() if getattr(args, k) is not None}
    for key in ("data", *_FILE_OPTIONS):
        if key in saved:
            saved[key] = str(Path(saved[key]).resolve())
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (ARGUMENTS + ".tmp")
    tmp.write_text(json.dumps(saved, indent=1) + "\n")
    os.replace(tmp, out / ARGUMENTS)


def _as_saved(key: str, value):
    """``value`` of argument ``key`` in the form :func:`_save_arguments` writes it."""
    if key in ("data", *_FILE_OPTIONS):
        return str(Path(value).resolve())
    return json.loads(json.dumps(value, default=str))


def _resumed(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the arguments saved in the ``--resume`` directory.

    Arguments given again with their saved values (the model's name, say) are accepted; any
    other value is refused, since the checkpoint continues the saved fit only.
    """
    folder = args.resume
    if not (folder / ARGUMENTS).is_file() or not (folder / CHECKPOINT).is_file():
        raise UsageError(f"--resume: {folder} holds no checkpointed fit ({CHECKPOINT} and "
                         f"{ARGUMENTS}, written by --checkpoint-every)")
    saved = json.loads((folder / ARGUMENTS).read_text())
    given = [k for k in _saved_keys() if k != "seed" and getattr(args, k) is not None
             and _as_saved(k, getattr(args, k)) != saved.get(k)]
    if args.out is not None and Path(args.out).resolve() != Path(folder).resolve():
        given.append("out")
    if given:
        names = ", ".join("MODEL" if k == "model" else flag(k) for k in given)
        raise UsageError(f"--resume continues with the arguments saved in {folder}: "
                         f"give no {names} other than the saved")
    if args.seed not in (0, saved["seed"]):  # 0 is the default: it cannot be told apart
        raise UsageError(f"--resume: the checkpointed fit has --seed {saved['seed']}, "
                         f"not {args.seed}")
    for key, value in saved.items():
        setattr(args, key, value)
    args.out = folder
    return args


def _checkpoint_options(args: argparse.Namespace, out: Path) -> dict:
    """The runner's ``checkpoint``, ``checkpoint_every`` and ``resume`` arguments."""
    if args.checkpoint_every is None:
        return {}
    if args.method not in CHECKPOINT_ENGINES:
        raise UsageError(f"--checkpoint-every does not apply to method {args.method!r} "
                         f"(it applies to: {', '.join(CHECKPOINT_ENGINES)})")
    options = {"checkpoint": out / CHECKPOINT, "checkpoint_every": args.checkpoint_every}
    if args.resume is not None:
        options["resume"] = out / CHECKPOINT
    else:
        _save_arguments(args, out)
    return options


def _help(args: argparse.Namespace) -> int:
    print(fit_help(registry.info(args.model) if args.model is not None else None), end="")
    return 0


def _checked(args: argparse.Namespace) -> tuple[registry.ModelInfo, dict, dict]:
    """The model's declaration, the engine options and the model options, once every
    argument is known to be one the model takes (``args.method`` set to the method used);
    nothing of the model is imported."""
    if args.model is None:
        known = ", ".join(m.name for m in registry.infos()) or "none registered"
        raise UsageError(f"fit needs a model name; known models: {known}")
    model = registry.info(args.model)
    if args.method is None:
        args.method = model.default_method
    if args.method not in model.engines:
        raise UsageError(f"model {model.name!r} has no method {args.method!r}; "
                         f"its methods: {', '.join(model.engines)}")
    engine_options = _engine_options(args, args.method, model)
    options = _model_options(args, model)
    if args.data is not None and not model.reads_data:
        raise UsageError(f"--data does not apply to model {model.name!r}: {model.data_format}")
    if args.data is not None and not Path(args.data).exists():
        raise UsageError(f"data file not found: {args.data}")
    return model, engine_options, options


def _run_fit(entry: registry.ModelEntry, data, args: argparse.Namespace, engine_options: dict,
             options: dict):
    """Build the model from its constructor arguments and fit it."""
    own = {a.dest for a in entry.arguments}
    model = entry.factory(**{k: v for k, v in options.items() if k in own})
    fit_arguments = {registry.FIT_ARGUMENTS[k]: v for k, v in options.items()
                     if k in registry.FIT_ARGUMENTS}
    run = {"method": args.method, "seed": args.seed, "progress": args.progress,
           **engine_options, **fit_arguments}
    if entry.fit is not None:
        return entry.fit(model, data, **run)
    return model.fit(data, **run)


def cmd_fit(args: argparse.Namespace) -> int:
    """Fit one model with one method (default: the model's natural one) and write the report
    of that fit."""
    if args.help:
        return _help(args)
    if args.resume is not None:
        args = _resumed(args)
    _, engine_options, options = _checked(args)
    if args.out is not None:
        args.out = check_out(args.out)  # before the fit: a bad --out fails at once
    entry = registry.get(args.model)  # imports the model's module
    name = f"{entry.name}-{args.method}"
    out = args.out if args.out is not None else Path("reports") / "fit" / name
    data = _load(entry, args, options)
    report_options = _gold(options)
    engine_options.update(_checkpoint_options(args, out))
    use_agg()
    from ..report import result_from_posterior

    try:
        posterior = _run_fit(entry, data, args, engine_options, options)
    except ValueError as exc:
        raise UsageError(f"cannot fit {entry.name!r} with {args.method}: {exc}") from exc
    if entry.describe is None:
        result, files = result_from_posterior(posterior, name), {}
    else:
        try:
            described = entry.describe(posterior, data, name=name, **report_options)
        except ValueError as exc:
            raise UsageError(f"cannot report the fit of {entry.name!r}: {exc}") from exc
        result, files = described.result, described.files
    write_and_print([result], out, f"pyromodels fit: {entry.title} ({args.method})", files)
    return 0
