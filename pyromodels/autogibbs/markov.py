"""Forward-filtering backward-sampling (FFBS) of discrete chains declared with ``pyro.markov``.

**Detection.** The candidates are the latent discrete sites (finite enumerable support, no event
dimension) created inside ``pyro.markov`` (their ``infer`` dict holds ``_markov_scope``). Which
sites each log density term really reads is found by running the program once with every sample
value tracked through Pyro's provenance tensors (:func:`term_dependencies`). Two candidates are
linked when one's distribution reads the other; a connected group, in program order
``z_0, ..., z_{T-1}``, is a chain when ``z_0`` reads no candidate and each ``z_t`` reads exactly
``z_{t-1}``, all share one support and one plate shape, and every term of the program reads at
most two neighbouring sites ``z_{t-1}, z_t`` (first order). Anything else keeps the per-site
discrete updates, with the reason in the plan.

**Reading the potentials.** Each term reading the chain is assigned to the position ``t`` of the
last chain site it reads; the terms at ``t`` form ``psi_t(z_{t-1}, z_t)`` (``phi_0(z_0)`` at
``t = 0``), per element of the chain's plates. They are read off the program with ``K^2``
evaluations, not ``T K^2``: with ``z_t = a`` at every even ``t`` and ``z_t = b`` at every odd ``t``,
one evaluation gives ``psi_t(a, b)`` at every odd ``t`` and ``psi_t(b, a)`` at every even ``t``,
so the ``K^2`` pairs ``(a, b)`` give every potential of every position.

**Sampling.** Forward filtering in log space, ``alpha_t(j) = logsumexp_i(alpha_{t-1}(i) +
psi_t(i, j))``, then backward sampling ``z_{T-1} ~ alpha_{T-1}``, ``z_t ~ alpha_t(.) +
psi_{t+1}(., z_{t+1})``: ``O(T K^2)`` arithmetic per element, all elements at once.

**Verification.** The joint conditional of two neighbouring sites ``(z_t, z_{t+1})`` of one
element, from the potentials, is compared with brute-force enumeration of the program's joint
(``K^2`` evaluations) at two random positions and elements.
"""

from __future__ import annotations

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
from .discrete import DiscreteUpdate
from .trace import element_index, latent_sites, log_joint, log_terms, reduce_to_site, site_plates, tolerance

__all__ = ["Chain", "NotSeparable", "term_dependencies", "find_chains", "chain_potentials",
           "forward_filter", "backward_sample", "FFBSUpdate", "plan_chains"]


class NotSeparable(ValueError):
    """A term reading the chain is not indexed by the chain's plates (it couples sequences)."""


@dataclass(frozen=True)
class Chain:
    """A first-order chain of discrete sites.

    Attributes:
        sites: ``z_0, ..., z_{T-1}``, in order.
        support: the support values, ``(K,)``.
        batch_shape: each site's shape (its plate elements: one sequence per element).
        terms: for each position ``t``, the sample sites whose log density terms read ``z_t``
            (and maybe ``z_{t-1}``) and no other site of the chain.
    """

    sites: tuple[str, ...]
    support: torch.Tensor
    batch_shape: torch.Size
    terms: tuple[tuple[str, ...], ...]

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


def _chain_problem(group: list, parents: dict, candidates: dict) -> str | None:
    for t, name in enumerate(group):
        expected = {group[t - 1]} if t else set()
        if parents[name] != expected:
            reads = _names(sorted(parents[name], key=group.index)) or "no other chain site"
            return (f"{name!r} reads {reads}, not only {_names(expected) or 'none'}: "
                    f"not a first-order chain")
    first = candidates[group[0]]
    for name in group[1:]:
        site = candidates[name]
        shape, first_shape = tuple(site["value"].shape), tuple(first["value"].shape)
        if shape != first_shape:
            return f"{name!r} has shape {shape}, unlike {group[0]!r} {first_shape}"
    return None


def _support(site) -> torch.Tensor | None:
    try:
        return site["fn"].enumerate_support(expand=False).reshape(-1)
    except (NotImplementedError, ValueError, RuntimeError):
        return None


def _assign_terms(group: list, deps: dict) -> tuple[tuple, str | None]:
    position = {name: t for t, name in enumerate(group)}
    terms = [[] for _ in group]
    for term, reads in deps.items():
        ts = sorted(position[s] for s in reads if s in position)
        if not ts:
            continue
        if ts[-1] - ts[0] > 1:
            return (), (f"the term of {term!r} reads {_names(group[t] for t in ts)}: not first order")
        terms[ts[-1]].append(term)
    return tuple(tuple(t) for t in terms), None


def _candidates(trace, exclude) -> dict:
    """The latent discrete sites created inside ``pyro.markov`` (and not in ``exclude``)."""
    return {n: s for n, s in latent_sites(trace).items()
            if n not in exclude and "_markov_scope" in s["infer"]
            and s["fn"].has_enumerate_support and s["fn"].event_shape == ()}


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
    names = list(candidates)
    parents = {n: (deps.get(n, frozenset()) & candidates.keys()) - {n} for n in names}
    chains, notes = [], {}
    for group in _components(names, parents):
        if len(group) < 2:
            continue
        problem = _chain_problem(group, parents, candidates)
        supports = [_support(candidates[n]) for n in group]
        if problem is None and any(s is None or not torch.equal(s, supports[0]) for s in supports):
            problem = "its sites do not share one support (the same values at every element)"
        terms = ()
        if problem is None:
            terms, problem = _assign_terms(group, deps)
        if problem is not None:
            notes.update({n: problem for n in group})
            continue
        chains.append(Chain(tuple(group), supports[0], candidates[group[0]]["value"].shape, terms))
    return chains, notes


def chain_potentials(model, args: tuple, kwargs: dict, state: dict, chain: Chain):
    """The chain's log potentials read off the program at the rest of ``state``.

    Returns:
        ``(init, psi, rest)``: ``init`` ``(*batch, K)`` is ``phi_0(z_0)``; ``psi``
        ``(T, *batch, K, K)`` holds ``psi_t(z_{t-1}, z_t)`` at ``t >= 1`` (``psi[0]`` is zero);
        ``rest`` is the sum of the terms that do not read the chain (a scalar), so that
        ``rest + logsumexp`` over paths of the potentials is the program's log joint with the
        chain summed out. All float64.

    Raises:
        NotSeparable: a term reading the chain is not indexed by the chain's plates.
    """
    k, shape = len(chain.support), chain.batch_shape
    ref = state[chain.sites[0]]
    pair = torch.zeros((k, k, len(chain.sites)) + tuple(shape), dtype=torch.float64, device=ref.device)
    plates = site_plates(model, args, kwargs, state)
    rest = None
    for a in range(k):
        for b in range(k):
            values = {name: torch.full_like(ref, chain.support[b if t % 2 else a].item())
                      for t, name in enumerate(chain.sites)}
            lp = log_terms(model, args, kwargs, {**state, **values})
            for t, names in enumerate(chain.terms):
                for name in names:
                    reduced = reduce_to_site(lp[name].to(torch.float64), shape, plates.get(name, {}),
                                             plates[chain.sites[t]])
                    if reduced is None:
                        raise NotSeparable(f"the term of {name!r} (shape {tuple(lp[name].shape)}) is not "
                                           f"indexed by the chain's plates (shape {tuple(shape)})")
                    pair[(a, b, t)] += reduced
            if rest is None:
                used = {name for names in chain.terms for name in names}
                rest = sum((v.to(torch.float64).sum() for n, v in lp.items() if n not in used),
                           torch.zeros((), dtype=torch.float64, device=ref.device))
    pair = pair.permute((2, *range(3, pair.dim()), 0, 1))       # (T, *batch, a, b)
    even = (torch.arange(len(chain.sites), device=ref.device) % 2 == 0)
    even = even.reshape((-1,) + (1,) * (pair.dim() - 1))
    psi = torch.where(even, pair.transpose(-1, -2), pair)        # (T, *batch, z_{t-1}, z_t)
    init = pair[0][..., :, 0]                                    # z_0 = a, any b
    psi[0] = 0.0
    return init, psi, rest


def forward_filter(init: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
    """``alpha (T, *batch, K)``: ``alpha_t(j) = log sum over z_{0:t-1}`` of the potentials up
    to ``t`` with ``z_t = j``; ``logsumexp(alpha[-1], -1)`` is each sequence's log normaliser.

    Args:
        init: ``phi_0``, ``(*batch, K)``.
        psi: ``(T, *batch, K, K)``, ``psi[t]`` indexed ``(z_{t-1}, z_t)``; ``psi[0]`` unused.

    Example:
        >>> init = torch.tensor([0.5, 0.5]).log()
        >>> psi = torch.stack([torch.zeros(2, 2), torch.tensor([[0.9, 0.1], [0.2, 0.8]]).log()])
        >>> alpha = forward_filter(init, psi)
        >>> alpha.shape, f"{float(torch.logsumexp(alpha[-1], -1).exp()):.4f}"  # rows sum to 1
        (torch.Size([2, 2]), '1.0000')
    """
    alpha = [init]
    for t in range(1, psi.shape[0]):
        alpha.append(torch.logsumexp(alpha[-1].unsqueeze(-1) + psi[t], dim=-2))
    return torch.stack(alpha)


def backward_sample(alpha: torch.Tensor, psi: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One path per element from the chain's joint conditional: ``(T, *batch)`` indices.

    Args:
        alpha: :func:`forward_filter`'s output, ``(T, *batch, K)``.
        psi: the potentials it was computed from.
        generator: the random stream.
    """
    draws = [sample_categorical(alpha[-1], generator)]
    for t in range(alpha.shape[0] - 2, -1, -1):
        nxt = draws[-1][..., None, None].expand(psi[t + 1].shape[:-1] + (1,))
        column = torch.gather(psi[t + 1], -1, nxt).squeeze(-1)   # psi_{t+1}(., z_{t+1})
        draws.append(sample_categorical(alpha[t] + column, generator))
    return torch.stack(draws[::-1])


def _pair_logits(init, psi, index: tuple, t: int, current: list) -> torch.Tensor:
    """The potentials' log joint conditional of ``(z_t, z_{t+1})`` at element ``index``,
    ``(K, K)``, given the current indices of the neighbours (``current[s]`` is ``z_s``'s)."""
    last = psi.shape[0] - 1
    left = init[index] if t == 0 else psi[t][index][current[t - 1]]
    right = psi[t + 2][index][:, current[t + 2]] if t + 2 <= last else torch.zeros_like(left)
    return left[:, None] + psi[t + 1][index] + right[None, :]


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
                    draws = backward_sample(forward_filter(init, psi), psi, generator)
                    return {name: self.chain.support[draws[t]].to(state[name].dtype)
                            for t, name in enumerate(self.chain.sites)}
        state = dict(state)
        for update in self.fallback:
            state.update(update(state, data, generator))
        return {name: state[name] for name in self.chain.sites}

    def _fall_back(self, why: str) -> None:
        warnings.warn(f"chain {self.chain.label}: {why}; updating its sites one by one instead",
                      RuntimeWarning, stacklevel=3)
        self.fallback = [DiscreteUpdate(self.model, name, self.chain.support, vectorised=True,
                                        verify=True) for name in self.chain.sites]

    def log_marginal(self, state: dict, args: tuple, kwargs: dict) -> torch.Tensor:
        """The program's log joint at ``state`` with the chain summed out (a float64 scalar),
        by the forward filter."""
        init, psi, rest = chain_potentials(self.model, args, kwargs, state, self.chain)
        return rest + torch.logsumexp(forward_filter(init, psi)[-1], -1).sum()

    def agrees(self, state: dict, args: tuple, kwargs: dict, generator: torch.Generator,
               potentials: tuple | None = None) -> bool:
        """Whether the potentials' joint conditional of ``(z_t, z_{t+1})`` matches brute-force
        enumeration of the program's joint at two random positions ``t`` and elements."""
        init, psi = potentials if potentials is not None else \
            chain_potentials(self.model, args, kwargs, state, self.chain)[:2]
        sites, support, shape = self.chain.sites, self.chain.support, self.chain.batch_shape
        ref = state[sites[0]]
        dtype = ref.dtype if ref.is_floating_point() else torch.get_default_dtype()
        n = max(1, shape.numel())
        for _ in range(2):
            t = int(torch.randint(0, len(sites) - 1, (), generator=generator))
            index = element_index(int(torch.randint(0, n, (), generator=generator)), shape)
            current = [int((support == state[s][index].to(support.dtype)).nonzero()[0]) for s in sites]
            mine = _pair_logits(init, psi, index, t, current)
            exact = torch.empty_like(mine)
            for i, a in enumerate(support.tolist()):
                for j, b in enumerate(support.tolist()):
                    values = {}
                    for s, v in ((sites[t], a), (sites[t + 1], b)):
                        values[s] = state[s].clone()
                        values[s][index] = v
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
    if len(candidates) < 2:
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
        reason = (f"pyro.markov chain of {len(chain.sites)} sites, {len(chain.support)} states, "
                  f"forward-filtering backward-sampling{where}")
        block = GibbsBlock(f"ffbs:{chain.sites[0]}..{chain.sites[-1]}", chain.sites, update)
        chosen.update({name: (reason, block) for name in chain.sites})
    return chosen, notes
