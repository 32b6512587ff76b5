"""The plan: which automatic Gibbs update each latent site of a Pyro program gets, and why.

:func:`plan` traces the program once (a draw of the prior), then for each latent site in
program order:

* a site with finite enumerable support and no event dimension gets a ``"discrete"`` update,
  plate-vectorised when its elements are conditionally independent given the rest (see
  :mod:`.discrete`), element by element otherwise;
* a Beta, Gamma, InverseGamma, univariate Normal, Dirichlet or MultivariateNormal site (also
  through ``to_event``) whose log conditional, read off the program at the traced state, is
  linear in the prior's sufficient statistics gets a ``"conjugate"`` update (see
  :mod:`.exponential`);
* every other continuous site whose support Pyro maps onto unconstrained space (including a
  site of those families that is not conjugate) joins the one ``"nuts"`` block of the
  program, which draws all such sites at once by NUTS in unconstrained space, adapting its
  step size and diagonal mass matrix during warm-up (see :mod:`.continuous`);
* anything else is ``"unsupported"``, with the reason (a discrete site with
  unbounded support or an event dimension says so).

**Joint NUTS on continuous programs.** In a program with no discrete latent site (and no
override) that needs a NUTS block, the conjugate sites join that block too (``joint_nuts=None``,
the default; ``True`` does it in every program with a NUTS block, ``False`` never). A conjugate
draw given the NUTS sites mixes slowly when the two are correlated a posteriori, as the
school effects and their scale are in a hierarchical model (the funnel): Gibbs between them
moves along the ridge in small steps, where NUTS moves them together. The plan line of such a
site keeps its conjugate reason and says that NUTS moves it. In a program with discrete sites
the conjugate updates stay (NUTS over a mixture's means would move them given fixed
assignments, which their exact draw does better).

A second trace (seed ``seed + 1``) must have the same latent sites with the same shapes: Gibbs
updates a fixed set of sites, so a program whose plate sizes are random is refused.

Before the loop, the discrete sites created inside ``pyro.markov`` that form a chain
``z_0, ..., z_{T-1}`` (of first or higher order) get one ``"ffbs"`` block for the whole
chain, forward-filtering backward-sampling (see :mod:`.markov`); a group of ``pyro.markov``
sites that is not such a chain keeps the per-site discrete updates, with the reason in the
plan.

After the loop, a conjugate site whose terms read only itself and one plate-vectorised
discrete site gets a statistics table of those terms, read off the program once and checked
at a random value of the discrete site; the discrete site's logits come from the tables of the
sites its terms read, where every such term reads one (see :mod:`.tables`; ``tables=False``
leaves them out). A Normal-Wishart pair drawn jointly (below) gets one joint table (see
:mod:`.pair_table`). Their updates then no longer run the program.

A conjugate Wishart site and a conjugate MultivariateNormal site whose prior
reads it share one block that draws them jointly from their Normal-Wishart conditional,
where that joint passes condition-and-score (see :mod:`.normal_wishart`).

The reason of an automatic update also says how its values are scored: all in one batched
trace, or one trace per value where the program is not vectorisable (see :mod:`.trace`).

With ``verify=True`` (the default) every automatic update is checked at the traced state
before it is trusted, and again at its first sweep: a vectorised discrete conditional against
brute-force enumeration of the joint for two random elements (a mismatch falls back to
element by element), an FFBS block's joint conditional of two neighbouring sites likewise (a
mismatch falls back to per-site updates), a conjugate posterior by condition-and-score at two
of its draws (a mismatch sends the site to NUTS), the NUTS potential energy against the
program's log joint (a mismatch leaves the NUTS sites unsupported); each fallback warns,
naming the site (or the chain). A conjugate update that fails at its first sweep stops
the run with a ``RuntimeError`` naming the site.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..checks import check_bool, check_int
from ..core.bound import ModelArgs
from ..core.gibbs import GibbsBlock, GibbsSweep
from ..core.seeding import make_generator, seeded
from .continuous import NutsUpdate, nuts_refusal
from .discrete import DiscreteUpdate, element_logits, enumerable
from .draw_log_joints import draws_log_joints
from .exponential import ConjugateUpdate, NotConjugate, family_of, posterior_params, unwrap
from .grouped import GroupedUpdate, groupable
from .markov import plan_chains, term_dependencies
from .normal_wishart import NormalWishartUpdate, pair_normal_wishart
from .pair_table import build_pair_table
from .tables import NoTable, build_logits, build_tables
from .trace import batching_reason, latent_sites, recorded_log_joint, trace_model

__all__ = ["SitePlan", "Plan", "plan"]


@dataclass(frozen=True)
class SitePlan:
    """The update chosen for one latent site.

    Attributes:
        site: the site's name.
        update: ``"discrete"``, ``"ffbs"``, ``"conjugate"``, ``"nuts"``, ``"override"`` or
            ``"unsupported"``.
        reason: why, in words.
        block: the :class:`~pyromodels.core.GibbsBlock` (``None`` when unsupported); the sites
            of one FFBS chain share one block, and so do a Normal-Wishart pair and all the NUTS
            sites.
    """

    site: str
    update: str
    reason: str
    block: GibbsBlock | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Plan:
    """The updates of every latent site, in program order; ``print(plan)`` shows one line per
    block, labelled ``first..last`` for an FFBS chain or a block of sites that follow one
    another in program order, and by its sites listed (``tau,sigma``) otherwise.

    Attributes:
        sites: one :class:`SitePlan` per latent site.
        model: the program planned; the sweep records its log joint at the kept draws, after
            the last sweep in batched traces where the program allows it
            (:mod:`.draw_log_joints`), else at each kept draw from a recorded trace of it
            (:func:`.trace.recorded_log_joint`).
    """

    sites: tuple[SitePlan, ...]
    model: Callable | None = field(default=None, repr=False, compare=False)

    def __getitem__(self, site: str) -> SitePlan:
        for s in self.sites:
            if s.site == site:
                return s
        raise KeyError(f"no latent site {site!r} in the plan; sites: {[s.site for s in self.sites]}")

    def __str__(self) -> str:
        rows = [(self._label(s), s) for s in self._one_per_block()]
        width = max(len(label) for label, _ in rows)
        return "\n".join(f"{label:<{width}}  {s.update:<11}  {s.reason}" for label, s in rows)

    def _label(self, s: SitePlan) -> str:
        """A block's row label: its site; ``first..last`` for an FFBS chain (``z_0..z_9``, its
        sites in time order) or for sites that follow one another in program order; else the
        sites listed (``tau,sigma``), which a range would misdescribe."""
        sites = () if s.block is None else tuple(s.block.sites)
        if len(sites) <= 1:
            return s.site
        where = {p.site: i for i, p in enumerate(self.sites)}
        first = where.get(sites[0])
        adjacent = first is not None and all(where.get(n) == first + k for k, n in enumerate(sites))
        return f"{sites[0]}..{sites[-1]}" if s.update == "ffbs" or adjacent else ",".join(sites)

    def _one_per_block(self) -> list:
        """The site plans, keeping only the first of the sites that share a block."""
        seen, out = set(), []
        for s in self.sites:
            if s.block is None or id(s.block) not in seen:
                out.append(s)
                seen.add(id(s.block))
        return out

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
        model = self.model
        if model is None:
            return GibbsSweep([s.block for s in self._one_per_block()])
        return GibbsSweep(
            [s.block for s in self._one_per_block()],
            log_joint=lambda data, state: recorded_log_joint(model, data.args, data.kwargs, state),
            log_joints=lambda data, draws: draws_log_joints(model, data.args, data.kwargs, draws))


def _with_batching(reason: str, model, name, args, kwargs) -> str:
    """``reason`` and how the site's values are scored (one batched trace or one per value)."""
    how = batching_reason(model, name, args, kwargs)
    return f"{reason}; {how}" if how else reason


def _discrete(model, args, kwargs, state, name, site, verify, gen) -> SitePlan:
    fn = site["fn"]
    try:
        support = fn.enumerate_support(expand=False).reshape((-1,) + tuple(fn.event_shape))
    except (NotImplementedError, ValueError, RuntimeError) as err:
        return SitePlan(name, "unsupported", f"{type(fn).__name__} support differs between elements "
                        f"({err}) (no automatic update)")
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
        shape = tuple(state[name].shape)[:state[name].dim() - len(fn.event_shape)]
        where = f"over plate shape {shape}" if shape else "(one element)"
        reason = f"enumerate {k}, all elements at once {where}"
    return SitePlan(name, "discrete", _with_batching(reason, model, name, args, kwargs),
                    GibbsBlock(f"discrete:{name}", (name,), update))


def _conjugate(model, args, kwargs, state, name, site, verify, gen) -> SitePlan:
    fn = site["fn"]
    family = family_of(fn)
    try:
        posterior_params(model, args, kwargs, state, name, fn)
    except NotConjugate as err:
        return SitePlan(name, "unsupported", f"{err} (no automatic update)")
    except ValueError as err:  # a probe value put another site outside its support
        first = str(err).strip().splitlines()[0].rstrip(":")
        return SitePlan(name, "unsupported", f"site {name!r}: the program rejects the values of "
                        f"{family.name} its conditional is read at ({first}) (unsupported in this "
                        f"increment)")
    update = ConjugateUpdate(model, name, fn, verify=verify)
    if verify and not update.check(state, args, kwargs, gen):
        warnings.warn(f"site {name!r}: its conjugate {family.name} update failed condition-and-"
                      f"score; not using it", RuntimeWarning, stacklevel=3)
        return SitePlan(name, "unsupported", f"conjugate {family.name} update failed the check "
                        f"(no automatic update)")
    reason = f"{family.name} prior, log conditional linear in its sufficient statistics"
    return SitePlan(name, "conjugate", _with_batching(reason, model, name, args, kwargs),
                    GibbsBlock(f"conjugate:{name}", (name,), update))


_UNSUPPORTED = " (no automatic update)"


def _joins_nuts(out, sites, joint_nuts) -> set:
    """The conjugate sites that join the NUTS block (see the module docs)."""
    needs_nuts = any(s.update == "unsupported" and not _is_discrete(sites[s.site]["fn"])
                     and nuts_refusal(sites[s.site]["fn"]) is None for s in out)
    if joint_nuts is False or not needs_nuts:
        return set()
    if joint_nuts is None and any(s.update in ("discrete", "ffbs", "override") or
                                  _is_discrete(sites[s.site]["fn"]) for s in out):
        return set()
    return {s.site for s in out if s.update == "conjugate" and nuts_refusal(sites[s.site]["fn"]) is None}


def _gather_nuts(model, args, kwargs, state, sites, out, verify, gen, nuts_steps, joint_nuts=None) -> list:
    """The unsupported continuous sites that NUTS can update (and the conjugate ones that join
    them, see :func:`_joins_nuts`), gathered into one block."""
    names, refused = [], {}
    joining = _joins_nuts(out, sites, joint_nuts)
    for s in out:
        fn = sites[s.site]["fn"]
        if s.site in joining:
            names.append(s.site)
            continue
        if s.update != "unsupported" or _is_discrete(fn):
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
        joining = set()
    block = GibbsBlock(f"nuts:{','.join(names)}", tuple(names), update, wants_sweep_info=True,
                       get_state=getattr(update, "get_state", None),
                       set_state=getattr(update, "set_state", None))
    on = f"NUTS on sites {', '.join(names)} (unconstrained)"
    others = [n for n in names if n not in joining]
    jointly = (f"; the conjugate sites {', '.join(n for n in names if n in joining)} move jointly "
               f"with {', '.join(others)} (a program without discrete sites: their exact draws given "
               f"the rest would mix slowly along a posterior ridge)" if joining else "")

    def why(s):
        own = f"{s.site!r} is conjugate given the rest" if s.site in joining else s.reason
        return f"{own.removesuffix(_UNSUPPORTED)}; {on}{jointly}"
    return [SitePlan(s.site, "unsupported", refused[s.site]) if s.site in refused
            else SitePlan(s.site, "nuts", why(s), block) if s.site in names else s for s in out]


def _with_tables(model, args, kwargs, state, sites, out, deps) -> list:
    """``out`` with statistics tables (see :mod:`.tables`) given to the conjugate updates whose
    terms are gathered by one plate-vectorised discrete site, and logits from those tables
    to the discrete sites whose terms read only such sites; each plan line says which."""
    discrete = {s.site: s.block.update for s in out if s.update == "discrete"
                and isinstance(s.block.update, DiscreteUpdate) and s.block.update.vectorised}
    conjugate = {s.site: s.block.update for s in out if s.update == "conjugate"
                 and isinstance(s.block.update, ConjugateUpdate)}
    pairs = {s.site: s.block.update for s in out if s.update == "conjugate"
             and isinstance(s.block.update, NormalWishartUpdate)}
    if not discrete or not (conjugate or pairs):
        return out
    reads, latent = deps(), set(sites)
    notes, tables, blocks = {}, {}, {}
    for update in {id(u): u for u in pairs.values()}.values():
        gathering = {z for r in reads.values() if set(update.sites) & r for z in r if z in discrete}
        if len(gathering) != 1:
            continue
        z = gathering.pop()
        try:
            table = build_pair_table(model, args, kwargs, state, update, z, discrete[z].support,
                                     reads, latent)
        except (NoTable, NotConjugate, ValueError, RuntimeError) as err:
            for site in update.sites:
                notes[site] = f"no joint statistics table over {z!r} ({err})"
            continue
        update.table = table
        for site in update.sites:
            tables.setdefault(z, {})[site] = table
            notes[site] = (f"the joint conditional from a statistics table of its {table.entries} "
                           f"gathered entries over the values of {z!r} (checked at a random {z!r})")
    done: set = set()
    for name in conjugate:
        if name in done:
            continue
        group = _read_together(name, reads, conjugate, discrete)
        done |= set(group)
        gathering = {z for r in reads.values() if r & set(group) for z in r if z in discrete}
        if len(gathering) != 1:
            continue
        z = gathering.pop()
        try:
            built = build_tables(model, args, kwargs, state, {s: conjugate[s].fn for s in group}, z,
                                 discrete[z].support, reads, latent)
        except (NoTable, NotConjugate) as err:
            for site in group:
                notes[site] = f"no statistics table over {z!r} ({err})"
            continue
        for site, table in built.items():
            conjugate[site].table = table
            tables.setdefault(z, {})[site] = table
            others = ", ".join(repr(s) for s in group if s != site)
            together = f", read together with {others}" if others else ""
            notes[site] = (f"coefficients from a statistics table of its {table.entries} gathered "
                           f"entries over the values of {z!r}{together} (checked at a random {z!r})")
        if groupable([conjugate[s] for s in group], state):
            joint = GibbsBlock(f"conjugate:{','.join(group)}", group,
                               GroupedUpdate([conjugate[s] for s in group]))
            for site in group:
                blocks[site] = joint
                notes[site] += f"; {', '.join(map(repr, group))} drawn in one update"
    for z, update in discrete.items():
        if z not in tables:
            continue
        try:
            update.table_logits = build_logits(model, args, kwargs, state, z, update.support,
                                               tables[z], reads, latent)
        except NoTable as err:
            notes[z] = f"logits from the program (no statistics tables: {err})"
            continue
        notes[z] = (f"logits from the statistics tables of {', '.join(map(repr, tables[z]))} "
                    f"(checked at a random value of each)")
    return [replace(s, reason=f"{s.reason}; {notes[s.site]}", block=blocks.get(s.site, s.block))
            if s.site in notes else s for s in out]


def _read_together(name: str, reads: dict, conjugate: dict, discrete: dict) -> tuple:
    """The conjugate sites read by the same terms as ``name`` (and so on, transitively), in
    program order: the sites whose statistics tables are read together (a change-point's two
    rates, read by each count according to the change point)."""
    group = {name}
    while True:
        more = {s for r in reads.values() if r & group for s in r
                if s in conjugate and s not in discrete} - group
        if not more:
            return tuple(s for s in conjugate if s in group)
        group |= more


def _dependencies(model, args, kwargs, state) -> dict:
    """``{site: sites its log density term reads}``, or ``{}`` where the program's
    dependencies cannot be traced (no joint block or table is then looked for)."""
    try:
        return term_dependencies(model, args, kwargs, state)
    except (RuntimeError, TypeError, ValueError, NotImplementedError):
        return {}


def _with_normal_wishart(model, args, kwargs, state, sites, out, verify, gen, deps) -> list:
    """``out`` with each conjugate Wishart site and the MultivariateNormal mean whose prior it
    scales sharing one joint Normal-Wishart block where the joint passes its check (see
    :mod:`.normal_wishart`)."""
    chosen, notes = pair_normal_wishart(sites, out, deps, state, ModelArgs(args, kwargs), gen, verify)
    return [replace(s, reason=f"{chosen[s.site][0]}; {s.reason}", block=chosen[s.site][1])
            if s.site in chosen else replace(s, reason=f"{s.reason}; {notes[s.site]}")
            if s.site in notes else s for s in out]


def plan(model, *args, overrides: dict | None = None, verify: bool = True, seed: int = 0,
         nuts_steps: int = 1, joint_nuts: bool | None = None, tables: bool = True,
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
        nuts_steps: NUTS transitions per sweep of the NUTS block.
        joint_nuts: whether the conjugate sites join the NUTS block: ``None`` (the default) in
            a program with no discrete latent site, ``True`` wherever there is a NUTS block,
            ``False`` never (see the module docs).
        tables: give the conjugate and discrete updates of sites gathered by a discrete
            site statistics tables where they apply, checked here (see :mod:`.tables`);
            ``False``: every update reads the program every sweep.

    Returns:
        A :class:`Plan`.

    Raises:
        TypeError: ``model`` not callable, an override not a GibbsBlock.
        ValueError: a program with no latent sample site, a latent site whose shape (or
            presence) differs between two traces of the program (seeds ``seed`` and
            ``seed + 1``), an override for an unknown site.

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
    if joint_nuts is not None:
        joint_nuts = check_bool(joint_nuts, "joint_nuts")
    tables = check_bool(tables, "tables")
    overrides = {} if overrides is None else overrides
    if not isinstance(overrides, dict):
        raise TypeError(f"overrides must be a dict {{site: GibbsBlock}}, got {type(overrides).__name__}")
    with seeded(seed):
        trace = trace_model(model, args, kwargs)
    sites = latent_sites(trace)
    if not sites:
        raise ValueError(_no_latents_message(trace))
    with seeded(seed + 1):
        _check_fixed_shapes(sites, latent_sites(trace_model(model, args, kwargs)))
    for name, block in overrides.items():
        if name not in sites:
            raise ValueError(f"overrides names {name!r}, which is not a latent site of the model; "
                             f"latent sites: {list(sites)}")
        if not isinstance(block, GibbsBlock) or tuple(block.sites) != (name,):
            raise TypeError(f"overrides[{name!r}] must be a GibbsBlock writing exactly ({name!r},)")
    state = {name: site["value"].detach() for name, site in sites.items()}
    gen = make_generator(seed)
    chained, not_chained = plan_chains(model, args, kwargs, trace, state, overrides, verify, gen)
    out = []
    for name, site in sites.items():
        fn = site["fn"]
        if name in overrides:
            out.append(SitePlan(name, "override", "the user's own block", overrides[name]))
        elif name in chained:
            out.append(SitePlan(name, "ffbs", *chained[name]))
        elif fn.has_enumerate_support and enumerable(fn):
            sp = _discrete(model, args, kwargs, state, name, site, verify, gen)
            if name in not_chained:
                sp = replace(sp, reason=f"{sp.reason}; no ffbs: {not_chained[name]}")
            out.append(sp)
        elif _is_discrete(fn):
            out.append(SitePlan(name, "unsupported", _not_enumerable(fn)))
        elif family_of(fn) is not None:
            out.append(_conjugate(model, args, kwargs, state, name, site, verify, gen))
        else:
            out.append(SitePlan(name, "unsupported", f"{type(fn).__name__} site with no discrete or "
                                f"conjugate update (no automatic update)"))
    known: dict = {}

    def deps():
        if not known:
            known["deps"] = _dependencies(model, args, kwargs, state)
        return known["deps"]

    out = _with_normal_wishart(model, args, kwargs, state, sites, out, verify, gen, deps)
    if tables:
        out = _with_tables(model, args, kwargs, state, sites, out, deps)
    return Plan(tuple(_gather_nuts(model, args, kwargs, state, sites, out, verify, gen, nuts_steps,
                                   joint_nuts)), model)


def _no_latents_message(trace) -> str:
    observed = [name for name, site in trace.nodes.items()
                if site["type"] == "sample" and site["is_observed"]]
    if not observed:
        return "the model has no latent sample sites (it calls no pyro.sample): there is nothing to sample"
    names = ", ".join(map(repr, observed))
    return (f"the model has no latent sample sites: every pyro.sample site ({names}) is observed "
            f"(obs= or pyro.condition), so there is nothing to sample")


def _check_fixed_shapes(first: dict, second: dict) -> None:
    """Gibbs updates one fixed set of latent sites of fixed shapes: refuse a program whose
    latent sites (or their shapes) change from one trace to the next."""
    for name in list(first) + [n for n in second if n not in first]:
        if name not in first or name not in second:
            raise ValueError(f"latent site {name!r} is in one trace of the model and not in another "
                             f"(random control flow): automatic Gibbs needs the same latent sites in "
                             f"every run of the model")
        a, b = tuple(first[name]["value"].shape), tuple(second[name]["value"].shape)
        if a != b:
            raise ValueError(f"latent site {name!r} has shape {a} in one trace of the model and {b} "
                             f"in another: automatic Gibbs needs every latent site to keep its shape "
                             f"(fix the plate sizes, or make them arguments of the model)")


def _is_discrete(fn) -> bool:
    try:
        return bool(fn.support.is_discrete)
    except NotImplementedError:  # a distribution that declares no support
        return False


def _not_enumerable(fn) -> str:
    """Why a discrete site that the discrete update cannot enumerate has no update."""
    what = (f"has an event dimension {tuple(fn.event_shape)} (enumerated only without one, or "
            f"as a OneHotCategorical)"
            if fn.event_shape else "has unbounded support, so its values cannot be enumerated")
    name = type(unwrap(fn)).__name__ + (" (to_event)" if unwrap(fn) is not fn else "")
    return (f"{name} site is discrete and {what}, and no conjugate update applies to a "
            f"discrete site (give it a finite support, for example a Categorical over the values it "
            f"can take)")
