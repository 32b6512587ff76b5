"""The Face protocol's peers: constrained clustering with the crowd's links as constraints.

* PCKMeans and MPCKMeans (Basu et al. 2004; Bilenko et al. 2004), from the package
  active-semi-supervised-clustering (``import active_semi_clustering``);
* ITML (Davis et al. 2007; the package metric-learn) then k-means on the learnt metric.

Both take hard must-link and cannot-link lists, which :func:`consistent_constraints` makes
from the workers' noisy links. metric-learn 0.7.0 passes scikit-learn's validation functions
the keyword ``force_all_finite``, which scikit-learn 1.8 renamed ``ensure_all_finite``:
:func:`_validation_shim` renames it while ITML fits, and only then. Importing the
package's MPCKMeans sets NumPy to raise on every floating-point error, process-wide:
:func:`_constrained_kmeans` puts NumPy's settings back.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable

import numpy as np

__all__ = ["PEERS", "consistent_constraints"]


@contextlib.contextmanager
def _validation_shim():
    """metric-learn's validation calls, with ``force_all_finite`` passed as
    ``ensure_all_finite`` when scikit-learn no longer takes the old name."""
    import inspect

    from metric_learn import _util
    from sklearn.utils import validation

    if "force_all_finite" in inspect.signature(validation.check_array).parameters:
        yield
        return

    def renamed(function):
        @functools.wraps(function)
        def call(*args, **kwargs):
            if "force_all_finite" in kwargs:
                kwargs["ensure_all_finite"] = kwargs.pop("force_all_finite")
            return function(*args, **kwargs)
        return call

    saved = {name: getattr(_util, name) for name in ("check_array", "check_X_y")}
    try:
        for name, function in saved.items():
            setattr(_util, name, renamed(function))
        yield
    finally:
        for name, function in saved.items():
            setattr(_util, name, function)


def consistent_constraints(pairs) -> tuple[list, list]:
    """Must-link and cannot-link lists for the constrained-k-means peers.

    Each pair's links are reduced to their majority (ties dropped); cannot-links inside a
    connected component of the must-links are then dropped, since the peers refuse
    constraints that contradict each other through the transitive closure of must-links.
    """
    i, j = pairs.i_idx.numpy(), pairs.j_idx.numpy()
    a, b = np.minimum(i, j), np.maximum(i, j)
    votes: dict = {}
    for p, q, link in zip(a.tolist(), b.tolist(), pairs.link.numpy().tolist(), strict=True):
        votes[(p, q)] = votes.get((p, q), 0) + (1 if link else -1)
    parent = list(range(pairs.num_items))

    def root(n):
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    must = [key for key, v in votes.items() if v > 0]
    for p, q in must:
        parent[root(p)] = root(q)
    cannot = [key for key, v in votes.items() if v < 0 and root(key[0]) != root(key[1])]
    return must, cannot


def _constrained_kmeans():
    """``(EmptyClustersException, MPCKMeans, PCKMeans)`` of active-semi-supervised-clustering,
    imported with NumPy's floating-point error handling kept as it was: importing the
    package's MPCKMeans module calls ``np.seterr('raise')`` for the whole process."""
    saved = np.geterr()
    try:
        from active_semi_clustering.exceptions import EmptyClustersException
        from active_semi_clustering.semi_supervised.pairwise_constraints import (
            MPCKMeans,
            PCKMeans,
        )
    finally:
        np.seterr(**saved)
    return EmptyClustersException, MPCKMeans, PCKMeans


#: starts a constrained k-means peer gets when a cluster empties
PEER_STARTS = 5


def _pckmeans(x, pairs, *, num_clusters: int, settings: dict, seed: int, metric: bool = False):
    """PCKMeans (or MPCKMeans): labels, or ``None`` when every one of :data:`PEER_STARTS`
    starts lost a cluster (the package then gives up), with the starts used."""
    EmptyClustersException, MPCKMeans, PCKMeans = _constrained_kmeans()
    must, cannot = consistent_constraints(pairs)
    cls = MPCKMeans if metric else PCKMeans
    for start in range(PEER_STARTS):
        np.random.seed((seed + start) % 2**32)  # the package draws from numpy's global generator
        model = cls(n_clusters=num_clusters, max_iter=settings["peer_iterations"])
        try:
            model.fit(np.asarray(x, dtype=np.float64), ml=must, cl=cannot)
        except EmptyClustersException:
            continue
        return np.asarray(model.labels_), {"starts": start + 1}
    return None, {"starts": PEER_STARTS}


def _itml_kmeans(x, pairs, *, num_clusters: int, settings: dict, seed: int):
    from metric_learn import ITML
    from sklearn.cluster import KMeans

    must, cannot = consistent_constraints(pairs)
    x = np.asarray(x, dtype=np.float64)
    index = np.array(must + cannot, dtype=np.int64).reshape(-1, 2)
    y = np.array([1] * len(must) + [-1] * len(cannot))
    itml = ITML(max_iter=settings["peer_iterations"] * 10, random_state=seed)
    with _validation_shim(), warnings.catch_warnings():
        # metric-learn calls a scikit-learn helper deprecated in 1.8
        warnings.simplefilter("ignore", FutureWarning)
        itml.fit(x[index], y)
        learnt = itml.transform(x)
    labels = KMeans(num_clusters, n_init=10, random_state=seed).fit_predict(learnt)
    return labels, {}


#: name -> ``fit(x, pairs, *, num_clusters, settings, seed) -> (labels, {})``
PEERS: dict[str, Callable] = {
    "pckmeans": _pckmeans,
    "mpckmeans": functools.partial(_pckmeans, metric=True),
    "itml-kmeans": _itml_kmeans,
}
