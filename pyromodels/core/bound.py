"""A Pyro callable and the arguments of one fit, seen through the :class:`Model` hooks.

Every engine works on one model object and one data object. A :class:`Model` subclass whose
``model(data)`` takes one argument is that pair already. Any other Pyro program, a plain
function ``model(x, y=None)`` or a subclass whose ``model`` takes several arguments, is
wrapped once at the engine's entry: its arguments become one :class:`ModelArgs` (the data
object that the engines, checkpoints and the :class:`~pyromodels.core.Posterior` keep), and
the callable becomes a :class:`CallableModel`, whose ``model(bound)`` calls
``fn(*bound.args, **bound.kwargs)``. From there on both go through the same code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import warnings

import pyro
import torch
from pyro import poutine
from pyro.poutine.util import site_is_subsample

from .errors import ModelSpecError
from .hooks import ModelBase
from .seeding import seeded

__all__ = ["ModelArgs", "CallableModel", "takes_one_argument", "unpacking"]


@dataclasses.dataclass(frozen=True)
class ModelArgs:
    """The positional and keyword arguments of a Pyro program for one fit.

    Attributes:
        args: the positional arguments, in order.
        kwargs: the keyword arguments, sorted by name (so the same call in another order has
            the same checkpoint fingerprint).
    """

    args: tuple
    kwargs: dict

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "kwargs", {k: self.kwargs[k] for k in sorted(self.kwargs)})

    @property
    def device(self) -> torch.device | None:
        """The device of the first tensor argument (``None`` without one)."""
        for value in (*self.args, *self.kwargs.values()):
            if isinstance(value, torch.Tensor):
                return value.device
        return None

    def to(self, device) -> ModelArgs:
        """A copy with every tensor argument moved to ``device``."""
        def move(v):
            return v.to(device) if isinstance(v, torch.Tensor) else v
        return ModelArgs(tuple(move(v) for v in self.args),
                         {k: move(v) for k, v in self.kwargs.items()})

    def __repr__(self) -> str:
        def show(v):
            return f"tensor{tuple(v.shape)}" if isinstance(v, torch.Tensor) else repr(v)
        parts = [show(v) for v in self.args] + [f"{k}={show(v)}" for k, v in self.kwargs.items()]
        return f"ModelArgs({', '.join(parts)})"


def takes_one_argument(fn) -> bool:
    """Whether the Pyro program ``fn`` takes exactly one parameter (a bound method's ``self``
    not counted): a one-argument :class:`Model` keeps receiving its data as they are."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    return len(params) == 1 and params[0].kind in (
        inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class _Unpacking:
    """``fn`` as a one-argument callable of a :class:`ModelArgs` (for guides)."""

    def __init__(self, fn):
        self.fn = fn
        self.__module__ = getattr(fn, "__module__", type(fn).__module__)
        self.__qualname__ = getattr(fn, "__qualname__", type(fn).__qualname__)

    def __call__(self, bound: ModelArgs):
        return self.fn(*bound.args, **bound.kwargs)


def unpacking(fn):
    """``fn(*args, **kwargs)`` as a callable of one :class:`ModelArgs` (``None`` stays)."""
    return None if fn is None else _Unpacking(fn)


@contextlib.contextmanager
def quiet_prior_draws():
    """Runs of a program that draw sites from their priors, without torch's spurious Wishart
    notice: ``Wishart.rsample`` warns "Singular sample detected." for every valid draw (its
    first support check lacks the negation its later ones have) and draws again, returning a
    draw that passed the check. The notice says nothing about the user's program."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Singular sample detected", UserWarning)
        yield


def _latent_trace(fn, bound: ModelArgs, seed: int):
    """One trace of the program, leaving the global random state and param store as they were."""
    with seeded(seed), pyro.get_param_store().scope(), poutine.block(), torch.no_grad(), \
            quiet_prior_draws():
        return poutine.trace(fn).get_trace(*bound.args, **bound.kwargs)


def _latent_sites(trace):
    return [(name, site) for name, site in trace.nodes.items()
            if site["type"] == "sample" and not site["is_observed"]
            and not site_is_subsample(site)]


class CallableModel(ModelBase):
    """A Pyro program of any signature as a :class:`Model` whose data are a :class:`ModelArgs`.

    Args:
        fn: the Pyro program, called as ``fn(*bound.args, **bound.kwargs)``.
        bound: the arguments of the fit, from which a plain callable's ``discrete_sites``
            (the sites marked ``infer={"enumerate": "parallel"}``) and ``max_plate_nesting``
            are read by one trace of the program (the global random state is left as it was).
        owner: the :class:`Model` instance whose ``model`` method ``fn`` is; its attributes
            and hooks are used (they receive the :class:`ModelArgs`), its ``guide`` is
            unpacked like the program.

    Attributes:
        fn: the program.
        owner: the :class:`Model` it belongs to, or ``None`` for a plain callable.
    """

    engines = ("svi", "nuts", "gibbs")

    def __init__(self, fn, bound: ModelArgs, owner: ModelBase | None = None):
        if not callable(fn):
            raise TypeError(f"model must be a Pyro callable or a pyromodels Model, "
                            f"got {type(fn).__name__}")
        self.fn = fn
        self.owner = owner
        if owner is not None:
            for name in ("discrete_sites", "max_plate_nesting", "engines", "em_monotone",
                         "label_switched_sites"):
                setattr(self, name, getattr(owner, name))
            if callable(getattr(owner, "guide", None)):
                self.guide = unpacking(owner.guide)
        else:
            trace = _latent_trace(fn, bound, seed=0)
            self.discrete_sites = tuple(name for name, site in _latent_sites(trace)
                                        if site["infer"].get("enumerate") == "parallel")
            trace.compute_log_prob()  # fills each site's cond_indep_stack dims
            dims = [-frame.dim for site in trace.nodes.values() if site["type"] == "sample"
                    for frame in site["cond_indep_stack"] if frame.vectorized and frame.dim is not None]
            self.max_plate_nesting = max(dims, default=0)

    def __getattr__(self, name):
        owner = self.__dict__.get("owner")
        if owner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(owner, name)

    @property
    def qualified_name(self) -> str:
        """The class of the owning model, or the module and name of the plain callable (what
        a checkpoint records as the model)."""
        target = type(self.owner) if self.owner is not None else self.fn
        module = getattr(target, "__module__", type(target).__module__)
        name = getattr(target, "__qualname__", type(target).__qualname__)
        return f"{module}.{name}"

    def model(self, bound: ModelArgs):
        """Run the program on the fit's arguments."""
        return self.fn(*bound.args, **bound.kwargs)

    def prepare(self, bound: ModelArgs, device=None) -> ModelArgs:
        """The owner's ``prepare`` when it defines one, else the tensor arguments moved to
        ``device``."""
        if self.owner is not None and type(self.owner).prepare is not ModelBase.prepare:
            return self.owner.prepare(bound, device=device)
        if device is not None and bound.device is not None and bound.device != torch.device(device):
            return bound.to(device)
        return bound

    def log_joint(self, bound: ModelArgs, values: dict) -> torch.Tensor:
        if self.owner is not None and type(self.owner).log_joint is not ModelBase.log_joint:
            return self.owner.log_joint(bound, values)
        return super().log_joint(bound, values)

    def init_state(self, bound: ModelArgs, generator: torch.Generator) -> dict:
        """A Gibbs start: one draw of every latent site from the prior, seeded by
        ``generator`` (the owner's ``init_state`` when it defines one)."""
        if self.owner is not None:
            return self.owner.init_state(bound, generator)
        seed = int(torch.randint(0, 2**62, (), generator=generator))
        trace = _latent_trace(self.fn, bound, seed)
        return {name: site["value"].detach() for name, site in _latent_sites(trace)}

    def _require(self, *hooks: str, engine: str) -> None:
        if self.owner is not None:
            return self.owner._require(*hooks, engine=engine)
        missing = [hook for hook in hooks if not callable(getattr(self, hook, None))]
        if missing:
            extra = " or pass the blocks: run_gibbs(model, blocks, *args)" if engine == "gibbs" else ""
            raise ModelSpecError(
                f"the {engine!r} engine needs {', '.join(h + '()' for h in missing)}, which a "
                f"plain callable ({self.qualified_name}) does not define: write a Model "
                f"subclass with them{extra}"
            )
        return None
