"""Expectation-maximisation (and MAP-EM) with restarts and a convergence monitor."""

from __future__ import annotations

import contextlib
import copy
import time

import torch

from ..checks import check_int, check_positive
from .checkpoint import Checkpointer, check_shapes, clone_tree, read_checkpoint
from .device import resolve_device
from .entry import engine_entry
from .monitor import ConvergenceMonitor
from .parallel import check_n_jobs, resolve_n_jobs, run_jobs
from .posterior import Posterior, make_attrs
from .progress import check_callbacks, progress_bar, run_callbacks
from .seeding import derive_seed, make_generator, resolve_seed
from .threads import with_fit_threads

__all__ = ["run_em"]


def _iterates(model, data, params):
    """Yield ``(params, objective)`` for the start and after each EM step, without end."""
    fused = getattr(model, "em_step_with_objective", None)
    if callable(fused):
        while True:
            new, value = fused(data, params)
            yield params, value
            params = new
    else:
        yield params, model.em_objective(data, params)
        while True:
            params = model.em_step(data, params)
            yield params, model.em_objective(data, params)


def _working_eps(params: dict) -> float:
    """The machine epsilon of the fit's working precision: the coarsest floating dtype among
    the start's tensors (a float32 fit rounds its objective at float32's epsilon whatever
    torch's default dtype), else torch's default."""
    eps = [torch.finfo(v.dtype).eps for v in params.values()
           if isinstance(v, torch.Tensor) and v.is_floating_point()]
    return max(eps, default=torch.finfo(torch.get_default_dtype()).eps)


def _check_rule(verdict) -> bool:
    if not isinstance(verdict, bool):
        raise TypeError(f"em_converged must return a bool, got {type(verdict).__name__}")
    return verdict


def _em_start(task, shared) -> tuple:
    """Start ``r`` of :func:`run_em` from its own seed, run to convergence: ``(monitor,
    parameters)`` (a :func:`~.parallel.run_jobs` function)."""
    r, start_seed, bar = task
    model, data, init, rule = (shared[k] for k in ("model", "data", "init", "rule"))
    max_iter, n_init, callbacks = shared["max_iter"], shared["n_init"], shared["callbacks"]
    gen = make_generator(start_seed, shared["device"])
    params = dict(init) if init is not None else model.em_init(data, gen)
    # the start's objective is recorded too, so max_iter EM steps give max_iter + 1 values
    mon = ConvergenceMonitor(
        tol=shared["tol"],
        max_iter=max_iter + 1,
        monotone=getattr(model, "em_monotone", True),
        # rounding of the objective in the working precision is not a decrease
        monotone_slack=max(1e-9, 16 * _working_eps(params)),
        name="EM objective",
        rule=None if rule is None else f"{type(model).__name__}.em_converged",
    )
    # the caller's bar in this process (reset for each start); none in a worker
    with contextlib.nullcontext(bar) if bar is not None else progress_bar(max_iter, "em",
                                                                          False) as bar:
        if n_init > 1:  # the bar counts the steps of the current start
            bar.reset(total=max_iter)
            bar.set_description(f"em start {r + 1}/{n_init}")
        steps = _iterates(model, data, params)
        params, value = next(steps)
        done = mon.update(value)  # max_iter=0: the start is the result
        for new, value in ([] if done else steps):
            bar.update()
            if not bar.disable:
                bar.set_postfix(objective=f"{float(value):.6g}", refresh=False)
            settled = True if rule is None else _check_rule(rule(data, params, new))
            params = new
            stop = mon.update(value, settled=settled)
            info = {"objective": value, "restart": r, "params": params}
            if (callbacks and run_callbacks(callbacks, mon.n_iter - 1, info)) or stop:
                break
    return mon, params


@engine_entry()
@with_fit_threads
def run_em(
    model,
    data,
    *,
    max_iter: int = 500,
    tol: float = 1e-8,
    n_init: int = 1,
    init: dict | None = None,
    seed: int | None = None,
    progress: bool = True,
    callbacks=None,
    device=None,
    warn_not_converged: bool = True,
    checkpoint=None,
    checkpoint_every: int | None = None,
    resume=None,
    num_threads: int | None = None,
    n_jobs: int | None = None,
) -> Posterior:
    """Run the model's EM steps from ``n_init`` starts and keep the best objective.

    The model supplies ``em_init(data, generator) -> params``, ``em_step(data, params) ->
    params`` and ``em_objective(data, params) -> float`` (the quantity EM never decreases: the
    log likelihood, or the log posterior for MAP-EM), and optionally
    ``em_outputs(data, params) -> dict`` (responsibilities and other derived results) and
    ``em_step_with_objective(data, params) -> (em_step(params), em_objective(params))``, used
    instead of the separate calls when the E-step yields the objective anyway (one pass over
    the data per iteration instead of two; the results are the same), and
    ``em_converged(data, old, new) -> bool``, a stopping rule of the model's own beside the
    objective's tolerance: EM has converged only when the objective moves by less than ``tol``
    *and* ``em_converged`` holds for the last step's start and end ``old -> new`` (for
    example "no label changed" when the E-step clamps labels that change between steps;
    see :class:`ConvergenceMonitor`).

    Args:
        model: a :class:`Model` with the EM hooks (a plain callable has none).
        *args, **kwargs: the program's arguments, passed to its hooks; keyword
            arguments other than this engine's settings go to the program (see
            :mod:`pyromodels.core.entry` for the rule, and ``model_kwargs=`` for a program
            with an argument named like a setting). A :class:`Model` whose ``model(data)``
            takes one argument gets its data validated by ``model.prepare``.
        max_iter: EM steps per start; ``0`` returns the start itself.
        tol: relative tolerance on the objective (see :class:`ConvergenceMonitor`); with the
            model's ``em_converged`` rule, that must hold too. ``0`` never stops early: every
            start runs ``max_iter`` steps.
        n_init: number of starts; start ``r`` uses a seed derived from ``seed`` and ``r``.
        init: parameters to start from instead of ``em_init`` (then ``n_init`` must be 1).
        seed: the fit's seed; ``None`` draws one (recorded in ``attrs``).
        progress: show a progress bar.
        callbacks: callables ``f(step, info)`` called after EM step ``step`` (1, 2, ...) with
            ``info["objective"]``, ``info["restart"]`` and ``info["params"]``; ``True`` stops.
        device: ``"cpu"``, ``"cuda"`` or ``None`` (the data's device).
        warn_not_converged: emit a ``ConvergenceWarning`` if the best start did not converge.
        checkpoint: a file to write the finished starts to (see
            :mod:`pyromodels.core.checkpoint`): every ``checkpoint_every`` starts, at the end
            and on ``KeyboardInterrupt``. EM checkpoints at the boundary between starts: an
            interrupted start is run again from its beginning on resume (each start's
            initialisation is drawn from its own seed, so it is the same start).
        checkpoint_every: starts between checkpoint writes (``None``: only the end).
        resume: a checkpoint of an EM run of the same model, seed and settings to continue;
            ``n_init`` may be larger than the checkpoint's, which adds starts. The result
            equals the uninterrupted run's bit for bit.
        num_threads: CPU threads of the fit: ``None`` (default) chooses them for the data's
            size, never more than the caller's ``torch.get_num_threads()``; an integer
            ``>= 1`` fixes them (see :mod:`pyromodels.core.threads`). The caller's count is
            restored afterwards.
        n_jobs: starts run at once, joblib's meaning (``None``: one after another, or the
            ``n_jobs`` of an enclosing ``joblib.parallel_config``; ``-1``: all cores; see
            :mod:`pyromodels.core.parallel`). The result does not depend on it: each start's
            seed is derived before dispatch and the best is chosen in start order. With
            several workers, ``callbacks`` run in the workers.

    Returns:
        A :class:`Posterior` whose samples hold the point estimate as one chain of one draw,
        ``losses`` the objective per iteration of the best start, ``params`` every fitted
        quantity, and ``diagnostics`` the monitor of each start.
    """
    model._require("em_init", "em_step", "em_objective", engine="em")
    max_iter = check_int(max_iter, "max_iter", minimum=0)
    tol = check_positive(tol, "tol", strict=False)
    n_init = check_int(n_init, "n_init", minimum=1)
    n_jobs = check_n_jobs(n_jobs)
    if init is not None and n_init != 1:
        raise ValueError(f"init fixes the start, so n_init must be 1, got {n_init}")
    callbacks = check_callbacks(callbacks)
    rule = getattr(model, "em_converged", None)
    rule = rule if callable(rule) else None
    seed = None if seed is None else resolve_seed(seed)
    device = resolve_device(device, data)
    data = model.prepare(data, device=device)
    config = {"max_iter": max_iter, "tol": tol, "n_init": n_init, "init": init is not None}
    best, best_params, monitors = None, None, []
    if resume is not None:
        seed, saved = read_checkpoint(resume, engine="em", model=model, seed=seed, config=config,
                                      data=data, extendable=("n_init",))
        monitors = list(saved["monitors"])
        if monitors:
            best, best_params = monitors[saved["best"]], saved["best_params"]
            if init is None:  # a start's parameters must match this run's data
                fresh = model.em_init(data, make_generator(derive_seed(seed, "restart", 0), device))
                fresh = {k: v for k, v in fresh.items() if isinstance(v, torch.Tensor)}
                check_shapes({k: best_params.get(k) for k in fresh}, fresh, "EM parameter")
    seed = resolve_seed(seed)
    ckpt = Checkpointer(checkpoint, checkpoint_every, engine="em", model=model, seed=seed,
                        config=config, data=data, build=lambda snapshot: snapshot)
    start = time.perf_counter()
    workers = resolve_n_jobs(n_jobs)
    shared = {"model": model, "data": data, "init": init, "device": device, "tol": tol,
              "max_iter": max_iter, "n_init": n_init, "rule": rule, "callbacks": callbacks}
    finished: dict[int, tuple] = {}
    base = len(monitors)  # starts read from the checkpoint

    def on_result(index, out):  # keep the starts in order: the first best wins ties
        nonlocal best, best_params
        finished[index] = out
        while len(monitors) - base in finished:
            mon, params = finished.pop(len(monitors) - base)
            monitors.append(mon)
            if best is None or mon.history[-1] > best.history[-1]:
                best, best_params = mon, params
            if ckpt.enabled:
                ckpt.commit(len(monitors), {"monitors": copy.deepcopy(monitors),
                                            "best": monitors.index(best),
                                            "best_params": clone_tree(best_params)})

    with ckpt.guard(), progress_bar(max_iter, "em", progress and workers == 1) as bar:
        tasks = [(r, derive_seed(seed, "restart", r), bar if workers == 1 else None)
                 for r in range(len(monitors), n_init)]
        run_jobs(_em_start, tasks, n_jobs=n_jobs, shared=shared, progress=progress,
                 desc="em starts", labels=[f"start {t[0] + 1}" for t in tasks],
                 on_result=on_result)
    ckpt.write()
    if warn_not_converged:
        best.finish("EM", iterations=max_iter)
    outputs = model.em_outputs(data, best_params) if callable(getattr(model, "em_outputs", None)) else {}
    sites = getattr(model, "em_sites", tuple(best_params))
    samples = {k: best_params[k].unsqueeze(0).unsqueeze(0) for k in sites if k in best_params}
    return Posterior(
        samples=samples,
        method="em",
        losses=torch.tensor(best.history, dtype=torch.float64),
        params={**best_params, **outputs},
        diagnostics={
            "converged": best.converged,
            "n_iter": best.n_iter - 1,  # EM steps taken (the start is not a step)
            "monitor": best,
            "restart_objectives": [m.history[-1] for m in monitors],
        },
        attrs=make_attrs("em", seed, device, start, n_init=n_init, tol=tol),
        model=model,
        data=data,
    )
