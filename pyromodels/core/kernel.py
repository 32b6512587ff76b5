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

from .posterior import Posterior
from .seeding import derive_seed, make_generator, resolve_seed

__all__ = ["GibbsKernel", "posterior_from_mcmc"]


class GibbsKernel(MCMCKernel):
    """A pyromodels Gibbs sweep as a Pyro MCMC kernel.

    Args:
        model: a model object with ``init_state`` and ``gibbs_sweep`` hooks.
        seed: base seed. Each chain's generator is seeded from ``seed``, the number of
            ``setup`` calls this kernel object has seen, and ``torch.initial_seed()``: chains
            run one after another differ by the counter, and chains run in worker processes
            (where each worker holds its own copy of the kernel) differ by the per-chain
            global seed that ``pyro.infer.MCMC`` gives each worker. Seed Pyro
            (``pyro.set_rng_seed``) for reproducible multi-process runs.
        lp: whether ``logging()`` reports the log joint of the current state (costs one trace).

    Example:
        >>> from pyro.infer import MCMC                                  # doctest: +SKIP
        >>> mcmc = MCMC(GibbsKernel(mixture, seed=0), num_samples=200, warmup_steps=100,
        ...             num_chains=2, mp_context="spawn")                 # doctest: +SKIP
        >>> mcmc.run(x)                                                   # doctest: +SKIP
    """

    def __init__(self, model, seed: int | None = None, lp: bool = False):
        model._require("init_state", "gibbs_sweep", engine="gibbs")
        self.pyromodel = model
        self.model = model.model
        self.seed = resolve_seed(seed)
        self.lp = bool(lp)
        self.transforms = {}
        self._chain = -1
        self._data = None
        self._sweep = None
        self._generator = None
        self._initial = None
        self._dtypes: dict[str, torch.dtype] = {}

    def setup(self, warmup_steps, data, *args, **kwargs):
        self._chain += 1
        self._data = self.pyromodel.prepare(data)
        self._sweep = self.pyromodel.gibbs_sweep(self._data)
        self._generator = make_generator(
            derive_seed(self.seed, "chain", self._chain, torch.initial_seed())
        )
        state = self.pyromodel.init_state(self._data, self._generator)
        self._sweep.check_covers(state)
        self._dtypes = {k: v.dtype for k, v in state.items()}
        self._initial = state

    @property
    def initial_params(self):
        return self._initial

    @initial_params.setter
    def initial_params(self, params):
        self._initial = params

    def sample(self, params):
        state = {k: v.to(self._dtypes[k]) if k in self._dtypes else v for k, v in params.items()}
        return self._sweep(state, self._data, self._generator)

    def logging(self):
        out = OrderedDict(chain=self._chain)
        if self.lp and self._initial is not None:
            out["lp"] = f"{float(self.pyromodel.log_joint(self._data, self._initial)):.4g}"
        return out

    def diagnostics(self):
        return {"divergences": [], "acceptance rate": 1.0}

    @property
    def integer_sites(self) -> tuple[str, ...]:
        """Sites whose draws are integers (to cast back after ``MCMC`` promotes them)."""
        return tuple(k for k, d in self._dtypes.items() if not d.is_floating_point)


def _bound_model(kernel):
    """The pyromodels model behind ``kernel``: a :class:`GibbsKernel`'s, or the owner of the
    bound ``model`` method that an HMC/NUTS kernel was built on (``NUTS(mixture.model)``)."""
    found = getattr(kernel, "pyromodel", None)
    if found is None:
        fn = getattr(kernel, "model", None)
        owner = getattr(fn, "__self__", None)
        if owner is not None and callable(getattr(owner, "log_likelihood_pointwise", None)):
            found = owner
    return found


def posterior_from_mcmc(mcmc, kernel: GibbsKernel | None = None, data=None) -> Posterior:
    """A :class:`Posterior` from a finished ``pyro.infer.MCMC`` run, integer sites restored.

    Works for a :class:`GibbsKernel` run and for Pyro's own ``NUTS`` / ``HMC`` built on a
    model's bound program (``NUTS(mixture.model)``). For a :class:`GibbsKernel` the integer
    sites are cast back from the driver's floats. The model and ``data`` (default: the data the
    kernel was set up with, or the first argument given to ``mcmc.run``) are kept on the result,
    so that :meth:`Posterior.to_inference_data` adds the marginal pointwise
    ``log_likelihood`` group, as for the library's own fits (``arviz.from_pyro`` leaves it out
    for models with enumerated sites).

    Example:
        >>> from pyro.infer import MCMC, NUTS                              # doctest: +SKIP
        >>> mcmc = MCMC(NUTS(mixture.model), num_samples=200, warmup_steps=100)  # doctest: +SKIP
        >>> mcmc.run(x)                                                    # doctest: +SKIP
        >>> idata = posterior_from_mcmc(mcmc).to_inference_data()          # doctest: +SKIP
    """
    kernel = kernel if kernel is not None else mcmc.kernel
    if data is None:
        data = getattr(kernel, "_data", None)
    if data is None and getattr(mcmc, "_args", None):
        data = mcmc._args[0]
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
        model=_bound_model(kernel),
        data=data,
    )
