"""``pyromodels fit scdc`` and ``pyromodels fit observed-bayes-scdc``.

Both read the features (a numeric CSV, one row per point) and, with ``--pairs``, the workers'
pairwise links (a CSV with columns ``item_a``, ``item_b``, ``worker``, ``link``; the items are
row numbers of the features). Without ``--data`` they fit the paper's pinwheel (500 points)
with the paper's annotations: 20 simulated workers, each judging 49 pairs along a block of 50
of 100 annotated points, at ``alpha = beta = 0.9``.

The report of a fit holds, besides the generic one, ``labels.csv`` (each point's cluster, in
the order of the data), ``workers.csv`` (each worker's sensitivity ``alpha``, specificity
``beta`` and weight ``logit alpha + logit beta``: 0 at chance, 4.39 at 0.9 and 0.9), a scatter
of the data by cluster, and a warning when a worker's weight is at or below 0 (its links then
count against what it says; see :func:`~pyromodels.report.fit_warnings.pairwise_worker_warnings`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from ...data.pairwise import PairwiseAnnotations
from ...registry import FitOutput, register
from ..catalogue import OBSERVED_BAYES_SCDC

__all__ = ["PairedPoints", "loader", "read_pairs", "pinwheel_with_links", "scdc_factory",
           "fit_scdc", "describe_scdc", "observed_factory", "fit_observed", "describe_observed",
           "best_draw_labels", "observed_loader",
           "WORKERS_FILE", "ENTRY"]

#: the worker table of a fit's report
WORKERS_FILE = "workers.csv"
#: the default number of clusters (the paper's pinwheel K)
DEFAULT_CLUSTERS = 15


@dataclass(frozen=True)
class PairedPoints:
    """What ``fit`` reads: the features and the links between them.

    Attributes:
        x: ``(N, d)`` float64 features.
        pairs: the links (item codes are row numbers of ``x``), or ``None``.
    """

    x: np.ndarray
    pairs: PairwiseAnnotations | None


def read_pairs(path, num_items: int) -> PairwiseAnnotations:
    """The links of the CSV ``path`` (columns ``item_a``, ``item_b``, ``worker``, ``link``)
    over the ``num_items`` rows of the features: an item must be a row number ``0 ..
    num_items - 1``."""
    frame = pd.read_csv(path)
    for column in ("item_a", "item_b"):
        if column in frame and not pd.api.types.is_integer_dtype(frame[column]):
            raise ValueError(f"column {column} of the pairs must hold row numbers of the data "
                             f"(integers 0..{num_items - 1}), got {frame[column].dtype} values")
    return PairwiseAnnotations.from_dataframe(frame, items=np.arange(num_items))


def pinwheel_with_links(seed: int = 0) -> PairedPoints:
    """The paper's pinwheel (5 arms of 100 points) and its annotations: 20 workers, each
    judging the 49 pairs of a shuffled block of 50 of 100 annotated points, at ``alpha =
    beta = 0.9`` (:func:`~pyromodels.data.simulate_pairs.simulate_block_pairs`)."""
    from ...data.simulate import simulate_pinwheel
    from ...data.simulate_pairs import simulate_block_pairs

    x, truth = simulate_pinwheel(seed=seed)
    pairs, _ = simulate_block_pairs(truth["z"], 20, 50, alpha=0.9, beta=0.9, annotated=100,
                                    seed=seed)
    return PairedPoints(x.numpy().astype(np.float64), pairs)


def loader(path: str | None, pairs: str | None = None) -> PairedPoints:
    """The data of ``pyromodels fit scdc`` (and ``observed-bayes-scdc``): the features of the
    numeric CSV ``path`` and the links of the CSV ``pairs``, or the paper's pinwheel with its
    links (no ``path``)."""
    from ..reference_mixture.reproduction import read_numeric_csv

    if path is None:
        if pairs is not None:
            raise ValueError("--pairs names rows of --data: give the data too")
        return pinwheel_with_links()
    x = read_numeric_csv(path)
    return PairedPoints(x, None if pairs is None else read_pairs(pairs, x.shape[0]))


# ------------------------------------------------------------------------------ SCDC
def scdc_factory(n_clusters: int = DEFAULT_CLUSTERS, latent_dim: int = 2,
                 hidden_width: int = 40, hidden_layers: int = 2):
    """The registered SCDC: ``K`` clusters, ``d``-dimensional latents, encoders and decoder
    of ``hidden_layers`` layers of ``hidden_width`` units (the paper's small-data networks:
    two of 40)."""
    from ...scdc import SCDC

    return SCDC(n_clusters, latent_dim, hidden=(hidden_width,) * hidden_layers)


def fit_scdc(model, data: PairedPoints, *, method: str, seed: int, progress: bool, **options):
    """``pyromodels fit scdc``: amortised SVI; ``options`` holds what the command line gave
    (``lr``, ``device``, ``num_epochs``, ``batch_size``, ``coin_init``, ``kl_warmup_epochs``
    and the checkpointing, whose ``checkpoint_every`` counts epochs)."""
    return model.fit(data.x, data.pairs, method=method, seed=seed, progress=progress, **options)


def _worker_frame(table: pd.DataFrame) -> pd.DataFrame:
    frame = table.copy()
    frame.index.name = "worker"
    return frame.reset_index()


def _with_workers(output: FitOutput, method: str, workers: pd.DataFrame | None) -> FitOutput:
    """``output`` with the worker table written and its warnings given."""
    from ...report.fit_warnings import extend_summary, pairwise_worker_warnings, with_warnings

    if workers is None:
        return output
    result = with_warnings(output.result, method, pairwise_worker_warnings(
        workers["worker"].tolist(), workers["weight"].to_numpy()))
    text = f" {WORKERS_FILE} gives each worker's alpha, beta and weight logit alpha + logit beta."
    result = replace(result, summary=extend_summary(result.summary, text))
    return FitOutput(result, {**output.files, WORKERS_FILE: workers})


def describe_scdc(posterior, data: PairedPoints, *, name: str) -> FitOutput:
    """The report of an SCDC fit: each point's cluster (``argmax q(z | o)``) and its
    probability in ``labels.csv``, the workers' coins in ``workers.csv``."""
    from ..ddpm.fit_report import cluster_report

    model = posterior.model
    probabilities = model.cluster_probabilities(posterior, data.x)
    output = cluster_report(posterior, data.x, probabilities.argmax(-1).cpu().numpy(), name=name,
                            probabilities=probabilities.max(-1).values.cpu().numpy())
    workers = None if data.pairs is None else _worker_frame(model.worker_table(posterior))
    return _with_workers(output, posterior.method, workers)


# ------------------------------------------------------------- observed sub-model
def observed_factory(num_clusters: int = DEFAULT_CLUSTERS, **prior):
    """The registered :class:`~pyromodels.scdc.ObservedBayesSCDC` with ``K`` clusters and the
    paper's prior, of which ``prior`` may set ``weight_concentration``, ``mean_precision`` and
    ``degrees_of_freedom``."""
    from ...scdc import ObservedBayesSCDC

    return ObservedBayesSCDC(num_clusters, **prior)


def fit_observed(model, data: PairedPoints, *, method: str, seed: int, progress: bool, **options):
    """``pyromodels fit observed-bayes-scdc``: the reference Gibbs sampler (float64)."""
    x = torch.as_tensor(data.x, dtype=torch.float64)
    return model.fit(x, data.pairs, method=method, seed=seed, progress=progress, **options)


def best_draw_labels(posterior) -> np.ndarray:
    """The clusters of the draw of highest log joint (``sample_stats["lp"]``, else the last
    draw of the first chain), renamed 0, 1, ... in order of first appearance: names differ
    between draws and chains, so no average over draws is a clustering."""
    z = posterior.samples["z"]
    lp = posterior.sample_stats.get("lp")
    if lp is None:
        chain, draw = 0, z.shape[1] - 1
    else:
        chain, draw = divmod(int(torch.argmax(lp.reshape(-1))), lp.shape[1])
    labels = z[chain, draw].cpu().numpy()
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(np.argsort(first))
    return order[np.unique(labels, return_inverse=True)[1]]


def describe_observed(posterior, data: PairedPoints, *, name: str) -> FitOutput:
    """The report of a Gibbs fit: the clusters of the best draw in ``labels.csv`` with each
    point's posterior probability of sharing a cluster with the others of its cluster there,
    and the workers' posterior means in ``workers.csv`` (``alpha``, ``beta``, ``weight``, with
    the 5% and 95% quantiles of the weight)."""
    from ...scdc import coclustering_probabilities, label_invariant_draws
    from ..ddpm.fit_report import cluster_report

    labels = best_draw_labels(posterior)
    together = coclustering_probabilities(posterior).cpu().numpy()
    same = labels[:, None] == labels[None, :]
    support = (together * same).sum(1) / same.sum(1)
    output = cluster_report(posterior, data.x, labels, name=name, probabilities=support)
    if data.pairs is None:
        return output
    draws = label_invariant_draws(posterior)
    flat = {k: draws[k].reshape(-1, draws[k].shape[-1]).cpu().double()
            for k in ("alpha", "beta", "worker_weights")}
    weights = flat["worker_weights"]
    workers = pd.DataFrame({
        "worker": list(posterior.data.pairs.workers),
        "alpha": flat["alpha"].mean(0).numpy(), "beta": flat["beta"].mean(0).numpy(),
        "weight": weights.mean(0).numpy(),
        "weight_q05": torch.quantile(weights, 0.05, dim=0).numpy(),
        "weight_q95": torch.quantile(weights, 0.95, dim=0).numpy()})
    return _with_workers(output, posterior.method, workers)


def observed_loader(path: str | None, pairs: str | None = None) -> PairedPoints:
    """As :func:`loader`, but the links are required: without them the sub-model is the
    plain Bayesian Gaussian mixture (``pyromodels fit gaussian-mixture``)."""
    if path is not None and pairs is None:
        raise ValueError("observed-bayes-scdc needs the links: give --pairs FILE (without "
                         "links, fit gaussian-mixture)")
    return loader(path, pairs)


ENTRY = register(OBSERVED_BAYES_SCDC.entry(factory=observed_factory, loader=observed_loader,
                                           fit=fit_observed, describe=describe_observed))
