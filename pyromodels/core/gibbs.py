"""Gibbs sampling from pure blocks.

A block is a pure function ``update(state, data, generator) -> {site: new value}`` that draws its
sites from their full conditional; a sweep applies blocks in order (systematic scan) or in a
random order (random scan). Each block must leave the joint posterior invariant, which
:mod:`pyromodels.testing` checks by condition-and-score and the Geweke test.

A block that tunes itself during warm-up (a NUTS step adapting its step size) declares
``wants_sweep_info=True`` and is then called as ``update(state, data, generator, info)`` with a
:class:`SweepInfo`: which sweep of the chain is running and how many sweeps are warm-up.
:func:`run_gibbs` and :class:`~pyromodels.core.GibbsKernel` pass it; a sweep run outside an
engine (the checks of :mod:`pyromodels.testing`) passes ``None``, and the block must then
leave its settings as they are.

A block that keeps per-chain state between sweeps (a NUTS step's adapted step size and mass
matrix) gives ``get_state`` and ``set_state``, and holds the state of the chain that is
running. :func:`run_gibbs` (and :class:`~pyromodels.core.GibbsKernel` at each ``setup``) calls
``set_state(None)`` before a chain's first sweep (a fresh chain); :func:`run_gibbs` saves
``get_state()`` with the chain in a checkpoint after every sweep and calls ``set_state(saved)``
before a resumed chain continues, so that the resumed chain equals the uninterrupted one bit
for bit. A checkpoint without a block's state (written before block states were saved)
resumes with ``set_state(None)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from ..checks import check_bool, check_in, check_int
from .checkpoint import chain_checkpoints, check_shapes
from .device import resolve_device
from .diagnostic_warnings import label_switch_attrs, warn_sampling_problems
from .entry import engine_entry
from .parallel import check_n_jobs, in_run_order, resolve_n_jobs, run_jobs
from .posterior import Posterior, make_attrs, stack_chains
from .progress import check_callbacks, progress_bar, run_callbacks
from .seeding import derive_seed, make_generator, resolve_seed
from .threads import with_fit_threads

__all__ = ["GibbsBlock", "GibbsSweep", "SweepInfo", "run_gibbs", "run_chain"]


@dataclass(frozen=True)
class SweepInfo:
    """Where a chain stands, for a block that adapts during warm-up.

    Attributes:
        sweep: the index of the sweep being run (0 for the chain's first).
        num_warmup: the chain's number of warm-up sweeps.
    """

    sweep: int
    num_warmup: int

    @property
    def warmup(self) -> bool:
        """Whether this sweep is a warm-up sweep."""
        return self.sweep < self.num_warmup


@dataclass(frozen=True)
class GibbsBlock:
    """One full-conditional update.

    Args:
        name: a label for logs.
        sites: the sites the block writes.
        update: ``update(state, data, generator) -> dict`` with a new value for each site.
        log_density: optional ``log_density(values, state, data) -> scalar``: the log density
            of the full conditional the update draws from, at ``values`` (a dict over the
            block's sites) given the rest of ``state``. :mod:`pyromodels.testing` compares it
            with the program's joint (condition-and-score).
        wants_sweep_info: call ``update(state, data, generator, info)`` with a
            :class:`SweepInfo` (or ``None`` outside an engine), for a block that adapts
            during warm-up.
        get_state: optional ``get_state() -> object``: the block's per-chain state after the
            last sweep, for a checkpoint: a picklable copy that later sweeps do not change
            (tensors detached and cloned), or ``None`` for no state yet.
        set_state: optional ``set_state(state)``: start the chain's next sweep from ``state``
            (a value of ``get_state``, its tensors possibly on the CPU), or afresh for
            ``None``. Given together with ``get_state``.

    Raises:
        TypeError: only one of ``get_state`` and ``set_state``, or one not callable.
    """

    name: str
    sites: tuple[str, ...]
    update: Callable
    log_density: Callable | None = None
    wants_sweep_info: bool = False
    get_state: Callable | None = None
    set_state: Callable | None = None

    def __post_init__(self):
        hooks = {"get_state": self.get_state, "set_state": self.set_state}
        for name, hook in hooks.items():
            if hook is not None and not callable(hook):
                raise TypeError(f"GibbsBlock {self.name!r}: {name} must be callable, got "
                                f"{type(hook).__name__}")
        if (self.get_state is None) != (self.set_state is None):
            raise TypeError(f"GibbsBlock {self.name!r}: get_state and set_state go together "
                            f"(a block with per-chain state gives both)")

    @property
    def stateful(self) -> bool:
        """Whether the block keeps per-chain state (gives ``get_state`` and ``set_state``)."""
        return self.get_state is not None

    def __call__(self, state: dict, data, generator: torch.Generator,
                 info: SweepInfo | None = None) -> dict:
        if self.wants_sweep_info:
            new = self.update(state, data, generator, info)
        else:
            new = self.update(state, data, generator)
        if set(new) != set(self.sites):
            raise RuntimeError(
                f"Gibbs block {self.name!r} must return exactly {sorted(self.sites)}, got {sorted(new)}"
            )
        return new


class GibbsSweep:
    """An ordered list of blocks that together cover each latent site once.

    Args:
        blocks: the blocks.
        scan: ``"systematic"`` (in order) or ``"random"`` (a fresh permutation per sweep).
        log_joint: ``log_joint(data, state)``, the model's log joint at a state that fixes every
            latent site, computed the sweep's own faster way; :func:`run_chain` records it at
            each kept draw in place of ``model.log_joint`` (``None``: the model's). It must
            give the model's value.
        log_joints: ``log_joints(data, draws)``, the log joint at each of several states at
            once (``draws``: ``{site: (m, ...)}``, every latent site; returns ``(m,)``). Where
            given, a chain without callbacks computes its kept draws' log joints with it after
            its last sweep instead of one at each kept draw. It must give the values of
            ``log_joint`` up to floating-point rounding.
    """

    def __init__(self, blocks: Sequence[GibbsBlock], scan: str = "systematic",
                 log_joint: Callable | None = None, log_joints: Callable | None = None):
        self.blocks = tuple(blocks)
        if not self.blocks:
            raise ValueError("blocks must hold at least one GibbsBlock")
        for i, b in enumerate(self.blocks):
            if not isinstance(b, GibbsBlock):
                raise TypeError(f"blocks[{i}] must be a GibbsBlock, got {type(b).__name__}")
        seen: dict[str, str] = {}
        for b in self.blocks:
            for s in b.sites:
                if s in seen:
                    raise ValueError(f"site {s!r} is updated by both {seen[s]!r} and {b.name!r}")
                seen[s] = b.name
        self.scan = check_in(scan, "scan", ("systematic", "random"))
        if log_joint is not None and not callable(log_joint):
            raise TypeError(f"log_joint must be callable log_joint(data, state), got "
                            f"{type(log_joint).__name__}")
        self.log_joint = log_joint
        if log_joints is not None and not callable(log_joints):
            raise TypeError(f"log_joints must be callable log_joints(data, draws), got "
                            f"{type(log_joints).__name__}")
        self.log_joints = log_joints

    @property
    def sites(self) -> tuple[str, ...]:
        """Every site the sweep updates."""
        return tuple(s for b in self.blocks for s in b.sites)

    def check_covers(self, latent_sites) -> None:
        """Raise unless the sweep updates exactly ``latent_sites``."""
        missing = set(latent_sites) - set(self.sites)
        extra = set(self.sites) - set(latent_sites)
        if missing or extra:
            raise ValueError(
                f"the sweep must update every latent site once: missing {sorted(missing)}, "
                f"unknown {sorted(extra)}"
            )

    def __call__(self, state: dict, data, generator: torch.Generator,
                 info: SweepInfo | None = None) -> dict:
        """One sweep; ``info`` (where the chain stands) goes to the blocks that want it."""
        state = dict(state)
        order = range(len(self.blocks))
        if self.scan == "random":
            order = torch.randperm(len(self.blocks), generator=generator).tolist()
        for i in order:
            state.update(self.blocks[i](state, data, generator, info))
        return state


def run_chain(
    model,
    data,
    sweep: GibbsSweep,
    state: dict,
    generator: torch.Generator,
    *,
    num_warmup: int,
    num_samples: int,
    thin: int = 1,
    lp_every: int = 1,
    progress: bool = True,
    callbacks=(),
    desc: str = "gibbs",
    start: tuple[int, dict, list] | None = None,
    commit: Callable | None = None,
) -> tuple[dict, torch.Tensor]:
    """Run one chain; return ``({site: (draw, ...)}, lp (draw,))`` keeping each site's dtype.

    ``lp`` is the model's log joint at each kept draw (NaN where skipped by ``lp_every``). A
    sweep with ``log_joints`` and a chain without ``callbacks`` compute them all after the last
    sweep (the ``lps`` given to ``commit`` are NaN until then). ``start`` continues a chain:
    ``(sweeps done, {site: [kept draws]}, [lp of each])`` with ``state`` and ``generator`` as
    they were after those sweeps. ``commit(done, state, kept, lps, stopped)`` is called after
    each complete sweep (the checkpoint hook).
    """
    done, kept, lps = start if start is not None else (0, {k: [] for k in sweep.sites}, [])
    log_joint = sweep.log_joint or model.log_joint
    deferred = sweep.log_joints is not None and not callbacks
    total = num_warmup + num_samples * thin
    with progress_bar(total, desc, progress) as bar:
        if done:
            bar.update(done)
        for it in range(done, total):
            state = sweep(state, data, generator, SweepInfo(it, num_warmup))
            bar.update()
            stop = False
            if it >= num_warmup and (it - num_warmup) % thin == 0:
                draw = len(lps)
                for k in kept:
                    kept[k].append(state[k].detach().clone())
                lp = float("nan")
                if lp_every and draw % lp_every == 0 and not deferred:
                    lp = float(log_joint(data, {k: state[k] for k in sweep.sites}))
                lps.append(lp)
                stop = bool(callbacks) and run_callbacks(callbacks, it, {"state": state, "lp": lp})
            if commit is not None:
                commit(it + 1, state, kept, lps, stop)
            if stop:
                break
    samples = {k: torch.stack(v) for k, v in kept.items()}
    lp = torch.tensor(lps, dtype=torch.float64)
    if deferred and lp_every and len(lps):
        scored = sweep.log_joints(data, {k: v[::lp_every] for k, v in samples.items()})
        lp[::lp_every] = torch.as_tensor(scored).detach().to("cpu", torch.float64)  # from any device
    return samples, lp


@engine_entry(leading="sweep")
@with_fit_threads
def run_gibbs(
    model,
    data,
    *,
    num_samples: int = 500,
    num_warmup: int = 500,
    num_chains: int = 2,
    thin: int = 1,
    seed: int | None = None,
    sweep: GibbsSweep | None = None,
    scan: str | None = None,
    lp_every: int = 1,
    progress: bool = True,
    callbacks=None,
    device=None,
    checkpoint=None,
    checkpoint_every: int | None = None,
    resume=None,
    num_threads: int | None = None,
    diagnostic_warnings: bool = True,
    n_jobs: int | None = None,
) -> Posterior:
    """Blocked Gibbs sampling with the model's sweep.

    Args:
        model: a :class:`Model` with ``init_state(data, generator)`` and
            ``gibbs_sweep(data)``, or a Pyro program (a callable), which takes its blocks
            first: ``run_gibbs(model, blocks, *args, **kwargs)``. A plain program's chains
            start from a draw of the prior; its blocks receive the arguments as one
            :class:`~pyromodels.core.bound.ModelArgs` (``data.args``, ``data.kwargs``).
        *args, **kwargs: the program's arguments; keyword arguments other than this engine's
            settings go to the program (see :mod:`pyromodels.core.entry`, and
            ``model_kwargs=`` for an argument named like a setting). A :class:`Model` whose
            ``model(data)`` takes one argument gets its data validated by ``model.prepare``.
        num_samples: kept draws per chain.
        num_warmup: discarded sweeps per chain.
        num_chains: chains, each with its own seed derived from ``seed`` (so the result
            does not depend on ``n_jobs``).
        thin: keep every ``thin``-th sweep after warm-up.
        seed: the fit's seed; ``None`` draws one (recorded in ``attrs``).
        sweep: a :class:`GibbsSweep` or a sequence of :class:`GibbsBlock`; replaces
            ``model.gibbs_sweep(data)``.
        scan: overrides the sweep's scan order (``"systematic"`` or ``"random"``).
        lp_every: compute the log joint every ``lp_every`` kept draws (0 turns it off).
        progress: show a progress bar.
        callbacks: callables ``f(step, info)``; returning ``True`` stops the chain.
        device: ``"cpu"``, ``"cuda"`` or ``None`` (the data's device).
        checkpoint: a file to write the run's state to (see :mod:`pyromodels.core.checkpoint`):
            every ``checkpoint_every`` sweeps, at the end, and on ``KeyboardInterrupt``.
        checkpoint_every: sweeps between checkpoint writes (``None``: only the end).
        resume: a checkpoint of a Gibbs run of the same model, seed and settings to continue;
            the result equals the uninterrupted run's bit for bit. ``num_samples`` may be
            larger than the checkpoint's while its first chain is unfinished, which extends it.
        num_threads: CPU threads of the fit: ``None`` (default) chooses them for the data's
            size, never more than the caller's ``torch.get_num_threads()``; an integer
            ``>= 1`` fixes them (see :mod:`pyromodels.core.threads`). The caller's count is
            restored afterwards.
        diagnostic_warnings: after the fit, emit a
            :class:`~pyromodels.core.SamplingWarning` when its diagnostics say the draws are not
            yet reliable (see :mod:`pyromodels.core.diagnostic_warnings`); ``False`` silences it.
        n_jobs: chains run at once, joblib's meaning (``None``: one after another, or the
            ``n_jobs`` of an enclosing ``joblib.parallel_config``; ``-1``: all cores; see
            :mod:`pyromodels.core.parallel`). With several workers, ``callbacks`` run in the
            workers and a checkpoint is written as each chain finishes (in chain order)
            rather than every ``checkpoint_every`` sweeps.

    Returns:
        A :class:`Posterior` with samples ``(chain, draw, ...)`` and ``sample_stats["lp"]``.
    """
    if sweep is not None and not isinstance(sweep, GibbsSweep):
        sweep = GibbsSweep(sweep)
    model._require("init_state", *(("gibbs_sweep",) if sweep is None else ()), engine="gibbs")
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    num_warmup = check_int(num_warmup, "num_warmup", minimum=0)
    num_chains = check_int(num_chains, "num_chains", minimum=1)
    n_jobs = check_n_jobs(n_jobs)
    thin = check_int(thin, "thin", minimum=1)
    lp_every = check_int(lp_every, "lp_every", minimum=0)
    callbacks = check_callbacks(callbacks)
    seed = None if seed is None else resolve_seed(seed)
    diagnostic_warnings = check_bool(diagnostic_warnings, "diagnostic_warnings")
    device = resolve_device(device, data)
    data = model.prepare(data, device=device)
    sweep = sweep if sweep is not None else model.gibbs_sweep(data)
    if scan is not None:
        sweep = GibbsSweep(sweep.blocks, scan=scan, log_joint=sweep.log_joint,
                           log_joints=sweep.log_joints)
    config = {"num_samples": num_samples, "num_warmup": num_warmup, "num_chains": num_chains,
              "thin": thin, "lp_every": lp_every, "scan": sweep.scan,
              "blocks": [b.name for b in sweep.blocks]}
    seed, saved, ckpt = chain_checkpoints(checkpoint, checkpoint_every, resume, engine="gibbs",
                                          model=model, seed=seed, config=config,
                                          data=data, build=_checkpoint_state)
    start = time.perf_counter()
    chains, lps, first = [], [], 0
    if saved is not None:
        chains, lps = list(saved["chains"]), list(saved["chain_lps"])
        first = saved["chain"]
    workers = resolve_n_jobs(n_jobs)
    shared = {"model": model, "data": data, "sweep": sweep, "device": device,
              "num_warmup": num_warmup, "num_samples": num_samples, "thin": thin,
              "lp_every": lp_every, "progress": progress and workers == 1,
              "callbacks": callbacks}

    def commit_chain(c):  # the per-sweep checkpoint of chain c, run in this process
        def commit(done, state, kept, chain_lps, stop, generator, blocks):
            ckpt.commit(done, _snapshot(c, done, state, generator, blocks, kept, chain_lps,
                                        stop, chains, lps, num_samples))
        return commit

    tasks = [(c, derive_seed(seed, "chain", c), saved if c == first else None,
              commit_chain(c) if ckpt.enabled and workers == 1 else None)
             for c in range(first, num_chains)]

    def keep(out):  # in chain order; with several workers the chain is checkpointed here
        if ckpt.enabled and workers > 1:
            ckpt.commit(len(chains) + 1, _snapshot(
                len(chains), out["done"], out["state"], out["generator"], out["blocks"],
                {k: list(v) for k, v in out["samples"].items()}, out["lp"].tolist(),
                out["stopped"], chains, lps, num_samples))
            ckpt.write()
        chains.append(out["samples"])
        lps.append(out["lp"])

    with ckpt.guard():
        run_jobs(_gibbs_chain, tasks, n_jobs=n_jobs, shared=shared, progress=progress,
                 desc="gibbs chains", labels=[f"chain {t[0]}" for t in tasks],
                 on_result=in_run_order(keep))
    ckpt.write()
    n = min(len(v) for v in lps)
    chains = [{k: v[:n] for k, v in c.items()} for c in chains]
    return warn_sampling_problems(Posterior(
        samples=stack_chains(chains),
        method="gibbs",
        sample_stats={"lp": torch.stack([v[:n] for v in lps])},
        diagnostics={"scan": sweep.scan, "blocks": [b.name for b in sweep.blocks]},
        attrs=make_attrs("gibbs", seed, device, start, num_warmup=num_warmup, thin=thin,
                         **label_switch_attrs(model)),
        model=model,
        data=data,
    ), diagnostic_warnings)



def _snapshot(c, done, state, generator, blocks, kept, chain_lps, stop, chains, lps,
              num_samples):
    """A cheap reference to the state of chain ``c`` after ``done`` sweeps (copied by
    :func:`_checkpoint_state` when written); ``blocks`` are the stateful blocks' states, already
    copies."""
    return (c, done, state, generator, blocks, kept, chain_lps, len(chain_lps), list(chains),
            list(lps), stop, num_samples)


def _gibbs_chain(task, shared) -> dict:
    """Chain ``c`` of :func:`run_gibbs` from its own seed (or from a checkpoint's state):
    its draws, log joints and final state (a :func:`~.parallel.run_jobs` function)."""
    c, chain_seed, saved, commit = task
    model, data, sweep, device = (shared[k] for k in ("model", "data", "sweep", "device"))
    gen = make_generator(chain_seed, device)
    state = model.init_state(data, gen)
    sweep.check_covers(state)
    stateful = {i: b for i, b in enumerate(sweep.blocks) if b.stateful}
    resumed = None
    if saved is not None:
        check_shapes(saved["state"], state, "Gibbs state")
        state = {k: v.to(device) for k, v in saved["state"].items()}
        gen.set_state(saved["generator"])
        resumed = (saved["done"], {k: list(v) for k, v in saved["kept"].items()},
                   list(saved["lps"]))
    kept_blocks = {} if saved is None else saved.get("blocks") or {}  # older files: none
    for i, block in stateful.items():
        block.set_state(kept_blocks.get(i))

    def block_states() -> dict:
        return {i: block.get_state() for i, block in stateful.items()}
    last = {"done": 0 if resumed is None else resumed[0], "state": state,
            "stopped": saved is not None and saved["stopped"]}

    def record(done, state, kept, chain_lps, stop):
        last.update(done=done, state=state, stopped=stop)
        if commit is not None:
            commit(done, state, kept, chain_lps, stop, gen.get_state(), block_states())

    if last["stopped"]:
        samples = {k: torch.stack(v) for k, v in resumed[1].items()}
        lp = torch.tensor(resumed[2], dtype=torch.float64)
    else:
        if resumed is None:
            record(0, state, {k: [] for k in sweep.sites}, [], False)
        samples, lp = run_chain(
            model, data, sweep, state, gen, num_warmup=shared["num_warmup"],
            num_samples=shared["num_samples"], thin=shared["thin"],
            lp_every=shared["lp_every"], progress=shared["progress"],
            callbacks=shared["callbacks"], desc=f"gibbs chain {c}", start=resumed,
            commit=record,
        )
    return {"samples": samples, "lp": lp, "done": last["done"], "state": last["state"],
            "generator": gen.get_state(), "blocks": block_states(), "stopped": last["stopped"]}


def _checkpoint_state(snapshot) -> dict:
    """The saved state of a Gibbs run from a snapshot taken after a complete sweep."""
    c, done, state, gen_state, blocks, kept, chain_lps, n, chains, lps, stop, num_samples = snapshot
    return {
        "chain": c, "done": done, "stopped": stop, "num_samples": num_samples,
        "state": {k: v.detach().clone() for k, v in state.items()},
        "generator": gen_state,
        "blocks": blocks,
        "kept": {k: [t for t in v[:n]] for k, v in kept.items()},
        "lps": list(chain_lps[:n]),
        "chains": chains, "chain_lps": lps,
    }
