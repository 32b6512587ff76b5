"""The plan: which automatic Gibbs update each latent site of a Pyro program gets, and why.

:func:`plan` traces the program once (a draw of the prior), then for each latent site in
program order:

* a site with finite enumerable support and no event dimension gets a ``"discrete"`` update,
  plate-vectorised when its elements are conditionally independent given the rest (see
  :mod:`.discrete`), element by element otherwise;
* a Beta, Gamma, univariate Normal or Dirichlet site whose log conditional, read off the
  program at the traced state, is linear in the prior's sufficient statistics gets a
  ``"conjugate"`` update (see :mod:`.exponential`);
* every other continuous site whose support Pyro maps onto unconstrained space (including a
  Beta, Gamma, Normal or Dirichlet site that is not conjugate) joins the one ``"nuts"`` block
  of the program, which draws all such sites at once by NUTS in unconstrained space, adapting
  its step size and diagonal mass matrix during warm-up (see :mod:`.continuous`);
* anything else is ``"unsupported"`` in this increment, with the reason.

With ``verify=True`` (the default) every automatic update is checked at the traced state
before it is trusted, and again at its first sweep: a vectorised discrete conditional against
brute-force enumeration of the joint for two random elements (a mismatch falls back to
element by element), a conjugate posterior by condition-and-score at two of its draws (a
mismatch sends the site to NUTS), the NUTS potential energy against the program's log joint
(a mismatch leaves the NUTS sites unsupported);
each fallback warns, naming the site. A conjugate update that fails at its first sweep stops
the run with a ``RuntimeError`` naming the site.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from ..checks import check_bool, check_int
from ..core.gibbs import GibbsBlock, GibbsSweep
from ..core.seeding import make_generator, seeded
from .continuous import NutsUpdate, nuts_refusal
from .discrete import DiscreteUpdate, element_logits
from .exponential import ConjugateUpdate, NotConjugate, family_of, posterior_params
from .trace import latent_sites, trace_model

__all__ = ["SitePlan", "Plan", "plan"]


@dataclass(frozen=True)
class SitePlan:
    """The update chosen for one latent site.

    Attributes:
        site: the site's name.
        update: ``"discrete"``, ``"conjugate"``, ``"nuts"``, ``"override"`` or ``"unsupported"``.
        reason: why, in words.
        block: the :class:`~pyromodels.core.GibbsBlock` (``None`` when unsupported; the NUTS
            sites share one block).
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
        """The sweep of every site's block, in program order (a block shared by several sites,
        the NUTS block, at its first site).

        Raises:
            ValueError: naming each unsupported site and why, and how to pass an override.
        """
        if self.unsupported:
            lines = "; ".join(f"{s.site!r}: {s.reason}" for s in self.sites if s.update == "unsupported")
            raise ValueError(f"no automatic Gibbs update for {lines}. Pass your own block: "
                             f"overrides={{site: GibbsBlock(...)}}")
        blocks = []
        for s in self.sites:
            if all(s.block is not b for b in blocks):
                blocks.append(s.block)
        return GibbsSweep(blocks)


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
    return SitePlan(name, "discrete", reason, GibbsBlock(f"discrete:{name}", (name,), update))


def _conjugate(model, args, kwargs, state, name, site, verify, gen) -> SitePlan:
    fn = site["fn"]
    family = family_of(fn)
    try:
        posterior_params(model, args, kwargs, state, name, fn)
    except NotConjugate as err:
        return SitePlan(name, "unsupported", f"{err} (unsupported in this increment)")
    update = ConjugateUpdate(model, name, fn, verify=verify)
    if verify and not update.check(state, args, kwargs, gen):
        warnings.warn(f"site {name!r}: its conjugate {family.name} update failed condition-and-"
                      f"score; not using it", RuntimeWarning, stacklevel=3)
        return SitePlan(name, "unsupported", f"conjugate {family.name} update failed the check "
                        f"(unsupported in this increment)")
    return SitePlan(name, "conjugate", f"{family.name} prior, log conditional linear in its "
                    f"sufficient statistics", GibbsBlock(f"conjugate:{name}", (name,), update))


_UNSUPPORTED = " (unsupported in this increment)"


def _gather_nuts(model, args, kwargs, state, sites, out, verify, gen, nuts_steps) -> list:
    """The unsupported continuous sites that NUTS can update, gathered into one block."""
    names, refused = [], {}
    for s in out:
        fn = sites[s.site]["fn"]
        if s.update != "unsupported" or fn.support.is_discrete:
            continue
        refusal = nuts_refusal(fn)
        if refusal is None:
            names.append(s.site)
        else:
            why = s.reason.removesuffix(_UNSUPPORTED)
            refused[s.site] = f"{why}; no NUTS either: {refusal}{_UNSUPPORTED}"
    update = NutsUpdate(model, tuple(names), nuts_steps=nuts_steps) if names else None
    if update is not None and verify and not update.check(state, args, kwargs, gen):
        warnings.warn(f"sites {names}: the NUTS potential energy differs from the program's log "
                      f"joint; leaving them unsupported", RuntimeWarning, stacklevel=3)
        refused.update({n: f"NUTS potential energy differs from the log joint{_UNSUPPORTED}" for n in names})
        names = []
    block = GibbsBlock(f"nuts:{','.join(names)}", tuple(names), update, wants_sweep_info=True)
    on = f"NUTS on sites {', '.join(names)} (unconstrained)"
    return [SitePlan(s.site, "unsupported", refused[s.site]) if s.site in refused
            else SitePlan(s.site, "nuts", f"{s.reason.removesuffix(_UNSUPPORTED)}; {on}", block)
            if s.site in names else s for s in out]


def plan(model, *args, overrides: dict | None = None, verify: bool = True, seed: int = 0,
         nuts_steps: int = 1, **kwargs) -> Plan:
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
        nuts_steps: NUTS transitions per sweep of the NUTS block.

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
    nuts_steps = check_int(nuts_steps, "nuts_steps", minimum=1)
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
        elif family_of(fn) is not None:
            out.append(_conjugate(model, args, kwargs, state, name, site, verify, gen))
        else:
            out.append(SitePlan(name, "unsupported", f"{type(fn).__name__} site with no discrete or "
                                f"conjugate update (unsupported in this increment)"))
    return Plan(tuple(_gather_nuts(model, args, kwargs, state, sites, out, verify, gen, nuts_steps)))
