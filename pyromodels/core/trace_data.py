"""InferenceData groups read from a Pyro program's own trace, with no hooks written.

Given a program, the arguments it was fitted with and draws of its latent sites, the program
itself says what the data are and how likely they are:

* **sites**: one trace (:func:`program_sites`) finds the observed sample sites (``obs=``), the
  latent ones, the plates around each and the discrete sites marked for enumeration;
* **pointwise log-likelihood** (:func:`pointwise_log_likelihood`): one vectorised trace over
  all draws, the program run inside a plate over draws placed left of its own plates, with the
  latent sites conditioned on the draws. Each observed site's ``log_prob`` is kept per element
  of its batch (its event dims summed). Discrete sites marked for enumeration, or absent from
  the draws, are summed out by parallel enumeration: for an observed ``y_i`` that depends on
  enumerated ``z_i``, ``log p(y_i | theta) = log sum_k p(z_i = k | theta) p(y_i | z_i = k,
  theta)``, the marginal that ``arviz.loo`` needs (``arviz.from_pyro`` scores ``y_i`` given
  one random draw of ``z_i`` instead). Other discrete sites that have draws are conditioned
  on, as ``arviz.from_pyro`` does;
* **observed_data**: the observed sites' values; **constant_data**: the array arguments of
  the program that no site observes;
* **dims**: each batch axis of a site is named by the plate on that axis, any other axis
  ``<site>_dim_<i>`` (ArviZ's default name).

A program that does not broadcast over a batch of draws (a shape error in the vectorised
trace) is scored one draw at a time.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyro
import torch
from pyro import poutine
from pyro.distributions.util import scale_and_mask
from pyro.infer import config_enumerate
from pyro.poutine.util import site_is_subsample

from .inference_data import to_numpy

logger = logging.getLogger("pyromodels")

__all__ = [
    "BoundProgram",
    "SiteInfo",
    "program_sites",
    "site_dim_names",
    "pointwise_log_likelihood",
    "observed_values",
    "constant_values",
    "program_dims",
    "covers_program",
]

_DRAWS = "_pyromodels_draws"


@dataclass(frozen=True)
class SiteInfo:
    """What one trace says about a sample site.

    Attributes:
        name: the site's name.
        observed: whether the program observes it (``obs=``).
        batch_shape: the batch shape of its distribution inside its plates.
        event_shape: its event shape.
        plates: ``{batch dim (negative): plate name}`` of the vectorised plates around it.
        discrete: whether its distribution has enumerable support.
        enumerated: whether the program marks it ``infer={"enumerate": "parallel"}``.
        value: its value in that trace (the data, for an observed site).
    """

    name: str
    observed: bool
    batch_shape: tuple
    event_shape: tuple
    plates: dict = field(default_factory=dict)
    discrete: bool = False
    enumerated: bool = False
    value: torch.Tensor | None = None

    @property
    def shape(self) -> tuple:
        """The site's full shape, batch then event."""
        return tuple(self.batch_shape) + tuple(self.event_shape)


class BoundProgram:
    """A Pyro program bound to its arguments, in the form of a pyromodels model.

    ``model(data)`` runs ``model_fn(*args, **kwargs)`` (``data`` is ignored: the arguments are
    bound), so the helpers written for models (:mod:`pyromodels.core.predictive`) run it too.

    Args:
        model_fn: the Pyro program, a callable.
        args: its positional arguments.
        kwargs: its keyword arguments.
        max_plate_nesting: how many batch dims its plates and distributions use at most; read
            from one trace when ``None``.
        discrete_sites: discrete latent sites to sum out by enumeration, beside those the
            program marks for parallel enumeration.
    """

    def __init__(self, model_fn, args=(), kwargs=None, max_plate_nesting=None,
                 discrete_sites=None):
        if not callable(model_fn):
            raise TypeError(f"model_fn must be a callable Pyro program, got {type(model_fn).__name__}")
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"args must be a tuple of the program's positional arguments, "
                            f"got {type(args).__name__}")
        if kwargs is not None and not isinstance(kwargs, Mapping):
            raise TypeError(f"kwargs must be a dict of the program's keyword arguments, "
                            f"got {type(kwargs).__name__}")
        self.model_fn = model_fn
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.sites, self.factors = program_sites(model_fn, self.args, self.kwargs)
        if max_plate_nesting is None:
            max_plate_nesting = _plate_nesting(self.sites)
        self.max_plate_nesting = int(max_plate_nesting)
        marked = [s.name for s in self.sites.values() if s.enumerated]
        self.discrete_sites = tuple(dict.fromkeys([*(discrete_sites or ()), *marked]))

    def model(self, data=None):
        """Run the program on its bound arguments."""
        return self.model_fn(*self.args, **self.kwargs)

    def prepare(self, data, device=None):
        """The bound arguments need no preparation: ``data`` is returned unchanged."""
        return data

    @property
    def observed(self) -> list[str]:
        """The observed sites, in program order."""
        return [s.name for s in self.sites.values() if s.observed]

    @property
    def latent(self) -> list[str]:
        """The latent sites, in program order."""
        return [s.name for s in self.sites.values() if not s.observed]


def program_sites(model_fn, args=(), kwargs=None) -> tuple[dict[str, SiteInfo], list[str]]:
    """``({name: SiteInfo}, factors)`` from one trace of ``model_fn(*args, **kwargs)``: every
    sample site but subsample sites, deterministic sites and factors (``pyro.factor``), and
    the names of the factors."""
    kwargs = kwargs or {}
    with poutine.block(), torch.no_grad():
        tr = poutine.trace(model_fn).get_trace(*args, **kwargs)
    out, factors = {}, []
    for name, site in tr.nodes.items():
        if site["type"] != "sample" or site_is_subsample(site):
            continue
        infer = site["infer"]
        if infer.get("is_auxiliary"):
            factors.append(name)
        if infer.get("_deterministic") or infer.get("is_auxiliary"):
            continue
        fn = site["fn"]
        out[name] = SiteInfo(
            name=name,
            observed=bool(site["is_observed"]),
            batch_shape=tuple(fn.batch_shape),
            event_shape=tuple(fn.event_shape),
            plates={f.dim: f.name for f in site["cond_indep_stack"] if f.vectorized and f.dim is not None},
            discrete=bool(getattr(fn, "has_enumerate_support", False)),
            enumerated=infer.get("enumerate") == "parallel",
            value=site["value"],
        )
    return out, factors


def _plate_nesting(sites: dict[str, SiteInfo]) -> int:
    depth = 0
    for s in sites.values():
        depth = max(depth, len(s.batch_shape), *(-d for d in s.plates))
    return depth


def site_dim_names(site: SiteInfo) -> list[str]:
    """Names of the axes of ``site``: its plate's name on a plate's axis, else
    ``<site>_dim_<i>`` with ``i`` the axis' position in the site's shape."""
    nbatch = len(site.batch_shape)
    names = []
    for i in range(len(site.shape)):
        plate = site.plates.get(i - nbatch) if i < nbatch else None
        names.append(plate if plate is not None else f"{site.name}_dim_{i}")
    return names


def observed_values(program: BoundProgram) -> dict[str, np.ndarray]:
    """The observed sites' values, each expanded to the site's full shape."""
    return {s.name: to_numpy(s.value.expand(s.shape), f"observed_data[{s.name!r}]")
            for s in program.sites.values() if s.observed}


def constant_values(program: BoundProgram) -> dict[str, np.ndarray]:
    """The program's array arguments (tensors and NumPy arrays, also as values of a dict
    argument) that no site observes, under their parameter (or dict key) names."""
    observed = [s.value for s in program.sites.values() if s.observed]
    try:
        bound = inspect.signature(program.model_fn).bind_partial(*program.args, **program.kwargs)
        named = dict(bound.arguments)
    except (TypeError, ValueError):
        named = {f"arg{i}": a for i, a in enumerate(program.args)} | program.kwargs
    candidates = {}
    for name, value in named.items():
        if isinstance(value, Mapping):
            candidates.update({str(k): v for k, v in value.items() if str(k) not in named})
        elif isinstance(value, tuple) and name not in program.kwargs:
            candidates.update({f"{name}_{i}": v for i, v in enumerate(value)})
        else:
            candidates[name] = value
    out = {}
    for name, value in candidates.items():
        if isinstance(value, np.ndarray) and value.dtype != object:
            value = torch.as_tensor(value)
        if not isinstance(value, torch.Tensor):
            continue
        if any(_same_tensor(value, o) for o in observed):
            continue
        out[name] = to_numpy(value, f"constant_data[{name!r}]")
    return out


def _same_tensor(a: torch.Tensor, b) -> bool:
    if a is b:
        return True
    if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(torch.equal(a, b))


def pointwise_log_likelihood(program: BoundProgram, samples: dict) -> dict[str, torch.Tensor]:
    """Each observed site's log-likelihood per element of its batch, at every draw.

    Args:
        program: the bound program.
        samples: ``{site: tensor (chain, draw, *site_shape)}``; every continuous latent site
            must be there. Discrete latent sites that are missing or that the program marks
            for enumeration (``program.discrete_sites``) are summed out; other keys are ignored.

    Returns:
        ``{observed site: tensor (chain, draw, *batch_shape)}`` in float64.

    Raises:
        ValueError: when a continuous latent site has no draws.
        NotImplementedError: when the program holds a ``pyro.factor`` (a term of the joint
            law that belongs to no site), or its enumerated sites share enumeration dims
            (``pyro.markov``) or sit in plates that an observed site depending on them is not
            in: the pointwise log-likelihood is then not a sum over enumerated sites per point.
    """
    if program.factors:
        raise NotImplementedError(
            f"the program has the factor(s) {program.factors}, terms of its joint law that "
            "belong to no site, so its pointwise log-likelihood cannot be read from the trace"
        )
    latent = program.latent
    missing = [n for n in latent if n not in samples and not program.sites[n].discrete]
    if missing:
        raise ValueError(f"samples must hold every continuous latent site of the program; "
                         f"missing {missing}")
    summed = set(program.discrete_sites)
    values = {k: torch.as_tensor(samples[k]) for k in latent if k in samples and k not in summed}
    enumerate_ = any(n not in values for n in latent)
    first = next(iter(values.values()), None)
    if first is None:
        first = next(iter(samples.values()))
    chains, draws = first.shape[:2]
    num = chains * draws
    flat = {k: v.reshape((num,) + tuple(v.shape[2:])) for k, v in values.items()}
    try:
        out = _log_lik(program, flat, num, enumerate_)
    except NotImplementedError:
        raise  # not a shape error: scoring one draw at a time would not help
    except (RuntimeError, ValueError, IndexError) as exc:
        logger.info("the program does not broadcast over a batch of draws (%s); scoring one "
                    "draw at a time", exc)
        per_draw = [_log_lik(program, {k: v[s] for k, v in flat.items()}, None, enumerate_)
                    for s in range(num)]
        out = {k: torch.stack([d[k] for d in per_draw]) for k in per_draw[0]}
    return {k: v.reshape((chains, draws) + tuple(v.shape[1:])) for k, v in out.items()}


def _log_lik(program: BoundProgram, values: dict, num: int | None, enumerate_: bool) -> dict:
    """One trace's pointwise log-likelihoods: over ``num`` draws in a plate (each shaped
    ``(num, *batch_shape)``), or of one draw (``num=None``, each shaped ``batch_shape``)."""
    mpn = program.max_plate_nesting
    sites = program.sites
    particle = num is not None

    def full(name):
        s = sites[name]
        lead = (num,) + (1,) * (mpn - len(s.batch_shape)) if particle else ()
        return lead + s.shape

    conditioned = {k: v.reshape(full(k)) for k, v in values.items()}

    def run():
        if not particle:
            return program.model()
        with pyro.plate(_DRAWS, num, dim=-1 - mpn):
            return program.model()

    fn = poutine.condition(run, data=conditioned)
    summed = set(program.discrete_sites) | {n for n in program.latent if n not in values}
    if enumerate_:
        fn = config_enumerate(fn, default="parallel")
        first_dim = -1 - mpn - (1 if particle else 0)
        fn = poutine.enum(fn, first_available_dim=first_dim)
    with poutine.block(), torch.no_grad():
        tr = poutine.trace(fn).get_trace()
    enum_logp = {}
    for name in summed:
        node = tr.nodes[name]
        if node["infer"].get("_enumerate_dim") is not None:
            enum_logp[name] = (_unscaled_log_prob(node), node)
    enum_dims = [node["infer"]["_enumerate_dim"] for _, node in enum_logp.values()]
    if len(set(enum_dims)) < len(enum_dims):
        raise NotImplementedError(
            f"the enumerated sites {sorted(enum_logp)} share enumeration dims (pyro.markov): "
            "their pointwise log-likelihood needs a forward pass, not one sum per point"
        )
    width = mpn + (1 if particle else 0)  # the dims right of any enumeration dim
    out = {}
    for name in program.observed:
        node = tr.nodes[name]
        total = _unscaled_log_prob(node).to(torch.float64)
        total = total + _enumerated_terms(name, node, total, enum_logp, width)
        lead = total.dim() - width
        if lead > 0:
            _check_enumeration_dims(name, total, lead, enum_dims)
            total = total.logsumexp(dim=tuple(range(lead)))
        s = sites[name]
        target = ((num,) + (1,) * (mpn - len(s.batch_shape)) if particle else ()) + s.batch_shape
        total = total.reshape((1,) * (len(target) - total.dim()) + tuple(total.shape))
        total = total.expand(target)
        out[name] = total.reshape(((num,) if particle else (1,)) + s.batch_shape)
        if not particle:
            out[name] = out[name][0]
    return out


def _check_enumeration_dims(name: str, logp: torch.Tensor, lead: int, enum_dims: list) -> None:
    """Every dim of ``logp`` left of the plates must be an enumeration dim (summed out next);
    any other is a broadcast the program did not mean, such as ``locs[..., z]`` with both
    ``locs`` and ``z`` batched over the draws, and would be summed into a wrong value. A
    ``ValueError`` sends the caller to scoring one draw at a time."""
    for i in range(lead):
        if logp.shape[i] > 1 and i - logp.dim() not in enum_dims:
            raise ValueError(f"the log-probability of {name!r} has shape {tuple(logp.shape)}: "
                             f"dim {i - logp.dim()} is neither a plate nor an enumerated site's")


def _unscaled_log_prob(node) -> torch.Tensor:
    return scale_and_mask(node["fn"].log_prob(node["value"]), mask=node["mask"])


def _enumerated_terms(name, node, logp, enum_logp, width):
    """The log-probabilities of the enumerated sites that ``logp`` depends on, found through
    their enumeration dims (an enumerated site's own terms can bring in further ones)."""
    plates = {f.name for f in node["cond_indep_stack"]}
    dims = _enum_dims(logp, width)
    used, total = set(), 0.0
    grew = True
    while grew:
        grew = False
        for other, (lp, onode) in enum_logp.items():
            if other in used or onode["infer"]["_enumerate_dim"] not in dims:
                continue
            outside = {f.name for f in onode["cond_indep_stack"]} - plates
            if outside:
                raise NotImplementedError(
                    f"observed site {name!r} depends on the enumerated site {other!r}, which sits "
                    f"in plate(s) {sorted(outside)} that {name!r} is not in: its pointwise "
                    "log-likelihood does not factor over those plates"
                )
            used.add(other)
            total = total + lp.to(torch.float64)
            dims |= _enum_dims(lp, width)
            grew = True
    return total


def _enum_dims(t: torch.Tensor, width: int) -> set[int]:
    """The negative dims of ``t`` left of the ``width`` batch dims whose size is above one."""
    return {d - t.dim() for d in range(t.dim() - width) if t.shape[d] > 1}


def program_dims(program: BoundProgram) -> dict[str, list[str]]:
    """``{site: axis names}`` of every site of the program (see :func:`site_dim_names`)."""
    return {name: site_dim_names(site) for name, site in program.sites.items()}


def covers_program(program: BoundProgram, samples: dict) -> bool:
    """Whether ``samples`` hold every continuous latent site of the program, so that the
    program can be re-run at each draw."""
    return all(n in samples for n in program.latent if not program.sites[n].discrete)
