"""How every engine takes a model and its arguments.

The engines take a Pyro program and its arguments the way Pyro's ``MCMC.run(*args, **kwargs)``
and ``SVI.step(*args, **kwargs)`` do::

    run_nuts(model, x, y=y, num_samples=500, seed=0)
    run_svi(model, guide_or_None, x, y=y, num_steps=1000)     # a plain callable
    run_gibbs(model, blocks, x, y=y)                           # a plain callable
    mixture.fit(x, method="nuts", seed=0)                      # a Model subclass

The rule that tells the engine's settings from the model's keyword arguments:

* an engine's **settings** are the keyword-only parameters in its signature (``num_samples``,
  ``seed``, ``progress``, ``checkpoint``, ...); they are reserved names;
* every **other** keyword argument goes to the model, and must be a parameter of its
  program: a misspelt setting (``num_sample=``) is a ``TypeError`` naming the settings, never
  a silently ignored argument;
* a model whose program has a parameter named like a setting is ambiguous when that name is
  passed: a ``TypeError`` asks for ``model_kwargs={...}``, an explicit dict of the model's
  keyword arguments; with ``model_kwargs`` given, every keyword argument named like a
  setting is the engine's.

A plain callable takes its guide (:func:`~pyromodels.core.run_svi`) or its Gibbs blocks
(:func:`~pyromodels.core.run_gibbs`) as the first argument after the program, as Pyro's
``SVI(model, guide, ...)`` does; a :class:`~pyromodels.core.Model` passes them by keyword
(``guide=``, ``sweep=``) or defines them as hooks.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping

from .bound import CallableModel, ModelArgs, takes_one_argument, unpacking
from .hooks import ModelBase

__all__ = ["engine_entry", "bind_model", "check_setting_clash"]

_P = inspect.Parameter


def _signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _program_name(fn) -> str:
    return getattr(fn, "__qualname__", type(fn).__qualname__)


def bind_model(engine: str, settings, leading: str | None, model, args: tuple, kwargs: dict,
               model_kwargs=None):
    """Split one engine call into ``(program, data, chosen settings)``.

    ``program`` is ``model`` itself when it is a :class:`Model` whose program takes one
    argument and gets exactly that one (``data`` is then the argument as it is); otherwise a
    :class:`~pyromodels.core.bound.CallableModel` with ``data`` a
    :class:`~pyromodels.core.bound.ModelArgs`. See the module's docstring for the rule.
    """
    kwargs = dict(kwargs)
    chosen = {k: kwargs.pop(k) for k in list(kwargs) if k in settings}
    if model_kwargs is not None:
        if not isinstance(model_kwargs, Mapping) or not all(isinstance(k, str) for k in model_kwargs):
            raise TypeError(f"model_kwargs must be a dict of the model's keyword arguments, "
                            f"got {type(model_kwargs).__name__}")
        twice = sorted(set(model_kwargs) & set(kwargs))
        if twice:
            raise TypeError(f"{engine}: {', '.join(twice)} given both as a keyword argument and "
                            "in model_kwargs")
        kwargs.update(model_kwargs)
    is_model = isinstance(model, ModelBase)
    if not is_model and not callable(model):
        raise TypeError(f"model must be a Pyro callable or a pyromodels Model, got {type(model).__name__}")
    fn = model.model if is_model else model
    if not is_model and leading is not None:
        label = {"sweep": "blocks"}.get(leading, leading)
        if leading in chosen:
            raise TypeError(f"{engine}: a plain callable takes its {label} as the argument after "
                            f"the model, {engine}(model, {label}, *args, **kwargs); "
                            f"{leading}= was given as well")
        if not args:
            default = " (None for the default)" if leading == "guide" else ""
            raise TypeError(f"{engine}(model, {label}, *args, **kwargs): a plain callable needs "
                            f"its {label}{default} after the model")
        chosen[leading], args = args[0], args[1:]
    sig = _signature(fn)
    if sig is not None:
        _check_arguments(engine, settings, fn, sig, args, kwargs, chosen, model_kwargs)
    if is_model and len(args) == 1 and not kwargs and takes_one_argument(fn):
        return model, args[0], chosen
    bound = ModelArgs(args, kwargs)
    program = CallableModel(fn, bound, owner=model if is_model else None)
    if chosen.get("guide") is not None:
        chosen["guide"] = unpacking(chosen["guide"])
    return program, bound, chosen


def _keyword_names(sig) -> set[str]:
    return {n for n, p in sig.parameters.items() if p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)}


def check_setting_clash(caller: str, fn, chosen, model_kwargs) -> None:
    """Refuse a call that names a setting which is also an argument of the program ``fn``,
    unless the model's keyword arguments come as ``model_kwargs`` (the module's rule).

    Args:
        caller: what the user called, for the message (``"run_nuts"``, ``"fit"``).
        fn: the Pyro program.
        chosen: the names of the settings the call passed.
        model_kwargs: the call's ``model_kwargs`` (``None`` when not given).

    Raises:
        TypeError: a clash without ``model_kwargs``; the message says to pass them there.
    """
    sig = _signature(fn)
    if sig is None or model_kwargs is not None:
        return
    clash = sorted(_keyword_names(sig) & set(chosen))
    if clash:
        raise TypeError(
            f"{caller}: {', '.join(clash)} is both a setting of {caller} and an argument of "
            f"{_program_name(fn)}{sig}; pass the model's keyword arguments as "
            f"model_kwargs={{...}} (then {clash[0]}= goes to {caller})"
        )


def _check_arguments(engine, settings, fn, sig, args, kwargs, chosen, model_kwargs) -> None:
    named = _keyword_names(sig)
    check_setting_clash(engine, fn, chosen, model_kwargs)
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        takes_any = any(p.kind is _P.VAR_KEYWORD for p in sig.parameters.values())
        unknown = [] if takes_any else sorted(set(kwargs) - named)
        if unknown:
            raise TypeError(
                f"{engine} got the keyword argument {', '.join(unknown)}, which is neither a "
                f"setting of {engine} "
                f"({', '.join(sorted(settings))}) nor an argument of "
                f"{_program_name(fn)}{sig}"
            ) from None
        raise TypeError(f"{engine}: the model's arguments do not fit {_program_name(fn)}{sig}: "
                        f"{exc}") from None


def engine_entry(leading: str | None = None):
    """Turn ``run(model, data, *, settings...)`` into the public engine
    ``run(model, *args, settings..., model_kwargs=None, **kwargs)`` (see the module's rule).

    Args:
        leading: the setting a plain callable takes as its first argument after the program
            (``"guide"`` for SVI, ``"sweep"`` for Gibbs).
    """
    def wrap(run):
        sig = inspect.signature(run)
        settings = tuple(n for n, p in sig.parameters.items() if p.kind is _P.KEYWORD_ONLY)

        @functools.wraps(run)
        def entry(model, *args, model_kwargs=None, **kwargs):
            program, data, chosen = bind_model(run.__name__, settings, leading, model, args,
                                               kwargs, model_kwargs)
            return run(program, data, **chosen)

        entry.__signature__ = sig.replace(parameters=[
            sig.parameters["model"], _P("args", _P.VAR_POSITIONAL),
            *(sig.parameters[n] for n in settings),
            _P("model_kwargs", _P.KEYWORD_ONLY, default=None), _P("kwargs", _P.VAR_KEYWORD),
        ])
        entry.settings = frozenset(settings)
        return entry

    return wrap
