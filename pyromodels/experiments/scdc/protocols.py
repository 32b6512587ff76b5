"""The runs of the semi-crowdsourced clustering protocols, one *unit* at a time.

A unit is one fit of one method on one data set in one setting from one seed; it returns a
plain dict of numbers (JSON-ready), so that :mod:`.reproduction` can store it and skip it when
an interrupted reproduction runs again. Three protocols (spec §5-§7):

* :func:`pinwheel_unit`: the paper's toy (500 points, 5 arms, ``K = 15``; 20 workers judging
  49 pairs each on 100 annotated points at ``alpha = beta = 0.9``), with and without the
  links: ACC (Hungarian), NMI (geometric), AMI and the number of clusters learned (clusters
  holding at least 1% of the points, since the paper does not define it).
* :func:`face_unit`: the Face protocol (5 workers at ``alpha = beta = 0.95 .. 0.75``,
  stratified pairs with as many same- as different-cluster pairs, annotations on the whole
  data or on 100 items): NMI and AMI of SCDC and of the peers PCKMeans, MPCKMeans and ITML +
  k-means, and SCDC's estimated worker weights.
* :func:`table1_unit`: Table 1 on MNIST digits with HIT-style annotations (36 items per task,
  a noisy partition, every one of its 630 pairs): ACC, NMI, AMI and seconds per epoch.

The models a unit can fit are :data:`MODEL_SLOTS`: each maps a name to ``fit(x, pairs, *,
num_clusters, settings, seed) -> (labels, extra)``: SCDC, its observed-feature sub-model,
BayesSCDC and the pairwise-only worker model.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from ...core.seeding import derive_seed
from ...metrics import ami, clustering_accuracy, nmi
from .peers import PEERS

__all__ = ["MODEL_SLOTS", "NEEDS_LINKS", "FEATURES_ONLY", "protocol_models", "scores",
           "learned_clusters", "fit_scdc_labels", "fit_observed", "fit_observed_labels",
           "fit_bayes", "fit_bayes_labels", "fit_pairwise_labels", "pinwheel_data",
           "method_seed", "pinwheel_unit", "diverged_as_failed",
           "face_unit", "table1_unit", "OCCUPIED_FRACTION", "TRUE_WEIGHTS", "FACE_ACCURACIES"]

#: a cluster counts as learned when it holds at least this fraction of the points
OCCUPIED_FRACTION = 0.01
#: the Face protocol's workers (alpha = beta) and their true weights 2 logit(alpha)
FACE_ACCURACIES = (0.95, 0.9, 0.85, 0.8, 0.75)
TRUE_WEIGHTS = tuple(float(2 * np.log(a / (1 - a))) for a in FACE_ACCURACIES)


def scores(truth, labels) -> dict:
    """ACC (Hungarian one-to-one matching), NMI with the geometric mean of the entropies
    (Strehl and Ghosh, the paper's citation), AMI (what the authors' code logs as "nmi") and
    the number of learned clusters; ``None`` each for a fit that gave no labels."""
    if labels is None:
        return {"acc": None, "nmi": None, "ami": None, "clusters": None}
    return {"acc": clustering_accuracy(truth, labels),
            "nmi": nmi(truth, labels, average_method="geometric"),
            "ami": ami(truth, labels),
            "clusters": learned_clusters(labels)}


def learned_clusters(labels) -> int:
    """Clusters holding at least :data:`OCCUPIED_FRACTION` of the points."""
    sizes = np.unique(np.asarray(labels), return_counts=True)[1]
    return int((sizes >= OCCUPIED_FRACTION * sizes.sum()).sum())


def _seed(seed: int, *parts) -> int:
    return derive_seed(seed, *parts) % 2**31


# ------------------------------------------------------------------------- models
def cpu_seconds_per_epoch(start: float, epochs: float) -> float:
    """The process's CPU seconds (every thread's) since ``start`` (a
    :func:`time.process_time`) per epoch: a unit's own work, which neither another process
    sharing the cores nor the process being stopped a while inflates, as they do wall time.
    On one thread it is the wall time of the same fit on an idle core."""
    return (time.process_time() - start) / epochs


def fit_scdc_labels(x, pairs, *, num_clusters: int, settings: dict, seed: int):
    """SCDC (amortised SVI) on ``x``: ``(labels, {"worker_weights": [...], "seconds_per_epoch"})``,
    the seconds being the process's CPU seconds (:func:`cpu_seconds_per_epoch`).

    ``settings``: ``latent_dim``, ``hidden``, ``epochs``, ``batch_size``, ``lr``, ``coin_init``
    and optionally ``kl_warmup_epochs`` (default 0, the paper's plain ELBO).
    """
    from ...scdc import SCDC

    model = SCDC(num_clusters, settings["latent_dim"], hidden=tuple(settings["hidden"]))
    start = time.process_time()
    post = model.fit(torch.as_tensor(x, dtype=torch.float32), pairs,
                     num_epochs=settings["epochs"], batch_size=settings["batch_size"],
                     lr=settings["lr"], coin_init=settings.get("coin_init"), seed=seed,
                     kl_warmup_epochs=settings.get("kl_warmup_epochs", 0), progress=False)
    extra = {"seconds_per_epoch": cpu_seconds_per_epoch(start, settings["epochs"])}
    labels = model.predict(post, torch.as_tensor(x, dtype=torch.float32)).numpy()
    if pairs is not None:
        extra["worker_weights"] = model.worker_table(post)["weight"].tolist()
    return labels, extra


def fit_observed(x, pairs, *, num_clusters: int, settings: dict, seed: int):
    """The observed-feature sub-model fitted by one Gibbs chain (its posterior).

    ``settings``: ``samples`` and ``warmup`` (sweeps kept and discarded).
    """
    from ...scdc import ObservedBayesSCDC

    return ObservedBayesSCDC(num_clusters).fit(
        torch.as_tensor(x, dtype=torch.float64), pairs, num_chains=1,
        num_samples=settings["samples"], num_warmup=settings["warmup"], seed=seed,
        progress=False, diagnostic_warnings=False)


def fit_observed_labels(x, pairs, *, num_clusters: int, settings: dict, seed: int):
    """The observed-feature sub-model by Gibbs sampling: the clusters of the draw of highest
    log joint, and the posterior mean worker weights."""
    from ...scdc import label_invariant_draws
    from .fit_entries import best_draw_labels

    post = fit_observed(x, pairs, num_clusters=num_clusters, settings=settings, seed=seed)
    extra = {}
    if pairs is not None:
        weights = label_invariant_draws(post)["worker_weights"]
        extra["worker_weights"] = weights.reshape(-1, weights.shape[-1]).mean(0).tolist()
    return best_draw_labels(post), extra


def fit_bayes(x, pairs, *, num_clusters: int, settings: dict, seed: int, callbacks=None):
    """BayesSCDC fitted by natural-gradient SVI on ``x`` standardised (unless 0/1), the
    globals held for the first two thirds of the epochs: ``(model, posterior)``.

    ``settings``: ``latent_dim``, ``hidden``, ``epochs``, ``batch_size``, ``lr`` and
    optionally ``kl_warmup_epochs`` (default 0); ``callbacks``: as for
    :meth:`~pyromodels.scdc.BayesSCDC.fit` (called after each step).
    """
    from ...scdc import BayesSCDC
    from .bayes_entry import bayes_settings, standardised

    model = BayesSCDC(num_clusters, settings["latent_dim"], hidden=tuple(settings["hidden"]))
    post = model.fit(standardised(x), pairs, batch_size=settings["batch_size"],
                     lr=settings["lr"], seed=seed, progress=False, callbacks=callbacks,
                     kl_warmup_epochs=settings.get("kl_warmup_epochs", 0),
                     **bayes_settings(settings["epochs"]))
    return model, post


def fit_bayes_labels(x, pairs, *, num_clusters: int, settings: dict, seed: int):
    """BayesSCDC by natural-gradient SVI on ``x`` standardised (unless 0/1), the globals held
    for the first two thirds of the epochs
    (:func:`~pyromodels.experiments.scdc.bayes_entry.bayes_settings`): each point's most
    probable cluster, ``seconds_per_epoch`` (CPU seconds, :func:`cpu_seconds_per_epoch`) and
    the workers' weights at the posterior means.

    ``settings``: ``latent_dim``, ``hidden``, ``epochs``, ``batch_size``, ``lr``.
    """
    start = time.process_time()
    model, post = fit_bayes(x, pairs, num_clusters=num_clusters, settings=settings, seed=seed)
    epochs = post.diagnostics["num_steps"] / post.diagnostics["steps_per_epoch"]
    extra = {"seconds_per_epoch": cpu_seconds_per_epoch(start, epochs)}
    if pairs is not None:
        extra["worker_weights"] = model.worker_table(post)["weight"].tolist()
    return post.params["cluster_probs"].argmax(-1).cpu().numpy(), extra


def fit_pairwise_labels(x, pairs, *, num_clusters: int, settings: dict, seed: int):
    """The pairwise-only worker model by coordinate ascent on the links (``x`` is ignored):
    each item's most probable cluster (an item in no link keeps the prior, so the scores over
    every point count those as guesses) and the workers' weights at the posterior means.

    ``settings``: ``n_init`` (restarts) and ``max_iter``.
    """
    from ...scdc import PairwiseDawidSkene

    post = PairwiseDawidSkene(num_clusters).fit(pairs, seed=seed, progress=False,
                                                n_init=settings["n_init"],
                                                max_iter=settings["max_iter"])
    return (post.params["labels"].cpu().numpy(),
            {"worker_weights": post.params["weights"].double().tolist()})


#: the models of the protocols: name -> ``fit(x, pairs, *, num_clusters, settings, seed)``
#: returning ``(labels, extra)``; a model that cannot fit without links is also in
#: :data:`NEEDS_LINKS`
MODEL_SLOTS: dict[str, Callable] = {
    "scdc": fit_scdc_labels,
    "observed-bayes-scdc": fit_observed_labels,
    "bayes-scdc": fit_bayes_labels,
    "pairwise-dawid-skene": fit_pairwise_labels,
}

#: the models that fit only with links (the observed sub-model without links is the plain
#: Bayesian Gaussian mixture, :class:`~pyromodels.mixture.GaussianMixtureModel`; the pairwise
#: worker model reads the links alone and ignores the features, so it runs wherever there are
#: links, Table 1 included)
NEEDS_LINKS = {"observed-bayes-scdc", "pairwise-dawid-skene"}
#: the models that cluster the features as given, with no network: not run on Table 1's
#: 784 pixels
FEATURES_ONLY = {"observed-bayes-scdc"}


def protocol_models(protocol: str, chosen=None) -> tuple[str, ...]:
    """The models of :data:`MODEL_SLOTS` that ``protocol`` (``"pinwheel"``, ``"face"`` or
    ``"table1"``) runs, in slot order: ``chosen`` of them (``None``: every slot)."""
    names = tuple(MODEL_SLOTS) if chosen is None else tuple(chosen)
    unknown = sorted(set(names) - set(MODEL_SLOTS))
    if unknown:
        raise ValueError(f"models must name slots of MODEL_SLOTS {sorted(MODEL_SLOTS)}, got "
                         f"{unknown}")
    if protocol == "table1":
        names = tuple(n for n in names if n not in FEATURES_ONLY)
    return names


def _fitter(method: str) -> Callable:
    if method in MODEL_SLOTS:
        return MODEL_SLOTS[method]
    if method in PEERS:
        return PEERS[method]
    raise ValueError(f"method must be one of {sorted({*MODEL_SLOTS, *PEERS})}, got {method!r}")


# -------------------------------------------------------------------------- units
def pinwheel_data(annotated: bool, seed: int):
    """The pinwheel of seed ``seed``: ``(x, z, pairs)``, 500 points ``(500, 2)``, their arms
    and, when ``annotated``, 20 workers' 49 links each along blocks of 50 of 100 annotated
    points at ``alpha = beta = 0.9`` (else ``None``)."""
    from ...data.simulate import simulate_pinwheel
    from ...data.simulate_pairs import simulate_block_pairs

    x, truth = simulate_pinwheel(seed=_seed(seed, "pinwheel", "data"))
    x, z = x.numpy(), truth["z"].numpy()
    pairs = None
    if annotated:
        pairs, _ = simulate_block_pairs(z, 20, 50, alpha=0.9, beta=0.9, annotated=100,
                                        seed=_seed(seed, "pinwheel", "links"))
    return x, z, pairs


def method_seed(seed: int, method: str) -> int:
    """The seed of ``method``'s fit in a unit of seed ``seed``."""
    return _seed(seed, method)


def pinwheel_unit(method: str, annotated: bool, settings: dict, seed: int) -> dict:
    """One pinwheel fit: scores against the arms, the worker weights when annotated."""
    x, z, pairs = pinwheel_data(annotated, seed)
    labels, extra = _fitter(method)(x, pairs, num_clusters=settings["clusters"],
                                    settings=settings.get(method, {}),
                                    seed=method_seed(seed, method))
    return {**scores(z, labels), **extra}


def face_unit(data: tuple, method: str, per_worker: int, subset: int | None, settings: dict,
              seed: int) -> dict:
    """One Face-protocol fit on ``data = (x, truth)``: ``per_worker`` stratified pairs per
    worker (half same-cluster), over the whole data (``subset`` ``None``) or ``subset``
    items drawn at random; scores against the classes, and the worker weights of the models.

    A hundred items of ten classes hold only about 500 same-class pairs: where fewer than
    ``per_worker / 2`` exist, each worker judges all of them (``pairs_per_kind`` in the
    result says how many).
    """
    from ...data.simulate_pairs import simulate_stratified_pairs

    x, truth = data
    truth = np.asarray(truth)
    items = np.arange(len(truth))
    if subset is not None:
        rng = np.random.default_rng(_seed(seed, "face", "subset"))
        items = np.sort(rng.choice(len(truth), subset, replace=False))
    sizes = np.bincount(truth[items])
    same = int((sizes * (sizes - 1) // 2).sum())
    per_kind = min(per_worker // 2, same, len(items) * (len(items) - 1) // 2 - same)
    pairs, _ = simulate_stratified_pairs(truth, len(FACE_ACCURACIES), per_kind,
                                         alpha=FACE_ACCURACIES, beta=FACE_ACCURACIES,
                                         annotated=items.tolist(),
                                         seed=_seed(seed, "face", per_worker))
    k = int(np.max(truth)) + 1
    fit_settings = settings["peers"] if method in PEERS else settings.get(method, {})
    start = time.perf_counter()
    labels, extra = diverged_as_failed(_fitter(method), x, pairs, num_clusters=k,
                                       settings=fit_settings, seed=method_seed(seed, method))
    return {**scores(truth, labels), **extra, "pairs_per_kind": per_kind,
            "seconds": time.perf_counter() - start}


def diverged_as_failed(fit: Callable, *args, **kwargs) -> tuple:
    """``fit(*args, **kwargs)``, or ``(None, {"failed": why})`` for a fit whose network
    diverged: a distribution built from its outputs refused them (torch's argument check, a
    ``ValueError`` "Expected parameter ... found invalid values": a scale of 0 or infinity,
    a NaN). The unit is then kept as a failed fit, counted as such in the report, instead of
    stopping the reproduction; any other error propagates."""
    try:
        return fit(*args, **kwargs)
    except ValueError as err:
        text = str(err)
        if not (text.startswith("Expected parameter") and "found invalid values" in text):
            raise
        return None, {"failed": f"the fit diverged ({text.splitlines()[0].split(' but ')[0]})"}


def table1_unit(data: tuple, method: str, annotated: bool, settings: dict, seed: int) -> dict:
    """One Table 1 fit on MNIST digits ``data = (x, truth)`` with or without HIT-style
    annotations (``settings["hits"]`` tasks of 36 items over ``settings["annotated"]``
    items, dealt in turn to ``settings["workers"]`` workers of partition error 0.1)."""
    from ...data.simulate_pairs import simulate_hit_partitions

    x, truth = data
    pairs = None
    if annotated:
        workers = min(settings["workers"], settings["hits"])
        hits = [len(range(m, settings["hits"], workers)) for m in range(workers)]
        pairs, _ = simulate_hit_partitions(truth, workers, hits,
                                           annotated=settings["annotated"], error=0.1,
                                           seed=_seed(seed, "hits"))
    labels, extra = diverged_as_failed(_fitter(method), x, pairs,
                                       num_clusters=settings["clusters"],
                                       settings=settings.get(method, {}),
                                       seed=method_seed(seed, method))
    return {**scores(truth, labels), **extra}
