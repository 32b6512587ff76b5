r"""Dawid-Skene ``partial_fit`` with 1% new labels against a refit on all labels.

Data: :func:`pyromodels.crowd.simulate.simulate_label_frame` with ``K = 5`` classes and
``labels_per_task = 6`` (full: ``N = 1,000,000`` tasks, ``M = 2,400`` workers,
``L = 6,000,000`` labels; quick: ``N = 2,000``, ``M = 40``), one int64 task / worker / label
frame, the working dtype float32 (what a process that never imported torch uses). Each case
runs twice: ``ids=int`` on those integer ids, ``ids=str`` on the same rows with string task and
worker ids (:func:`as_strings`), which cost a refit more to code than integers do.

The new labels (:func:`split_new`) hold the three kinds of rows ``partial_fit`` meets: every
label of the last ``max(1, M // 1000)`` workers (new workers), every label of the last 0.5%
of the tasks (new tasks), and random rows of the other tasks (more labels for old tasks) up
to 1% of the labels in all (quick: the held-out worker alone is 2.5%, so the share is 3%;
``params["new_labels"]`` gives the count).

* ``ds.partial_fit`` (seconds per call): ours,
  ``DawidSkeneEstimator().partial_fit(new)`` on an estimator fitted to the other rows (its
  fitted state restored before each call, so every call does the same update: coding the
  new rows, joining them to the stored codes, the warm start and EM on all labels to the
  default ``tol``). Peer ``refit``: ``DawidSkeneEstimator().fit(all rows)``, from a DataFrame
  as a user refits. ``ratio["refit"]`` is refit / update time.

  Check ``accuracy``: the update's accuracy against the simulated truth differs from the
  refit's by at most two binomial standard errors of an accuracy over ``N`` tasks,
  ``2 sqrt(a (1 - a) / N)`` at the refit's accuracy ``a``: the two are estimates of one
  quality, EM stopped at ``tol`` (maximum likelihood's nearby fixed points can differ on a
  few ambiguous tasks). The record also holds ``label_agreement`` (the share of tasks given
  the same label), ``n_iter_update`` and ``n_iter_refit`` (EM steps, counted) and
  ``confusion_max_abs_diff``.

Run the full size on a quiet machine:
``python -m benchmarks --only ds.partial_fit --out results.jsonl``. Memory: a process running
both cases at a tenth of the full size (``N = 100,000``, 600,000 labels) peaked at 0.6 GiB
resident, so allow several GiB at the full size.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from pyromodels.crowd.estimators import DawidSkeneEstimator
from pyromodels.crowd.simulate import simulate_label_frame

from .harness import Case, agreement

__all__ = ["cases", "split_new"]

SEED = 20261128
K = 5
LABELS_PER_TASK = 6
FULL = (1_000_000, 2_400)  # tasks, workers
QUICK = (2_000, 40)
NEW_SHARE = 0.01
NEW_TASK_SHARE = 0.005
#: the accuracy check's tolerance in binomial standard errors
STANDARD_ERRORS = 2


def split_new(frame, num_tasks: int, num_workers: int, seed: int):
    """``(old, new)`` rows of ``frame``: ``new`` holds every label of the last
    ``max(1, num_workers // 1000)`` workers and of the last ``NEW_TASK_SHARE`` of the tasks,
    then random other rows up to ``NEW_SHARE`` of the labels."""
    held_workers = num_workers - max(1, num_workers // 1000)
    held_tasks = num_tasks - max(1, int(num_tasks * NEW_TASK_SHARE))
    is_new = np.array((frame["worker"] >= held_workers) | (frame["task"] >= held_tasks))
    extra = int(NEW_SHARE * len(frame)) - int(is_new.sum())
    if extra > 0:
        rng = np.random.default_rng(seed)
        is_new[rng.choice(np.flatnonzero(~is_new), size=extra, replace=False)] = True
    return frame[~is_new], frame[is_new]


def as_strings(frame):
    """``frame`` with string task and worker ids (``"t00000042"``, ``"w00007"``: zero-padded,
    so that they sort as the integers do)."""
    return frame.assign(task="t" + frame["task"].astype(str).str.zfill(8),
                        worker="w" + frame["worker"].astype(str).str.zfill(5))


@functools.cache
def _data(num_tasks: int, num_workers: int, ids: str = "int"):
    """``(all rows, old rows, new rows, true classes)``; ``ids`` ``"int"`` or ``"str"``."""
    if ids == "str":
        frame, old, new, z = _data(num_tasks, num_workers)
        return as_strings(frame), as_strings(old), as_strings(new), z
    frame, truth = simulate_label_frame(num_tasks, num_workers, K,
                                        labels_per_task=LABELS_PER_TASK, seed=SEED)
    return (frame, *split_new(frame, num_tasks, num_workers, SEED), truth["z"])


@functools.cache
def _fitted_state(num_tasks: int, num_workers: int, ids: str) -> dict:
    """The attributes of an estimator fitted to the old rows."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # label-count warnings of a simulated crowd
        return dict(vars(DawidSkeneEstimator().fit(_data(num_tasks, num_workers, ids)[1])))


def _update(size, ids: str):
    est = DawidSkeneEstimator()

    def run():
        new, state = _data(*size, ids)[2], _fitted_state(*size, ids)
        est.__dict__.clear()
        est.__dict__.update(state)  # the fitted estimator, as before the update
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return est.partial_fit(new)

    return run


def _refit(size, ids: str):
    def run():
        frame = _data(*size, ids)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DawidSkeneEstimator().fit(frame)

    return run


def _check(size, ids: str):
    def check():
        update, refit = _update(size, ids)(), _refit(size, ids)()
        truth = _data(*size)[3]
        # the sorted task ids are those of tasks 0 .. N - 1 in order, with either kind of id
        acc_update = float(np.mean(update.labels_.to_numpy() == truth))
        acc_refit = float(np.mean(refit.labels_.to_numpy() == truth))
        same = float(np.mean(update.labels_.to_numpy() == refit.labels_.to_numpy()))
        conf = np.abs(update.confusions_.to_numpy() - refit.confusions_.to_numpy()).max()
        record = agreement([acc_update], [acc_refit],
                           STANDARD_ERRORS * math.sqrt(acc_refit * (1 - acc_refit) / len(truth)),
                           "DawidSkeneEstimator().fit(all rows) accuracy against the truth")
        record.update(label_agreement=same, n_iter_update=int(update.n_iter_),
                      n_iter_refit=int(refit.n_iter_), confusion_max_abs_diff=float(conf))
        return {"accuracy": record}

    return check


def cases(quick: bool, device=None) -> list[Case]:
    """The update-against-refit cases, integer and string ids (CPU: the facade's EM on the
    C passes)."""
    if device is not None and device.type != "cpu":
        return []
    size = QUICK if quick else FULL
    n, m = size
    # the full split is 1% exactly (its held-out rows are fewer); the quick one is measured
    new_labels = len(_data(*size)[2]) if quick else int(NEW_SHARE * n * LABELS_PER_TASK)
    params = {"N": n, "M": m, "K": K, "L": n * LABELS_PER_TASK, "new_labels": new_labels}
    return [Case("ds.partial_fit", {**params, "ids": ids}, ours=_update(size, ids),
                 peers={"refit": _refit(size, ids)}, check=_check(size, ids), warmup=1,
                 repeats=2 if quick else 3)
            for ids in ("int", "str")]
