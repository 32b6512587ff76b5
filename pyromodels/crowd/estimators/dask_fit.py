""":class:`~pyromodels.crowd.estimators.DawidSkeneEstimator`'s EM on a Dask cluster:
``fit(ddf)`` with a Dask DataFrame, or ``fit(path)`` with parquet or CSV files.

The labels are coded and persisted on the cluster of the current ``distributed.Client`` and
EM runs data-parallel there (:mod:`pyromodels.crowd.ds.distributed`): the same passes,
M-step, objective and stopping rule as the in-memory array fit (:mod:`.array_fit`), so the
fitted parameters agree with it to rounding (the statistics are summed in another order)
and the fit stops at the same iteration. ``errors_``, ``confusions_``, ``priors_``,
``loss_history_``, ``n_iter_`` and ``converged_`` are the usual pandas objects (the rows of
``errors_`` sorted by worker and label: crowd-kit's first-occurrence order would need the
whole table in order). ``probas_`` and ``labels_`` are Dask objects indexed by task, computed
on the workers when asked for (``.compute()`` gathers them); with ``to_parquet`` they are
written there once (task, one column per class named ``str(class)``, ``agg_label``) and read
back from it. ``posterior_``, ``model_`` and ``table_`` are ``None``: they hold the whole
table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data.columns import LabelCodes
from ...data.dask_labels import is_dask_source, read_labels
from ...data.idmaps import c_table_passes
from ..ds.array_em import resolve_prior, working_dtype
from ..ds.distributed import LABEL_COLUMN, fit_cluster_em, posterior_frame, prepare_labels
from ..ds.kernels.native import have_c
from ..ds.label_checks import check_label_counts
from .base import CrowdAggregator
from .em_prior import diagonal_from_counts

__all__ = ["fit_on_cluster"]


def _client():
    from distributed import get_client

    try:
        return get_client()
    except ValueError:
        raise ValueError(
            "fit of a Dask DataFrame or of files runs on a dask.distributed cluster: create a "
            "distributed.Client (e.g. Client(LocalCluster())) before calling fit"
        ) from None


def _check_options(est, true_labels, initial_error) -> None:
    """Refuse what the data-parallel fit does not do, naming the argument."""
    unsupported = [("method", est.method != "em", "'em'"),
                   ("device", est.device not in (None, "cpu"), "None or 'cpu'"),
                   ("init_confusion", est.init_confusion is not None, "None"),
                   ("progress", est.progress is not False, "False"),
                   ("true_labels", true_labels is not None, "None"),
                   ("initial_error", initial_error is not None, "None")]
    for name, bad, wanted in unsupported:
        if bad:
            raise ValueError(f"fit of a Dask DataFrame or of files needs {name}={wanted}; fit a "
                             "pandas DataFrame for the other options")
    if not (have_c() and c_table_passes() is not None):
        raise ValueError("fit of a Dask DataFrame needs the C passes, which this build lacks "
                         "(or PYROMODELS_NO_C is set)")


def _spec(est, labels):
    summary = labels.summary
    K, M = labels.num_classes, labels.num_workers
    if K < 2:
        raise ValueError(f"df[{est.label!r}] must hold at least two classes, got "
                         f"{list(labels.classes)}; declare them with classes=")
    if summary.repeats and not est.allow_repeats:
        raise ValueError(f"df holds {summary.repeats} repeated (task, worker) row(s); pass "
                         "allow_repeats=True to keep them as separate labels")
    diagonal = est.diagonal
    if diagonal is None:
        diagonal = diagonal_from_counts(summary.per_class, M)
    spec = resolve_prior(K, est.prior_concentration, est.confusion_concentration, diagonal,
                         est.update_prior, working_dtype())
    if spec is None or not isinstance(est.update_prior, bool):
        raise ValueError(
            "fit of a Dask DataFrame takes prior_concentration and confusion_concentration as "
            "None or numbers >= 1, diagonal as None, a number >= 0 or one per class, and "
            f"update_prior as a bool; got {est.prior_concentration!r}, "
            f"{est.confusion_concentration!r}, {est.diagonal!r}, {est.update_prior!r}"
        )
    return spec


def _parquet_names(est, classes: pd.Index) -> list[str]:
    names = [str(c) for c in classes]
    taken = {est.task, LABEL_COLUMN}
    if len(set(names)) < len(names) or taken & set(names):
        raise ValueError(
            f"to_parquet writes one column per class named str(class), but the classes "
            f"{list(classes)} give repeated names or one of {sorted(taken)}; recode the labels"
        )
    return names


def _named(part: pd.DataFrame, columns: pd.Index) -> pd.DataFrame:
    out = part.copy(deep=False)
    out.columns = columns
    return out


def _write(est, frame, classes: pd.Index, path):
    """Write ``frame`` to ``path``; return ``(probas, labels)`` read back from it, the class
    columns named by the classes again."""
    import dask.dataframe as dd

    names = _parquet_names(est, classes)
    frame.columns = pd.Index(names + [LABEL_COLUMN])
    frame.to_parquet(path, write_index=True)
    back = dd.read_parquet(path, index=est.task)
    columns = pd.Index(classes, name=est.label)
    probas = back[names].map_partitions(_named, columns,
                                        meta=_named(back[names]._meta, columns))
    return probas, back[LABEL_COLUMN]


def fit_on_cluster(est, source, true_labels=None, initial_error=None, to_parquet=None):
    """Fit ``est`` (a DawidSkeneEstimator) to ``source`` (a Dask DataFrame or a parquet / CSV
    path or glob) on the current cluster and store its results (see the module doc)."""
    if not is_dask_source(source):
        raise ValueError(f"to_parquet is for a Dask DataFrame or files as df, got a "
                         f"{type(source).__name__}")
    _check_options(est, true_labels, initial_error)
    est._check_columns()
    client = _client()
    options = est._engine_options(("em",))
    ddf = read_labels(source, {"task": est.task, "worker": est.worker, "label": est.label})
    labels = prepare_labels(client, ddf, est.task, est.worker, est.label, est.classes)
    spec = _spec(est, labels)
    summary = labels.summary
    ids = LabelCodes(*(np.empty(0, dtype=np.int64),) * 3, pd.Index([]), labels.workers,
                     labels.classes)
    # no task is without labels here (each comes from a row), so only the warnings remain
    check_label_counts(np.ones(0), summary.per_worker, summary.pairs, ids, False, stacklevel=4)
    fixed = options["tol"] == 0 or options["max_iter"] == 0
    run = fit_cluster_em(labels, spec, float(est.em_floor), options["max_iter"],
                         options["tol"], warn_not_converged=not fixed)
    if run is None:
        raise ValueError("a task is impossible under every class (exact zeros in the "
                         "confusion matrices): use em_floor > 0")
    prior, confusion = run.params
    frame = posterior_frame(labels, run, spec.dtype, est.task)
    if to_parquet is not None:
        est.probas_, est.labels_ = _write(est, frame, labels.classes, to_parquet)
    else:
        est.probas_ = frame[list(labels.classes)].map_partitions(
            _named, pd.Index(labels.classes, name=est.label))
        est.labels_ = frame[LABEL_COLUMN]
    CrowdAggregator._store_confusions(est, ids, confusion)
    est.priors_ = pd.Series(prior.astype(np.float64),
                            index=pd.Index(labels.classes, name=est.label), name="prior")
    est.loss_history_ = list(run.monitor.history)
    est.n_iter_, est.converged_ = run.monitor.n_iter - 1, bool(run.monitor.converged)
    est.posterior_ = est.model_ = est.table_ = None
    return est
