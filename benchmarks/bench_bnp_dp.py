r"""Gibbs sweeps of the Dirichlet-process mixture: Neal's Algorithms 2 and 3 and the blocked
sampler, warm and from a fresh process.

Data (:func:`simulate_clusters`): ``K`` isotropic Gaussian clusters drawn from the base measure
the samplers are given, ``NG(mu_0 = 0, kappa_0 = 0.01, alpha_0 = 50, beta_0 = 50)``: cluster
precisions ``lambda_k ~ Gamma(50, rate 50)`` (mean 1, sd 0.14) and means
``mu_k ~ N(0, (0.01 lambda_k)^{-1} I)`` (sd about 10, against a within-cluster sd of about 1,
so the clusters are well separated), labels uniform over the ``K`` clusters, DP concentration
``alpha = 1``. Full: ``N = 70,000``, ``d = 10``, ``K = 80``; quick: ``N = 2,000``, ``d = 4``,
``K = 8``. Every chain starts from the simulated partition, so it holds ``K`` clusters.

* ``bnp.dp_sweep`` with ``start=warm`` (seconds per sweep): ``iterations_per_call`` sweeps of
  one chain that carries on between calls (the check's sweep and the harness's warm-up call
  come first), its sweeps drawn from the iterators that check the inputs once, at the chain's
  start, as a fit runs them (:func:`pyromodels.bnp.chain_sweeps`,
  :func:`pyromodels.bnp.blocked_chain`; the same draws as calling
  :func:`pyromodels.bnp.sweep` or :func:`pyromodels.bnp.blocked_sweep` each time, without
  their per-call checks). ``sampler=alg2`` and ``alg3``: the compiled (numba) pass, float64;
  ``sampler=blocked``: ``T = 100`` sticks (quick: 20), float64 and float32. Check ``partition``: ``1 - ARI``
  between the chain's labels after one sweep and the simulated partition, to ``1e-3``, with
  the number of clusters recorded (the figure is for a chain at ``K`` clusters).
* ``bnp.dp_sweep`` with ``start=cold`` (seconds per call, full CPU runs and CUDA runs): every
  call runs :data:`COLD_SCRIPT` in a fresh Python process: import ``pyromodels.bnp``, read the
  data (``.npz``, written once to a temporary folder), build the state from the data and the
  simulated labels, run the first sweep, write its labels. The figure is the process's wall
  time (interpreter start, imports and numba's start-up included). The check ``cold_labels``
  runs :data:`COLD_PHASE_RUNS` more processes and records the medians of the phases each
  process times itself (``import_s``, ``read_s``, ``init_s``, ``sweep_s`` and
  ``read_to_labels_s``: data in to the first sweep's labels); it passes when the fresh
  process's labels equal those of the same seed in this process.

No peer samples this model one sweep at a time (scikit-learn's ``BayesianGaussianMixture`` is
variational), so these cases have no peer; :mod:`benchmarks.bench_bnp_fit` compares whole fits
with it. With ``--device cuda`` only the blocked sampler is registered, on the GPU (warm and
cold, float64 and float32); the compiled passes of Algorithms 2 and 3 are CPU code.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import torch
from sklearn.metrics import adjusted_rand_score

from pyromodels.bnp import (
    blocked_chain,
    blocked_init,
    blocked_sweep,
    chain_sweeps,
    init_state,
    sweep,
)
from pyromodels.conjugate import NormalGamma
from pyromodels.core.seeding import derive_seed, make_generator

from .bench_reference_mixture import _lazy
from .harness import Case, agreement

__all__ = ["cases", "simulate_clusters", "first_sweep_labels", "cold_sweep", "run_script",
           "write_arrays", "PRIOR", "ALPHA"]

SEED = 20261125
#: the base measure (kappa_0, alpha_0, beta_0), with mu_0 = 0; the data are drawn from it
PRIOR = (0.01, 50.0, 50.0)
ALPHA = 1.0
FULL = (70_000, 10, 80)  # N, d, K
QUICK = (2_000, 4, 8)
TRUNCATION = {False: 100, True: 20}  # by quick
SAMPLERS = ("alg2", "alg3", "blocked")
#: sweeps per timed call, by (sampler family, quick)
ITERATIONS = {("neal", False): 5, ("blocked", False): 20, ("neal", True): 2, ("blocked", True): 2}
#: 1 - ARI after one sweep from the simulated partition: a chain at the simulated K keeps it
#: but for a handful of points (1e-3 is about 35 of 70,000 points moved); a collapsed or
#: exploded partition is far above it
PARTITION_TOLERANCE = 1e-3
COLD_PHASE_RUNS = 3
#: sweeps a warm chain may run (far more than a benchmark asks of it)
CHAIN_SWEEPS = 10**6
#: ``python -c COLD_SCRIPT SAMPLER DTYPE DEVICE TRUNCATION ALPHA SEED DATA OUT``; it prints
#: its phases as JSON (``import_s`` from its first line: interpreter start excluded)
COLD_SCRIPT = """
import time
start = time.perf_counter()
import json, sys
import numpy as np
import torch
from pyromodels.bnp import blocked_init, blocked_sweep, init_state, sweep
from pyromodels.conjugate import NormalGamma
imported = time.perf_counter()
sampler, dtype, device, truncation, alpha, seed, data, out = sys.argv[1:]
alpha, dtype = float(alpha), getattr(torch, dtype)
with np.load(data) as arrays:
    z = torch.from_numpy(arrays["z"]).to(device=device, dtype=dtype)
    labels = torch.from_numpy(arrays["labels"]).to(device)
    hyper = torch.from_numpy(arrays["prior"]).to(device)
read = time.perf_counter()
prior = NormalGamma(hyper[:-3].to(dtype), hyper[-3].to(dtype), hyper[-2].to(dtype),
                    hyper[-1].to(dtype))
gen = torch.Generator(device=device)
gen.manual_seed(int(seed))
if sampler == "blocked":
    state = blocked_init(z, labels, prior, alpha, int(truncation), gen)
    built = time.perf_counter()
    result = blocked_sweep(z, state, prior, gen).labels.cpu()
else:
    state = init_state(z, labels, prior, gen, algorithm=sampler)
    built = time.perf_counter()
    result = sweep(z, state, prior, alpha, gen, algorithm=sampler).assignments
if device.startswith("cuda"):
    torch.cuda.synchronize()
done = time.perf_counter()
np.save(out, result.numpy())
print(json.dumps({"import_s": imported - start, "read_s": read - imported,
                  "init_s": built - read, "sweep_s": done - built,
                  "read_to_labels_s": done - imported}))
"""


# ------------------------------------------------------------------------------ data
def simulate_clusters(N: int, d: int, K: int, seed: int) -> tuple[torch.Tensor, torch.Tensor,
                                                                  NormalGamma]:
    """``(z, labels, prior)``: ``N`` float64 points of ``K`` isotropic clusters drawn from
    ``prior = NG(0, *PRIOR)`` (means and precisions), labels uniform over the clusters.

    Example:
        >>> z, labels, prior = simulate_clusters(100, 2, 3, seed=0)
        >>> z.shape, int(labels.max()) < 3, prior.dim
        (torch.Size([100, 2]), True, 2)
    """
    gen = make_generator(seed)
    kappa, a, b = (torch.tensor(v, dtype=torch.float64) for v in PRIOR)
    prior = NormalGamma(torch.zeros(d, dtype=torch.float64), kappa, a, b)
    mu, lam = prior.sample(gen, (K,))
    labels = torch.randint(K, (N,), generator=gen)
    noise = torch.randn(N, d, generator=gen, dtype=torch.float64)
    return mu[labels] + torch.rsqrt(lam)[labels].unsqueeze(-1) * noise, labels, prior


@functools.cache
def _data(N: int, d: int, K: int):
    return simulate_clusters(N, d, K, derive_seed(SEED, "clusters", N, d, K))


def _prior_as(prior: NormalGamma, dtype: torch.dtype, device) -> NormalGamma:
    return NormalGamma(*(p.to(device=device, dtype=dtype)
                         for p in (prior.loc, prior.kappa, prior.a, prior.b)))


def _chain_seed(sampler: str, dtype: str, start: str) -> int:
    return derive_seed(SEED, "chain", sampler, dtype, start) % 2**62


def first_sweep_labels(z, labels, prior, sampler: str, truncation: int, seed: int):
    """The labels after building the state from ``labels`` and one sweep, in this process
    (what :data:`COLD_SCRIPT` does in a fresh one)."""
    gen = make_generator(seed, z.device)
    if sampler == "blocked":
        state = blocked_init(z, labels, prior, ALPHA, truncation, gen)
        return blocked_sweep(z, state, prior, gen).labels.cpu()
    state = init_state(z, labels, prior, gen, algorithm=sampler)
    return sweep(z, state, prior, ALPHA, gen, algorithm=sampler).assignments


# ------------------------------------------------------------------------------ warm chains
class _Chain:
    """One chain that the check and the timed calls carry on."""

    def __init__(self, size, sampler: str, dtype: str, truncation: int, device: str):
        z, labels, prior = _data(*size)
        self.sampler, self.truncation = sampler, truncation
        self.z = z.to(device=device, dtype=getattr(torch, dtype))
        self.prior = _prior_as(prior, self.z.dtype, device)
        self.gen = make_generator(_chain_seed(sampler, dtype, "warm"), device)
        labels = labels.to(device)
        if sampler == "blocked":
            self.state = blocked_init(self.z, labels, self.prior, ALPHA, truncation, self.gen)
            self._steps = blocked_chain(self.z, self.state, self.prior, self.gen, CHAIN_SWEEPS)
        else:
            self.state = init_state(self.z, labels, self.prior, self.gen, algorithm=sampler)
            self._steps = chain_sweeps(self.z, self.state, self.prior, ALPHA, self.gen,
                                       CHAIN_SWEEPS, sampler)

    def step(self, sweeps: int) -> None:
        for _ in range(sweeps):
            if self.sampler == "blocked":
                self.state = next(self._steps)
            else:
                next(self._steps)

    @property
    def labels(self) -> torch.Tensor:
        if self.sampler == "blocked":
            return self.state.labels.cpu()
        return self.state.assignments


@functools.cache
def _chain(size, sampler, dtype, truncation, device) -> _Chain:
    return _Chain(size, sampler, dtype, truncation, device)


def _warm(size, sampler, dtype, truncation, device, iterations):
    return _lazy(lambda: functools.partial(
        _chain(size, sampler, dtype, truncation, device).step, iterations))


def _warm_check(size, sampler, dtype, truncation, device):
    def check():
        chain = _chain(size, sampler, dtype, truncation, device)
        chain.step(1)
        labels = chain.labels
        truth = _data(*size)[1]
        ari = adjusted_rand_score(truth.numpy(), labels.numpy())
        rec = agreement([1.0 - ari], [0.0], PARTITION_TOLERANCE,
                        "the simulated partition (1 - ARI after one sweep)")
        rec["num_clusters"] = int(torch.unique(labels).numel())
        rec["simulated_clusters"] = size[2]
        return {"partition": rec}

    return check


# ------------------------------------------------------------------------------ fresh processes
def write_arrays(prefix: str, **arrays) -> str:
    """Save ``arrays`` to a ``.npz`` file in a temporary folder removed at exit; its path."""
    folder = tempfile.mkdtemp(prefix=f"pyromodels-bench-{prefix}-")
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, "data.npz")
    np.savez(path, **arrays)
    return path


@functools.cache
def _data_file(N: int, d: int, K: int) -> str:
    z, labels, prior = _data(N, d, K)
    hyper = torch.cat([prior.loc, torch.stack([prior.kappa, prior.a, prior.b])])
    return write_arrays("dp", z=z.numpy(), labels=labels.numpy(), prior=hyper.numpy())


def run_script(script: str, args: list[str], out: str) -> tuple[dict, np.ndarray]:
    """Run ``python -c script *args`` in a fresh process with this process's thread count;
    return ``(the phases it prints as JSON on its last line, the array it saved to out)``."""
    threads = str(torch.get_num_threads())
    env = {**os.environ, **{var: threads for var in (
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")}}
    done = subprocess.run([sys.executable, "-c", script, *args, out], capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the fresh process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1]), np.load(out)


def cold_sweep(size, sampler: str, dtype: str, truncation: int, device: str):
    """:data:`COLD_SCRIPT` in a fresh process on the problem's data: ``(phases, labels)``."""
    data = _data_file(*size)
    out = os.path.join(os.path.dirname(data), f"labels-{sampler}-{dtype}.npy")
    seed = _chain_seed(sampler, dtype, "cold")
    return run_script(COLD_SCRIPT, [sampler, dtype, device, str(truncation), str(ALPHA),
                                    str(seed), data], out)


def cold_record(runs: list, warm, against: str) -> dict:
    """The agreement record of fresh processes against this process: ``runs`` holds each
    process's ``(phases, result)``; the first process's result is compared with ``warm``
    entry by entry (1 = an entry differs), and ``phases`` is the median of every phase the
    processes timed themselves."""
    differ = (np.asarray(runs[0][1]) != np.asarray(warm)).astype(np.float64)
    rec = agreement(differ, np.zeros_like(differ), 0.0, against)
    rec["phases"] = {key: statistics.median(r[0][key] for r in runs) for key in runs[0][0]}
    return rec


def _cold_check(size, sampler, dtype, truncation, device):
    def check():
        z, labels, prior = _data(*size)
        z = z.to(device=device, dtype=getattr(torch, dtype))
        warm = first_sweep_labels(z, labels.to(device), _prior_as(prior, z.dtype, device),
                                  sampler, truncation, _chain_seed(sampler, dtype, "cold"))
        runs = [cold_sweep(size, sampler, dtype, truncation, device)
                for _ in range(COLD_PHASE_RUNS)]
        return {"cold_labels": cold_record(
            runs, warm.numpy(), "the same seed's first sweep in this process (1 = a label differs)")}

    return check


# ------------------------------------------------------------------------------ cases
def _sweep_cases(size, quick: bool, device: str, samplers, dtypes) -> list[Case]:
    n, d, k = size
    truncation = TRUNCATION[quick]
    out = []
    for sampler in samplers:
        family = "blocked" if sampler == "blocked" else "neal"
        for dtype in (dtypes if sampler == "blocked" else ("float64",)):
            base = {"N": n, "d": d, "K": k, "sampler": sampler}
            if sampler == "blocked":
                base["T"] = truncation
            base["dtype"] = dtype
            iterations = ITERATIONS[(family, quick)]
            key = (size, sampler, dtype, truncation, device)
            out.append(Case(
                "bnp.dp_sweep", {**base, "start": "warm", "iterations_per_call": iterations},
                ours=_warm(*key, iterations), metric="seconds_per_iter", iterations=iterations,
                check=_warm_check(*key), warmup=1, repeats=2 if quick else 5))
            if not quick:
                out.append(Case("bnp.dp_sweep", {**base, "start": "cold"},
                                ours=lambda key=key: cold_sweep(*key), check=_cold_check(*key),
                                warmup=1, repeats=3))
    return out


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The sweep cases: Algorithms 2 and 3 and the blocked sampler on the CPU; the blocked
    sampler alone on a CUDA device."""
    dev = torch.device("cpu") if device is None else device
    size = QUICK if quick else FULL
    if dev.type == "cuda":
        return _sweep_cases(size, quick, str(dev), ("blocked",), ("float64", "float32"))
    return _sweep_cases(size, quick, "cpu", SAMPLERS, ("float64", "float32"))
