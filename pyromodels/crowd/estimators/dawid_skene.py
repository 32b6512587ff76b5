"""The Dawid-Skene facade: crowd-kit's ``DawidSkene`` interface over :class:`DawidSkene`.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b", "c", "c", "c"],
    ...                    "worker": ["u", "v", "w"] * 3,
    ...                    "label": ["x", "x", "y", "y", "y", "y", "x", "y", "x"]})
    >>> DawidSkeneEstimator().fit_predict(df).to_dict()
    {'a': 'x', 'b': 'y', 'c': 'x'}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ...checks import check_in
from ...data.columns import check_columns
from ...data.dask_labels import is_dask_source
from .array_fit import ARRAY_RESULTS, array_results, fit_on_arrays
from .base import CrowdAggregator, errors_row_order
from .em_prior import em_diagonal

if TYPE_CHECKING:  # the torch path's modules load where it runs (see fit)
    import torch

    from ...data.annotations import AnnotationTable
    from ..ds.model import DawidSkene

__all__ = ["DawidSkeneEstimator", "em_diagonal"]

METHODS = ("em", "gibbs", "svi", "nuts")

class DawidSkeneEstimator(CrowdAggregator):
    """Dawid-Skene aggregation by EM, Gibbs sampling, SVI or NUTS (see :class:`DawidSkene`).

    Args:
        n_iter: maximum EM iterations (``method="em"``); ``0`` returns the start (one M-step
            from the majority-vote fractions, crowd-kit's start) with those fractions as
            ``probas_`` (see ``probas_``).
        tol: EM stops when the objective changes by less than ``tol * max(1, |objective|)``;
            ``0`` never stops early (``n_iter`` steps, no convergence warning).
        method: ``"em"`` (MAP: crowd-kit's algorithm with a diagonal prior), ``"gibbs"``
            (Bayesian posterior by blocked Gibbs sampling), ``"svi"`` (mean-field Dirichlet
            posterior) or ``"nuts"`` (Hamiltonian Monte Carlo with the classes summed out,
            then drawn given each draw).
        update_prior: learn the class prior; ``False`` holds it uniform (the ensemble paper's
            "equal priors").
        seed: the fit's seed (``None`` draws one, recorded in ``posterior_.attrs``).
        random_state: scikit-learn's name for the seed: an int, a ``numpy.random.RandomState``
            or ``numpy.random.Generator`` (one draw from it is the seed). When it is not
            ``None`` it wins over ``seed``; left at ``None``, ``seed`` is used.
        prior_concentration, confusion_concentration, diagonal: the Dirichlet priors (see
            :class:`DawidSkene`; ``diagonal`` is a number or one value per class).
            ``diagonal=None`` (default) is, for ``method="em"``, a pseudo-count on the
            classes too thin to identify and none elsewhere (:func:`em_diagonal`:
            ``max(0, K - 1 - L_k / M)`` for a class given ``L_k`` times by ``M`` workers), so
            EM is maximum likelihood wherever every class holds enough labels; it is 0 (flat
            priors) for the Bayesian methods. ``diagonal=0`` gives maximum likelihood,
            crowd-kit's estimate, which can let a label that a single worker uses claim
            items (see :mod:`pyromodels.crowd.ds.em`). The value used is
            ``model_.diagonal``.
        init_confusion: EM's starting confusion matrices: an array ``(M, K, K)`` (rows = true
            class) in the sorted order of workers and classes, or a DataFrame laid out like
            ``confusions_`` (second row level named ``"true"``, or unnamed) or like ``errors_``
            (second row level named as the ``label`` column, crowd-kit's layout). Default: one M-step
            from the majority-vote fractions (crowd-kit's start).
        initial_error_strategy: how ``fit(df, initial_error=...)`` uses workers' confusion
            matrices from elsewhere (crowd-kit's names): ``"assign"`` starts EM from them
            (probabilities, each true-label column summing to one per worker, or counts;
            every worker of ``df`` needed), ``"addition"`` adds them as counts to those of the
            majority-vote start (any workers); ``None`` (default) uses none.
        em_floor: EM's pseudo-count that keeps probabilities off exactly zero.
        num_samples, num_warmup, num_chains: draws kept per chain, warm-up sweeps or steps and
            chains (``method="gibbs"`` and ``"nuts"``); ``num_samples`` is also the number of
            guide draws for SVI.
        num_steps, lr: SVI optimisation steps and learning rate.
        diagnostic_warnings: after a sampling fit (``method="gibbs"`` or ``"nuts"``), emit a
            :class:`~pyromodels.core.SamplingWarning` when its diagnostics say the draws are
            not yet reliable; ``False`` silences it.
        task, worker, label, classes, allow_repeats: as :class:`MajorityVote`.
        progress: show progress bars.
        device: ``"cpu"``, ``"cuda"`` or ``None`` (the CPU); results come back as pandas
            objects either way.

    Attributes:
        labels_, probas_: the most probable label (the first class in sorted order on a tie)
            and the class probabilities of each task. For EM they are crowd-kit's: the class
            posteriors that the last M-step was fitted to, i.e. the E-step of the parameters
            one step before ``errors_`` and ``priors_`` (the majority-vote fractions when
            ``n_iter_`` is 0); ``posterior_.params["probas"]`` and :meth:`predict_proba`
            give those under ``errors_`` and ``priors_`` themselves, one E-step later, which
            agree with them at convergence. For Gibbs, SVI and NUTS: the per-draw posteriors
            averaged over the draws.
        errors_: confusion matrices in crowd-kit's layout: rows ``(worker, label given)``,
            the true labels as columns, so ``errors_.loc[(w, j), k]`` is the probability that
            worker ``w`` answers ``j`` when the truth is ``k`` and each worker's block sums to
            one down its columns (posterior means for the Bayesian methods). The rows come in
            crowd-kit's order: each (worker, label) pair where it first occurs in ``df``, then
            the labels a worker never gave (rows crowd-kit leaves out), sorted; with
            ``n_iter=0`` an ``initial_error`` assigned as the start keeps its own row order,
            as crowd-kit returns it unchanged.
        confusions_: the same matrices with rows ``(worker, true label)`` and the labels given
            as columns, each row summing to one (the orientation of
            :class:`DawidSkene`'s ``confusion`` site).
        priors_: class prior, Series indexed by class (name ``prior``).
        loss_history_: EM objective (log joint, increasing) per iteration; SVI loss per step;
            Gibbs and NUTS mean log joint per kept draw.
        n_iter_: EM iterations, SVI steps, or Gibbs sweeps / NUTS steps per chain. After
            :meth:`partial_fit`, it and ``loss_history_`` are those of the warm-started run.
        converged_: whether EM met ``tol`` (``None`` for the other methods).
        posterior_: the :class:`~pyromodels.core.Posterior` of the fit.
        model_: the :class:`DawidSkene` model.

    ``labels_``, ``probas_``, ``errors_``, ``confusions_`` and ``priors_`` hold float64 values
    whatever the dtype of the fit. A column missing from ``df`` raises
    :class:`~pyromodels.data.annotations.MissingColumnError`, both a ``KeyError`` (as
    crowd-kit) and a ``ValueError``. A ``df`` without rows (but with the columns) gives
    crowd-kit's empty results, with a ``UserWarning`` that there were no labels to aggregate:
    empty ``probas_``, ``errors_`` and ``confusions_``, empty float Series ``priors_`` and
    ``labels_``, ``n_iter_=0`` and ``posterior_``, ``model_`` and ``table_`` ``None``.

    A fitted estimator pickles (``pickle.dumps``) with its model, posterior and table, and
    predicts the same after loading; ``sklearn.base.clone`` gives an unfitted copy.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b", "c", "c", "c"],
        ...                    "worker": ["u", "v", "w"] * 3,
        ...                    "label": ["x", "x", "y", "y", "y", "y", "x", "y", "x"]})
        >>> est = DawidSkeneEstimator().fit(df)
        >>> est.labels_.to_dict()
        {'a': 'x', 'b': 'y', 'c': 'x'}
        >>> est.errors_.shape  # (workers x given labels) rows, true labels as columns
        (6, 2)
    """

    _fitted = ("labels_", "probas_", "table_", "errors_", "confusions_", "priors_",
               "loss_history_", "n_iter_", "converged_", "posterior_", "model_")
    _method_params = {"n_iter": ("em",), "tol": ("em",), "init_confusion": ("em",),
                      "initial_error_strategy": ("em",),
                      "em_floor": ("em",), "num_samples": ("gibbs", "nuts", "svi"),
                      "num_warmup": ("gibbs", "nuts"), "num_chains": ("gibbs", "nuts"),
                      "num_steps": ("svi",), "lr": ("svi",),
                      "diagnostic_warnings": ("gibbs", "nuts")}

    def __init__(self, n_iter: int = 100, tol: float = 1e-5, method: str = "em",
                 update_prior: bool = True, seed: int | None = 0, *, random_state=None,
                 prior_concentration=None, confusion_concentration=None, diagonal=None,
                 init_confusion=None, initial_error_strategy: str | None = None,
                 em_floor: float = 1e-10, num_samples: int = 500,
                 num_warmup: int = 300, num_chains: int = 2, num_steps: int = 1500,
                 lr: float = 0.05, task: str = "task", worker: str = "worker",
                 label: str = "label", classes=None, allow_repeats: bool = False,
                 progress: bool = False, device=None, diagnostic_warnings: bool = True):
        self.n_iter = n_iter
        self.tol = tol
        self.method = method
        self.update_prior = update_prior
        self.seed = seed
        self.random_state = random_state
        self.prior_concentration = prior_concentration
        self.confusion_concentration = confusion_concentration
        self.diagonal = diagonal
        self.init_confusion = init_confusion
        self.initial_error_strategy = initial_error_strategy
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
        self.diagnostic_warnings = diagnostic_warnings

    def _model_args(self, table) -> dict:
        """The :class:`DawidSkene` arguments of a fit to ``table`` (an annotation table or
        :class:`~pyromodels.data.columns.LabelCodes`)."""
        diagonal = self.diagonal
        if diagonal is None and self.method == "em":
            diagonal = em_diagonal(table)
        return dict(prior_concentration=self.prior_concentration,
                    confusion_concentration=self.confusion_concentration,
                    diagonal=diagonal, update_prior=self.update_prior, em_floor=self.em_floor)

    def _model(self, table: AnnotationTable, known: torch.Tensor | None = None) -> DawidSkene:
        """The model for ``table``; with ``known`` (class codes, -1 where unknown) one whose EM
        holds those tasks' classes fixed."""
        from ..ds.model import DawidSkene
        from .ds_inputs import KnownClassesDawidSkene

        options = self._model_args(table)
        return DawidSkene(**options) if known is None else KnownClassesDawidSkene(known, **options)

    def _init_frame(self, value: pd.DataFrame, table: AnnotationTable):
        """``init_confusion`` given as a DataFrame: ``(M, K, K)`` values, rows = true class."""
        M, K = table.num_workers, table.num_classes
        level = value.index.names[1] if value.index.nlevels == 2 else "?"
        if level in ("true", None):
            transposed = False
        elif level == self.label:
            transposed = True
        else:
            raise ValueError(
                "init_confusion as a DataFrame must be laid out like confusions_ (two row "
                f"levels, the second named 'true' or unnamed) or like errors_ (the second named "
                f"{self.label!r}); got row levels {list(value.index.names)}"
            )
        rows = pd.MultiIndex.from_product([table.workers, table.classes])
        missing = rows.difference(value.index)
        if len(missing):
            what = "label given" if transposed else "true label"
            raise ValueError(
                f"init_confusion lacks {len(missing)} (worker, {what}) row(s), e.g. "
                f"{list(missing[:3])}; it needs one per worker and class"
            )
        arr = value.reindex(index=rows, columns=table.classes).to_numpy().reshape(M, K, K)
        return arr.transpose(0, 2, 1) if transposed else arr

    def _em_start(self, model: DawidSkene, data, initial_error) -> dict:
        """EM's start: one M-step from the majority-vote fractions (known tasks clamped,
        ``"addition"`` counts added), or ``init_confusion`` / ``initial_error`` (``"assign"``)
        as the starting confusion matrices."""
        import torch

        from ..ds import em
        from ..ds.data import check_stochastic
        from ..emissions import normalize_rows
        from ..majority import vote_fractions
        from .ds_inputs import ERROR_SUM_MESSAGE, KnownClassesDawidSkene, error_counts

        em.check_em_prior(data)
        table, strategy = data.table, self.initial_error_strategy
        M, K = table.num_workers, table.num_classes
        extra = None
        if initial_error is not None and strategy == "addition":
            extra = error_counts(initial_error, table, self.worker, self.label, partial=True)
        if extra is None and not isinstance(model, KnownClassesDawidSkene):
            # the fractions and their counts in one pass on the C backend, as the array path
            start = em.majority_start(data, model.em_floor)
        else:
            q0 = vote_fractions(table).to(data.dtype)
            if isinstance(model, KnownClassesDawidSkene):
                q0 = model.clamp(q0)
            start = em.m_step(data, q0, model.em_floor, extra_counts=extra)
        confusion, name = None, "init_confusion"
        if self.init_confusion is not None:
            confusion = self.init_confusion
            if isinstance(confusion, pd.DataFrame):
                confusion = self._init_frame(confusion, table)
        elif initial_error is not None and strategy == "assign":
            counts = error_counts(initial_error, table, self.worker, self.label, partial=False)
            if bool((counts <= 1).all()) and not torch.allclose(counts.sum(-1), torch.ones(())):
                raise ValueError(
                    f"{ERROR_SUM_MESSAGE} for every true label (down each column of the errors_ "
                    "layout) when its values are probabilities (none above 1); counts need "
                    "some value above 1"
                )
            confusion, name = normalize_rows(counts, model.em_floor), "initial_error"
        if confusion is not None:
            start["confusion"] = check_stochastic(confusion, name, (M, K, K), data.dtype,
                                                  data.device)
        return start

    def _fit_em(self, model: DawidSkene, table: AnnotationTable, initial_error, warm=None):
        """Run EM from :meth:`_em_start`, or from ``warm`` (``(prior, confusion)`` arrays,
        :meth:`partial_fit`'s start); ``n_iter=0`` returns the start itself. Return the
        posterior and the class posteriors of the tasks that the last M-step was fitted to
        (for a warm start not yet stepped from, its own E-step), with their argmax (see
        ``probas_``)."""
        from .ds_inputs import fitted_posteriors

        common = self._engine_options(METHODS)
        data = model.prepare(table, device=self.device)
        if warm is None:
            start = self._em_start(model, data, initial_error)
        else:
            import torch

            start = {name: torch.tensor(value, dtype=data.dtype, device=data.device)
                     for name, value in zip(("prior", "confusion"), warm)}
        # a fixed number of steps (tol=0) or the start itself (n_iter=0) is no failure
        fixed = common["tol"] == 0 or common["max_iter"] == 0
        last = [start]  # the parameters before and after the last step

        def keep(step, info):
            last[:] = [last[-1], info["params"]]

        post = model.fit(data, method="em", init=start, warn_not_converged=not fixed,
                         callbacks=[keep], **common)
        previous = last[0] if post.diagnostics["n_iter"] else (None if warm is None else start)
        return post, *fitted_posteriors(model, post.data, previous)

    def _run(self, model: DawidSkene, table: AnnotationTable):
        if self.method == "svi":
            common = {"seed": self._seed(), "progress": self.progress, "device": self.device}
        else:
            common = self._engine_options(METHODS)
        if self.method == "gibbs":
            return model.fit(table, method="gibbs", lp_every=10, **common)
        if self.method == "nuts":
            return model.fit(table, method="nuts", **common)
        return model.fit(table, method="svi", num_steps=self.num_steps, lr=self.lr,
                         num_samples=self.num_samples, **common)

    def _check_em_inputs(self, true_labels, initial_error) -> None:
        strategy = self.initial_error_strategy
        if strategy is not None:
            check_in(strategy, "initial_error_strategy", ("assign", "addition"))
        if self.method != "em":
            for name, value in (("true_labels", true_labels), ("initial_error", initial_error)):
                if value is not None:
                    raise ValueError(f"{name} is used only by method='em', got "
                                     f"method={self.method!r}")
        if initial_error is not None:
            if strategy is None:
                raise ValueError("initial_error needs initial_error_strategy='assign' (the start's "
                                 "confusion matrices) or 'addition' (counts added to the start's)")
            if self.init_confusion is not None:
                raise ValueError("init_confusion and initial_error both set the start's confusion "
                                 "matrices: give one")

    def fit(self, df, true_labels: pd.Series | None = None,
            initial_error: pd.DataFrame | None = None, *,
            to_parquet=None) -> DawidSkeneEstimator:
        """Fit the model to ``df`` (one row per judgement).

        Args:
            df: the labels, one row per judgement.
            true_labels: known classes of some tasks (a Series ``task -> label``, crowd-kit's
                gold labels; ``method="em"``): EM holds them fixed, as observed classes.
            initial_error: workers' confusion matrices from elsewhere, laid out like
                ``errors_`` (rows ``(worker, label given)``, true labels as columns), used as
                ``initial_error_strategy`` says (``method="em"``). Columns that are not
                classes are ignored, as crowd-kit ignores them, with a ``UserWarning``.
            to_parquet: with a Dask ``df``, a folder to write the task posteriors to.

        A Dask DataFrame, or a path or glob of parquet or CSV files, as ``df`` runs EM
        data-parallel on the current ``distributed.Client``'s cluster (:mod:`.dask_fit`).
        ``method="em"`` on the CPU without ``true_labels``, ``initial_error`` or
        ``init_confusion`` runs on NumPy arrays and the C passes (:mod:`.array_fit`) with the
        same results, importing neither torch nor Pyro; ``posterior_``, ``model_`` and
        ``table_`` are then built on first use.
        """
        check_in(self.method, "method", METHODS)
        self._check_method_params()
        self._check_em_inputs(true_labels, initial_error)
        self.__dict__.pop("_em_arrays", None)
        if is_dask_source(df) or to_parquet is not None:
            from .dask_fit import fit_on_cluster
            return fit_on_cluster(self, df, true_labels, initial_error, to_parquet)
        if self._empty_input(df):
            return self._fit_empty(true_labels, initial_error)
        codes = self._codes(df)
        if true_labels is None and initial_error is None and fit_on_arrays(self, codes):
            return self
        from ...data.annotations import AnnotationTable
        from .ds_inputs import known_classes

        table = AnnotationTable.from_codes(codes, allow_repeats=self.allow_repeats)
        known = None if true_labels is None else known_classes(true_labels, table, self.task)
        model = self._model(table, known)
        if self.method == "em":
            post, probas, labels = self._fit_em(model, table, initial_error)
        else:
            post = self._run(model, table)
            probas = model.predict(post, post.data.table)
            labels = probas.argmax(-1)
        # n_iter=0 returns an "assign" initial_error as it is, its rows in its order (crowd-kit)
        kept = initial_error is not None and self.initial_error_strategy == "assign"
        first = initial_error.index if kept and not post.diagnostics["n_iter"] else None
        return self._store_fit(model, post, probas, labels, first)

    def _store_fit(self, model: DawidSkene, post, probas, labels,
                   first=None) -> DawidSkeneEstimator:
        """Store the results of a fit on the torch path (``first``: see
        :func:`errors_row_order`)."""
        self.__dict__.pop("_em_arrays", None)
        table = post.data.table
        self._store(table, probas, labels)
        self.model_, self.posterior_ = model, post
        self._store_confusions(table, post.mean("confusion"), first)
        prior = post.data.fixed_prior if post.data.fixed_prior is not None else post.mean("prior")
        self.priors_ = pd.Series(prior.detach().cpu().double().numpy(),
                                 index=pd.Index(table.classes, name=self.label), name="prior")
        if post.method == "svi":
            self.loss_history_ = post.losses.tolist()
            self.n_iter_, self.converged_ = len(self.loss_history_), None
        else:
            self._record_run(post)
        return self

    def partial_fit(self, df) -> DawidSkeneEstimator:
        """Update a fitted model with more labels (``method="em"``): scikit-learn's meaning.

        The rows of ``df`` may bring new tasks, new workers and more labels for tasks already
        seen. They are coded and appended to the labels the estimator keeps (its coded arrays,
        24 bytes a label; :mod:`.ds_partial`), the task and worker ids are extended, and EM
        runs on all the labels so far from a warm start: the fitted class prior and confusion
        matrices, with each new worker starting from the pooled confusion matrix of the
        fitted workers (their rows for each true class averaged, weighted by their numbers of
        labels) and every task, new ones included, getting its posteriors from the first
        E-step. EM stops by the rule of :meth:`fit`, with the same ``tol`` and ``n_iter``:
        when the objective (the log joint of all the labels) changes by less than
        ``tol * max(1, |objective|)``.

        Why few iterations: EM converges linearly to a fixed point, the distance to it
        shrinking by a constant factor each step. The fitted parameters are the fixed point
        for the labels seen so far; the new labels move it by about their share of the
        sufficient statistics (1% of the labels, about 1%), whereas the majority-vote start of
        a refit is a distance of order one away, so the warm start meets ``tol`` in fewer
        steps (counted in ``n_iter_``). Each step is a pass over all the labels, as a refit's.

        The fitted attributes are replaced by those of the updated fit: ``labels_``,
        ``probas_`` (then indexed by all tasks so far, in the sorted order a fit to all rows
        gives), ``errors_``, ``confusions_``, ``priors_``, and ``loss_history_``,
        ``n_iter_`` and ``converged_`` of the warm-started run (``loss_history_[0]`` is the
        warm start's objective on all the labels). The result is the fit to all the rows
        up to EM's tolerance; it is that fit exactly when both runs reach the same fixed
        point. ``diagonal=None`` is worked out again from all the labels, as a refit would.

        Args:
            df: the new labels, one row per judgement, with the columns of :meth:`fit`.

        Returns:
            The estimator.

        Raises:
            NotFittedError: before :meth:`fit`. Unlike scikit-learn's ``SGDClassifier``,
                whose first ``partial_fit`` fits, a first call is refused here: the class set
                is declared by ``fit`` (from its labels or ``classes=``) and must stay fixed.
            ValueError: ``method`` is not ``"em"`` or the fit was not by EM; the fit had
                ``true_labels`` or no rows; ``df`` has no rows, lacks a column (a
                :class:`~pyromodels.data.annotations.MissingColumnError`), holds labels
                outside the fitted classes (or declares another class set, by
                ``classes=`` or a categorical column), a missing id, ids of another kind
                than the fitted ones, or a (task, worker) pair labelled twice (unless
                ``allow_repeats``). A failed call leaves the fit as it was.

        Example:
            >>> import pandas as pd
            >>> df = pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b"],
            ...                    "worker": ["u", "v", "w"] * 2,
            ...                    "label": ["x", "x", "y", "y", "y", "y"]})
            >>> est = DawidSkeneEstimator().fit(df)
            >>> more = pd.DataFrame({"task": ["c", "c", "c"], "worker": ["u", "v", "z"],
            ...                      "label": ["x", "y", "x"]})
            >>> est.partial_fit(more).labels_.to_dict()
            {'a': 'x', 'b': 'y', 'c': 'x'}
        """
        from .ds_partial import append_labels, warm_start

        fitted = self._fitted_codes()
        self._check_columns()
        appended = append_labels(fitted, df, self.task, self.worker, self.label, self.classes)
        codes = appended.codes
        self._check_memory(codes)
        K = codes.num_classes
        confusion = self.confusions_.to_numpy().reshape(fitted.num_workers, K, K)
        start = warm_start(fitted, appended, self.priors_.to_numpy(), confusion)
        before = dict(self.__dict__)  # a failure part-way through storing restores this fit
        try:
            if fit_on_arrays(self, codes, warm=start, stacklevel=3):
                return self
            from ...data.annotations import AnnotationTable

            table = AnnotationTable.from_codes(codes, allow_repeats=self.allow_repeats)
            model = self._model(table)
            post, probas, labels = self._fit_em(model, table, None, warm=start)
            return self._store_fit(model, post, probas, labels)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def _fitted_codes(self):
        """The codes of the fitted labels, after checking that :meth:`partial_fit` can update
        the fit."""
        from .ds_partial import fitted_codes

        state = self.__dict__
        if "_em_arrays" in state:
            codes = state["_em_arrays"].codes
        elif "table_" in state:
            if state["table_"] is None:
                raise ValueError("this DawidSkeneEstimator was fitted to a table without rows, "
                                 "so it has no classes or workers to update: fit it to labels")
            if state["posterior_"].method != "em":
                raise ValueError(f"partial_fit updates an EM fit; this one was fitted with "
                                 f"method={state['posterior_'].method!r}: refit with all labels")
            from .ds_inputs import KnownClassesDawidSkene

            if isinstance(state["model_"], KnownClassesDawidSkene):
                raise ValueError("partial_fit cannot update a fit with true_labels (known "
                                 "classes): fit again with all labels and true_labels")
            codes = fitted_codes(state["table_"])
        else:
            from ...core.not_fitted import NotFittedError

            raise NotFittedError("this DawidSkeneEstimator is not fitted yet: call fit(df) "
                                 "before partial_fit (fit fixes the class set)")
        if self.method != "em":
            raise ValueError(f"partial_fit runs EM: method must be 'em', got {self.method!r}")
        return codes

    def _store_confusions(self, table, confusion, first=None) -> None:
        """``errors_`` (rows in crowd-kit's order, :func:`errors_row_order`) and
        ``confusions_``."""
        super()._store_confusions(table, confusion)
        self.errors_ = self.errors_.iloc[errors_row_order(table, first)]

    def _fit_empty(self, true_labels, initial_error) -> DawidSkeneEstimator:
        """crowd-kit's results for a table without rows (see :meth:`fit`)."""
        for name, value in (("true_labels", true_labels), ("initial_error", initial_error)):
            if value is not None and len(value):
                raise ValueError(f"df has no rows, so none of the {len(value)} row(s) of {name} "
                                 "names a task or worker of df")
        self._store_empty(float)
        self.errors_, self.confusions_ = pd.DataFrame(), pd.DataFrame()
        self.priors_ = pd.Series(dtype=float, name="prior")
        self.loss_history_, self.n_iter_, self.converged_ = [], 0, None
        self.posterior_ = self.model_ = None
        return self

    def __getattr__(self, name):
        if name in ARRAY_RESULTS and "_em_arrays" in self.__dict__:
            return array_results(self)[name]
        return super().__getattr__(name)

    def _forget_fit(self) -> None:
        self.__dict__.pop("_em_arrays", None)
        super()._forget_fit()

    def _new_table(self, df) -> AnnotationTable:
        from ...data.annotations import AnnotationTable

        fitted = self._fitted_table()
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

        The fitted prior and confusion matrices stay fixed (averaged over the draws for the
        Bayesian methods). Returns a DataFrame tasks x classes.
        """
        table = self._new_table(df)
        return self._frame(table, self.model_.predict(self.posterior_, table))

    def predict(self, df) -> pd.Series:
        """Most probable label of each task in ``df`` (see :meth:`predict_proba`)."""
        table = self._new_table(df)
        probas = self.model_.predict(self.posterior_, table)
        return self._series(table, probas.argmax(-1))
