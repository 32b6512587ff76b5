"""Table 1's protocol on one data set: DPM, DDPM and the baselines that take their ``K``.

On the features ``y`` of a data set (Sec. 4.2 of the paper; all methods see the same ``y``):

* **DPM**: the DP mixture's Gibbs sampler on ``y`` (no flow), Monte Carlo EM rounds without
  an M-step;
* **DDPM**: Monte Carlo EM with a NICE flow (:class:`~pyromodels.ddpm.DDPM`);
* **KMeans^dp / KMeans^ddp**: k-means on ``y`` with ``K`` from DPM / DDPM;
* **GMeans**: Hamerly and Elkan's G-means on ``y``, which chooses ``K`` itself;
* **GMM^dp**: the foundation's finite Bayesian Gaussian mixture
  (:class:`~pyromodels.mixture.GaussianMixtureModel`, full covariances, EM) with ``K``
  from DPM (not in the paper).

Each gets the paper's metric row (F, V, ARI, ACC*, K; :func:`~pyromodels.ddpm.paper_scores`)
against the true classes. DEC is not built. The sensitivity study refits DPM and DDPM from
other starting numbers of clusters (the paper does not say how it starts the partition; with
its tiny ``alpha`` the final ``K`` depends on the start).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import torch

from ...core.seeding import derive_seed
from ...ddpm import DDPM, DPMixture, gmeans, kmeans, paper_scores
from ...ddpm.mcem import MCEMSettings
from ...mixture import GaussianMixtureModel

__all__ = ["ProtocolSettings", "DatasetRun", "run_dataset", "METHOD_ORDER"]

#: the columns of our Table 1, in the paper's order (DEC is not built; GMM^dp is ours)
METHOD_ORDER = ("KMeans^dp", "KMeans^ddp", "GMeans", "GMM^dp", "DPM", "DDPM")


@dataclass(frozen=True)
class ProtocolSettings:
    """One data set's runs.

    Attributes:
        mcem: the Monte Carlo EM schedule of DPM and DDPM (the same for both).
        flow_layers, flow_hidden: DDPM's NICE flow.
        init_grid: the starting numbers of clusters of the sensitivity study (empty: none);
            each is one restart of DPM and DDPM.
        gmeans: run G-means.
    """

    mcem: MCEMSettings
    flow_layers: int = 4
    flow_hidden: tuple[int, ...] = (256, 256)
    init_grid: tuple[int, ...] = ()
    gmeans: bool = True


@dataclass
class DatasetRun:
    """What :func:`run_dataset` returns: the score rows, the fits and the sensitivity rows."""

    name: str
    scores: dict[str, dict]
    fits: dict
    sensitivity: list[dict] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def _fit(method: str, y, prior, settings: ProtocolSettings, mcem: MCEMSettings, seed: int,
         progress: bool):
    if method == "DPM":
        model = DPMixture(prior)
    else:
        model = DDPM(prior, num_layers=settings.flow_layers, hidden=settings.flow_hidden)
    return model.fit(y, settings=mcem, seed=seed, progress=progress)


def run_dataset(name: str, y: torch.Tensor, labels: np.ndarray, prior,
                settings: ProtocolSettings, *, seed: int, progress: bool) -> DatasetRun:
    """Run the protocol (module doc) on features ``y`` ``(N, d)`` with true ``labels``."""
    import time

    run = DatasetRun(name, {}, {})
    for method in ("DPM", "DDPM"):
        start = time.perf_counter()
        post = _fit(method, y, prior, settings, settings.mcem, derive_seed(seed, name, method),
                    progress)
        run.seconds[method] = time.perf_counter() - start
        run.fits[method] = post
        run.scores[method] = paper_scores(labels, post.params["labels"].numpy())
    points = y.detach().cpu().numpy()
    for method, source in (("KMeans^dp", "DPM"), ("KMeans^ddp", "DDPM")):
        k = int(run.scores[source]["K"])
        fit = kmeans(points, min(k, points.shape[0]), seed=derive_seed(seed, name, method) % 2**32)
        run.scores[method] = paper_scores(labels, fit.labels.numpy())
    fit = GaussianMixtureModel(int(run.scores["DPM"]["K"])).fit(
        points, method="em", seed=derive_seed(seed, name, "GMM^dp"), progress=False)
    run.scores["GMM^dp"] = paper_scores(labels, fit.params["labels"].numpy())
    if settings.gmeans:
        start = time.perf_counter()
        fit = gmeans(points, seed=derive_seed(seed, name, "GMeans") % 2**32)
        run.seconds["GMeans"] = time.perf_counter() - start
        run.scores["GMeans"] = paper_scores(labels, fit.labels.numpy())
    for k0 in settings.init_grid:
        mcem = replace(settings.mcem, init_clusters=k0, restarts=1)
        for method in ("DPM", "DDPM"):
            post = _fit(method, y, prior, settings, mcem, derive_seed(seed, name, method, k0),
                        False)
            scores = paper_scores(labels, post.params["labels"].numpy())
            run.sensitivity.append({"dataset": name, "method": method, "init_clusters": k0,
                                    **scores})
    return run
