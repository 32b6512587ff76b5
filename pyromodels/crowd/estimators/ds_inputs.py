"""What ``DawidSkeneEstimator.fit(df, true_labels=, initial_error=)`` reads: known classes
(gold labels) and workers' confusion matrices from elsewhere.

:class:`KnownClassesDawidSkene` is the Dawid-Skene model in which the classes of some items
are observed (gold labels): the E-step gives those items their known class with certainty,
and the EM objective is the log joint of the labels *and* the known classes,
``sum_n log p(labels_n [, z_n = g_n] | theta) + log p(theta)``, which EM never decreases.
For an item of known class ``g``, ``log p(labels_n, z_n = g) = log q_n[g] + log p(labels_n)``
with ``q_n`` its posterior before clamping, so one E-step yields the objective as well.

:func:`error_counts` reads crowd-kit's ``initial_error`` (a DataFrame in the ``errors_`` layout:
rows ``(worker, label given)``, the true labels as columns) as ``(M, K, K)`` counts or
probabilities with rows = true class.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import torch

from ...data.annotations import AnnotationTable
from ..ds import em
from ..ds.data import DSData
from ..ds.model import DawidSkene
from ..majority import vote_fractions

__all__ = ["KnownClassesDawidSkene", "known_classes", "error_counts", "fitted_posteriors",
           "ERROR_SUM_MESSAGE"]

#: crowd-kit's words for an ``initial_error`` of probabilities whose columns do not sum to one
ERROR_SUM_MESSAGE = "The sum of each worker's error matrix in initial_error should be 1.0"


def known_classes(true_labels, table: AnnotationTable, task: str) -> torch.Tensor:
    """``(N,)`` class code of each task of ``table`` given by ``true_labels`` (a Series
    ``task -> label``), ``-1`` for the others; raises on a task or class ``table`` lacks."""
    if not isinstance(true_labels, pd.Series):
        raise TypeError(f"true_labels must be a pandas Series task -> label, got "
                        f"{type(true_labels).__name__}")
    if true_labels.isna().any():
        raise ValueError(f"true_labels holds missing labels for task(s) "
                         f"{list(true_labels.index[true_labels.isna()][:5])}")
    if true_labels.index.has_duplicates:
        raise ValueError("true_labels lists a task more than once")
    unknown = true_labels.index.difference(table.items)
    if len(unknown):
        raise ValueError(f"true_labels holds {len(unknown)} task(s) not in df[{task!r}], e.g. "
                         f"{list(unknown[:5])}")
    classes = pd.Index(table.classes)
    codes = classes.get_indexer(true_labels.to_numpy())
    if (codes < 0).any():
        raise ValueError(f"true_labels holds label(s) {list(pd.unique(true_labels[codes < 0]))[:5]} "
                         f"outside the classes {list(classes)}")
    known = np.full(table.num_items, -1, dtype=np.int64)
    known[pd.Index(table.items).get_indexer(true_labels.index)] = codes
    return torch.as_tensor(known)


def error_counts(frame, table: AnnotationTable, worker: str, label: str,
                 partial: bool) -> torch.Tensor:
    """``(M, K, K)`` values of ``frame`` (the ``errors_`` layout) with rows = true class.

    With ``partial`` (crowd-kit's ``"addition"``) rows that ``frame`` lacks count zero;
    otherwise (``"assign"``) every worker of ``table`` needs all its rows. Columns that are not
    classes are ignored, as crowd-kit ignores them, with a ``UserWarning`` naming them.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"initial_error must be a DataFrame, got {type(frame).__name__}")
    if list(frame.index.names) != [worker, label]:
        raise ValueError(f"initial_error must be indexed by ({worker!r}, {label!r}) like errors_, "
                         f"got index levels {list(frame.index.names)}")
    classes = pd.Index(table.classes)
    is_class = frame.columns.isin(classes)
    if not is_class.any():
        raise ValueError(f"initial_error must have the classes {list(classes)} as columns (the "
                         f"true labels), got {list(frame.columns[:5])}")
    if not is_class.all():
        warnings.warn(
            f"initial_error's column(s) {list(frame.columns[~is_class][:5])} are not among the "
            f"classes {list(classes)} (the true labels); they are ignored", UserWarning,
            stacklevel=6)  # error_counts <- _em_start <- _fit_em <- fit <- its wrapper <- caller
        frame = frame.loc[:, is_class]
    extra = pd.Index(frame.index.get_level_values(1)).difference(classes)
    if len(extra):
        raise ValueError(f"initial_error holds label(s) {list(extra[:5])} outside the classes "
                         f"{list(classes)}")
    strangers = pd.Index(frame.index.get_level_values(0)).difference(table.workers)
    if len(strangers):
        raise ValueError(f"initial_error holds {len(strangers)} worker(s) not in df[{worker!r}], "
                         f"e.g. {list(strangers[:5])}")
    rows = pd.MultiIndex.from_product([table.workers, table.classes])
    missing = rows.difference(frame.index)
    if len(missing) and not partial:
        raise ValueError(
            f"initial_error lacks {len(missing)} (worker, label) row(s), e.g. "
            f"{list(missing[:3])}: with initial_error_strategy='assign' it needs every worker's "
            "whole matrix (use 'addition' for partial counts)"
        )
    values = frame.reindex(index=rows, columns=classes).to_numpy(dtype=np.float64)
    if partial:
        values = np.nan_to_num(values, nan=0.0)
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError("initial_error must hold finite values >= 0")
    M, K = table.num_workers, table.num_classes
    return torch.as_tensor(values.reshape(M, K, K).transpose(0, 2, 1).copy())


class KnownClassesDawidSkene(DawidSkene):
    """:class:`DawidSkene` whose EM holds the classes of some items known (see the module doc).

    Args:
        known: ``(N,)`` class code of each item, ``-1`` where unknown.
        **options: :class:`DawidSkene`'s arguments.
    """

    def __init__(self, known: torch.Tensor, **options):
        super().__init__(**options)
        self.known = known

    def clamp(self, q: torch.Tensor) -> torch.Tensor:
        """``q`` ``(N, K)`` with the known items set to their class with certainty."""
        known = self.known.to(q.device)
        rows = known >= 0
        out = q.clone()
        out[rows] = torch.nn.functional.one_hot(known[rows], q.shape[-1]).to(q.dtype)
        return out

    def _pass(self, data: DSData, params) -> tuple[torch.Tensor, torch.Tensor]:
        """``(clamped q, log p(labels, known classes | params))`` from one E-step."""
        q, log_norm = em.e_step(data, params)
        known = self.known.to(q.device)
        rows = known >= 0
        gold = q[rows].gather(-1, known[rows].unsqueeze(-1)).log().sum()
        return self.clamp(q), log_norm.sum() + gold

    def em_init(self, data: DSData, generator) -> dict:
        """One M-step from the majority-vote fractions, the known items clamped."""
        em.check_em_prior(data)
        return em.m_step(data, self.clamp(vote_fractions(data.table).to(data.dtype)),
                         self.em_floor)

    def em_step_with_objective(self, data: DSData, params) -> tuple[dict, float]:
        params = em.check_params(data, params)
        q, loglik = self._pass(data, params)
        return em.m_step(data, q, self.em_floor), float(loglik + em.log_prior(data, params))

    def em_step(self, data: DSData, params) -> dict:
        return self.em_step_with_objective(data, params)[0]

    def em_objective(self, data: DSData, params) -> float:
        return self.em_step_with_objective(data, params)[1]

    def em_outputs(self, data: DSData, params) -> dict:
        q, loglik = self._pass(data, em.check_params(data, params))
        return {"probas": q, "labels": q.argmax(-1), "log_likelihood": loglik}


def fitted_posteriors(model: DawidSkene, data: DSData,
                      previous: dict | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(probas, labels)``: the class posteriors ``(N, K)`` that EM's last M-step was fitted
    to and their argmax (the first class on ties), crowd-kit's ``probas_`` and ``labels_``.

    They are the E-step of ``previous``, the parameters the last step started from, or when
    no step was taken (``previous=None``) the majority-vote fractions that EM's start is
    fitted to; known classes are held (:class:`KnownClassesDawidSkene`) in both.
    """
    if previous is None:
        q = vote_fractions(data.table).to(data.dtype)
        if isinstance(model, KnownClassesDawidSkene):
            q = model.clamp(q)
        return q, q.argmax(-1)
    outputs = model.em_outputs(data, previous)
    return outputs["probas"], outputs["labels"]
