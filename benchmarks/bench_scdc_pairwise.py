r"""The pairwise worker model fitted to a million links, to convergence.

Data: ``N = 20,000`` items in ``K = 10`` equal-chance clusters, five workers with
``alpha = beta = 0.95, 0.9, 0.85, 0.8, 0.75`` (the paper's Fig. 3c workers), each judging
``200,000`` distinct item pairs drawn uniformly (:func:`pyromodels.data.simulate_random_pairs`),
so ``L = 1,000,000`` links; quick: ``N = 500``, ``K = 4``, ``2,000`` pairs a
worker. float64 (the fit runs with it as torch's default dtype, in which the model
prepares its data). No peer fits this model, so ``peers`` is ``{}``.

* ``scdc.pairwise_fit`` (seconds per call): a whole fit as a user runs it,
  ``PairwiseDawidSkene(K).fit(pairs, seed=..., n_init=1, progress=False)`` at the default
  tolerance (``tol=1e-8``, relative, on the evidence lower bound): the data prepared (the
  distinct pairs and their sparse structure, :mod:`pyromodels.scdc.pair_graph`), the start
  (k-means on the links' leading eigenvectors, settled on the links with trusted workers:
  :mod:`pyromodels.scdc.pairwise_start`), the coordinate-ascent steps
  until the bound settles, the outputs. Target: under 10 s to convergence on the two-core
  CPU, with its peak memory recorded.

  - without ``start`` in the label: in this process, after one untimed fit; checks below.
  - ``start=cold`` (full runs only): every call runs :data:`COLD_SCRIPT` in a fresh process
    (import ``pyromodels.scdc``, read the links from an ``.npz``, fit, write the labels); the
    figure is its wall time. The check ``cold_labels`` records the median phases
    (``import_s``, ``read_s``, ``fit_s``, ``read_to_labels_s``) of :data:`COLD_PHASE_RUNS`
    more processes and their peak resident memory (``peak_rss_mib``,
    ``peak_rss_before_fit_mib`` and the fit's own ``fit_peak_rss_mib``: see
    :mod:`benchmarks.fresh_process`), and passes when a fresh process gives the labels of
    the same fit in this process.
* ``scdc.pairwise_step`` (seconds per iteration): ``iterations_per_call = 10`` coordinate
  ascent steps (:func:`pyromodels.scdc.pairwise_cavi.cavi_step`) on the prepared data from
  the fit's start.

Checks (on the in-process fit): ``accuracy``, the clustering accuracy against the simulated clusters,
against 1 with tolerance 0.05; ``weights``, the workers' estimated ``logit alpha +
logit beta`` against ``2 logit(accuracy)``, to 0.3 (about three posterior standard deviations
at the full size; 1.0 in quick mode). The record's check also carries the number of steps
the fit took (``n_iter``) and whether it converged.
"""

from __future__ import annotations

import functools
import math
import os

import torch

from pyromodels.core.device import default_dtype
from pyromodels.core.seeding import derive_seed, make_generator
from pyromodels.data import simulate_random_pairs
from pyromodels.metrics import clustering_accuracy
from pyromodels.scdc import PairwiseDawidSkene
from pyromodels.scdc import pairwise_cavi as cavi

from .bench_bnp_dp import run_script, write_arrays
from .fresh_process import PEAK_RSS_SOURCE, fresh_record
from .harness import Case, agreement

__all__ = ["cases", "simulate", "cold_fit"]

SEED = 20261128
ACCURACIES = (0.95, 0.9, 0.85, 0.8, 0.75)
STEPS = 10
DTYPE = torch.float64
COLD_PHASE_RUNS = 3
#: ``python -c COLD_SCRIPT K SEED DATA OUT``; prints its phases and peak memory as JSON
COLD_SCRIPT = PEAK_RSS_SOURCE + """
import time
start = time.perf_counter()
import json, sys
import numpy as np
import torch
from pyromodels.core.device import default_dtype
from pyromodels.data.pairwise import PairwiseAnnotations
from pyromodels.scdc import PairwiseDawidSkene
imported = time.perf_counter()
K, seed, data, out = sys.argv[1:]
with np.load(data) as arrays:
    pairs = PairwiseAnnotations.from_arrays(arrays["i"], arrays["j"], arrays["w"], arrays["link"],
                                            num_items=int(arrays["n"]), num_workers=int(arrays["m"]))
read = time.perf_counter()
before, reset = peak_rss_mib(), reset_peak_rss()
with default_dtype(torch.float64):
    post = PairwiseDawidSkene(int(K)).fit(pairs, seed=int(seed), n_init=1, progress=False)
done = time.perf_counter()
memory = memory_figures(before, reset)
np.save(out, post.params["labels"].numpy())
print(json.dumps({"import_s": imported - start, "read_s": read - imported,
                  "fit_s": done - read, "read_to_labels_s": done - imported, **memory}))
"""


def simulate(num_items: int, num_clusters: int, pairs_per_worker: int):
    """Clusters drawn uniformly and two-coin judgements of uniform distinct pairs
    (:func:`pyromodels.data.simulate_random_pairs`); returns ``(pairs, z)``."""
    gen = make_generator(derive_seed(SEED, "clusters", num_items))
    z = torch.randint(num_clusters, (num_items,), generator=gen)
    pairs, _ = simulate_random_pairs(z, len(ACCURACIES), pairs_per_worker, alpha=ACCURACIES,
                                     beta=ACCURACIES, seed=derive_seed(SEED, "pairs", num_items))
    return pairs, z


class _Problem:
    """The data and model, built on the first call (the warm-up absorbs it)."""

    def __init__(self, num_items, num_clusters, pairs_per_worker):
        self.sizes = (num_items, num_clusters, pairs_per_worker)
        self.built = None

    def get(self):
        if self.built is None:
            pairs, z = simulate(*self.sizes)
            model = PairwiseDawidSkene(self.sizes[1])
            with default_dtype(DTYPE):
                data = model.prepare(pairs)
            self.built = (pairs, z, model, data)
        return self.built


def _fit(problem):
    pairs, _, model, _ = problem.get()
    with default_dtype(DTYPE):  # the data are prepared in the default dtype
        return model.fit(pairs, seed=SEED, n_init=1, progress=False)


def _steps(problem):
    _, _, model, data = problem.get()
    params = model.em_init(data, make_generator(SEED))
    for _ in range(STEPS):
        params = cavi.cavi_step(data, params)[0]
    return params


def _check(problem, quick):
    def check():
        _, z, _, _ = problem.get()
        post = _fit(problem)
        acc = clustering_accuracy(z.numpy(), post.params["labels"].numpy())
        truth = torch.tensor([2 * math.log(a / (1 - a)) for a in ACCURACIES])
        out = {"accuracy": agreement([acc], [1.0], 0.05, "the simulated clusters"),
               "weights": agreement(post.params["weights"], truth, 1.0 if quick else 0.3,
                                    "2 logit(accuracy)")}
        out["accuracy"].update(n_iter=int(post.diagnostics["n_iter"]),
                               converged=bool(post.diagnostics["converged"]))
        return out
    return check


@functools.cache
def _data_file(problem: _Problem) -> str:
    pairs = problem.get()[0]
    return write_arrays("scdc-pairwise", i=pairs.i_idx.numpy(), j=pairs.j_idx.numpy(),
                        w=pairs.worker_idx.numpy(), link=pairs.link.numpy(),
                        n=pairs.num_items, m=pairs.num_workers)


def cold_fit(problem: _Problem) -> tuple[dict, object]:
    """:data:`COLD_SCRIPT` on the problem's links in a fresh process: ``(phases and peak
    memory, labels)``."""
    data = _data_file(problem)
    out = os.path.join(os.path.dirname(data), "labels.npy")
    return run_script(COLD_SCRIPT, [str(problem.sizes[1]), str(SEED), data], out)


def _cold_check(problem: _Problem):
    def check():
        warm = _fit(problem).params["labels"].numpy()
        runs = [cold_fit(problem) for _ in range(COLD_PHASE_RUNS)]
        return {"cold_labels": fresh_record(
            runs, warm, "the same fit in this process (1 = a label differs)")}

    return check


def cases(quick: bool) -> list[Case]:
    """The fit and step cases at one size (tiny when ``quick``)."""
    N, K, per = (500, 4, 2_000) if quick else (20_000, 10, 200_000)
    problem = _Problem(N, K, per)
    params = {"N": N, "K": K, "M": len(ACCURACIES), "pairs_per_worker": per,
              "dtype": str(DTYPE).removeprefix("torch.")}
    repeats = 2 if quick else 5
    out = [
        Case("scdc.pairwise_fit", dict(params, iterations_per_call=1),
             ours=lambda: _fit(problem), metric="seconds", check=_check(problem, quick),
             warmup=1, repeats=repeats),
        Case("scdc.pairwise_step", dict(params, iterations_per_call=STEPS),
             ours=lambda: _steps(problem), metric="seconds_per_iter", iterations=STEPS,
             warmup=1, repeats=repeats),
    ]
    if not quick:
        out.append(Case("scdc.pairwise_fit", dict(params, iterations_per_call=1, start="cold"),
                        ours=lambda: cold_fit(problem), check=_cold_check(problem), warmup=1,
                        repeats=3))
    return out
