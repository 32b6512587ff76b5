"""Expose a Gibbs sweep as a ``pyro.infer.mcmc.MCMCKernel``.

This lets users drive a pyromodels sweep with ``pyro.infer.MCMC(kernel, num_samples=...,
num_chains=...)`` and convert the run with ``arviz.from_pyro``. It works around the driver's
assumptions: ``transforms`` is ``{}`` (the sweep works in constrained space), ``diagnostics()``
reports a ``divergences`` key (ArviZ reads it unguarded), the kernel pickles (for several
chains), and :func:`posterior_from_mcmc` casts the discrete sites that the driver promoted to
floating point back to integers.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
from pyro.infer.mcmc.mcmc_kernel import MCMCKernel

from ..checks import check_int
from .entry import bind_model
from .gibbs import GibbsBlock, GibbsSweep, SweepInfo
from .hooks import ModelBase
from .posterior import Posterior
from .seeding import derive_seed, make_generator, resolve_seed
from .threads import ThreadRule, using_threads

__all__ = ["GibbsKernel", "posterior_from_mcmc"]


class GibbsKernel(MCMCKernel):
    """A pyromodels Gibbs sweep as a Pyro MCMC kernel.

    The kernel takes a model the way :func:`~pyromodels.core.run_gibbs` does, and the
    program's arguments the way Pyro's kernels do, from ``MCMC.run(*args, **kwargs)``: a
    :class:`~pyromodels.core.Model` with ``init_state`` and ``gibbs_sweep`` hooks, or any Pyro
    program (a plain callable) with its blocks, whose chains start from a draw of the prior and
    whose blocks receive the arguments as one :class:`~pyromodels.core.bound.ModelArgs`.

    Args:
        model: a :class:`~pyromodels.core.Model`, or a Pyro program ``model(*args, **kwargs)``.
        blocks: a :class:`~pyromodels.core.GibbsSweep` or a sequence of
            :class:`~pyromodels.core.GibbsBlock`; needed for a plain callable, and replaces a
            model's ``gibbs_sweep``.
        seed: base seed. Each chain's generator is seeded from ``seed``, the number of
            ``setup`` calls this kernel object has seen, and ``torch.initial_seed()``: chains
            run one after another differ by the counter, and chains run in worker processes
            (where each worker holds its own copy of the kernel) differ by the per-chain
            global seed that ``pyro.infer.MCMC`` gives each worker. Seed Pyro
            (``pyro.set_rng_seed``) for reproducible multi-process runs.
        lp: whether ``logging()`` reports the log joint of the current state (costs one trace).
        num_threads: torch's threads during each sweep, as the engines choose them (see
            :mod:`~pyromodels.core.threads`): ``None`` applies the rule to the data (only ever
            lowering the caller's count), an integer sets exactly that many. The caller's
            count is restored after every sweep, so an interrupted ``MCMC.run`` leaves it.

    Raises:
        TypeError: a plain callable without blocks; ``blocks`` that are not Gibbs blocks.
        ModelSpecError: a model without the hooks the sweep needs.

    Example:
        >>> from pyro.infer import MCMC                                  # doctest: +SKIP
        >>> mcmc = MCMC(GibbsKernel(mixture, seed=0), num_samples=200, warmup_steps=100,
        ...             num_chains=2, mp_context="spawn")                 # doctest: +SKIP
        >>> mcmc.run(x)                                                   # doctest: +SKIP
        >>> mcmc = MCMC(GibbsKernel(regression, [slope_block], seed=0),
        ...             num_samples=200, warmup_steps=50)                 # doctest: +SKIP
        >>> mcmc.run(x, y=y)                                              # doctest: +SKIP
    """

    def __init__(self, model, blocks=None, *, seed: int | None = None, lp: bool = False,
                 num_threads: int | None = None):
        is_model = isinstance(model, ModelBase)
        if not is_model and not callable(model):
            raise TypeError(f"model must be a Pyro callable or a pyromodels Model, "
                            f"got {type(model).__name__}")
        if blocks is not None and not isinstance(blocks, GibbsSweep):
            if isinstance(blocks, GibbsBlock) or not isinstance(blocks, (list, tuple)):
                raise TypeError(f"blocks must be a GibbsSweep or a list of GibbsBlock, "
                                f"got {type(blocks).__name__}")
            blocks = GibbsSweep(blocks)
        if is_model:
            model._require("init_state", *(("gibbs_sweep",) if blocks is None else ()),
                           engine="gibbs")
        elif blocks is None:
            raise TypeError("GibbsKernel(model, blocks): a plain callable needs its Gibbs "
                            "blocks after the model")
        self.pyromodel = model
        self.model = model.model if is_model else model
        self.blocks = blocks
        self.seed = resolve_seed(seed)
        self.lp = bool(lp)
        self.num_threads = None if num_threads is None else check_int(num_threads, "num_threads",
                                                                      minimum=1)
        self._threads = None  # the thread rule for the data (set up with the chain)
        self.transforms = {}
        self._chain = -1
        self._program = None
        self._data = None
        self._sweep = None
        self._generator = None
        self._initial = None
        self._dtypes: dict[str, torch.dtype] = {}
        self._warmup_steps = 0
        self._sweeps = 0

    def setup(self, warmup_steps, *args, **kwargs):
        self._chain += 1
        self._warmup_steps, self._sweeps = int(warmup_steps), 0
        program, data, _ = bind_model("GibbsKernel", (), None, self.pyromodel, args, kwargs)
        self._program = program
        self._data = program.prepare(data)
        self._sweep = self.blocks if self.blocks is not None else program.gibbs_sweep(self._data)
        self._generator = make_generator(
            derive_seed(self.seed, "chain", self._chain, torch.initial_seed())
        )
        state = program.init_state(self._data, self._generator)
        self._sweep.check_covers(state)
        for block in self._sweep.blocks:  # a chain's stateful blocks start afresh
            if block.stateful:
                block.set_state(None)
        self._dtypes = {k: v.dtype for k, v in state.items()}
        self._initial = state
        self._threads = ThreadRule.of(self._data, self.num_threads)   # applied at each sweep

    @property
    def initial_params(self):
        return self._initial

    @initial_params.setter
    def initial_params(self, params):
        self._initial = params

    def sample(self, params):
        state = {k: v.to(self._dtypes[k]) if k in self._dtypes else v for k, v in params.items()}
        info = SweepInfo(self._sweeps, self._warmup_steps)  # for blocks that adapt in warm-up
        self._sweeps += 1
        with using_threads(self._threads(torch.get_num_threads())):
            return self._sweep(state, self._data, self._generator, info)

    def logging(self):
        out = OrderedDict(chain=self._chain)
        if self.lp and self._initial is not None:
            out["lp"] = f"{float(self._program.log_joint(self._data, self._initial)):.4g}"
        return out

    def diagnostics(self):
        return {"divergences": [], "acceptance rate": 1.0}

    @property
    def integer_sites(self) -> tuple[str, ...]:
        """Sites whose draws are integers (to cast back after ``MCMC`` promotes them)."""
        return tuple(k for k, d in self._dtypes.items() if not d.is_floating_point)


def _bound_model(kernel, args: tuple, kwargs: dict):
    """``(model, data)`` behind ``kernel`` and the arguments given to ``mcmc.run``: a set-up
    :class:`GibbsKernel`'s program and prepared data; else the program the kernel was built
    on, bound to the arguments as the engines bind them: the owner of a bound ``model`` method
    (``NUTS(mixture.model)``), or a plain callable (``NUTS(regression)``). ``(None, None)``
    where the kernel has no program (a ``potential_fn``) or the run no arguments."""
    if getattr(kernel, "_program", None) is not None:
        return kernel._program, kernel._data
    target = getattr(kernel, "pyromodel", None)
    if target is None:
        fn = getattr(kernel, "model", None)
        owner = getattr(fn, "__self__", None)
        target = owner if isinstance(owner, ModelBase) else fn
    if target is None or not callable(target) and not isinstance(target, ModelBase) or (
            not args and not kwargs):
        return None, None
    program, data, _ = bind_model("posterior_from_mcmc", (), None, target, args, kwargs)
    return program, data


def posterior_from_mcmc(mcmc, kernel: GibbsKernel | None = None, data=None) -> Posterior:
    """A :class:`Posterior` from a finished ``pyro.infer.MCMC`` run, integer sites restored.

    Works for a :class:`GibbsKernel` run and for Pyro's own ``NUTS`` / ``HMC`` built on a
    model's bound program (``NUTS(mixture.model)``) or on any Pyro program
    (``NUTS(regression)``, run as ``mcmc.run(x, y=y)``). For a :class:`GibbsKernel` the integer
    sites are cast back from the driver's floats. The model and its data are kept on the
    result, so that :meth:`Posterior.to_inference_data` builds the full ``InferenceData`` as
    for the library's own fits: the marginal pointwise ``log_likelihood`` group
    (``arviz.from_pyro`` leaves it out for models with enumerated sites), the observed and
    constant data, and on request the predictive groups. A program's arguments are the ones
    given to ``mcmc.run``, bound as the engines bind them (one
    :class:`~pyromodels.core.bound.ModelArgs` for a plain callable, see
    :mod:`pyromodels.core.entry`).

    Args:
        mcmc: a ``pyro.infer.MCMC`` after ``run``.
        kernel: its kernel (default ``mcmc.kernel``).
        data: the model's data, overriding the ones read from the run (for a
            :class:`~pyromodels.core.Model` whose program takes one argument).

    Example:
        >>> from pyro.infer import MCMC, NUTS                              # doctest: +SKIP
        >>> mcmc = MCMC(NUTS(mixture.model), num_samples=200, warmup_steps=100)  # doctest: +SKIP
        >>> mcmc.run(x)                                                    # doctest: +SKIP
        >>> idata = posterior_from_mcmc(mcmc).to_inference_data()          # doctest: +SKIP
    """
    kernel = kernel if kernel is not None else mcmc.kernel
    model, bound = _bound_model(kernel, tuple(getattr(mcmc, "_args", None) or ()),
                                dict(getattr(mcmc, "_kwargs", None) or {}))
    data = bound if data is None else data
    samples = mcmc.get_samples(group_by_chain=True)
    if isinstance(kernel, GibbsKernel):
        ints = set(kernel.integer_sites)
        samples = {k: v.round().long() if k in ints else v for k, v in samples.items()}
    diagnostics = mcmc.diagnostics()
    return Posterior(
        samples=dict(samples),
        method="mcmc",
        diagnostics={k: v for k, v in diagnostics.items() if k in ("divergences",)},
        attrs={"inference_library": "pyromodels", "kernel": type(kernel).__name__},
        model=model,
        data=data,
    )
