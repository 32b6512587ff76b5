"""NUTS over the continuous sites with the discrete sites summed out, then restored."""

from __future__ import annotations

import copy
import time

import pyro
import torch
from pyro import poutine
from pyro.infer import NUTS
from pyro.infer.autoguide.initialization import init_to_sample, init_to_value

from ..checks import check_bool, check_int, check_probability
from .checkpoint import (
    chain_checkpoints,
    check_shapes,
    clone_tree,
    rng_states,
    set_rng_states,
)
from .device import cuda_devices, resolve_device
from .diagnostic_warnings import label_switch_attrs, warn_sampling_problems
from .entry import engine_entry
from .enumeration import marginal_log_joint, sample_discrete
from .parallel import check_n_jobs, in_run_order, resolve_n_jobs, run_jobs
from .posterior import Posterior, make_attrs
from .progress import progress_bar
from .seeding import derive_seed, make_generator, resolve_seed, seeded
from .threads import with_fit_threads

__all__ = ["run_nuts"]


class _EnergyRecordingNUTS(NUTS):
    """NUTS that records, for every transition, the Hamiltonian at its start and the mean
    acceptance probability of its trajectory.

    That energy, ``U(q_{t-1}) + K(p_t)`` with the freshly drawn momentum, equals the energy of
    the accepted state up to the leapfrog integration error (the Hamiltonian is conserved along
    the trajectory), which is what ArviZ's energy plot and BFMI expect. The acceptance
    probability is recovered from Pyro's running mean ``m_t = m_{t-1} + (a_t - m_{t-1}) / n``
    (``n`` restarts at 1 after warm-up), so ``a_t = m_{t-1} + n (m_t - m_{t-1})``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.energies: list[float] = []
        self.accept_probs: list[float] = []
        self._record_next = False

    def sample(self, params):
        before = self._mean_accept_prob
        out = super().sample(params)
        n = self._t - self._warmup_steps if self._t > self._warmup_steps else self._t
        self.accept_probs.append(before + n * (self._mean_accept_prob - before))
        return out

    def _sample_r(self, name):
        self._record_next = True
        return super()._sample_r(name)

    def _kinetic_energy(self, r_unscaled):
        kinetic = super()._kinetic_energy(r_unscaled)
        if self._record_next:
            self._record_next = False
            self.energies.append(float(kinetic) + float(self._potential_energy_last))
        return kinetic


@engine_entry()
@with_fit_threads
def run_nuts(
    model,
    data,
    *,
    num_samples: int = 500,
    num_warmup: int = 500,
    num_chains: int = 2,
    target_accept_prob: float = 0.8,
    max_tree_depth: int = 10,
    seed: int | None = None,
    lp: bool = True,
    progress: bool = True,
    device=None,
    checkpoint=None,
    checkpoint_every: int | None = None,
    resume=None,
    num_threads: int | None = None,
    diagnostic_warnings: bool = True,
    n_jobs: int | None = None,
) -> Posterior:
    """NUTS on the model with its discrete sites enumerated, chains run one after another or
    in parallel (``n_jobs``).

    After sampling, the discrete sites are drawn from their conditional posterior given each
    continuous draw (:func:`~pyromodels.core.enumeration.sample_discrete`).

    Args:
        model: a Pyro program (a callable) or a pyromodels :class:`Model`.
        *args, **kwargs: the program's arguments, as ``pyro.infer.MCMC.run`` takes them; keyword
            arguments other than this engine's settings go to the program (see
            :mod:`pyromodels.core.entry` for the rule, and ``model_kwargs=`` for a program
            with an argument named like a setting). A :class:`Model` whose ``model(data)``
            takes one argument gets its data validated by ``model.prepare``.
            Discrete sites must be marked ``infer={"enumerate": "parallel"}``.
        num_samples: kept draws per chain.
        num_warmup: adaptation steps per chain.
        num_chains: chains, each seeded from ``seed`` and ``init_values`` drawn per chain.
        target_accept_prob: NUTS step-size adaptation target in (0, 1).
        max_tree_depth: NUTS tree depth limit.
        seed: the fit's seed; ``None`` draws one (recorded in ``attrs``).
        lp: record the marginal log joint (discrete sites summed out) of every draw.
        progress: show Pyro's progress bar.
        device: ``"cpu"``, ``"cuda"`` or ``None`` (the data's device).
        checkpoint: a file to write the run's state to (see :mod:`pyromodels.core.checkpoint`):
            the sampler's position, the kernel's adaptation state (step size, mass matrix,
            dual-averaging and Welford accumulators), the draws so far and the random number
            generators, every ``checkpoint_every`` transitions (warm-up included), at the end
            and on ``KeyboardInterrupt``.
        checkpoint_every: transitions between checkpoint writes (``None``: only the end).
        resume: a checkpoint of a NUTS run of the same model, seed and settings to continue,
            from any transition, in warm-up or after; the result equals the uninterrupted
            run's bit for bit. ``num_samples`` may be larger than the checkpoint's while its
            first chain is unfinished, which extends it.
        num_threads: CPU threads of the fit: ``None`` (default) chooses them for the data's
            size, never more than the caller's ``torch.get_num_threads()``; an integer
            ``>= 1`` fixes them (see :mod:`pyromodels.core.threads`). The caller's count is
            restored afterwards.
        diagnostic_warnings: after the fit, emit a
            :class:`~pyromodels.core.SamplingWarning` when its diagnostics say the draws are not
            yet reliable (see :mod:`pyromodels.core.diagnostic_warnings`); ``False`` silences it.
        n_jobs: chains run at once, joblib's meaning (``None``: one after another, or the
            ``n_jobs`` of an enclosing ``joblib.parallel_config``; ``-1``: all cores; see
            :mod:`pyromodels.core.parallel`). Each chain draws from Pyro's global generator
            seeded with its own seed, so parallel chains need worker processes (loky, or
            Dask workers that are processes) for the result to equal the serial one. With
            several workers a checkpoint is written as each chain finishes (in chain order).

    Returns:
        A :class:`Posterior` with samples ``(chain, draw, ...)``, ``sample_stats["diverging"]``,
        ``sample_stats["energy"]`` (for ArviZ's energy plot and BFMI), the per-draw mean
        acceptance probability ``sample_stats["acceptance_rate"]`` and (with ``lp``)
        ``sample_stats["lp"]``.
    """
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    num_warmup = check_int(num_warmup, "num_warmup", minimum=0)
    num_chains = check_int(num_chains, "num_chains", minimum=1)
    n_jobs = check_n_jobs(n_jobs)
    target_accept_prob = check_probability(target_accept_prob, "target_accept_prob")
    max_tree_depth = check_int(max_tree_depth, "max_tree_depth", minimum=1)
    seed = None if seed is None else resolve_seed(seed)
    diagnostic_warnings = check_bool(diagnostic_warnings, "diagnostic_warnings")
    device = resolve_device(device, data)
    data = model.prepare(data, device=device)
    config = {"num_samples": num_samples, "num_warmup": num_warmup, "num_chains": num_chains,
              "target_accept_prob": target_accept_prob, "max_tree_depth": max_tree_depth}
    seed, saved, ckpt = chain_checkpoints(checkpoint, checkpoint_every, resume, engine="nuts",
                                          model=model, seed=seed, config=config,
                                          data=data, build=_checkpoint_state)
    start = time.perf_counter()
    chains = [] if saved is None else list(saved["chains"])
    first = len(chains)
    workers = resolve_n_jobs(n_jobs)
    shared = {"model": model, "data": data, "device": device, "num_warmup": num_warmup,
              "num_samples": num_samples, "target_accept_prob": target_accept_prob,
              "max_tree_depth": max_tree_depth, "progress": progress and workers == 1,
              "final_state": ckpt.enabled and workers > 1}

    def commit_chain(c):  # the per-transition checkpoint of chain c, run in this process
        def commit(done, params, kept, kernel):
            ckpt.commit(done, (c, done, params, _kernel_state(kernel), rng_states(), kept,
                               len(kept), list(chains), num_samples))
        return commit

    tasks = [(c, derive_seed(seed, "chain", c),
              saved if saved is not None and c == saved["chain"] else None,
              commit_chain(c) if ckpt.enabled and workers == 1 else None)
             for c in range(first, num_chains)]

    def keep(out):  # in chain order; with several workers the chain is checkpointed here
        if shared["final_state"]:
            ckpt.commit(len(chains) + 1, (len(chains), *out.pop("final"), list(chains),
                                          num_samples))
            ckpt.write()
        chains.append(out)

    with ckpt.guard():
        run_jobs(_nuts_chain, tasks, n_jobs=n_jobs, shared=shared, progress=progress,
                 desc="nuts chains", labels=[f"chain {t[0]}" for t in tasks],
                 on_result=in_run_order(keep))
    ckpt.write()
    per_chain = [ch["samples"] for ch in chains]
    energy = [ch["energy"] for ch in chains]
    diverging = [ch["diverging"] for ch in chains]
    accept = [ch["acceptance_rate"] for ch in chains]
    samples = {k: torch.stack([c[k] for c in per_chain]) for k in per_chain[0]}
    stats = {
        "diverging": torch.stack(diverging),
        "energy": torch.stack(energy),
        "acceptance_rate": torch.stack(accept),
    }
    if lp:
        stats["lp"] = _lp_trace(model, data, samples)
    samples.update(sample_discrete(model, data, samples, seed=derive_seed(seed, "discrete")))
    return warn_sampling_problems(Posterior(
        samples=samples,
        method="nuts",
        sample_stats=stats,
        diagnostics={
            "mean_accept_prob": stats["acceptance_rate"].mean(1).tolist(),
            "num_divergences": int(stats["diverging"].sum()),
        },
        attrs=make_attrs("nuts", seed, device, start, num_warmup=num_warmup,
                         **label_switch_attrs(model)),
        model=model,
        data=data,
    ), diagnostic_warnings)


def _nuts_chain(task, shared) -> dict:
    """Chain ``c`` of :func:`run_nuts` from its own seed (or a checkpoint's state), under
    that seed's global generators (a :func:`~.parallel.run_jobs` function)."""
    c, chain_seed, saved, commit = task
    model, data, device = shared["model"], shared["data"], shared["device"]
    init = init_to_sample
    if callable(getattr(model, "init_values", None)):
        init = init_to_value(values=model.init_values(data, make_generator(chain_seed, device)))
    kernel = _EnergyRecordingNUTS(
        model.model,
        max_plate_nesting=model.max_plate_nesting,
        target_accept_prob=shared["target_accept_prob"],
        max_tree_depth=shared["max_tree_depth"],
        init_strategy=init,
        jit_compile=False,
    )
    total = shared["num_warmup"] + shared["num_samples"]
    final = []

    def record(done, params, kept):
        if commit is not None:
            commit(done, params, kept, kernel)
        if shared["final_state"] and done == total:  # for the checkpoint of the finished chain
            final[:] = [done, params, _kernel_state(kernel), rng_states(), kept, len(kept)]

    with seeded(chain_seed, devices=cuda_devices(device)):
        out = _run_chain(kernel, data, shared["num_warmup"], shared["num_samples"],
                         shared["progress"], f"nuts chain {c}", saved, record, device)
    if final:
        out["final"] = final
    return out


#: the kernel's attributes that change from one transition to the next
_KERNEL_STATE = ("_t", "_accept_cnt", "_mean_accept_prob", "_divergences", "_z_last",
                 "_potential_energy_last", "_z_grads_last", "energies", "accept_probs",
                 "_record_next")


def _kernel_state(kernel) -> dict:
    """A copy of what changes in ``kernel`` between transitions: its counters and caches, the
    recorded energies, and its adapter (step size, dual averaging, mass matrix and its
    Welford accumulators), all but the adapter's callback into the kernel."""
    adapter = {k: v for k, v in vars(kernel._adapter).items() if not callable(v)}
    return {"kernel": clone_tree({k: getattr(kernel, k) for k in _KERNEL_STATE}),
            "adapter": copy.deepcopy(adapter)}


def _set_kernel_state(kernel, state: dict) -> None:
    for k, v in state["kernel"].items():
        setattr(kernel, k, clone_tree(v))
    vars(kernel._adapter).update(copy.deepcopy(state["adapter"]))


@poutine.block
def _run_chain(kernel, data, num_warmup, num_samples, progress, desc, saved, commit,
               device) -> dict:
    """Drive ``kernel`` through warm-up and sampling as ``pyro.infer.MCMC`` does (Pyro's
    effects blocked, distribution validation off), from the start or from ``saved``."""
    total = num_warmup + num_samples
    with pyro.validation_enabled(False):
        kernel.setup(num_warmup, data)
        params, kept, done = kernel.initial_params, [], 0
        if saved is not None:
            check_shapes(saved["position"], params, "unconstrained site")
            params = {k: v.to(device) for k, v in saved["position"].items()}
            kept = [{k: v.to(device) for k, v in d.items()} for d in saved["kept"]]
            done = saved["done"]
            _set_kernel_state(kernel, saved["kernel_state"])
            set_rng_states(saved["rng"])
        elif commit is not None:
            commit(0, params, kept)
        with progress_bar(total, desc, progress) as bar:
            if done:
                bar.update(done)
            for i in range(done, total):
                params = kernel.sample(params)
                if i >= num_warmup:
                    kept.append(params)
                bar.update()
                if commit is not None:
                    commit(i + 1, params, kept)
        draws = {k: torch.stack([d[k] for d in kept]) for k in sorted(params)}
        for k, transform in kernel.transforms.items():
            draws[k] = transform.inv(draws[k])
        diverging = torch.zeros(num_samples, dtype=torch.bool)
        diverging[torch.as_tensor(kernel._divergences, dtype=torch.long)] = True
        out = {
            "samples": draws,
            "energy": torch.tensor(kernel.energies[-num_samples:], dtype=torch.float64),
            "diverging": diverging,
            "acceptance_rate": torch.tensor(kernel.accept_probs[-num_samples:], dtype=torch.float64),
        }
        kernel.cleanup()
    return out


def _checkpoint_state(snapshot) -> dict:
    """The saved state of a NUTS run from a snapshot taken after a complete transition."""
    c, done, params, kernel_state, rng, kept, n, chains, num_samples = snapshot
    return {"chain": c, "done": done, "num_samples": num_samples, "chains": chains,
            "position": {k: v.detach().clone() for k, v in params.items()},
            "kernel_state": kernel_state, "rng": rng,
            "kept": [{k: v.detach().clone() for k, v in d.items()} for d in kept[:n]]}


def _lp_trace(model, data, samples) -> torch.Tensor:
    chains, draws = next(iter(samples.values())).shape[:2]
    lp = torch.empty(chains, draws, dtype=torch.float64)
    for c in range(chains):
        for d in range(draws):
            lp[c, d] = float(marginal_log_joint(model, data, {k: v[c, d] for k, v in samples.items()}))
    return lp
