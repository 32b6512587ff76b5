"""crowd-kit / scikit-learn style aggregators over a task/worker/label DataFrame.

Each estimator takes a long DataFrame with one row per judgement, ``fit(df)`` returns the
estimator, and results come back as pandas objects indexed by the user's own task ids, with
the user's own class values:

* ``labels_``: Series ``task -> label`` (name ``agg_label``, as crowd-kit);
* ``probas_``: DataFrame tasks x classes of class probabilities;
* for Dawid-Skene also ``errors_`` (confusion matrices), ``priors_``, ``loss_history_``,
  ``n_iter_``, ``converged_`` and ``posterior_`` (the :class:`~pyromodels.core.Posterior`).

``errors_`` follows this package's orientation: rows are ``(worker, true label)`` and columns
the label given, each row summing to one. crowd-kit's ``errors_`` is the transpose (rows
``(worker, observed label)``, columns the true label).

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b"],
    ...                    "worker": ["u", "v", "w", "u", "v", "w"],
    ...                    "label": ["cat", "cat", "dog", "dog", "dog", "dog"]})
    >>> MajorityVote().fit_predict(df).to_dict()
    {'a': 'cat', 'b': 'dog'}
"""

from __future__ import annotations

import pandas as pd
import torch
from sklearn.base import BaseEstimator

from ..checks import check_in, check_int, check_positive
from ..core.errors import NotFittedError
from ..data.annotations import AnnotationTable, check_columns
from .ds.data import check_stochastic
from .ds.em import majority_start
from .ds.model import DawidSkene
from .majority import majority_vote, vote_fractions

__all__ = ["MajorityVote", "DawidSkeneEstimator"]


class _CrowdAggregator(BaseEstimator):
    """Shared plumbing: column names, the annotation table, fitted-state checks."""

    _fitted = ("labels_", "probas_", "table_")

    def __getattr__(self, name):
        if name in type(self)._fitted:
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet: call fit(df) before using {name}"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _columns(self) -> dict[str, str]:
        return {"task": self.task, "worker": self.worker, "label": self.label}

    def _table(self, df) -> AnnotationTable:
        for arg, col in self._columns().items():
            if not isinstance(col, str):
                raise TypeError(f"{arg} must be a column name (str), got {col!r}")
        if not isinstance(self.allow_repeats, bool):
            raise TypeError(f"allow_repeats must be a bool, got {self.allow_repeats!r}")
        return AnnotationTable.from_dataframe(
            df, item=self.task, worker=self.worker, label=self.label, classes=self.classes,
            allow_repeats=self.allow_repeats,
        )

    def _store(self, table: AnnotationTable, probas: torch.Tensor, labels: torch.Tensor) -> None:
        self.table_ = table
        self.probas_ = self._frame(table, probas)
        self.labels_ = self._series(table, labels)

    def _frame(self, table: AnnotationTable, probas: torch.Tensor) -> pd.DataFrame:
        frame = table.index_items(probas.detach().cpu())
        frame.index.name, frame.columns.name = self.task, self.label
        return frame

    def _series(self, table: AnnotationTable, labels: torch.Tensor) -> pd.Series:
        series = table.index_items(labels.detach().cpu(), decode=True).rename("agg_label")
        series.index.name = self.task
        return series

    def fit(self, df):  # pragma: no cover - abstract
        raise NotImplementedError

    def fit_predict(self, df) -> pd.Series:
        """Fit, then return ``labels_`` (Series indexed by task, the user's class values)."""
        return self.fit(df).labels_

    def fit_predict_proba(self, df) -> pd.DataFrame:
        """Fit, then return ``probas_`` (DataFrame tasks x classes)."""
        return self.fit(df).probas_


class MajorityVote(_CrowdAggregator):
    """Majority vote: each task gets its most frequent label.

    Args:
        ties: ``"random"`` (seeded, default), ``"smallest"`` (the first class in sorted order)
            or ``"first"`` (the tied class that appears first in the table: crowd-kit's rule).
        seed: seed for random tie-breaking.
        task, worker, label: column names of the DataFrame.
        classes: the class list (default: the sorted distinct labels); a label outside it is
            an error.
        allow_repeats: accept several labels from one worker on one task.

    Attributes:
        labels_: Series of labels indexed by task.
        probas_: vote fractions, DataFrame tasks x classes.
        table_: the :class:`~pyromodels.data.AnnotationTable` built from the data.
    """

    def __init__(self, ties: str = "random", seed: int = 0, *, task: str = "task",
                 worker: str = "worker", label: str = "label", classes=None,
                 allow_repeats: bool = False):
        self.ties = ties
        self.seed = seed
        self.task = task
        self.worker = worker
        self.label = label
        self.classes = classes
        self.allow_repeats = allow_repeats

    def fit(self, df) -> MajorityVote:
        """Count the votes of ``df`` (one row per judgement)."""
        check_in(self.ties, "ties", ("random", "smallest", "first"))
        seed = check_int(self.seed, "seed", minimum=0)
        table = self._table(df)
        self._store(table, vote_fractions(table), majority_vote(table, ties=self.ties, seed=seed))
        return self


class DawidSkeneEstimator(_CrowdAggregator):
    """Dawid-Skene aggregation by EM, Gibbs sampling or SVI (see :class:`DawidSkene`).

    Args:
        n_iter: maximum EM iterations (``method="em"``).
        tol: EM stops when the objective changes by less than ``tol * max(1, |objective|)``.
        method: ``"em"`` (ML/MAP, crowd-kit's algorithm), ``"gibbs"`` (Bayesian posterior by
            blocked Gibbs sampling) or ``"svi"`` (mean-field Dirichlet posterior).
        update_prior: learn the class prior; ``False`` holds it uniform (the ensemble paper's
            "equal priors").
        seed: the fit's seed.
        prior_concentration, confusion_concentration, diagonal: the Dirichlet priors (see
            :class:`DawidSkene`; the defaults make EM maximum likelihood).
        init_confusion: EM's starting confusion matrices: an array ``(M, K, K)`` in the
            sorted order of workers and classes, or a DataFrame laid out like ``errors_``.
            Default: one M-step from the majority-vote fractions (crowd-kit's start).
        em_floor: EM's pseudo-count that keeps probabilities off exactly zero.
        num_samples, num_warmup, num_chains: Gibbs draws kept per chain, warm-up sweeps and
            chains (``method="gibbs"``); ``num_samples`` is also the number of guide draws for
            SVI.
        num_steps, lr: SVI optimisation steps and learning rate.
        task, worker, label, classes, allow_repeats: as :class:`MajorityVote`.
        progress: show progress bars.
        device: ``"cpu"``, ``"cuda"`` or ``None`` (the CPU); results come back as pandas
            objects either way.

    Attributes:
        labels_, probas_: the most probable label and the class probabilities of each task
            (for Gibbs and SVI the per-draw posteriors averaged over the draws).
        errors_: confusion matrices, DataFrame indexed by ``(worker, true label)`` with the
            given labels as columns (posterior means for Gibbs and SVI).
        priors_: class prior, Series indexed by class.
        loss_history_: EM objective (log joint, increasing) per iteration; SVI loss per step;
            Gibbs mean log joint per kept draw.
        n_iter_: EM iterations, SVI steps or Gibbs sweeps per chain.
        converged_: whether EM met ``tol`` (``None`` for Gibbs and SVI).
        posterior_: the :class:`~pyromodels.core.Posterior` of the fit.
        model_: the :class:`DawidSkene` model.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b", "c", "c", "c"],
        ...                    "worker": ["u", "v", "w"] * 3,
        ...                    "label": ["x", "x", "y", "y", "y", "y", "x", "y", "x"]})
        >>> est = DawidSkeneEstimator().fit(df)
        >>> est.labels_.to_dict()
        {'a': 'x', 'b': 'y', 'c': 'x'}
        >>> est.errors_.shape  # (workers x true labels) rows, given labels as columns
        (6, 2)
    """

    _fitted = ("labels_", "probas_", "table_", "errors_", "priors_", "loss_history_", "n_iter_",
               "converged_", "posterior_", "model_")

    def __init__(self, n_iter: int = 100, tol: float = 1e-5, method: str = "em",
                 update_prior: bool = True, seed: int | None = 0, *, prior_concentration=None,
                 confusion_concentration=None, diagonal=None, init_confusion=None,
                 em_floor: float = 1e-10, num_samples: int = 500, num_warmup: int = 300,
                 num_chains: int = 2, num_steps: int = 1500, lr: float = 0.05,
                 task: str = "task", worker: str = "worker", label: str = "label",
                 classes=None, allow_repeats: bool = False, progress: bool = False,
                 device=None):
        self.n_iter = n_iter
        self.tol = tol
        self.method = method
        self.update_prior = update_prior
        self.seed = seed
        self.prior_concentration = prior_concentration
        self.confusion_concentration = confusion_concentration
        self.diagonal = diagonal
        self.init_confusion = init_confusion
        self.em_floor = em_floor
        self.num_samples = num_samples
        self.num_warmup = num_warmup
        self.num_chains = num_chains
        self.num_steps = num_steps
        self.lr = lr
        self.task = task
        self.worker = worker
        self.label = label
        self.classes = classes
        self.allow_repeats = allow_repeats
        self.progress = progress
        self.device = device

    def _model(self) -> DawidSkene:
        return DawidSkene(
            prior_concentration=self.prior_concentration,
            confusion_concentration=self.confusion_concentration,
            diagonal=self.diagonal,
            update_prior=self.update_prior,
            em_floor=self.em_floor,
        )

    def _em_init(self, model: DawidSkene, table: AnnotationTable):
        if self.init_confusion is None:
            return None
        data = model.prepare(table)
        value = self.init_confusion
        M, K = table.num_workers, table.num_classes
        if isinstance(value, pd.DataFrame):
            rows = pd.MultiIndex.from_product([table.workers, table.classes])
            missing = rows.difference(value.index)
            if len(missing):
                raise ValueError(
                    f"init_confusion lacks {len(missing)} (worker, true label) row(s), e.g. "
                    f"{list(missing[:3])}; it needs one per worker and class"
                )
            value = value.reindex(index=rows, columns=table.classes).to_numpy().reshape(M, K, K)
        start = majority_start(data, model.em_floor)
        start["confusion"] = check_stochastic(value, "init_confusion", (M, K, K), data.dtype,
                                              data.device)
        return start

    def _run(self, model: DawidSkene, table: AnnotationTable):
        common = {"seed": self.seed, "progress": self.progress, "device": self.device}
        if self.method == "em":
            n_iter = check_int(self.n_iter, "n_iter", minimum=1)
            tol = check_positive(self.tol, "tol")
            return model.fit(table, method="em", max_iter=n_iter, tol=tol,
                             init=self._em_init(model, table), **common)
        if self.init_confusion is not None:
            raise ValueError(
                f"init_confusion is used by method='em' only, got method={self.method!r}"
            )
        if self.method == "gibbs":
            return model.fit(table, method="gibbs", num_samples=self.num_samples,
                             num_warmup=self.num_warmup, num_chains=self.num_chains,
                             lp_every=10, **common)
        return model.fit(table, method="svi", num_steps=self.num_steps, lr=self.lr,
                         num_samples=self.num_samples, **common)

    def fit(self, df) -> DawidSkeneEstimator:
        """Fit the model to ``df`` (one row per judgement)."""
        check_in(self.method, "method", ("em", "gibbs", "svi"))
        table = self._table(df)
        model = self._model()
        post = self._run(model, table)
        table = post.data.table
        probas = model.predict(post, table)
        self._store(table, probas, probas.argmax(-1))
        self.model_, self.posterior_ = model, post
        self.errors_ = table.index_workers(post.mean("confusion").cpu())
        self.errors_.columns.name = self.label
        prior = post.data.fixed_prior if post.data.fixed_prior is not None else post.mean("prior")
        self.priors_ = pd.Series(prior.cpu().numpy(), index=table.classes, name="prior")
        if post.method == "gibbs":
            self.loss_history_ = post.sample_stats["lp"].mean(0).tolist()
            self.n_iter_ = int(post.attrs["num_warmup"]) + post.num_draws
            self.converged_ = None
        else:
            self.loss_history_ = post.losses.tolist()
            em = post.method == "em"
            self.n_iter_ = int(post.diagnostics["n_iter"]) if em else len(self.loss_history_)
            self.converged_ = bool(post.diagnostics["converged"]) if em else None
        return self

    def _new_table(self, df) -> AnnotationTable:
        fitted = self.table_
        check_columns(df, self._columns())
        unknown = pd.Index(df[self.worker]).difference(fitted.workers)
        if len(unknown):
            raise ValueError(
                f"df holds {len(unknown)} worker id(s) not seen by fit, e.g. {list(unknown[:5])}; "
                "predictions need the fitted confusion matrix of every worker"
            )
        return AnnotationTable.from_dataframe(
            df, item=self.task, worker=self.worker, label=self.label, classes=fitted.classes,
            workers=fitted.workers, allow_repeats=self.allow_repeats,
        )

    def predict_proba(self, df) -> pd.DataFrame:
        """Class probabilities of the tasks in ``df``, labelled by workers seen in ``fit``.

        The fitted prior and confusion matrices stay fixed (averaged over the draws for Gibbs
        and SVI). Returns a DataFrame tasks x classes.
        """
        table = self._new_table(df)
        return self._frame(table, self.model_.predict(self.posterior_, table))

    def predict(self, df) -> pd.Series:
        """Most probable label of each task in ``df`` (see :meth:`predict_proba`)."""
        table = self._new_table(df)
        probas = self.model_.predict(self.posterior_, table)
        return self._series(table, probas.argmax(-1))
