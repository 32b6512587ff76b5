"""One NUTS block for the continuous sites that have no discrete or conjugate update.

The block draws those sites jointly from their full conditional given every other site, by
Pyro's NUTS kernel on a potential energy read off the program: the sites are mapped to
unconstrained space by Pyro's ``biject_to`` of their supports, read in the same run of the
program (so a site whose support depends on an earlier site, ``Uniform(0, b)``, follows
``b``), and

.. math::

    U(z) = -\\log p\\big(x(z), \\text{rest}\\big) - \\log\\left|\\det \\partial x / \\partial z\\right|,

with the program scored (with gradients) at the other sites' current values. Each sweep runs
``nuts_steps`` NUTS transitions from the current values. NUTS is Metropolis-corrected, so the
block leaves the conditional, hence the joint posterior, invariant.

Warm-up: the block asks the engine where the chain stands (a
:class:`~pyromodels.core.gibbs.SweepInfo`). At a chain's first sweep it sets up a fresh kernel
whose warm-up lasts the chain's warm-up sweeps; Pyro's adaptation schedule then tunes the step
size (dual averaging) and a diagonal mass matrix (windowed variance of the draws), and both are
frozen from the first sampling sweep on. Called without that information (by the checks of
:mod:`pyromodels.testing`) the block adapts nothing.

Randomness: Pyro's NUTS draws from the global RNG, so each call draws one seed from the chain's
generator and runs the kernel inside :func:`~pyromodels.core.seeding.seeded` (the caller's
global state is restored): the same chain seed gives the same draws.

Checkpoints: the adaptation state (the kernel's transition count, step size, dual-averaging
state, adaptation window, inverse mass matrix and the running variance of the current window)
is the block's per-chain state, which :meth:`NutsUpdate.get_state` hands to
:func:`~pyromodels.core.run_gibbs` for a checkpoint and :meth:`NutsUpdate.set_state` restores,
so a resumed chain equals the uninterrupted one bit for bit, during warm-up or after it. A
chain that continues without that state (a checkpoint written before it was saved) sets up a
fresh kernel, with a warning, adapting over what is left of the warm-up (and after the warm-up
keeping the first step size found by Pyro's heuristic and a unit mass matrix): a valid sampler,
but not bit-identical to the uninterrupted one.
"""

from __future__ import annotations

import warnings

import pyro
import torch
from pyro import poutine
from pyro.distributions.transforms import biject_to
from pyro.distributions.util import is_validation_enabled
from pyro.infer import NUTS
from pyro.poutine.messenger import Messenger

from ..core.checkpoint import clone_tree
from ..core.seeding import seeded
from .compiled import compiled_call, signature
from .trace import log_joint, tolerance, trace_model

__all__ = ["nuts_refusal", "Potential", "NutsUpdate"]


def nuts_refusal(fn) -> str | None:
    """Why a continuous site cannot be updated by NUTS (``None`` when it can): its support
    must have a bijection from unconstrained space in Pyro."""
    try:
        support = fn.support
    except NotImplementedError:
        return "its distribution declares no support"
    try:
        biject_to(support)
    except NotImplementedError:
        return f"Pyro has no bijection from unconstrained space onto its support ({support})"
    return None


class _Unconstrained(Messenger):
    """Set each NUTS site from its unconstrained value ``z[site]`` by the bijection onto the
    support of the site's distribution *in this run* (so a support that depends on an earlier
    site follows that site's new value), adding up the log-Jacobians."""

    def __init__(self, z: dict):
        super().__init__()
        self.z, self.values, self.log_det = z, {}, 0.0

    def _pyro_sample(self, msg) -> None:
        name = msg["name"]
        if name in self.z:
            transform = biject_to(msg["fn"].support)
            x = transform(self.z[name])
            self.log_det = self.log_det + transform.log_abs_det_jacobian(self.z[name], x).sum()
            self.values[name] = x
            msg["value"], msg["is_observed"] = x, True


class Potential:
    """The potential energy of the NUTS sites in unconstrained space, given the other sites
    (a picklable callable ``U(z)`` for Pyro's kernel; :meth:`bind` sets the rest).

    Args:
        model: the Pyro program.
        sites: the NUTS sites' names.
    """

    def __init__(self, model, sites: tuple[str, ...]):
        self.model, self.sites = model, tuple(sites)
        self.args, self.kwargs, self.rest = (), {}, {}

    def bind(self, state: dict, args: tuple, kwargs: dict) -> dict:
        """Fix the other sites at their values in ``state`` and return the NUTS sites'
        unconstrained values (by the bijections onto their supports at ``state``)."""
        self.args, self.kwargs = args, kwargs
        self.rest = {k: v for k, v in state.items() if k not in self.sites}
        trace = trace_model(self.model, args, kwargs, state)
        return {k: biject_to(trace.nodes[k]["fn"].support).inv(state[k]).detach() for k in self.sites}

    def run(self, z: dict):
        """One run of the program at unconstrained ``z``: ``(log joint, {site: value},
        log |det dx/dz|)``; repeated runs at the same shapes and data replay a verified trace
        (:mod:`.compiled`)."""
        zn, rn = tuple(sorted(z)), tuple(sorted(self.rest))  # one key whatever the order
        inputs = tuple(z[n] for n in zn) + tuple(self.rest[n] for n in rn)
        key = ("potential", self.sites, zn, rn,
               tuple((tuple(v.shape), v.dtype, v.requires_grad) for v in inputs),
               torch.is_grad_enabled(), is_validation_enabled())

        def plain(*values):
            joint, x, log_det = self._plain_run(dict(zip(zn, values[:len(zn)])),
                                                dict(zip(rn, values[len(zn):])))
            return (joint, torch.as_tensor(log_det, dtype=joint.dtype)) + tuple(x[n] for n in zn)
        data = (signature(tuple(self.args)), signature(self.kwargs))
        out = compiled_call(self.model, data, key, plain, inputs, keep=(self.args, self.kwargs))
        return out[0], dict(zip(zn, out[2:])), out[1]

    def _plain_run(self, z: dict, rest: dict):
        handler = _Unconstrained(z)
        conditioned = poutine.condition(handler(self.model), data=rest)
        with pyro.get_param_store().scope(), poutine.block():
            trace = poutine.trace(conditioned).get_trace(*self.args, **self.kwargs)
        return trace.log_prob_sum(), handler.values, handler.log_det

    def constrained(self, z: dict) -> dict:
        """The sites' values at unconstrained ``z``."""
        with torch.no_grad():
            return self.run(z)[1]

    def __call__(self, z: dict) -> torch.Tensor:
        joint, _, log_det = self.run(z)
        return -(joint + log_det)


class NutsUpdate:
    """The NUTS update of several continuous sites at once (a picklable callable for a
    :class:`~pyromodels.core.GibbsBlock` with ``wants_sweep_info=True``).

    Args:
        model: the Pyro program.
        sites: the sites' names.
        nuts_steps: NUTS transitions per sweep.
        target_accept: the mean acceptance probability the step size is adapted to.
        max_tree_depth: NUTS's largest tree depth.

    Attributes:
        kernel: the current chain's Pyro ``NUTS`` kernel (``None`` before the first sweep);
            its ``step_size`` and ``inverse_mass_matrix`` are the adapted settings.
    """

    def __init__(self, model, sites: tuple[str, ...], nuts_steps: int = 1,
                 target_accept: float = 0.8, max_tree_depth: int = 10):
        self.model, self.sites = model, tuple(sites)
        self.nuts_steps, self.target_accept, self.max_tree_depth = nuts_steps, target_accept, max_tree_depth
        self.potential = Potential(model, self.sites)
        self.kernel = None
        self._next_sweep = None  # the sweep this kernel expects next (None: no chain under way)
        self._restored = None  # a chain's state from set_state, applied at its next sweep

    def __getstate__(self):  # Pyro's kernel holds bound methods; a copy starts a fresh kernel
        return {**self.__dict__, "kernel": None, "_next_sweep": None, "_restored": None}

    def get_state(self) -> dict | None:
        """The running chain's adaptation state (copies), for a checkpoint; ``None`` before
        its first sweep. Read from Pyro's NUTS kernel and its warm-up adapter."""
        if self._restored is not None:  # set, not yet applied: still the chain's state
            return clone_tree(self._restored)
        if self.kernel is None:
            return None
        kernel, adapter = self.kernel, self.kernel._adapter
        averaging, mass = adapter._step_size_adapt_scheme, adapter.mass_matrix_adapter
        return clone_tree({
            "next_sweep": self._next_sweep,
            "warmup_steps": kernel._warmup_steps,
            "t": kernel._t,
            "accept_cnt": kernel._accept_cnt,
            "mean_accept_prob": kernel._mean_accept_prob,
            "step_size": adapter.step_size,
            "window": adapter._current_window,
            "dual_averaging": {"prox_center": averaging.prox_center, "x_avg": averaging._x_avg,
                               "g_avg": averaging._g_avg, "t": averaging._t,
                               "x_t": getattr(averaging, "_x_t", None)},
            "inverse_mass_matrix": dict(mass.inverse_mass_matrix),
            "variance": {names: {"mean": w._mean, "m2": w._m2, "n": w.n_samples}
                         for names, w in mass._adapt_scheme.items()},
        })

    def set_state(self, state: dict | None) -> None:
        """Continue a chain from ``state`` (a :meth:`get_state` value) at its next sweep, or
        start afresh (``None``)."""
        if state is not None and not isinstance(state, dict):
            raise TypeError(f"state must be a dict from get_state() or None, got {type(state).__name__}")
        self.kernel = None
        self._next_sweep = None if state is None else state["next_sweep"]
        self._restored = state

    @property
    def step_size(self) -> float | None:
        """The kernel's current step size (``None`` before the first sweep)."""
        return None if self.kernel is None else float(self.kernel.step_size)

    def _setup(self, z: dict, warmup_steps: int) -> None:
        kernel = NUTS(potential_fn=self.potential, adapt_step_size=True, adapt_mass_matrix=True,
                      full_mass=False, target_accept_prob=self.target_accept,
                      max_tree_depth=self.max_tree_depth)
        kernel.initial_params = z
        kernel.setup(warmup_steps)
        self.kernel = kernel

    def _restore(self, z: dict, state: dict) -> None:
        """A kernel in the adaptation state ``state`` (from :meth:`get_state`)."""
        device = next(iter(z.values())).device
        devices = (device.index or 0,) if device.type == "cuda" else ()
        with torch.random.fork_rng(devices):  # undo the draws of setup's step-size heuristic
            self._setup(z, state["warmup_steps"])
        kernel, adapter = self.kernel, self.kernel._adapter
        averaging, mass = adapter._step_size_adapt_scheme, adapter.mass_matrix_adapter
        kernel._t, kernel._accept_cnt = state["t"], state["accept_cnt"]
        kernel._mean_accept_prob = state["mean_accept_prob"]
        adapter.step_size, adapter._current_window = state["step_size"], state["window"]
        saved = state["dual_averaging"]
        averaging.prox_center, averaging._x_avg = saved["prox_center"], saved["x_avg"]
        averaging._g_avg, averaging._t = saved["g_avg"], saved["t"]
        if saved["x_t"] is not None:
            averaging._x_t = saved["x_t"]
        like = next(iter(mass.inverse_mass_matrix.values()))
        mass.inverse_mass_matrix = {names: m.to(like.device)
                                    for names, m in state["inverse_mass_matrix"].items()}
        for names, saved in state["variance"].items():  # after the setter, which resets them
            welford = mass._adapt_scheme[names]
            welford._mean, welford._m2 = _to(saved["mean"], like.device), _to(saved["m2"], like.device)
            welford.n_samples = saved["n"]

    def _prepare(self, z: dict, info) -> None:
        """Set up a kernel where the chain needs one: at its first sweep, from the state given
        to :meth:`set_state`, after a resume without it (or in a fresh copy of the block), or
        for a call without sweep information."""
        restored, self._restored = self._restored, None
        if info is None:
            if self.kernel is None or self.kernel._t < self.kernel._warmup_steps:
                self._setup(z, 0)  # nothing to adapt over: Pyro's heuristic step size, unit mass
            self._next_sweep = None
            return
        if info.sweep != 0 and info.sweep != self._next_sweep:
            warnings.warn(f"NUTS sites {list(self.sites)}: the chain continues at sweep {info.sweep} "
                          f"without this block's adaptation state (the checkpoint does not hold "
                          f"it); adapting afresh over the {max(0, info.num_warmup - info.sweep)} "
                          f"warm-up sweeps left", RuntimeWarning, stacklevel=4)
        if info.sweep == 0 or info.sweep != self._next_sweep:
            self._setup(z, max(0, info.num_warmup - info.sweep) * self.nuts_steps)
        elif restored is not None:
            self._restore(z, restored)
        self._next_sweep = info.sweep + 1

    def __call__(self, state: dict, data, generator: torch.Generator, info=None) -> dict:
        seed = int(torch.randint(0, 2**62, (), generator=generator, device=generator.device))
        z = self.potential.bind(state, data.args, data.kwargs)
        device = generator.device
        devices = (device.index or 0,) if device.type == "cuda" else ()  # restored after, as on CPU
        with seeded(seed, devices), poutine.block():
            self._prepare(z, info)
            self.kernel.clear_cache()  # the other sites changed since the last sweep
            for _ in range(self.nuts_steps):
                z = self.kernel.sample(z)
        x = self.potential.constrained(z)
        return {k: x[k].detach().to(state[k].dtype) for k in self.sites}

    def check(self, state: dict, args: tuple, kwargs: dict, generator: torch.Generator) -> bool:
        """The potential energy against the program's log joint (:func:`.trace.log_joint`) at
        ``state`` and at a random point near it: ``U(z) + log |det dx/dz|`` must equal minus
        the log joint, and the gradient must be finite."""
        z0 = self.potential.bind(state, args, kwargs)
        points = [z0, {k: v + 0.1 * torch.randn(v.shape, generator=generator, dtype=v.dtype,
                                                 device=generator.device).to(v.device)
                       for k, v in z0.items()}]
        for z in points:
            z = {k: v.clone().requires_grad_(True) for k, v in z.items()}
            energy = self.potential(z)
            grads = torch.autograd.grad(energy, list(z.values()))
            with torch.no_grad():
                _, x, log_det = self.potential.run(z)
                joint = log_joint(self.model, args, kwargs, {**state, **x})
            scale = 1.0 + abs(float(joint))
            dtype = next(iter(x.values())).dtype
            if not (abs(float(energy.detach() + log_det + joint)) <= 10 * tolerance(dtype) * scale
                    and all(bool(torch.isfinite(g).all()) for g in grads)):
                return False
        return True


def _to(value, device):
    """``value`` on ``device`` when it is a tensor (Pyro's running variance starts at ``0.0``)."""
    return value.to(device) if isinstance(value, torch.Tensor) else value
