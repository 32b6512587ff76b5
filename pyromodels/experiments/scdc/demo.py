"""The report entry ``scdc`` of ``pyromodels demo``: a first look at semi-crowdsourced
clustering in three panels, each a figure with the tables and metrics behind it.

1. **Fig. 2** (the pinwheel): 500 points on five arms, 20 workers judging 49 pairs each
   along blocks of 50 of 100 annotated points at ``alpha = beta = 0.9``
   (:func:`.protocols.pinwheel_data`); BayesSCDC with ``K = 15`` fitted with and without the
   links, the observed-feature Gibbs reference beside it, and the paper's numbers
   (:data:`.paper_numbers.PINWHEEL`).
2. **Fig. 3c** (worker weights): 5 workers at ``alpha = beta = 0.95 .. 0.75`` judging as many
   same- as different-class pairs of the Face-protocol stand-in (scikit-learn's digits through
   PCA, :func:`.face_sets.face_data`); each worker's weight ``logit alpha + logit beta`` from
   the observed-feature Gibbs reference (posterior mean and 90% interval) and from the
   pairwise worker model, against the true :data:`.protocols.TRUE_WEIGHTS`.
3. **Pruning**: BayesSCDC starts with 15 components and its sparse Dirichlet prior empties
   those it does not need: ``E[pi]`` sorted at the end, and per epoch the number of components
   whose ``E[pi_k]`` is at least :data:`.protocols.OCCUPIED_FRACTION` (recorded through the
   fit's ``callbacks``).

The seeds are derived from the demo's ``seed`` as :func:`.protocols.pinwheel_unit` derives
them, so the BayesSCDC rows equal the first seed's of ``pyromodels reproduce scdc --scale
medium`` (the same settings). ``smoke`` runs the same steps with a few epochs and sweeps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..arguments import demo_arguments
from ..stages import stage_reporter
from . import protocols
from .face_sets import face_data

if TYPE_CHECKING:
    from ...report import DemoResult

__all__ = ["DemoPlan", "PLANS", "PruningRecord", "demo", "run_demo"]

NAME = "scdc"


@dataclass(frozen=True)
class DemoPlan:
    """The sizes of one demo.

    Attributes:
        epochs: BayesSCDC's epochs on the pinwheel (the first two thirds hold the globals).
        gibbs: sweeps of the observed-feature Gibbs reference, ``{"samples", "warmup"}``.
        face_points: digits drawn for the worker-weight panel.
        pairs_per_kind: same-class (and different-class) pairs judged by each worker there.
        pairwise: the pairwise worker model's ``{"n_init", "max_iter"}``.
    """

    epochs: int
    gibbs: dict
    face_points: int
    pairs_per_kind: int
    pairwise: dict

    def bayes(self) -> dict:
        """BayesSCDC's settings (:func:`.protocols.fit_bayes`): the paper's small networks,
        batches of 50 and the networks' Adam step 0.01."""
        return {"latent_dim": 2, "hidden": (40, 40), "epochs": self.epochs, "batch_size": 50,
                "lr": 1e-2}


#: ``smoke`` (seconds, for the tests) and ``demo`` (``pyromodels demo``: BayesSCDC as the
#: tutorial and the ``medium`` reproduction fit it, 60 epochs of which 40 hold the globals)
PLANS = {
    "smoke": DemoPlan(epochs=3, gibbs={"samples": 5, "warmup": 5}, face_points=150,
                      pairs_per_kind=100, pairwise={"n_init": 1, "max_iter": 200}),
    "demo": DemoPlan(epochs=60, gibbs={"samples": 40, "warmup": 40}, face_points=300,
                     pairs_per_kind=500, pairwise={"n_init": 5, "max_iter": 200}),
}

#: the pinwheel's initial number of components, as in the paper
PINWHEEL_CLUSTERS = 15


class PruningRecord:
    """A callback of :meth:`~pyromodels.scdc.BayesSCDC.fit` that keeps, for each epoch, the
    number of components whose expected weight ``E[pi_k]`` (the Dirichlet factor's mean after
    the epoch's last step) is at least ``fraction``, and that expected weight vector itself.

    Example:
        >>> record = PruningRecord()
        >>> record.per_epoch
        []
    """

    def __init__(self, fraction: float = protocols.OCCUPIED_FRACTION):
        self.fraction = fraction
        self._counts: dict[int, int] = {}
        self._weights: dict[int, np.ndarray] = {}

    def __call__(self, step: int, info: dict) -> None:
        weights = info["globals"]["weights"].mean()
        self._counts[int(info["epoch"])] = int((weights >= self.fraction).sum())
        self._weights[int(info["epoch"])] = weights.detach().cpu().double().numpy()

    @property
    def per_epoch(self) -> list[int]:
        """The counts in epoch order."""
        return [self._counts[e] for e in sorted(self._counts)]

    @property
    def weights_per_epoch(self) -> np.ndarray:
        """``(epochs, K)``: ``E[pi]`` after each epoch's last step, in epoch order."""
        return np.stack([self._weights[e] for e in sorted(self._weights)])


def _pinwheel(plan: DemoPlan, seed: int, report) -> dict:
    """BayesSCDC with and without the links and the Gibbs reference with them."""
    fit_seed = protocols.method_seed(seed, "bayes-scdc")
    out = {"fits": {}, "fit_seed": fit_seed, "clusters": PINWHEEL_CLUSTERS}
    for setting, annotated in (("with links", True), ("without links", False)):
        x, z, pairs = protocols.pinwheel_data(annotated, seed)
        record = PruningRecord()
        start = time.perf_counter()
        _, post = protocols.fit_bayes(x, pairs, num_clusters=PINWHEEL_CLUSTERS,
                                      settings=plan.bayes(), seed=fit_seed, callbacks=record)
        labels = post.params["cluster_probs"].argmax(-1).cpu().numpy()
        out["fits"][setting] = {
            "labels": labels, "scores": protocols.scores(z, labels),
            "pruning": record.per_epoch, "trajectory": record.weights_per_epoch,
            "expected_weights": np.sort(post.params["expected_weights"].cpu().numpy())[::-1],
            "seconds": time.perf_counter() - start}
        out["x"], out["z"] = x, z
        if report:
            report(f"pinwheel: BayesSCDC {setting} done")
    _, _, pairs = protocols.pinwheel_data(True, seed)
    start = time.perf_counter()
    labels, _ = protocols.fit_observed_labels(
        out["x"], pairs, num_clusters=PINWHEEL_CLUSTERS, settings=plan.gibbs,
        seed=protocols.method_seed(seed, "observed-bayes-scdc"))
    out["observed"] = {"labels": labels, "scores": protocols.scores(out["z"], labels),
                       "seconds": time.perf_counter() - start}
    if report:
        report("pinwheel: the Gibbs reference done")
    return out


def _worker_weights(plan: DemoPlan, seed: int, report) -> dict:
    """The Face-protocol workers on the digits: the Gibbs reference's draws of the weights
    and the pairwise model's point estimates."""
    from ...data.simulate_pairs import simulate_stratified_pairs
    from ...scdc import label_invariant_draws

    x, truth = face_data("digits", plan.face_points, seed=seed)
    accuracies = protocols.FACE_ACCURACIES
    pairs, _ = simulate_stratified_pairs(truth, len(accuracies), plan.pairs_per_kind,
                                         alpha=accuracies, beta=accuracies,
                                         seed=protocols.method_seed(seed, "face-links"))
    k = int(truth.max()) + 1
    start = time.perf_counter()
    post = protocols.fit_observed(x, pairs, num_clusters=k, settings=plan.gibbs,
                                  seed=protocols.method_seed(seed, "observed-bayes-scdc"))
    draws = label_invariant_draws(post)["worker_weights"]
    draws = draws.reshape(-1, draws.shape[-1]).double().cpu().numpy()
    gibbs_seconds = time.perf_counter() - start
    start = time.perf_counter()
    _, extra = protocols.fit_pairwise_labels(
        x, pairs, num_clusters=k, settings=plan.pairwise,
        seed=protocols.method_seed(seed, "pairwise-dawid-skene"))
    if report:
        report("worker weights done")
    return {"points": len(truth), "classes": k, "draws": draws.shape[0],
            "mean": draws.mean(0), "q05": np.quantile(draws, 0.05, axis=0),
            "q95": np.quantile(draws, 0.95, axis=0),
            "pairwise": np.asarray(extra["worker_weights"], dtype=np.float64),
            "seconds": {"observed-bayes-scdc": gibbs_seconds,
                        "pairwise-dawid-skene": time.perf_counter() - start}}


def run_demo(plan: DemoPlan, name: str, *, progress: bool, seed: int) -> DemoResult:
    """Run the three panels at ``plan`` and assemble the report entry ``name``."""
    from .demo_report import assemble_demo

    report = stage_reporter(NAME, progress)
    start = time.perf_counter()
    pinwheel = _pinwheel(plan, seed, report)
    weights = _worker_weights(plan, seed, report)
    return assemble_demo(name, plan, seed, pinwheel, weights, time.perf_counter() - start)


def demo(*, smoke: bool = False, progress: bool = True, seed: int = 0) -> DemoResult:
    """The report entry ``scdc``: the pinwheel with and without links, the workers' weights
    and the pruning of components (``smoke``: seconds)."""
    key, options = demo_arguments(smoke, progress, seed, size="demo")
    return run_demo(PLANS[key], NAME, **options)
