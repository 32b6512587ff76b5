"""The plan: which automatic Gibbs update each latent site of a Pyro program gets, and why.

:func:`plan` traces the program once (a draw of the prior), then for each latent site in
program order:

* a site with finite enumerable support and no event dimension gets a ``"discrete"`` update,
  plate-vectorised when its elements are conditionally independent given the rest (see
  :mod:`.discrete`), element by element otherwise;
* a Beta, Gamma, univariate Normal or Dirichlet site (also one made of such elements by
  ``to_event``) whose log conditional, read off the program at the traced state, is linear in
  the prior's sufficient statistics gets a ``"conjugate"`` update (see :mod:`.exponential`);
* anything else is ``"unsupported"`` in this increment, with the reason.

The reason of an automatic update also says how its values are scored: all in one batched
trace, or one trace per value where the program is not vectorisable (see :mod:`.trace`).

With ``verify=True`` (the default) every automatic update is checked at the traced state
before it is trusted, and again at its first sweep: a vectorised discrete conditional against
brute-force enumeration of the joint for two random elements (a mismatch falls back to
element by element), a conjugate posterior by condition-and-score at two of its draws (a
mismatch makes the site unsupported);
each fallback warns, naming the site. A conjugate update that fails at its first sweep stops
the run with a ``RuntimeError`` naming the site.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import pyro.distributions as dist

from ..checks import check_bool
from ..core.gibbs import GibbsBlock, GibbsSweep
from ..core.seeding import make_generator, seeded
from .discrete import DiscreteUpdate, element_logits
from .exponential import ConjugateUpdate, NotConjugate, family_of, posterior_params
from .trace import batching_reason, latent_sites, trace_model

__all__ = ["SitePlan", "Plan", "plan"]


@dataclass(frozen=True)
class SitePlan:
    """The update chosen for one latent site.

    Attributes:
        site: the site's name.
        update: ``"discrete"``, ``"conjugate"``, ``"override"`` or ``"unsupported"``.
        reason: why, in words.
        block: the :class:`~pyromodels.core.GibbsBlock` (``None`` when unsupported).
    """

    site: str
    update: str
    reason: str
    block: GibbsBlock | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Plan:
    """The updates of every latent site, in program order; ``print(plan)`` shows one line each.

    Attributes:
        sites: one :class:`SitePlan` per latent site.
    """

    sites: tuple[SitePlan, ...]

    def __getitem__(self, site: str) -> SitePlan:
        for s in self.sites:
            if s.site == site:
                return s
        raise KeyError(f"no latent site {site!r} in the plan; sites: {[s.site for s in self.sites]}")

    def __str__(self) -> str:
        width = max(len(s.site) for s in self.sites)
        return "\n".join(f"{s.site:<{width}}  {s.update:<11}  {s.reason}" for s in self.sites)

    @property
    def unsupported(self) -> tuple[str, ...]:
        """The sites with no update."""
        return tuple(s.site for s in self.sites if s.update == "unsupported")

    def sweep(self) -> GibbsSweep:
        """The sweep of every site's block, in program order.

        Raises:
            ValueError: naming each unsupported site and why, and how to pass an override.
        """
        if self.unsupported:
            lines = "; ".join(f"{s.site!r}: {s.reason}" for s in self.sites if s.update == "unsupported")
            raise ValueError(f"no automatic Gibbs update for {lines}. Pass your own block: "
                             f"overrides={{site: GibbsBlock(...)}}")
        return GibbsSweep([s.block for s in self.sites])


def _with_batching(reason: str, model, name, args, kwargs) -> str:
    """``reason`` and how the site's values are scored (one batched trace or one per value)."""
    how = batching_reason(model, name, args, kwargs)
    return f"{reason}; {how}" if how else reason


def _discrete(model, args, kwargs, state, name, site, verify, gen) -> SitePlan:
    fn = site["fn"]
    try:
        support = fn.enumerate_support(expand=False).reshape(-1)
    except (NotImplementedError, ValueError, RuntimeError) as err:
        return SitePlan(name, "unsupported", f"{type(fn).__name__} support differs between elements "
                        f"({err}) (unsupported in this increment)")
    update = DiscreteUpdate(model, name, support, vectorised=True, verify=verify)
    logits = element_logits(model, args, kwargs, state, name, support)
    k = f"{len(support)} values"
    if logits is None:
        update.vectorised = False
        reason = f"enumerate {k} element by element (its elements depend on each other)"
    elif verify and not update.agrees(logits, state, args, kwargs, gen):
        warnings.warn(f"site {name!r}: the vectorised conditional differs from brute-force "
                      f"enumeration; updating it element by element instead", RuntimeWarning, stacklevel=3)
        update.vectorised = False
        reason = f"enumerate {k} element by element (vectorised check failed)"
    else:
        where = f"over plate shape {tuple(state[name].shape)}" if state[name].dim() else "(one element)"
        reason = f"enumerate {k}, all elements at once {where}"
    return SitePlan(name, "discrete", _with_batching(reason, model, name, args, kwargs),
                    GibbsBlock(f"discrete:{name}", (name,), update))


def _prior_of(fn):
    """The distribution of each element: ``fn`` with its ``to_event`` wrappers taken off (an
    ``Independent`` only sums the log densities of its base's batch)."""
    while isinstance(fn, dist.Independent):
        fn = fn.base_dist
    return fn


def _conjugate(model, args, kwargs, state, name, site, verify, gen) -> SitePlan:
    fn = _prior_of(site["fn"])
    family = family_of(fn)
    try:
        posterior_params(model, args, kwargs, state, name, fn)
    except NotConjugate as err:
        return SitePlan(name, "unsupported", f"{err} (unsupported in this increment)")
    update = ConjugateUpdate(model, name, fn, verify=verify)
    if verify and not update.check(state, args, kwargs, gen):
        warnings.warn(f"site {name!r}: its conjugate {family.name} update failed condition-and-"
                      f"score; leaving it unsupported", RuntimeWarning, stacklevel=3)
        return SitePlan(name, "unsupported", f"conjugate {family.name} update failed the check "
                        f"(unsupported in this increment)")
    reason = f"{family.name} prior, log conditional linear in its sufficient statistics"
    return SitePlan(name, "conjugate", _with_batching(reason, model, name, args, kwargs),
                    GibbsBlock(f"conjugate:{name}", (name,), update))


def plan(model, *args, overrides: dict | None = None, verify: bool = True, seed: int = 0,
         **kwargs) -> Plan:
    """Choose an automatic Gibbs update for every latent site of a Pyro program.

    Args:
        model: the Pyro program, called as ``model(*args, **kwargs)``.
        *args, **kwargs: its arguments (the data).
        overrides: ``{site: GibbsBlock}``: the user's own block for a site (for a site this
            increment cannot update, or to replace an automatic one). Each block must write
            exactly its site.
        verify: check each automatic update against the program's joint at the traced state
            (see the module docs).
        seed: the seed of the trace and of the checks.

    Returns:
        A :class:`Plan`.

    Raises:
        TypeError: ``model`` not callable, an override not a GibbsBlock.
        ValueError: a program with no latent sample site, an override for an unknown site.

    Example:
        >>> import pyro, pyro.distributions as dist, torch
        >>> def coin(k):
        ...     p = pyro.sample("p", dist.Beta(2.0, 2.0))
        ...     pyro.sample("k", dist.Binomial(10, p), obs=k)
        >>> print(plan(coin, torch.tensor(7.0)))  # doctest: +ELLIPSIS
        p  conjugate    Beta prior, ...
    """
    if not callable(model):
        raise TypeError(f"model must be a Pyro program (a callable), got {type(model).__name__}")
    verify = check_bool(verify, "verify")
    overrides = {} if overrides is None else overrides
    if not isinstance(overrides, dict):
        raise TypeError(f"overrides must be a dict {{site: GibbsBlock}}, got {type(overrides).__name__}")
    with seeded(seed):
        trace = trace_model(model, args, kwargs)
    sites = latent_sites(trace)
    if not sites:
        raise ValueError("the model has no latent sample sites (every pyro.sample has obs=): "
                         "there is nothing to sample")
    for name, block in overrides.items():
        if name not in sites:
            raise ValueError(f"overrides names {name!r}, which is not a latent site of the model; "
                             f"latent sites: {list(sites)}")
        if not isinstance(block, GibbsBlock) or tuple(block.sites) != (name,):
            raise TypeError(f"overrides[{name!r}] must be a GibbsBlock writing exactly ({name!r},)")
    state = {name: site["value"].detach() for name, site in sites.items()}
    gen = make_generator(seed)
    out = []
    for name, site in sites.items():
        fn = site["fn"]
        if name in overrides:
            out.append(SitePlan(name, "override", "the user's own block", overrides[name]))
        elif fn.has_enumerate_support and fn.event_shape == ():
            out.append(_discrete(model, args, kwargs, state, name, site, verify, gen))
        elif family_of(_prior_of(fn)) is not None:
            out.append(_conjugate(model, args, kwargs, state, name, site, verify, gen))
        else:
            kind = type(_prior_of(fn)).__name__
            out.append(SitePlan(name, "unsupported", f"{kind} site with no discrete or "
                                f"conjugate update (unsupported in this increment)"))
    return Plan(tuple(out))
