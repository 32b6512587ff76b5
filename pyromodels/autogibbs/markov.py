"""Forward-filtering backward-sampling (FFBS) of discrete chains declared with ``pyro.markov``.

**Detection.** The candidates are the latent discrete sites (finite enumerable support, no event
dimension) created inside ``pyro.markov`` (their ``infer`` dict holds ``_markov_scope``). Which
sites each log density term really reads is found by running the program once with every sample
value tracked through Pyro's provenance tensors (:func:`term_dependencies`). Two candidates are
linked when one's distribution reads the other; a connected group, in program order
``z_0, ..., z_{T-1}``, is a chain of order ``r`` when all its sites share one plate shape and
every term of the program reads sites of the group at most ``r + 1`` consecutive positions
apart: ``r = 1`` for an HMM, ``r = 2`` for ``pyro.markov(history=2)``
steps reading two states back, and ``r = 2`` also for two chains that read each other in one loop
(``w_t`` reading ``w_{t-1}`` and ``z_t``: in program order ``z_0, w_0, z_1, w_1, ...``, each
term spans at most three consecutive sites; the two may have different numbers of states,
and each state axis of the potentials then has the most, with potential ``-inf`` past a
site's own). A discrete site drawn before the loop that only the loop's first site
reads among the group (its own term reading no other discrete site) is the chain's first
state, when the order stays as it was (:func:`_start_of`). An order above one is taken while the potentials
need at most :data:`MAX_EVALUATIONS` evaluations of the program; anything else keeps the
per-site discrete updates, with the reason in the plan.

**Reading the potentials.** Each term reading the chain is assigned to the position ``t`` of the
last chain site it reads; the terms at ``t`` form ``psi_t(z_{t-r}, ..., z_t)`` (the terms at
``t < r`` form ``phi(z_0, ..., z_{r-1})``), per element of the chain's plates. They are read off
the program with ``K^(r+1)`` evaluations, not ``T K^(r+1)``: setting ``z_t`` to ``v[t mod (r+1)]``
for a tuple ``v`` of ``r + 1`` values, one evaluation scores every window ``z_{t-r..t}`` at a
rotation of ``v``, so the ``K^(r+1)`` tuples give every potential of every position (for
``r = 1``: ``z_t = a`` at even ``t`` and ``b`` at odd ``t`` gives ``psi_t(a, b)`` at odd ``t`` and
``psi_t(b, a)`` at even ``t``).

**Sampling.** Forward filtering in log space over the last ``r`` states,
``alpha_t(z_{t-r+1..t}) = logsumexp over z_{t-r} of alpha_{t-1}(z_{t-r..t-1}) + psi_t(z_{t-r..t})``
from ``alpha_{r-1} = phi``, then backward sampling: the last ``r`` states jointly from
``alpha_{T-1}``, then ``z_{t-r} ~ alpha_{t-1}(., z_{t-r+1..t-1}) + psi_t(., z_{t-r+1..t})``:
``O(T K^(r+1))`` arithmetic per element, all elements at once.

**Verification.** The joint conditional of two neighbouring sites ``(z_t, z_{t+1})`` of one
element, from the potentials, is compared with brute-force enumeration of the program's joint
(``K^2`` evaluations) at two random positions and elements.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import pyro
import torch
from pyro import poutine
from pyro.infer.inspect import TrackProvenance
from pyro.ops.provenance import get_provenance
from pyro.poutine.util import site_is_subsample

from ..conjugate import sample_categorical
from ..core.gibbs import GibbsBlock
from ..core.seeding import make_generator
from .discrete import DiscreteUpdate, enumerable
from .trace import element_index, latent_sites, log_joint, log_terms, reduce_to_site, site_plates, tolerance

__all__ = ["Chain", "NotSeparable", "MAX_EVALUATIONS", "term_dependencies", "find_chains",
           "chain_potentials", "forward_filter", "backward_sample", "FFBSUpdate", "plan_chains"]

#: the most program evaluations (``K^(r+1)``) per sweep that a chain of order ``r > 1`` may
#: take to read its potentials; a first-order chain is always taken (``K^2``)
MAX_EVALUATIONS = 1024


class NotSeparable(ValueError):
    """A term reading the chain is not indexed by the chain's plates (it couples sequences)."""


@dataclass(frozen=True)
class Chain:
    """A chain of discrete sites of order ``r``.

    Attributes:
        sites: ``z_0, ..., z_{T-1}``, in program order.
        support: the support values of ``z_0``, ``(K, *event)``.
        batch_shape: each site's shape (its plate elements: one sequence per element).
        terms: for each position ``t``, the sample sites whose log density terms read ``z_t``
            (and maybe some of ``z_{t-r}, ..., z_{t-1}``) and no later site of the chain.
        order: ``r``, how many sites back a term reaches (1: every term reads at most two
            neighbours ``z_{t-1}, z_t``).
        supports: each site's support values where they differ between sites (two chains
            of different sizes stepping together); empty where every site has ``support``.
    """

    sites: tuple[str, ...]
    support: torch.Tensor
    batch_shape: torch.Size
    terms: tuple[tuple[str, ...], ...]
    order: int = 1
    supports: tuple = ()

    def support_of(self, t: int) -> torch.Tensor:
        """The support values of ``z_t``."""
        return self.supports[t] if self.supports else self.support

    @property
    def states(self) -> int:
        """``K``, the most support values of a site: the size of each state axis of the
        potentials (a site with fewer values has potential ``-inf`` beyond them)."""
        return max(len(s) for s in self.supports) if self.supports else len(self.support)

    @property
    def sizes(self) -> str:
        """``'2'`` or, where the sites' supports differ, ``'2 or 3'``: how plans say it."""
        sizes = sorted({len(s) for s in self.supports} or {len(self.support)})
        return " or ".join(str(n) for n in sizes)

    @property
    def label(self) -> str:
        """``'z_0'..'z_9'``: how messages name the chain."""
        return f"{self.sites[0]!r}..{self.sites[-1]!r}"


def term_dependencies(model, args: tuple, kwargs: dict, state: dict) -> dict:
    """``{site: frozenset of sample sites its log density term reads}`` (itself included) for
    every sample site, at ``state``, by provenance tracking of one run of the program."""
    fn = poutine.condition(model, data=state)
    with pyro.get_param_store().scope(), poutine.block(), torch.no_grad(), \
            pyro.validation_enabled(False), TrackProvenance():
        trace = poutine.trace(fn).get_trace(*args, **kwargs)
    return {name: get_provenance(site["fn"].log_prob(site["value"]))
            for name, site in trace.nodes.items()
            if site["type"] == "sample" and not site_is_subsample(site)}


def _components(names: list, parents: dict) -> list:
    """The groups of ``names`` connected through ``parents``, each in the order of ``names``."""
    neighbours = {n: set(parents[n]) for n in names}
    for n in names:
        for p in parents[n]:
            neighbours[p].add(n)
    seen, groups = set(), []
    for n in names:
        if n in seen:
            continue
        stack, group = [n], set()
        while stack:
            m = stack.pop()
            if m not in group:
                group.add(m)
                stack.extend(neighbours[m] - group)
        seen |= group
        groups.append([m for m in names if m in group])
    return groups


def _names(sites) -> str:
    return ", ".join(repr(s) for s in sites)


def _shape_problem(group: list, candidates: dict) -> str | None:
    first = candidates[group[0]]
    for name in group[1:]:
        site = candidates[name]
        shape, first_shape = tuple(site["value"].shape), tuple(first["value"].shape)
        if shape != first_shape:
            return f"{name!r} has shape {shape}, unlike {group[0]!r} {first_shape}"
    return None


def _support(site) -> torch.Tensor | None:
    """``(K, *event)``: the support values (the identity's rows for a one-hot site)."""
    fn = site["fn"]
    try:
        return fn.enumerate_support(expand=False).reshape((-1,) + tuple(fn.event_shape))
    except (NotImplementedError, ValueError, RuntimeError):
        return None


def _batch_shape(site) -> torch.Size:
    value = site["value"]
    return value.shape[:value.dim() - len(site["fn"].event_shape)]


def _filled(ref: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """Every element of a site shaped like ``ref`` set to the support value ``value``."""
    return value.to(ref.dtype).expand(ref.shape).clone()


def _index_of(support: torch.Tensor, value: torch.Tensor) -> int:
    """The position of ``value`` (one element's value) in ``support``."""
    same = (support == value.to(support.dtype)).reshape(len(support), -1).all(-1)
    return int(same.nonzero()[0])


def _assign_terms(group: list, deps: dict, k: int) -> tuple[tuple, int, str | None]:
    """``(terms, order, problem)``: each term at the position of the last chain site it reads,
    and the chain's order (the widest span of positions a term reads)."""
    position = {name: t for t, name in enumerate(group)}
    terms, order, widest = [[] for _ in group], 1, None
    for term, reads in deps.items():
        ts = sorted(position[s] for s in reads if s in position)
        if not ts:
            continue
        if ts[-1] - ts[0] > order:
            order, widest = ts[-1] - ts[0], (term, ts)
        terms[ts[-1]].append(term)
    if order > 1 and k ** (order + 1) > MAX_EVALUATIONS:
        term, ts = widest
        return (), order, (f"the term of {term!r} reads {_names(group[t] for t in ts)}: order {order} "
                           f"with {k} states needs {k}^{order + 1} evaluations of the program per "
                           f"sweep, more than {MAX_EVALUATIONS}")
    return tuple(tuple(t) for t in terms), order, None


def _candidates(trace, exclude, markov: bool = True) -> dict:
    """The latent discrete sites created inside ``pyro.markov`` (with ``markov=False``: outside
    it) and not in ``exclude``, with no event dimension or one-hot."""
    return {n: s for n, s in latent_sites(trace).items()
            if n not in exclude and ("_markov_scope" in s["infer"]) == markov
            and s["fn"].has_enumerate_support and enumerable(s["fn"])}


def _start_of(group: list, starts: dict, deps: dict, order: dict, discrete) -> str | None:
    """The chain's state drawn before its ``pyro.markov`` loop, if there is one: a discrete
    site outside the loop, earlier in the program than ``group[0]``, that ``group[0]`` reads
    and no later site of the group does, whose own term reads no other discrete site (the
    initial state ``z_0 ~ Categorical(init)`` of ``for t in pyro.markov(range(1, T))``)."""
    first = group[0]
    found = [s for s in starts if s in deps.get(first, ()) and order[s] < order[first]]
    if len(found) != 1:
        return None
    start = found[0]
    if (deps.get(start, frozenset()) & discrete) - {start}:
        return None
    if any(start in deps.get(name, ()) for name in group[1:]):
        return None
    return start


def find_chains(trace, deps: dict, exclude=()) -> tuple[list, dict]:
    """The FFBS chains of a traced program.

    Args:
        trace: a trace of the program (see :func:`~.trace.trace_model`).
        deps: :func:`term_dependencies` at the trace's values.
        exclude: sites that must not join a chain (the user's overrides).

    Returns:
        ``(chains, notes)``: a list of :class:`Chain`, and ``{site: why its group of
        ``pyro.markov`` sites is not a chain}``.
    """
    candidates = _candidates(trace, exclude)
    starts = _candidates(trace, exclude, markov=False)
    sites = {**candidates, **starts}
    order_of = {n: i for i, n in enumerate(trace.nodes)}
    names = list(candidates)
    parents = {n: (deps.get(n, frozenset()) & candidates.keys()) - {n} for n in names}
    chains, notes, taken = [], {}, set()
    for group in _components(names, parents):
        start = _start_of(group, starts, deps, order_of, sites.keys())
        shaped = _chain_of(group, sites, deps) if len(group) >= 2 else ("too short", None)
        if start is not None and start not in taken:
            longer = _chain_of([start, *group], sites, deps)
            if longer[0] is None and (shaped[0] is not None or longer[1].order == shaped[1].order):
                shaped = longer  # the state drawn before the loop joins its chain
                taken.add(start)
        problem, chain = shaped
        if problem == "too short":
            continue
        if problem is not None:
            notes.update({n: problem for n in group})
            continue
        chains.append(chain)
    return chains, notes


def _chain_of(group: list, sites: dict, deps: dict) -> tuple[str | None, Chain | None]:
    """``(None, the Chain of group)``, or ``(why not, None)``."""
    problem = _shape_problem(group, sites)
    supports = [_support(sites[n]) for n in group]
    if problem is None and any(s is None for s in supports):
        problem = "its sites' supports differ between elements"
    if problem is None:
        terms, order, problem = _assign_terms(group, deps, max(len(s) for s in supports))
    if problem is not None:
        return problem, None
    same = all(s.shape == supports[0].shape and torch.equal(s, supports[0]) for s in supports)
    return None, Chain(tuple(group), supports[0], _batch_shape(sites[group[0]]), terms, order,
                       () if same else tuple(supports))


def chain_potentials(model, args: tuple, kwargs: dict, state: dict, chain: Chain):
    """The chain's log potentials read off the program at the rest of ``state``.

    Returns:
        ``(init, psi, rest)``: ``init`` ``(*batch, K, ..., K)`` (``r`` state axes) is
        ``phi(z_0, ..., z_{r-1})``; ``psi`` ``(T, *batch, K, ..., K)`` (``r + 1`` state axes)
        holds ``psi_t(z_{t-r}, ..., z_t)`` at ``t >= r`` (``psi[:r]`` is zero); ``rest`` is the
        sum of the terms that do not read the chain (a scalar), so that ``rest + logsumexp``
        over paths of the potentials is the program's log joint with the chain summed out.
        All float64.

    Raises:
        NotSeparable: a term reading the chain is not indexed by the chain's plates.
    """
    k, shape, r = chain.states, chain.batch_shape, chain.order
    ref = state[chain.sites[0]]
    n = len(chain.sites)
    last = [len(chain.support_of(t)) - 1 for t in range(n)]
    window = torch.zeros((k,) * (r + 1) + (n,) + tuple(shape), dtype=torch.float64, device=ref.device)
    plates = site_plates(model, args, kwargs, state)
    rest = None
    for v in itertools.product(range(k), repeat=r + 1):
        values = {name: _filled(state[name], chain.support_of(t)[min(v[t % (r + 1)], last[t])])
                  for t, name in enumerate(chain.sites)}
        lp = log_terms(model, args, kwargs, {**state, **values})
        for t, names in enumerate(chain.terms):
            for name in names:
                reduced = reduce_to_site(lp[name].to(torch.float64), shape, plates.get(name, {}),
                                         plates[chain.sites[t]])
                if reduced is None:
                    raise NotSeparable(f"the term of {name!r} (shape {tuple(lp[name].shape)}) is not "
                                       f"indexed by the chain's plates (shape {tuple(shape)})")
                window[v + (t,)] += reduced
        if rest is None:
            used = {name for names in chain.terms for name in names}
            rest = sum((v.to(torch.float64).sum() for n_, v in lp.items() if n_ not in used),
                       torch.zeros((), dtype=torch.float64, device=ref.device))
    if chain.supports:
        window[_beyond_supports(last, k, r, ref.device)] = -torch.inf
    b = len(shape)
    window = window.permute((r + 1, *range(r + 2, r + 2 + b), *range(r + 1)))  # (T, *batch, v)
    init = window[:r].sum(0)[..., 0]          # z_0..z_{r-1} on their own axes; z_r unread
    psi = torch.zeros_like(window)
    for c in range(r + 1):
        # at t = c (mod r + 1), the window's j-th state z_{t-r+j} sits on axis (c - r + j) mod (r + 1)
        axes = [(c - r + j) % (r + 1) for j in range(r + 1)]
        psi[c::r + 1] = window[c::r + 1].permute((*range(1 + b), *(1 + b + a for a in axes)))
    psi[:r] = 0.0
    return init, psi, rest


def _beyond_supports(last: list, k: int, r: int, device) -> torch.Tensor:
    """``(K, ..., K, T)`` (``r + 1`` state axes): where a window of the potentials' reading
    (:func:`chain_potentials`) sets some site of the window ``t - r .. t`` to an index past its
    support. At ``t`` the window's site ``s`` sits on axis ``s mod (r + 1)``, one site per
    axis."""
    n = len(last)
    t = torch.arange(n, device=device)
    index = torch.arange(k, device=device)
    size = torch.tensor(last, device=device) + 1
    mask = torch.zeros((k,) * (r + 1) + (n,), dtype=torch.bool, device=device)
    for a in range(r + 1):
        s = t - ((t - a) % (r + 1))                    # the window's site on axis a
        past = (s >= 0) & (index[:, None] >= size[s.clamp_min(0)])       # (K, T)
        mask |= past.reshape((1,) * a + (k,) + (1,) * (r - a) + (n,))
    return mask


def forward_filter(init: torch.Tensor, psi: torch.Tensor, order: int = 1) -> torch.Tensor:
    """``alpha (T - r + 1, *batch, K, ..., K)``: ``alpha[i]`` is ``alpha_{r-1+i}``, the log sum
    over ``z_0..z_{t-r}`` of the potentials up to ``t = r - 1 + i`` as a function of the last
    ``r`` states ``z_{t-r+1..t}``; the log-sum-exp of ``alpha[-1]`` over its ``r`` state axes is
    each sequence's log normaliser.

    Args:
        init: ``phi``, ``(*batch, K, ..., K)`` with ``r`` state axes.
        psi: ``(T, *batch, K, ..., K)`` with ``r + 1`` state axes, ``psi[t]`` indexed
            ``(z_{t-r}, ..., z_t)``; ``psi[:r]`` unused.
        order: ``r``.

    Example:
        >>> init = torch.tensor([0.5, 0.5]).log()
        >>> psi = torch.stack([torch.zeros(2, 2), torch.tensor([[0.9, 0.1], [0.2, 0.8]]).log()])
        >>> alpha = forward_filter(init, psi)
        >>> alpha.shape, f"{float(torch.logsumexp(alpha[-1], -1).exp()):.4f}"  # rows sum to 1
        (torch.Size([2, 2]), '1.0000')
    """
    r = order
    alpha = [init]
    for t in range(r, psi.shape[0]):
        alpha.append(torch.logsumexp(alpha[-1].unsqueeze(-1) + psi[t], dim=-(r + 1)))
    return torch.stack(alpha)


def _code(states: list, k: int, like: torch.Tensor) -> torch.Tensor:
    """The flat index of a tuple of state indices (the first the slowest; zeros shaped
    ``like`` for no states)."""
    code = torch.zeros_like(like)
    for z in states:
        code = code * k + z
    return code


def backward_sample(alpha: torch.Tensor, psi: torch.Tensor, generator: torch.Generator,
                    order: int = 1) -> torch.Tensor:
    """One path per element from the chain's joint conditional: ``(T, *batch)`` indices.

    Args:
        alpha: :func:`forward_filter`'s output.
        psi: the potentials it was computed from.
        generator: the random stream.
        order: ``r``.
    """
    r = order
    n, k = psi.shape[0], psi.shape[-1]
    batch = psi.shape[1:psi.dim() - r - 1]
    last = sample_categorical(alpha[-1].reshape(*batch, k ** r), generator)
    draws = [None] * n
    for j in range(r):                      # the last r states, from their joint draw
        draws[n - 1 - j] = last % k
        last = last // k
    for t in range(n - 1, r - 1, -1):        # z_{t-r} given z_{t-r+1..t}
        known = _code(draws[t - r + 1:t], k, draws[t])
        prev = alpha[t - r].reshape(*batch, k, k ** (r - 1))
        prev = torch.gather(prev, -1, known[..., None, None].expand(*batch, k, 1)).squeeze(-1)
        column = psi[t].reshape(*batch, k, k ** r)
        full = _code(draws[t - r + 1:t + 1], k, draws[t])
        column = torch.gather(column, -1, full[..., None, None].expand(*batch, k, 1)).squeeze(-1)
        draws[t - r] = sample_categorical(prev + column, generator)
    return torch.stack(draws)


def _path_scores(init, psi, index: tuple, paths: torch.Tensor, r: int) -> torch.Tensor:
    """The potentials' log score of each path ``paths (M, T)`` of state indices at element
    ``index`` of a chain of order ``r``."""
    k = psi.shape[-1]
    first = init[index].reshape(-1)[_code(list(paths[:, :r].T), k, paths[:, 0])]
    if paths.shape[1] == r:
        return first
    flat = psi[(slice(None), *index)].reshape(psi.shape[0], -1)[r:]      # (T - r, K^(r+1))
    windows = _code(list(paths.unfold(1, r + 1, 1).permute(2, 0, 1)), k, paths[:, r:])   # (M, T - r)
    return first + flat.gather(1, windows.T).sum(0)


class FFBSUpdate:
    """The FFBS update of one chain (a picklable callable for a
    :class:`~pyromodels.core.GibbsBlock` writing every site of the chain).

    Args:
        model: the Pyro program.
        chain: the :class:`Chain`.
        verify: on the first call, compare the joint conditional of two neighbouring sites
            with brute-force enumeration (see :meth:`agrees`) and, on a mismatch, warn naming
            the chain and update its sites one by one by :class:`~.discrete.DiscreteUpdate`.
            The check draws from its own generator.
    """

    def __init__(self, model, chain: Chain, verify: bool = True):
        self.model, self.chain, self.verify = model, chain, verify
        self.fallback: list | None = None

    def __call__(self, state: dict, data, generator: torch.Generator) -> dict:
        args, kwargs = data.args, data.kwargs
        if self.fallback is None:
            try:
                init, psi, _ = chain_potentials(self.model, args, kwargs, state, self.chain)
            except NotSeparable as err:
                self._fall_back(str(err))
            else:
                own = make_generator(0, psi.device)
                if self.verify and not self.agrees(state, args, kwargs, own, (init, psi)):
                    self._fall_back("its joint conditional differs from brute-force enumeration")
                else:
                    self.verify = False
                    r = self.chain.order
                    draws = backward_sample(forward_filter(init, psi, r), psi, generator, r)
                    return {name: self.chain.support_of(t)[draws[t]].to(state[name].dtype)
                            for t, name in enumerate(self.chain.sites)}
        state = dict(state)
        for update in self.fallback:
            state.update(update(state, data, generator))
        return {name: state[name] for name in self.chain.sites}

    def _fall_back(self, why: str) -> None:
        warnings.warn(f"chain {self.chain.label}: {why}; updating its sites one by one instead",
                      RuntimeWarning, stacklevel=3)
        self.fallback = [DiscreteUpdate(self.model, name, self.chain.support_of(t), vectorised=True,
                                        verify=True) for t, name in enumerate(self.chain.sites)]

    def log_marginal(self, state: dict, args: tuple, kwargs: dict) -> torch.Tensor:
        """The program's log joint at ``state`` with the chain summed out (a float64 scalar),
        by the forward filter."""
        init, psi, rest = chain_potentials(self.model, args, kwargs, state, self.chain)
        last = forward_filter(init, psi, self.chain.order)[-1].flatten(start_dim=len(self.chain.batch_shape))
        return rest + torch.logsumexp(last, -1).sum()

    def agrees(self, state: dict, args: tuple, kwargs: dict, generator: torch.Generator,
               potentials: tuple | None = None) -> bool:
        """Whether the potentials' joint conditional of ``(z_t, z_{t+1})`` matches brute-force
        enumeration of the program's joint at two random positions ``t`` and elements."""
        init, psi = potentials if potentials is not None else \
            chain_potentials(self.model, args, kwargs, state, self.chain)[:2]
        sites, chain, shape = self.chain.sites, self.chain, self.chain.batch_shape
        ref = state[sites[0]]
        dtype = ref.dtype if ref.is_floating_point() else torch.get_default_dtype()
        n = max(1, shape.numel())
        for _ in range(2):
            t = int(torch.randint(0, len(sites) - 1, (), generator=generator))
            index = element_index(int(torch.randint(0, n, (), generator=generator)), shape)
            current = torch.tensor([_index_of(chain.support_of(u), state[s][index])
                                    for u, s in enumerate(sites)])
            here, there = chain.support_of(t), chain.support_of(t + 1)
            paths = current.repeat(len(here) * len(there), 1)
            paths[:, t:t + 2] = torch.cartesian_prod(torch.arange(len(here)), torch.arange(len(there)))
            mine = _path_scores(init, psi, index, paths, chain.order).reshape(len(here), len(there))
            exact = torch.empty_like(mine)
            for i, a in enumerate(here):
                for j, b in enumerate(there):
                    values = {}
                    for s, v in ((sites[t], a), (sites[t + 1], b)):
                        values[s] = state[s].clone()
                        values[s][index] = v.to(values[s].dtype)
                    exact[i, j] = log_joint(self.model, args, kwargs, {**state, **values}).to(torch.float64)
            tol = tolerance(dtype) * (1.0 + float(exact[torch.isfinite(exact)].abs().max()))
            diff = torch.log_softmax(mine.reshape(-1), 0) - torch.log_softmax(exact.reshape(-1), 0)
            both_impossible = torch.isneginf(mine.reshape(-1)) & torch.isneginf(exact.reshape(-1))
            if not bool(((diff.abs() <= tol) | both_impossible).all()):
                return False
        return True


def plan_chains(model, args: tuple, kwargs: dict, trace, state: dict, exclude, verify: bool,
                generator: torch.Generator) -> tuple[dict, dict]:
    """The FFBS blocks of a traced program, checked (with ``verify``) at ``state``.

    Returns:
        ``(chosen, notes)``: ``{site: (reason, block)}`` for every site of an accepted chain
        (one :class:`~pyromodels.core.GibbsBlock` per chain, shared by its sites), and
        ``{site: why its pyro.markov group gets no FFBS}``.
    """
    candidates = _candidates(trace, exclude)
    if not candidates or len(candidates) + len(_candidates(trace, exclude, markov=False)) < 2:
        return {}, {}
    try:
        deps = term_dependencies(model, args, kwargs, state)
    except (RuntimeError, TypeError, ValueError, NotImplementedError) as err:
        why = f"its dependencies could not be traced ({type(err).__name__}: {err})"
        return {}, {name: why for name in candidates}
    chains, notes = find_chains(trace, deps, exclude)
    chosen = {}
    for chain in chains:
        update = FFBSUpdate(model, chain, verify=verify)
        try:
            potentials = chain_potentials(model, args, kwargs, state, chain)[:2]
        except NotSeparable as err:
            notes.update({name: str(err) for name in chain.sites})
            continue
        if verify and not update.agrees(state, args, kwargs, generator, potentials):
            warnings.warn(f"chain {chain.label}: its FFBS conditional differs from brute-force "
                          f"enumeration; updating its sites one by one instead", RuntimeWarning,
                          stacklevel=3)
            notes.update({name: "the FFBS check against brute-force enumeration failed"
                          for name in chain.sites})
            continue
        where = f" over plate shape {tuple(chain.batch_shape)}" if len(chain.batch_shape) else ""
        order = (f", order {chain.order} (a term reads up to {chain.order + 1} consecutive sites)"
                 if chain.order > 1 else "")
        reason = (f"pyro.markov chain of {len(chain.sites)} sites, {chain.sizes} states{order}, "
                  f"forward-filtering backward-sampling{where}")
        block = GibbsBlock(f"ffbs:{chain.sites[0]}..{chain.sites[-1]}", chain.sites, update)
        chosen.update({name: (reason, block) for name in chain.sites})
    return chosen, notes
