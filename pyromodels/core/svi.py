"""Stochastic variational inference with enumerated discrete sites."""

from __future__ import annotations

import time

import pyro
import torch
from pyro import poutine
from pyro.infer import SVI, Predictive, Trace_ELBO, TraceEnum_ELBO
from pyro.infer.autoguide import AutoNormal
from pyro.infer.autoguide.initialization import init_to_sample, init_to_value

from ..checks import check_int, check_positive
from .checkpoint import (
    Checkpointer,
    check_shapes,
    clone_tree,
    read_checkpoint,
    rng_states,
    set_rng_states,
)
from .device import cuda_devices, resolve_device
from .entry import engine_entry
from .enumeration import sample_discrete, site_shapes
from .posterior import Posterior, make_attrs
from .progress import check_callbacks, progress_bar, run_callbacks
from .seeding import derive_seed, make_generator, resolve_seed, seeded
from .threads import with_fit_threads

__all__ = ["run_svi", "default_guide"]


def default_guide(model, data, generator: torch.Generator | None = None):
    """``AutoNormal`` over the continuous sites with the discrete sites hidden (enumerated).

    Starts from ``model.init_values(data, generator)`` when the model defines it.
    """
    init = init_to_sample
    if callable(getattr(model, "init_values", None)) and generator is not None:
        init = init_to_value(values=model.init_values(data, generator))
    hidden = poutine.block(model.model, hide=list(model.discrete_sites))
    return AutoNormal(hidden, init_loc_fn=init)


@engine_entry(leading="guide")
@with_fit_threads
def run_svi(
    model,
    data,
    *,
    num_steps: int = 2000,
    guide=None,
    optim=None,
    lr: float = 0.01,
    elbo=None,
    num_particles: int = 1,
    num_samples: int = 1000,
    seed: int | None = None,
    progress: bool = True,
    callbacks=None,
    device=None,
    checkpoint=None,
    checkpoint_every: int | None = None,
    resume=None,
    num_threads: int | None = None,
) -> Posterior:
    """Fit a guide by SVI, then draw from it (one chain) and restore the discrete sites.

    Args:
        model: a Pyro program (a callable) or a pyromodels :class:`Model`.
        *args, **kwargs: the program's arguments, as ``pyro.infer.SVI.step`` takes them; keyword
            arguments other than this engine's settings go to the program (see
            :mod:`pyromodels.core.entry` for the rule, and ``model_kwargs=`` for a program
            with an argument named like a setting). A :class:`Model` whose ``model(data)``
            takes one argument gets its data validated by ``model.prepare``.
            A plain callable takes its guide first: ``run_svi(model, guide_or_None, *args,
            **kwargs)``.
        num_steps: optimisation steps.
        guide: a guide callable; default: the model's ``guide`` if it has one, else
            :func:`default_guide`.
        optim: a ``pyro.optim`` optimiser; default ``ClippedAdam({"lr": lr})``.
        lr: learning rate of the default optimiser.
        elbo: an ELBO instance; default: the model's ``svi_elbo(num_particles=...)`` when it
            defines that hook (an objective of its own, such as an ELBO with a closed-form
            term added), else ``TraceEnum_ELBO`` when the model has discrete sites (they are
            summed out exactly), else ``Trace_ELBO``.
        num_particles: ELBO particles.
        num_samples: draws from the fitted guide, stored as one chain.
        seed: the fit's seed; ``None`` draws one (recorded in ``attrs``).
        progress: show a progress bar.
        callbacks: callables ``f(step, info)`` with ``info["loss"]``; returning ``True`` stops.
        device: ``"cpu"``, ``"cuda"`` or ``None`` (the data's device).
        checkpoint: a file to write the run's state to (see :mod:`pyromodels.core.checkpoint`):
            the guide's parameters, the optimiser's state, the losses and the random number
            generators, every ``checkpoint_every`` steps, at the end of the optimisation and
            on ``KeyboardInterrupt``. Keeping the last complete state copies the parameters
            and the optimiser's state once per step.
        checkpoint_every: steps between checkpoint writes (``None``: only the end).
        resume: a checkpoint of an SVI run of the same model, seed and settings to continue;
            ``num_steps`` may be larger than the checkpoint's, which extends the run. The
            result equals the uninterrupted run's bit for bit.
        num_threads: CPU threads of the fit: ``None`` (default) chooses them for the data's
            size, never more than the caller's ``torch.get_num_threads()``; an integer
            ``>= 1`` fixes them (see :mod:`pyromodels.core.threads`). The caller's count is
            restored afterwards.

    Returns:
        A :class:`Posterior` with ``losses`` (negative ELBO per step), guide draws shaped
        ``(1, num_samples, ...)`` including the discrete sites, and ``params`` (the guide's).
    """
    num_steps = check_int(num_steps, "num_steps", minimum=1)
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    num_particles = check_int(num_particles, "num_particles", minimum=1)
    lr = check_positive(lr, "lr")
    callbacks = check_callbacks(callbacks)
    seed = None if seed is None else resolve_seed(seed)
    device = resolve_device(device, data)
    data = model.prepare(data, device=device)
    config = {"num_steps": num_steps, "num_particles": num_particles, "lr": lr,
              "guide": _kind(guide), "optim": _kind(optim), "elbo": _kind(elbo)}
    saved = None
    if resume is not None:
        seed, saved = read_checkpoint(resume, engine="svi", model=model, seed=seed,
                                      config=config, data=data, extendable=("num_steps",))
    seed = resolve_seed(seed)
    ckpt = Checkpointer(checkpoint, checkpoint_every, engine="svi", model=model, seed=seed,
                        config=config, data=data, build=lambda snapshot: snapshot)
    start = time.perf_counter()
    store = pyro.get_param_store()
    with store.scope() as scope, seeded(seed, devices=cuda_devices(device)):
        guide_name = _kind(guide) or (_kind(model.guide) if callable(getattr(model, "guide", None))
                                      else "AutoNormal")
        if guide is None:
            guide = model.guide if callable(getattr(model, "guide", None)) else default_guide(
                model, data, make_generator(derive_seed(seed, "init"), device)
            )
        if elbo is None and callable(getattr(model, "svi_elbo", None)):
            elbo = model.svi_elbo(num_particles=num_particles)
        if elbo is None:
            kind = TraceEnum_ELBO if model.discrete_sites else Trace_ELBO
            elbo = kind(max_plate_nesting=model.max_plate_nesting, num_particles=num_particles)
        optim = optim if optim is not None else pyro.optim.ClippedAdam({"lr": lr})
        svi = SVI(model.model, guide, optim, loss=elbo)
        losses, first, stopped = [], 0, False
        if saved is not None:
            _restore(saved, svi, data, store, optim)
            losses, first, stopped = list(saved["losses"]), saved["step"], saved["stopped"]
        with ckpt.guard(), progress_bar(num_steps, "svi", progress) as bar:
            if first:
                bar.update(first)
            for step in range(first, num_steps if not stopped else first):
                loss = svi.step(data)
                losses.append(loss)
                bar.update()
                if step % 50 == 0:
                    bar.set_postfix(loss=f"{loss:.4g}")
                stop = bool(callbacks) and run_callbacks(callbacks, step, {"loss": loss})
                if ckpt.enabled:
                    ckpt.commit(step + 1, _snapshot(store, optim, losses, step + 1, stop))
                if stop:
                    break
        ckpt.write()
        with torch.no_grad():
            draws = Predictive(guide, num_samples=num_samples)(data)
        shapes = _latent_shapes(model, data)
        samples = {k: _conform(v, shapes[k], num_samples).unsqueeze(0)
                   for k, v in draws.items() if k in shapes}
        params = {k: v.detach().clone() for k, v in store.items()}
    samples.update(
        sample_discrete(model, data, samples, seed=derive_seed(seed, "discrete"))
    )
    return Posterior(
        samples=samples,
        method="svi",
        losses=torch.tensor(losses, dtype=torch.float64),
        params=params,
        diagnostics={"num_steps": len(losses), "param_store": scope},
        attrs=make_attrs("svi", seed, device, start, num_steps=len(losses),
                         elbo=type(elbo).__name__, guide=guide_name),
        model=model,
        data=data,
    )


def _kind(obj) -> str | None:
    """The class of a user-supplied guide, optimiser or ELBO (``None``: the default)."""
    if obj is None:
        return None
    name = getattr(obj, "__qualname__", None)  # a function or a bound method (model.guide)
    if isinstance(name, str):
        return f"{obj.__module__}.{name}"
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _snapshot(store, optim, losses, step, stopped) -> dict:
    """The state after ``step`` complete steps, copied (the optimiser updates in place)."""
    return {
        "step": step, "stopped": stopped, "losses": list(losses),
        "params": {k: v.detach().clone() for k, v in store.named_parameters()},
        "optim": clone_tree(optim.get_state()),
        "rng": rng_states(),
    }


def _restore(saved, svi, data, store, optim) -> None:
    """Build the parameters of one loss evaluation (the guide's, the model's own and any its
    objective reads), then put back the saved parameters, optimiser state and random number
    generators (setting the parameters up may draw from them)."""
    with poutine.block():
        svi.evaluate_loss(data)
    current = dict(store.named_parameters())
    check_shapes(saved["params"], current, "guide parameter")
    params = {k: v.to(current[k].device).requires_grad_(True) for k, v in saved["params"].items()}
    store.set_state({"params": params, "constraints": store.get_state()["constraints"]})
    optim.set_state(saved["optim"])
    set_rng_states(saved["rng"])


def _latent_shapes(model, data) -> dict[str, tuple[int, ...]]:
    """The shape of each continuous latent site's value, from one trace of the program."""
    return {k: tuple(batch) + tuple(event) for k, (batch, event) in site_shapes(model, data).items()
            if k not in set(model.discrete_sites)}


def _conform(draws: torch.Tensor, shape: tuple[int, ...], num: int) -> torch.Tensor:
    """``draws`` shaped ``(num, *shape)``: ``Predictive`` puts a guide's draws of a site
    outside the plates left of ``max_plate_nesting`` singleton dims (``mu`` as ``(num, 1)``
    where the program's value is ``()``); those are dropped, as NUTS and Gibbs have none."""
    target = (num, *shape)
    if tuple(draws.shape) == target:
        return draws
    extra = tuple(draws.shape[1:len(draws.shape) - len(shape)])
    if tuple(draws.shape[len(draws.shape) - len(shape):]) != shape or any(d != 1 for d in extra):
        raise RuntimeError(f"the guide's draws have shape {tuple(draws.shape[1:])}, which does "
                           f"not match the program's site shape {shape}")
    return draws.reshape(target)
