"""A crowd-kit-style facade of the pairwise worker model: a DataFrame of links in, clusters out.

``fit(pairs_df)`` reads one row per judgement (two item ids, a worker id and a 0/1 link: 1 =
"same cluster", 0 = "different clusters"), fits :class:`~.pairwise_model.PairwiseDawidSkene`
by coordinate ascent and stores the results indexed by the user's ids. The table is checked
by :meth:`~pyromodels.data.pairwise.PairwiseAnnotations.from_dataframe` (missing ids, links
other than 0/1, an item paired with itself, a worker judging a pair twice unless
``duplicates`` says which judgement to keep).

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"item_a": ["a", "a", "b", "c", "c", "d"],
    ...                    "item_b": ["b", "c", "c", "d", "e", "e"],
    ...                    "worker": ["w1", "w2", "w1", "w2", "w1", "w2"],
    ...                    "link":   [1, 0, 0, 1, 0, 0]})
    >>> est = PairwiseDawidSkeneEstimator(2).fit(df)
    >>> est.probas_.shape, list(est.alpha_.index)
    ((5, 2), ['w1', 'w2'])
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from ..checks import check_int, check_positive, seed_from_random_state

__all__ = ["PairwiseDawidSkeneEstimator"]

_FITTED = ("labels_", "probas_", "alpha_", "beta_", "weights_", "elbo_", "loss_history_",
           "n_iter_", "converged_", "posterior_", "model_", "pairs_")


class PairwiseDawidSkeneEstimator(BaseEstimator):
    """Cluster items from pairwise crowd judgements alone, learning each worker's two coins.

    Args:
        n_clusters: ``K >= 2``.
        pi_concentration, alpha_prior, beta_prior: the model's priors (see
            :class:`~pyromodels.scdc.PairwiseDawidSkene`: a flat Dirichlet and ``Beta(1, 1)``
            coins by default).
        n_init: starts; the one with the highest evidence lower bound is kept.
        start: how each start begins: ``"links"`` (default; the links' spectrum clustered by
            k-means) or ``"random"`` (random clusters settled by annealing, the earlier
            default), see :class:`~pyromodels.scdc.PairwiseDawidSkene`.
        n_iter: coordinate-ascent steps per start at most.
        tol: relative tolerance on the bound (see :class:`~pyromodels.core.ConvergenceMonitor`).
        seed: the fit's seed (every start derives its own from it).
        random_state: scikit-learn's name for the seed; when it is not ``None`` it wins over
            ``seed`` (an int, or a NumPy ``RandomState`` / ``Generator`` that gives one draw).
        item_a, item_b, worker, link: column names of the DataFrame.
        duplicates: a worker judging the same pair more than once: ``"raise"`` (default),
            ``"first"`` or ``"last"`` (keep that judgement), as
            :meth:`~pyromodels.data.pairwise.PairwiseAnnotations.from_dataframe`.
        progress: show a progress bar.
        device: ``"cpu"``, ``"cuda"`` or ``None``.

    Attributes:
        labels_: Series indexed by item id (every item of either item column, sorted, or
            the ``items`` given to :meth:`fit`): the
            most probable cluster, ``0 .. K - 1``. **The labels are arbitrary up to a
            permutation**: the links only say whether two items share a cluster, so a
            relabelled clustering fits as well, and items in parts of the link graph that no
            link joins are labelled independently of each other. Compare clusterings with a
            permutation-invariant score (:func:`~pyromodels.metrics.clustering_accuracy`).
        probas_: DataFrame items x clusters, the mean-field posterior ``q(z_n)``.
        alpha_, beta_: Series indexed by worker id: posterior means of each worker's
            sensitivity (says "same" for a pair in one cluster) and specificity (says
            "different" for a pair across clusters).
        weights_: Series indexed by worker id: ``logit alpha_ + logit beta_``, the paper's
            reliability weight (0 at chance, about 4.39 for a worker right 90% of the time).
        elbo_: the evidence lower bound of the fit; ``loss_history_`` the bound after every
            step of the best start; ``n_iter_``, ``converged_`` as in the crowd facades.
        posterior_, model_, pairs_: the :class:`~pyromodels.core.Posterior`, the model and
            the coded judgements.
    """

    def __init__(self, n_clusters: int, *, pi_concentration: float = 1.0,
                 alpha_prior=(1.0, 1.0), beta_prior=(1.0, 1.0), n_init: int = 5,
                 start: str = "links",
                 n_iter: int = 500, tol: float = 1e-8, seed: int | None = 0,
                 random_state=None, item_a: str = "item_a", item_b: str = "item_b",
                 worker: str = "worker", link: str = "link", duplicates: str = "raise",
                 progress: bool = False, device=None):
        self.n_clusters = n_clusters
        self.pi_concentration = pi_concentration
        self.alpha_prior = alpha_prior
        self.beta_prior = beta_prior
        self.n_init = n_init
        self.start = start
        self.n_iter = n_iter
        self.tol = tol
        self.seed = seed
        self.random_state = random_state
        self.item_a = item_a
        self.item_b = item_b
        self.worker = worker
        self.link = link
        self.duplicates = duplicates
        self.progress = progress
        self.device = device

    def __getattr__(self, name):
        if name in _FITTED:
            from ..core.not_fitted import NotFittedError

            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call "
                                 f"fit(pairs_df) before using {name}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _check_arguments(self) -> None:
        k = self.n_clusters
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"n_clusters must be an int >= 2, got {type(k).__name__} {k!r}")
        if k < 2:
            raise ValueError(f"n_clusters must be >= 2 (one cluster makes every pair 'same' "
                             f"and leaves nothing to learn), got {k}")
        for name in ("item_a", "item_b", "worker", "link"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a column name (str), got {getattr(self, name)!r}")
        if self.item_a == self.item_b:
            raise ValueError(f"item_a and item_b must name two different columns, both are "
                             f"{self.item_a!r}")
        check_int(self.n_init, "n_init", minimum=1)
        check_int(self.n_iter, "n_iter", minimum=0)
        check_positive(self.tol, "tol", strict=False)

    def fit(self, pairs_df, y=None, *, items=None) -> PairwiseDawidSkeneEstimator:
        """Fit to ``pairs_df`` (one row per judgement); ``y`` is ignored. Returns ``self``.

        ``items`` optionally lists every item id (the order of the results' rows); an item in
        no pair is kept and gets the prior's cluster probabilities (nothing ties it to any
        cluster).
        """
        from ..data.columns import check_columns
        from ..data.pairwise import PairwiseAnnotations
        from .pairwise_model import PairwiseDawidSkene

        for name in [n for n in vars(self) if n.endswith("_") and not n.startswith("_")]:
            delattr(self, name)  # the results of an earlier fit do not survive a new one
        self._check_arguments()
        if not isinstance(pairs_df, pd.DataFrame):
            raise TypeError("pairs_df must be a pandas DataFrame with one row per judgement "
                            f"(columns {self.item_a!r}, {self.item_b!r}, {self.worker!r}, "
                            f"{self.link!r}), got {type(pairs_df).__name__}")
        # name this facade's arguments when a column is missing; the rest is the table's check
        check_columns(pairs_df, {"item_a": self.item_a, "item_b": self.item_b,
                                 "worker": self.worker, "link": self.link})
        pairs = PairwiseAnnotations.from_dataframe(pairs_df, self.item_a, self.item_b,
                                                   self.worker, self.link, items=items,
                                                   duplicates=self.duplicates)
        model = PairwiseDawidSkene(int(self.n_clusters), self.pi_concentration,
                                   self.alpha_prior, self.beta_prior, start=self.start)
        seed = self.seed if self.random_state is None else seed_from_random_state(self.random_state)
        post = model.fit(pairs, seed=seed, n_init=self.n_init, max_iter=self.n_iter,
                         tol=self.tol, progress=self.progress, device=self.device)
        self._store(pairs, post)
        self.model_, self.posterior_, self.pairs_ = model, post, pairs
        return self

    def _store(self, pairs, post) -> None:
        params = post.params
        probas = params["probas"].detach().cpu().double().numpy()
        self.probas_ = pd.DataFrame(probas / probas.sum(-1, keepdims=True), index=pairs.items,
                                    columns=pd.RangeIndex(probas.shape[1], name="cluster"))
        self.probas_.index.name = "item"
        self.labels_ = pd.Series(params["labels"].cpu().numpy(), index=pairs.items,
                                 name="cluster")
        self.labels_.index.name = "item"
        for name in ("alpha", "beta", "weights"):
            series = pd.Series(params[name].detach().cpu().double().numpy(),
                               index=pairs.workers, name=name)
            series.index.name = self.worker
            setattr(self, f"{name}_", series)
        self.elbo_ = float(params["elbo"])
        self.loss_history_ = post.losses.tolist()
        self.n_iter_ = int(post.diagnostics["n_iter"])
        self.converged_ = bool(post.diagnostics["converged"])

    def fit_predict(self, pairs_df, y=None, *, items=None) -> pd.Series:
        """Fit, then return ``labels_`` (Series indexed by item id)."""
        return self.fit(pairs_df, items=items).labels_

    def fit_predict_proba(self, pairs_df, y=None, *, items=None) -> pd.DataFrame:
        """Fit, then return ``probas_`` (DataFrame items x clusters)."""
        return self.fit(pairs_df, items=items).probas_
