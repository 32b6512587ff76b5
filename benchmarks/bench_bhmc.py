r"""BHMC and RBHMC sweeps, warm and from a fresh process, on the paper's two data sets and on
synthetic data of growing size.

Data and hyperparameters (``K = 20`` components, :math:`\varepsilon_0 = 1`, :math:`\nu_0 = 1`):

* ``animals``: the 33 animals, PCA 7 (:func:`pyromodels.experiments.bhmc.data.animals`), the
  paper's Animals prior (alpha 0.4, gamma 1, gamma0 0.85, ``L = 3``);
* ``fashion100``: 100 Fashion-MNIST images, PCA 10
  (:func:`pyromodels.experiments.bhmc.data.fashion_mnist`), the paper's MNIST-fashion prior
  (alpha 0.2, gamma 1.5, gamma0 0.85, ``L = 4``);
* ``synthetic``: ``N`` in {100, 1,000, 10,000} draws of ``D = 10`` from the model itself under
  the MNIST-fashion prior (:meth:`pyromodels.bhmc.BHMC.simulate`), for how a sweep's cost
  grows with ``N``.

``sampler=bhmc`` is :func:`pyromodels.bhmc.sweep`; ``sampler=rbhmc`` is
:func:`pyromodels.bhmc.rbhmc_sweep` at ``C`` in {0.01, 0.1, 1} (synthetic: 0.01).

* ``bhmc.sweep`` with ``start=warm`` (seconds per sweep): a chain from the sampler's own
  starting state (``init_state`` / ``init_rbhmc_state``) run :data:`BURN_IN` untimed sweeps,
  then ``iterations_per_call`` sweeps a call, carrying on between calls. Checks on the
  chain's state after the check's sweep: ``leaf_log_ratio`` (the path step's likelihood ratio
  from shifted likelihoods against ``torch.logsumexp``, every datum between its leaf and
  another) and, for RBHMC, ``margins`` (the incremental margin cache after a sweep against
  :func:`pyromodels.bhmc.margin_violations` recomputed in full).
* ``bhmc.sweep`` with ``start=cold`` (seconds per call, full runs only): every call runs
  :data:`COLD_SCRIPT` in a fresh Python process: import ``pyromodels.bhmc``, read the data
  (``.npz``), build the starting state, run one sweep, write the paths. The figure is the
  process's wall time (interpreter start and imports included). The check ``cold_paths``
  records the median phases of :data:`COLD_PHASE_RUNS` more processes and passes when the
  fresh process's paths and labels equal those of the same seed in this process.

No peer samples these models, so the cases have none.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import torch

from pyromodels.bhmc import (
    BHMC,
    BHMCPrior,
    init_rbhmc_state,
    init_state,
    margin_violations,
    rbhmc_path_step,
    rbhmc_sweep,
    sample_eta,
    sweep,
)
from pyromodels.bhmc.joint import component_log_likelihoods
from pyromodels.bhmc.margins import MarginCache
from pyromodels.bhmc.sampler import leaf_log_ratio, shifted_likelihoods
from pyromodels.core.seeding import derive_seed, make_generator

from .bench_bnp_dp import cold_record, run_script, write_arrays
from .bench_reference_mixture import _lazy
from .harness import Case, agreement

__all__ = ["cases", "problem", "first_sweep", "cold_sweep", "NUM_COMPONENTS", "EPS0"]

SEED = 20261125
NUM_COMPONENTS = 20
EPS0 = 1.0
C_VALUES = (0.01, 0.1, 1.0)
SYNTHETIC_N = (100, 1_000, 10_000)
SYNTHETIC_D = 10
#: ``(N, D)`` of the two real sets (their loaders' defaults)
SIZES = {"animals": (33, 7), "fashion100": (100, 10)}
COLD_PHASE_RUNS = 3
#: fast path against its oracle: both sides are float64 sums of a few terms
TOLERANCE = 1e-9
#: ``python -c COLD_SCRIPT SAMPLER C EPS0 ALPHA GAMMA GAMMA0 DEPTH K SEED DATA OUT``; it prints
#: its phases as JSON and saves the paths after one sweep with the labels as a last column
COLD_SCRIPT = """
import time
start = time.perf_counter()
import json, sys
import numpy as np
import torch
from pyromodels.bhmc import BHMCPrior, init_rbhmc_state, init_state, rbhmc_sweep, sweep
imported = time.perf_counter()
sampler, C, eps0, alpha, gamma, gamma0, depth, K, seed, data, out = sys.argv[1:]
with np.load(data) as arrays:
    x = torch.from_numpy(arrays["x"])
read = time.perf_counter()
prior = BHMCPrior(alpha=float(alpha), gamma=float(gamma), gamma0=float(gamma0),
                  depth=int(depth), num_components=int(K))
gen = torch.Generator().manual_seed(int(seed))
if sampler == "rbhmc":
    state = init_rbhmc_state(x, prior, gen)
    built = time.perf_counter()
    rbhmc_sweep(x, state, prior, float(C), float(eps0), gen)
else:
    state = init_state(x, prior, gen)
    built = time.perf_counter()
    sweep(x, state, prior, gen)
done = time.perf_counter()
np.save(out, torch.cat([state.tree.paths, state.c.unsqueeze(1)], 1).numpy())
print(json.dumps({"import_s": imported - start, "read_s": read - imported,
                  "init_s": built - read, "sweep_s": done - built,
                  "read_to_sweep_s": done - imported}))
"""


# ------------------------------------------------------------------------------ data
@functools.cache
def problem(data: str, N: int | None = None) -> tuple[torch.Tensor, BHMCPrior]:
    """``(x, prior)`` of a data set: ``"animals"``, ``"fashion100"`` or ``"synthetic"``
    (``N`` draws from the model under the MNIST-fashion prior).

    Example:
        >>> x, prior = problem("synthetic", 50)
        >>> tuple(x.shape), prior.depth
        ((50, 10), 4)
    """
    from pyromodels.experiments.bhmc.data import animals, fashion_mnist

    if data == "animals":
        return animals().x.to(torch.float64), BHMCPrior.paper_preset("animals", NUM_COMPONENTS)
    prior = BHMCPrior.paper_preset("fashion", NUM_COMPONENTS)
    if data == "fashion100":
        return fashion_mnist().x.to(torch.float64), prior
    gen = make_generator(derive_seed(SEED, "synthetic", N))
    return BHMC(prior).simulate(N, SYNTHETIC_D, gen).x.to(torch.float64), prior


def _chain_seed(*key) -> int:
    return derive_seed(SEED, "chain", *map(str, key)) % 2**62


def _init(x, prior, sampler, gen):
    return init_rbhmc_state(x, prior, gen) if sampler == "rbhmc" else init_state(x, prior, gen)


def _sweep(x, state, prior, sampler, C, gen):
    if sampler == "rbhmc":
        rbhmc_sweep(x, state, prior, C, EPS0, gen)
    else:
        sweep(x, state, prior, gen)


def first_sweep(data, N, sampler, C) -> np.ndarray:
    """The paths (and labels as a last column) after the starting state and one sweep, in
    this process (what :data:`COLD_SCRIPT` does in a fresh one)."""
    x, prior = problem(data, N)
    gen = torch.Generator().manual_seed(_chain_seed(data, N, sampler, C, "cold"))
    state = _init(x, prior, sampler, gen)
    _sweep(x, state, prior, sampler, C, gen)
    return torch.cat([state.tree.paths, state.c.unsqueeze(1)], 1).numpy()


# ------------------------------------------------------------------------------ warm chains
def burn_in(N: int) -> int:
    """Untimed sweeps before a warm chain's first call: about 2,000 datum moves, 1 to 50."""
    return max(1, min(50, 2000 // N))


class _Chain:
    def __init__(self, data, N, sampler, C):
        self.x, self.prior = problem(data, N)
        self.sampler, self.C = sampler, C
        self.gen = torch.Generator().manual_seed(_chain_seed(data, N, sampler, C, "warm"))
        self.state = _init(self.x, self.prior, sampler, self.gen)
        self.step(burn_in(self.x.shape[0]))

    def step(self, sweeps: int) -> None:
        for _ in range(sweeps):
            _sweep(self.x, self.state, self.prior, self.sampler, self.C, self.gen)


@functools.cache
def _chain(data, N, sampler, C) -> _Chain:
    return _Chain(data, N, sampler, C)


def _margins_after_moves(x, state, prior, C, seed) -> dict:
    """Every datum's path step and the eta block on a copy of ``state`` (its own generator,
    so the chain is untouched) with one margin cache kept in step, then the cache against
    the full recomputation."""
    state, gen = state.copy(), torch.Generator().manual_seed(seed)
    cache = MarginCache(x, state.tree, state.eta, EPS0)
    loglik = component_log_likelihoods(x, state.theta)
    for n in range(x.shape[0]):
        rbhmc_path_step(loglik[n], x, state, n, prior, C, EPS0, gen, margins=cache)
    sample_eta(x, state, prior, C, EPS0, gen, margins=cache)
    zeta, level, _ = margin_violations(x, state.tree, state.eta, EPS0)
    eff = torch.where(level >= 0, zeta, torch.zeros_like(zeta))
    rec = agreement(cache.effective().numpy(), eff.numpy(), TOLERANCE,
                    "joint.margin_violations recomputed in full after a path and an eta block")
    rec["same_argmax"] = bool(np.array_equal(cache.level, level.numpy()))
    rec["passed"] = rec["passed"] and rec["same_argmax"]
    return rec


def _warm_check(key):
    def check():
        chain = _chain(*key)
        chain.step(1)
        x, state = chain.x, chain.state
        ll = component_log_likelihoods(x, state.theta)
        lik = shifted_likelihoods(ll)
        leaves = state.tree.leaves
        fast, exact = [], []
        for n, leaf in enumerate(state.tree.paths[:, -1].tolist()):
            other = leaves[(leaves.index(leaf) + 1) % len(leaves)]
            new, old = state.weights[other], state.weights[leaf]
            fast.append(leaf_log_ratio(lik[n], new, old))
            exact.append(float(torch.logsumexp(torch.log(new) + ll[n], 0)
                               - torch.logsumexp(torch.log(old) + ll[n], 0)))
        out = {"leaf_log_ratio": agreement(fast, exact, TOLERANCE,
                                           "torch.logsumexp of log weights + log likelihoods")}
        out["leaf_log_ratio"]["num_nodes"] = state.tree.num_nodes
        if chain.sampler == "rbhmc":
            out["margins"] = _margins_after_moves(x, state, chain.prior, chain.C,
                                                  _chain_seed(*key, "check"))
        return out

    return check


# ------------------------------------------------------------------------------ fresh processes
@functools.cache
def _data_file(data, N) -> str:
    return write_arrays("bhmc", x=problem(data, N)[0].numpy())


def cold_sweep(data, N, sampler, C):
    """:data:`COLD_SCRIPT` in a fresh process: ``(phases, paths and labels)``."""
    x, prior = problem(data, N)
    path = _data_file(data, N)
    out = os.path.join(os.path.dirname(path), f"first-{sampler}-{C}.npy")
    args = [sampler, str(C), str(EPS0), str(prior.alpha), str(prior.gamma), str(prior.gamma0),
            str(prior.depth), str(prior.num_components),
            str(_chain_seed(data, N, sampler, C, "cold")), path]
    return run_script(COLD_SCRIPT, args, out)


def _cold_check(key):
    def check():
        warm = first_sweep(*key)
        runs = [cold_sweep(*key) for _ in range(COLD_PHASE_RUNS)]
        return {"cold_paths": cold_record(
            runs, warm, "the same seed's first sweep in this process (1 = an entry differs)")}

    return check


# ------------------------------------------------------------------------------ cases
def _cases(data, N, samplers, quick: bool) -> list[Case]:
    n, d = SIZES.get(data, (N, SYNTHETIC_D))  # labels without reading the data
    prior = BHMCPrior.paper_preset("animals" if data == "animals" else "fashion", NUM_COMPONENTS)
    out = []
    for sampler, C in samplers:
        base = {"data": data, "N": n, "D": d, "L": prior.depth, "K": prior.num_components,
                "sampler": sampler}
        if sampler == "rbhmc":
            base["C"] = C
        key = (data, N, sampler, C)
        iterations = 2 if quick else max(1, min(20, 2000 // n))
        out.append(Case("bhmc.sweep", {**base, "start": "warm", "iterations_per_call": iterations},
                        ours=_lazy(lambda key=key, it=iterations: functools.partial(
                            _chain(*key).step, it)),
                        metric="seconds_per_iter", iterations=iterations,
                        check=_warm_check(key), warmup=1, repeats=2 if quick else 5))
        if not quick:
            out.append(Case("bhmc.sweep", {**base, "start": "cold"},
                            ours=lambda key=key: cold_sweep(*key), check=_cold_check(key),
                            warmup=1, repeats=3))
    return out


def cases(quick: bool) -> list[Case]:
    """The sweep cases (module docstring); quick: the animals, BHMC and RBHMC at C = 0.1."""
    if quick:
        return _cases("animals", None, (("bhmc", None), ("rbhmc", 0.1)), quick=True)
    paper = (("bhmc", None),) + tuple(("rbhmc", C) for C in C_VALUES)
    out = _cases("animals", None, paper, quick=False) + _cases("fashion100", None, paper, False)
    for N in SYNTHETIC_N:
        out += _cases("synthetic", N, (("bhmc", None), ("rbhmc", 0.01)), quick=False)
    return out
