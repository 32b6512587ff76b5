"""Natural-gradient stochastic variational inference for models with conjugate global factors.

The variational posterior is a product of global factors ``q(theta_g | eta_g)``, each in the
conjugate exponential family of its prior ``p(theta_g | eta_g^0)`` (see
:class:`~pyromodels.core.conjugate_factors.ConjugateFactor`), and of local factors that a
model-specific *local step* fits for each minibatch given the globals. The natural gradient
of the ELBO with respect to ``eta_g`` is (Hoffman et al. 2013)

.. math::

    \\tilde\\nabla_{\\eta_g} \\mathcal{L} = \\eta_g^0 + s_g\\, E_{q}[t_g(\\text{locals}, x_B)]
    - \\eta_g,

where ``t_g`` are the statistics the data pair with ``theta_g``'s sufficient statistics and
``s_g`` the minibatch weight that makes the batch's sum unbiased (``N / |B|`` for data terms,
``N_a / |S|`` for ``|S|`` of ``N_a`` relational terms). A step of size ``rho_t`` is

.. math::

    \\eta_g \\leftarrow (1 - \\rho_t)\\, \\eta_g + \\rho_t\\, (\\eta_g^0 + s_g E[t_g]),

so a full-data step with ``rho = 1`` is the coordinate-ascent (CAVI) update of the global, and
Robbins-Monro steps ``rho_t = (t + tau)^(-kappa)`` converge to a CAVI fixed point. Network
parameters (a recognition network, a decoder) take an ordinary optimiser step on the same
minibatch. This is the global half of a structured variational autoencoder (Johnson et al.
2016; the semi-crowdsourced clustering paper's BayesSCDC, its Algorithm 1 and eqs. 17,
26-29).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
import types
from collections.abc import Callable, Mapping

import torch

from ..checks import check_bool, check_int, check_positive
from .checkpoint import Checkpointer, check_shapes, clone_tree, read_checkpoint, rng_states, set_rng_states
from .conjugate_factors import (
    ConjugateFactor,
    LocalStep,
    Minibatch,
    fields_of,
    like,
    mean_parameter_view,
    step_size_at,
)
from .device import cuda_devices, resolve_device
from .monitor import ConvergenceMonitor
from .natgrad_data import batch_indices, check_data, data_tensors, num_rows, take_rows
from .posterior import Posterior, make_attrs
from .progress import check_callbacks, progress_bar, run_callbacks
from .seeding import derive_seed, make_generator, resolve_seed, seeded
from .threads import with_fit_threads

__all__ = ["run_natgrad"]


def _check_factors(factors, name: str) -> dict:
    if not isinstance(factors, Mapping) or not factors:
        raise TypeError(f"{name} must be a non-empty dict of global name -> conjugate factor, "
                        f"got {type(factors).__name__}")
    for key, f in factors.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} keys must be strings, got {key!r}")
        if not isinstance(f, ConjugateFactor):
            raise TypeError(f"{name}[{key!r}] must be a conjugate factor (natural_params, "
                            "expected_stats, log_normalizer, from_natural, kl), got "
                            f"{type(f).__name__}")
    return dict(factors)


def _check_pairs(priors: dict, init: dict) -> None:
    if set(priors) != set(init):
        raise ValueError(f"init must name the globals of priors {sorted(priors)}, got {sorted(init)}")
    for key in priors:
        if type(init[key]) is not type(priors[key]):
            raise TypeError(f"init[{key!r}] must be a {type(priors[key]).__name__} like "
                            f"priors[{key!r}], got {type(init[key]).__name__}")


def _qualified(obj) -> str:
    name = getattr(obj, "__qualname__", None)
    if isinstance(name, str):
        return f"{obj.__module__}.{name}"
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _schedule_name(step_size) -> float | str:
    """How the run's config records ``step_size``: the number, a schedule object's ``repr``
    (its settings), or a function's qualified name."""
    if not callable(step_size):
        return float(step_size)
    return repr(step_size) if dataclasses.is_dataclass(step_size) else _qualified(step_size)


def _check_result(result, globals_: dict, step: int) -> LocalStep:
    if not isinstance(result, LocalStep):
        raise TypeError(f"local_step must return a LocalStep, got {type(result).__name__} "
                        f"at step {step}")
    unknown = sorted(set(result.stats) - set(globals_)) + sorted(set(result.scales) - set(globals_))
    if unknown:
        raise ValueError(f"local_step returned statistics or scales for {unknown}, which are not "
                         f"globals (those are {sorted(globals_)})")
    unknown = sorted(set(result.step_sizes) - set(globals_))
    if unknown:
        raise ValueError(f"LocalStep.step_sizes names {unknown}, which are not globals (those "
                         f"are {sorted(globals_)})")
    for name, rho in result.step_sizes.items():
        if not 0 < float(rho) <= 1:
            raise ValueError(f"LocalStep.step_sizes[{name!r}] must be in (0, 1], got {rho} at "
                             f"step {step}")
    obj = result.objective
    if obj is not None and (not isinstance(obj, torch.Tensor) or obj.numel() != 1):
        raise TypeError(f"LocalStep.objective must be a scalar tensor or None, got "
                        f"{type(obj).__name__} at step {step}")
    return result


def _global_kl(factors: dict, priors: dict) -> float:
    with torch.no_grad():
        return float(sum(factors[k].kl(priors[k]).sum() for k in factors))


def _symmetric_part(grad: torch.Tensor, leaf: torch.Tensor) -> torch.Tensor:
    """The gradient within the symmetric matrices when the mean parameter is one (``E[x x^T]``,
    ``E[Lambda]``): only that part moves a symmetric natural parameter."""
    if leaf.dim() >= 2 and leaf.shape[-1] == leaf.shape[-2] and torch.allclose(leaf, leaf.mT):
        return 0.5 * (grad + grad.mT)
    return grad


class _Engine:
    """The state of a run and one natural-gradient step."""

    def __init__(self, local_step, priors, factors, step_size, correction, optimizer, num_items):
        self.local_step = local_step
        self.priors = priors
        self.factors = factors
        # the natural parameters each factor was built from: the updates and checkpoints use
        # these, not factor.natural_params(), whose round trip need not return the same bits
        self.etas = {k: f.natural_params() for k, f in factors.items()}
        self.step_size = step_size
        self.correction = correction
        self.optimizer = optimizer
        self.params = ([p for g in optimizer.param_groups for p in g["params"]]
                       if optimizer is not None else [])
        self.num_items = num_items

    def step(self, batch: Minibatch, generator) -> dict:
        """One natural-gradient step on ``batch``; returns what it recorded."""
        t = batch.step
        rho = step_size_at(self.step_size, t)
        globals_, leaves = self.factors, {}
        if self.correction:
            globals_ = {}
            for name, f in self.factors.items():
                globals_[name], leaves[name] = mean_parameter_view(f)
        result = _check_result(self.local_step(globals_, batch, generator), self.factors, t)
        objective = math.nan
        if result.objective is not None:  # the ELBO estimate at the globals it was computed at
            objective = float(result.objective.detach()) - _global_kl(self.factors, self.priors)
        grads = self._backward(result, leaves, t)
        norms = {}
        for name, stats in result.stats.items():
            scale = float(result.scales.get(name, batch.scale))
            old, prior = self.factors[name], self.priors[name]
            eta, eta0 = fields_of(self.etas[name]), fields_of(prior.natural_params())
            stats = tuple(s.detach() for s in fields_of(stats))
            if len(stats) != len(eta):
                raise ValueError(f"local_step's statistics for {name!r} have {len(stats)} "
                                 f"field(s), its natural parameters {len(eta)}")
            for i, (s, e) in enumerate(zip(stats, eta, strict=True)):
                if s.shape != e.shape:
                    raise ValueError(f"local_step's statistics for {name!r} (field {i}) have "
                                     f"shape {tuple(s.shape)}, its natural parameters "
                                     f"{tuple(e.shape)}")
            target = [e0 + scale * s for e0, s in zip(eta0, stats, strict=True)]
            if name in grads and name not in result.step_sizes:  # eq. 17 (not on a restart)
                extra = [g - scale * s for g, s in zip(grads[name], stats, strict=True)]
                norms[name] = float(sum(e.square().sum() for e in extra).sqrt())
                target = [a + b for a, b in zip(target, extra, strict=True)]
            r = float(result.step_sizes.get(name, rho))
            new = like(self.etas[name],
                       ((1 - r) * e + r * tg for e, tg in zip(eta, target, strict=True)))
            try:
                self.factors[name] = type(old).from_natural(new)
                self.etas[name] = new
            except ValueError as exc:
                raise ValueError(f"natural-gradient step {t} (step size {r:g}) took global "
                                 f"{name!r} outside its family's parameter space ({exc}); use a "
                                 "smaller step_size") from exc
        return {"objective": objective, "step_size": rho, "correction_norm": norms}

    def _backward(self, result: LocalStep, leaves: dict, t: int) -> dict:
        """Network gradients into ``.grad`` and an optimiser step; the objective's gradient
        with respect to the globals' mean parameters (for the correction) returned."""
        wanted = [(name, leaf) for name, ls in leaves.items() if name in result.stats for leaf in ls]
        if not wanted and not self.params:
            return {}
        if result.objective is None or not result.objective.requires_grad:
            what = "correction=True" if wanted else "an optimizer"
            where = "the globals' expected_stats()" if wanted else "the network parameters"
            raise ValueError(f"{what} needs the local step's objective, differentiable in "
                             f"{where}, at step {t}")
        inputs = [leaf for _, leaf in wanted] + self.params
        grads = torch.autograd.grad(result.objective.reshape(()), inputs, allow_unused=True)
        out: dict = {}
        for (name, _), g in zip(wanted, grads[: len(wanted)], strict=True):
            out.setdefault(name, []).append(g)
        for name, gs in out.items():
            if all(g is None for g in gs):  # the correction would cancel the statistics
                raise ValueError(f"correction=True: the local step's objective does not depend "
                                 f"on the expected_stats() of global {name!r}, for which it "
                                 f"returned statistics (at step {t}); the objective must hold "
                                 "every term of the ELBO's local part")
            out[name] = [torch.zeros_like(leaf) if g is None else _symmetric_part(g, leaf)
                         for g, leaf in zip(gs, leaves[name], strict=True)]
        if self.params:
            for p, g in zip(self.params, grads[len(wanted):], strict=True):
                # the optimiser minimises the negative objective per item
                p.grad = None if g is None else -g / self.num_items
            self.optimizer.step()
        return out


@with_fit_threads
def run_natgrad(
    local_step: Callable[[dict, Minibatch, torch.Generator], LocalStep],
    data,
    *,
    priors: Mapping[str, ConjugateFactor],
    init: Mapping[str, ConjugateFactor],
    num_epochs: int = 100,
    batch_size: int | None = None,
    step_size: float | Callable[[int], float] = 1.0,
    correction: bool = False,
    optimizer: torch.optim.Optimizer | None = None,
    tol: float = 0.0,
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
    """Fit conjugate global factors by stochastic natural-gradient steps over minibatches.

    Each step draws the next minibatch ``B`` of the ``N`` rows of ``data``, calls
    ``local_step(globals, batch, generator)`` with the current factors, and moves each global
    named in the returned :class:`~pyromodels.core.conjugate_factors.LocalStep`'s ``stats``
    to ``(1 - rho_t) eta + rho_t (eta_0 + scale * stats)``; a global left out keeps its
    parameters at that step (a stream of minibatches that says nothing about it). The local
    step fits the batch's local factors given the globals (typically from their
    ``expected_stats()``) and returns their expected statistics; it may also return an
    ``objective`` (the local part of the ELBO for the data set), which is recorded with
    ``-KL(q || p)`` of the globals added, and whose negative per item (``-objective / N``)
    ``optimizer`` minimises for network parameters. Its ``step_sizes`` may replace ``rho_t``
    for some globals at that step (``1`` with full-data statistics: a CAVI update, a restart
    from the data); such a global takes no eq. 17 correction at that step.

    **The eq. 17 correction** (``correction=True``). When the local factors are the optimum of
    a surrogate objective (a recognition network's conjugate potential in place of a
    non-conjugate likelihood), the true objective ``J(eta) = L(eta, eta*(eta))`` depends on
    the globals through the local optimum ``eta*`` too, and its natural gradient has a second
    term, ``grad_{mu} L(eta, eta*(eta))`` through ``eta*`` only, with ``mu = E[T]`` the mean
    parameters (the natural gradient with respect to ``eta`` is the ordinary gradient with
    respect to ``mu``). With ``correction=True`` the local step receives stand-ins whose
    ``expected_stats()`` are leaf tensors; autograd of the objective with respect to them
    gives its full gradient ``grad_mu``, of which the part through the explicit
    ``E[log p(locals | theta)] = <mu, E[t]>`` terms is ``scale * stats``. The step adds the
    rest, ``grad_mu - scale * stats``, to the natural gradient, so the update uses
    ``eta_0 + grad_mu - eta``, the exact natural gradient of ``objective - KL``. Requirements:
    the local step reads the globals only through ``expected_stats()``, differentiably, and
    its objective holds every term at full-data scale. At an exact local optimum of the
    objective itself (the conjugate case) the correction vanishes.

    Args:
        local_step: ``f(globals, batch, generator) -> LocalStep``; ``globals`` maps each name
            to its current factor, ``batch`` is a
            :class:`~pyromodels.core.conjugate_factors.Minibatch` (its rows of ``data``, their
            indices, ``scale = N / |B|``, epoch and step), ``generator`` the run's
            ``torch.Generator`` (draw local randomness from it).
        data: a tensor, or a dict, tuple or list of tensors sharing their first axis (the
            ``N`` items the minibatches split).
        priors: global name -> prior factor (natural parameters ``eta_0``).
        init: global name -> initial variational factor, of the prior's family.
        num_epochs: passes over the data.
        batch_size: rows per minibatch (the last may be smaller; rows are shuffled each
            epoch); ``None`` uses all rows in their order in one batch per epoch.
        step_size: ``rho_t`` in ``(0, 1]``: a constant, or a schedule ``f(t) -> rho`` of the
            step ``t = 1, 2, ...`` such as
            :class:`~pyromodels.core.conjugate_factors.RobbinsMonro`.
        correction: add the eq. 17 correction (above); needs the objective.
        optimizer: a ``torch.optim`` optimiser over the network parameters, stepped once per
            minibatch on ``-objective / N``; needs the objective.
        tol: stop when the mean objective of an epoch moves by less than ``tol`` times its
            magnitude (see :class:`ConvergenceMonitor`); ``0`` runs every epoch.
        num_samples: draws from each fitted factor that has a ``sample`` method, stored as
            one chain (``0``: none).
        seed: the fit's seed; ``None`` draws one (recorded in ``attrs``).
        progress: show a progress bar over the steps.
        callbacks: callables ``f(step, info)`` after each step, with ``info["objective"]``,
            ``info["epoch"]``, ``info["step_size"]`` and ``info["globals"]``; ``True`` stops.
        device: ``"cpu"``, ``"cuda"`` or ``None`` (the data's device): where the generator
            lives.
        checkpoint: a file to write the run's state to at the end of every
            ``checkpoint_every`` epochs (see :mod:`pyromodels.core.checkpoint`): the natural
            parameters, the network parameters and optimiser state, the objective history and
            the random number generators. An interrupted epoch is run again on resume.
        checkpoint_every: epochs between checkpoint writes (``None``: only the end).
        resume: a checkpoint of a run with the same local step, data, priors, initial
            factors, seed and settings; ``num_epochs`` may be larger, which extends the run.
            The result equals the uninterrupted run's (give the optimiser over the same,
            freshly initialised network).
        num_threads: CPU threads of the fit (see :mod:`pyromodels.core.threads`).

    Returns:
        A :class:`Posterior` with ``method="natgrad"``: ``params["factors"]`` (name -> the
        fitted factor) and each natural parameter as ``params["eta.<name>"]`` (or
        ``"eta.<name>.<field>"``), draws of the factors as one chain (a factor whose draws are
        a tuple gives ``"<name>.<field>"`` sites for its ``sample_fields``, else
        ``"<name>.<i>"``), ``losses`` the negative objective per step (NaN where the local
        step gave none), and ``diagnostics`` with the epoch means of the objective
        (``epoch_objectives`` and their ``monitor``), ``converged``, ``num_steps``,
        ``step_sizes`` and ``correction_norms`` (per step, the norm of the correction of each
        global; empty without ``correction``).

    Example:
        >>> import torch
        >>> from pyromodels.conjugate import BetaBernoulli
        >>> from pyromodels.core.conjugate_factors import LocalStep
        >>> x = torch.tensor([1.0, 1.0, 0.0, 1.0], dtype=torch.float64)
        >>> def coin(globals_, batch, generator):
        ...     heads = batch.data.sum()
        ...     return LocalStep({"p": torch.stack([heads, len(batch.data) - heads])})
        >>> prior = BetaBernoulli(torch.tensor(1.0, dtype=torch.float64), 1.0)
        >>> post = run_natgrad(coin, x, priors={"p": prior}, init={"p": prior}, num_epochs=1,
        ...                    seed=0, progress=False)
        >>> post.params["factors"]["p"].alpha  # one full step of size 1: CAVI
        tensor(4., dtype=torch.float64)
    """
    if not callable(local_step):
        raise TypeError(f"local_step must be callable f(globals, batch, generator), got "
                        f"{type(local_step).__name__}")
    priors = _check_factors(priors, "priors")
    init = _check_factors(init, "init")
    _check_pairs(priors, init)
    check_data(data)
    n = num_rows(data)
    num_epochs = check_int(num_epochs, "num_epochs", minimum=1)
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", minimum=1)
    if not callable(step_size):
        step_size_at(check_positive(step_size, "step_size"), 1)
    correction = check_bool(correction, "correction")
    if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer or None, got "
                        f"{type(optimizer).__name__}")
    tol = check_positive(tol, "tol", strict=False)
    num_samples = check_int(num_samples, "num_samples", minimum=0)
    callbacks = check_callbacks(callbacks)
    device = resolve_device(device, *data_tensors(data))
    seed = None if seed is None else resolve_seed(seed)
    program = types.SimpleNamespace(qualified_name=_qualified(local_step))
    config = {"num_epochs": num_epochs, "batch_size": batch_size, "tol": tol,
              "step_size": _schedule_name(step_size),
              "correction": correction, "globals": sorted(priors),
              "optimizer": None if optimizer is None else _qualified(optimizer)}
    vouched = {"data": data,
               "priors": {k: list(fields_of(f.natural_params())) for k, f in priors.items()},
               "init": {k: list(fields_of(f.natural_params())) for k, f in init.items()}}
    saved = None
    if resume is not None:
        seed, saved = read_checkpoint(resume, engine="natgrad", model=program, seed=seed,
                                      config=config, data=vouched, extendable=("num_epochs",))
    seed = resolve_seed(seed)
    ckpt = Checkpointer(checkpoint, checkpoint_every, engine="natgrad", model=program, seed=seed,
                        config=config, data=vouched, build=lambda snapshot: snapshot)
    engine = _Engine(local_step, priors, dict(init), step_size, correction, optimizer, n)
    generator = make_generator(derive_seed(seed, "natgrad"), device)
    monitor = ConvergenceMonitor(tol=tol, max_iter=num_epochs, monotone=False,
                                 name="objective (epoch mean)")
    record = {"objective": [], "step_size": [], "correction_norm": []}
    first_epoch, stopped = 0, False
    start = time.perf_counter()
    with seeded(seed, devices=cuda_devices(device)):
        if saved is not None:
            first_epoch, stopped, monitor, record = _restore(saved, engine, generator, init)
        steps_per_epoch = math.ceil(n / (batch_size or n))
        with ckpt.guard(), progress_bar(num_epochs * steps_per_epoch, "natgrad", progress) as bar:
            bar.update(first_epoch * steps_per_epoch)
            for epoch in range(first_epoch, num_epochs if not stopped else first_epoch):
                epoch_values = []
                for indices in batch_indices(n, batch_size, generator, device):
                    t = len(record["objective"]) + 1
                    batch = Minibatch(take_rows(data, indices), indices, n / len(indices), epoch, t)
                    info = engine.step(batch, generator)
                    for key in record:
                        record[key].append(info[key])
                    epoch_values.append(info["objective"])
                    bar.update()
                    if not math.isnan(info["objective"]):
                        bar.set_postfix(objective=f"{info['objective']:.6g}", refresh=False)
                    stopped = bool(callbacks) and run_callbacks(
                        callbacks, t, {**info, "epoch": epoch, "globals": dict(engine.factors)})
                    if stopped:
                        break
                if not stopped and not any(math.isnan(v) for v in epoch_values):
                    stopped = monitor.update(sum(epoch_values) / len(epoch_values)) and monitor.converged
                elif tol > 0 and not stopped:
                    raise ValueError("tol > 0 needs the local step's objective at every step")
                if ckpt.enabled:
                    ckpt.commit(epoch + 1, _snapshot(engine, generator, epoch + 1, stopped,
                                                     monitor, record))
                if stopped:
                    break
        ckpt.write()
    return _result(engine, record, monitor, seed, device, start, num_samples)


def _snapshot(engine: _Engine, generator, epoch: int, stopped: bool, monitor, record) -> dict:
    return {
        "epoch": epoch, "stopped": stopped,
        "etas": {k: list(clone_tree(fields_of(eta))) for k, eta in engine.etas.items()},
        "network": [p.detach().clone() for p in engine.params],
        "optim": None if engine.optimizer is None else clone_tree(engine.optimizer.state_dict()),
        "monitor": copy.deepcopy(monitor), "record": copy.deepcopy(record),
        "rng": rng_states(generator),
    }


def _restore(saved: dict, engine: _Engine, generator, init: dict):
    """Put the checkpoint's factors, network, optimiser and generators back."""
    expected = {f"{k}[{i}]": t for k, f in init.items()
                for i, t in enumerate(fields_of(f.natural_params()))}
    got = {f"{k}[{i}]": t for k, ts in saved["etas"].items() for i, t in enumerate(ts)}
    check_shapes(got, expected, "natural parameter")
    for k, f in init.items():
        template = f.natural_params()
        tensors = [t.to(fields_of(template)[i].device) for i, t in enumerate(saved["etas"][k])]
        engine.etas[k] = like(template, tensors)
        unchanged = all(torch.equal(a, b) for a, b in zip(tensors, fields_of(template), strict=True))
        # a global still at its start (held, or never given statistics) keeps the very factor
        # the uninterrupted run reads, not its round trip through natural parameters
        engine.factors[k] = f if unchanged else type(f).from_natural(engine.etas[k])
    check_shapes({str(i): t for i, t in enumerate(saved["network"])},
                 {str(i): p for i, p in enumerate(engine.params)}, "network parameter")
    with torch.no_grad():
        for p, value in zip(engine.params, saved["network"], strict=True):
            p.copy_(value.to(p.device))
    if engine.optimizer is not None:
        engine.optimizer.load_state_dict(saved["optim"])
    set_rng_states(saved["rng"], generator)
    return saved["epoch"], saved["stopped"], saved["monitor"], saved["record"]


def _draw_sites(name: str, factor, draws) -> dict:
    if isinstance(draws, torch.Tensor):
        return {name: draws.unsqueeze(0)}
    labels = getattr(type(factor), "sample_fields", None) or range(len(draws))
    return {f"{name}.{label}": d.unsqueeze(0) for label, d in zip(labels, draws, strict=True)}


def _result(engine: _Engine, record, monitor, seed, device, start, num_samples) -> Posterior:
    samples, params = {}, {"factors": dict(engine.factors)}
    draw_gen = make_generator(derive_seed(seed, "draws"), device)
    for name, f in engine.factors.items():
        eta = engine.etas[name]
        if isinstance(eta, torch.Tensor):
            params[f"eta.{name}"] = eta.detach()
        else:
            names = getattr(type(eta), "_fields", range(len(eta)))
            params.update({f"eta.{name}.{field}": t.detach() for field, t in zip(names, eta, strict=True)})
        if num_samples and callable(getattr(f, "sample", None)):
            samples.update(_draw_sites(name, f, f.sample(draw_gen, (num_samples,))))
    objective = torch.tensor(record["objective"], dtype=torch.float64)
    return Posterior(
        samples=samples,
        method="natgrad",
        losses=-objective,
        params=params,
        diagnostics={"num_steps": len(record["objective"]), "monitor": monitor,
                     "converged": monitor.converged, "epoch_objectives": list(monitor.history),
                     "step_sizes": list(record["step_size"]),
                     "correction_norms": list(record["correction_norm"])},
        attrs=make_attrs("natgrad", seed, device, start, num_steps=len(record["objective"])),
        model=None,
        data=None,
    )
