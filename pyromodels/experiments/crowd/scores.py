r"""Scores of Tables I and II, computed the way the paper computed them.

Three schemes (``average`` says whether counts are pooled over all scored items or scores are
computed per sequence and then averaged over sequences):

* ``"macro"`` (POS, and every Table II task). For class :math:`k`,
  :math:`P_k = TP_k / (TP_k + FP_k)`, :math:`R_k = TP_k / (TP_k + FN_k)` (0 when the ratio is
  0/0) and eq. (37) :math:`F = \frac{1}{K}\sum_k 2 P_k R_k / (P_k + R_k)`; precision and recall
  are the class means of :math:`P_k`, :math:`R_k`. ``classes="all"`` averages over all
  :math:`K` classes (a class absent from a sequence contributes 0, which is what keeps the
  paper's POS scores near 0.23); ``classes="present"`` over the classes that occur in the
  sequence's gold or prediction (this is what lets a learner that labelled ten songs reach
  the paper's single-best F = 1 on Music Genre). With ``average="sequence"`` the per-sequence
  values are averaged over sequences ("the averaged F-score from all sequences").
* ``"entity"`` (NER): CoNLL chunks (maximal runs ``B-X I-X ...``; an ``I-X`` after ``O`` or
  after another type opens a chunk) must match exactly in span and type;
  :math:`P = TP / \#\text{predicted chunks}`, :math:`R = TP / \#\text{gold chunks}`.
* ``"partial_match"`` (Biomedical IE, the measure of Nguyen et al. 2017): per sequence
  :math:`P = \#\text{true-positive words} / \#\text{words in a predicted span}` and
  :math:`R = \#\text{true-positive words} / \#\text{words in a gold span}`. The paper prints
  :math:`\#\text{words in a predicted span}` as the recall's numerator, which is not a recall
  (it can exceed 1); ``paper_literal=True`` computes that printed ratio instead.

For ``"entity"`` and ``"partial_match"`` the F-score is :math:`2PR/(P+R)` of the reported
(pooled or sequence-averaged) :math:`P` and :math:`R`, which is how the paper's NER and
Biomedical rows relate. With ``average="sequence"`` a sequence whose ratio is 0/0 (no
predicted or no gold positives) is left out of that ratio's average.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch

from ...checks import check_in, check_int
from ...data import AnnotationTable, Sequences
from ...metrics import precision_recall_per_class

__all__ = ["Scores", "SingleBest", "sequence_scores", "score_task", "worker_scores",
           "single_best", "entity_chunks"]

SCHEMES = ("macro", "entity", "partial_match")


@dataclass(frozen=True)
class Scores:
    """Precision, recall, F-score and accuracy over the scored items."""

    precision: float
    recall: float
    f_score: float
    accuracy: float
    num_items: int
    num_sequences: int

    def as_dict(self) -> dict:
        """The scores as a plain dict."""
        return asdict(self)


def _codes(x, name: str) -> np.ndarray:
    arr = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be a 1-D array of integer class codes, got "
                        f"dtype {arr.dtype} and shape {arr.shape}")
    return arr.astype(np.int64)


def _safe(num, den) -> np.ndarray:
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _harmonic(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _ratio_scores(tp, npred, ngold, recall_num, average: str) -> tuple[float, float, float]:
    """P = tp / npred and R = recall_num / ngold, pooled or averaged over defined sequences."""
    if average == "pooled":
        p = float(_safe(tp.sum(), npred.sum()))
        r = float(_safe(recall_num.sum(), ngold.sum()))
    else:
        p = float(np.mean(tp[npred > 0] / npred[npred > 0])) if (npred > 0).any() else 0.0
        r = (float(np.mean(recall_num[ngold > 0] / ngold[ngold > 0]))
             if (ngold > 0).any() else 0.0)
    return p, r, _harmonic(p, r)


def entity_chunks(tags: np.ndarray, seq: np.ndarray, class_names) -> np.ndarray:
    """CoNLL chunks of BIO tag codes: int array ``(C, 3)`` of (first, last, type) positions.

    Args:
        tags: ``(T,)`` class codes into ``class_names`` (``"O"``, ``"B-X"``, ``"I-X"``).
        seq: ``(T,)`` sequence of each position (positions of a sequence are contiguous).
        class_names: the class names.
    """
    types, kind = {}, []
    for name in class_names:
        name = str(name)
        if name == "O":
            kind.append((0, -1))
        elif len(name) > 2 and name[:2] in ("B-", "I-"):
            kind.append((1 if name[0] == "B" else 2, types.setdefault(name[2:], len(types))))
        else:
            raise ValueError(f"class_names must be BIO tags ('O', 'B-X', 'I-X'), got {name!r}")
    kind = np.asarray(kind)
    prefix, etype = kind[tags, 0], kind[tags, 1]
    inside = prefix > 0
    new_seq = np.r_[True, seq[1:] != seq[:-1]]
    same_prev = np.r_[False, (etype[1:] == etype[:-1]) & inside[:-1]] & ~new_seq
    begin = inside & ((prefix == 1) | ~same_prev)
    ends_next = np.r_[begin[1:] | ~same_prev[1:], True]
    end = inside & ends_next
    return np.stack([np.flatnonzero(begin), np.flatnonzero(end), etype[begin]], axis=1)


def sequence_scores(pred, gold, sequences: Sequences | None = None, scheme: str = "macro", *,
                    average: str = "sequence", classes: str = "all",
                    num_classes: int | None = None, class_names=None, positive: int = 1,
                    paper_literal: bool = False, mask=None) -> Scores:
    """Precision, recall and F of predicted labels, by one of the paper's schemes.

    Args:
        pred: ``(N,)`` predicted class codes (``-1`` allowed on items that are not scored).
        gold: ``(N,)`` true class codes, ``-1`` where unknown (those items are not scored).
        sequences: the sequence boundaries, or ``None`` for a single sequence of all items.
        scheme: ``"macro"``, ``"entity"`` or ``"partial_match"`` (see the module docstring).
        average: ``"sequence"`` (score each sequence, then average) or ``"pooled"``.
        classes: ``"all"`` or ``"present"``: the classes averaged by ``"macro"``.
        num_classes: ``K``; default: the sequences' table's, else ``max code + 1``.
        class_names: BIO names for ``"entity"``; default: the sequences' table's classes.
        positive: the positive class code for ``"partial_match"``.
        paper_literal: ``"partial_match"`` only: use the printed recall
            ``#words in a predicted span / #words in a gold span``.
        mask: optional bool ``(N,)``: score only these items (and only where gold is known).

    Returns:
        :class:`Scores`; ``num_sequences`` counts the sequences with at least one scored item.

    Example:
        >>> s = sequence_scores([0, 1, 1, 0], [0, 1, 0, 0], classes="present")
        >>> round(s.f_score, 4), s.accuracy
        (0.7333, 0.75)
    """
    check_in(scheme, "scheme", SCHEMES)
    check_in(average, "average", ("sequence", "pooled"))
    check_in(classes, "classes", ("all", "present"))
    if not isinstance(paper_literal, bool):
        raise TypeError(f"paper_literal must be a bool, got {paper_literal!r}")
    if paper_literal and scheme != "partial_match":
        raise ValueError("paper_literal applies only to scheme='partial_match'")
    p_all, g_all = _codes(pred, "pred"), _codes(gold, "gold")
    if len(p_all) != len(g_all):
        raise ValueError(f"pred and gold must have the same length, got {len(p_all)} and "
                         f"{len(g_all)}")
    table = sequences.data if isinstance(sequences, Sequences) else None
    table = table if isinstance(table, AnnotationTable) else None
    if num_classes is None:
        num_classes = table.num_classes if table is not None else int(max(p_all.max(),
                                                                           g_all.max())) + 1
    k = check_int(num_classes, "num_classes", minimum=1)
    for name, arr in (("pred", p_all), ("gold", g_all)):
        if len(arr) and (arr.min() < -1 or arr.max() >= k):
            raise ValueError(f"{name} must hold codes in [-1, {k - 1}], found "
                             f"{arr.min()} .. {arr.max()}")
    scored = g_all >= 0
    if mask is not None:
        m = mask.detach().cpu().numpy() if isinstance(mask, torch.Tensor) else np.asarray(mask)
        if m.dtype != bool or m.shape != g_all.shape:
            raise ValueError(f"mask must be a bool array of shape {g_all.shape}")
        scored &= m
    if (p_all[scored] < 0).any():
        raise ValueError("pred must hold a class code (not -1) on every scored item")
    if sequences is None:
        seq_all = np.zeros(len(g_all), dtype=np.int64)
    else:
        if not isinstance(sequences, Sequences) or sequences.total_length != len(g_all):
            raise ValueError(f"sequences must be Sequences over the {len(g_all)} items")
        seq_all = sequences.sequence_ids().cpu().numpy()
    _, seq = np.unique(seq_all[scored], return_inverse=True)
    p, g = p_all[scored], g_all[scored]
    n, s = len(g), int(seq.max()) + 1 if len(seq) else 0
    if n == 0:
        raise ValueError("no item is scored: gold is unknown (or masked) everywhere")
    accuracy = float(np.mean(p == g))
    if scheme == "macro":
        if average == "pooled":
            per = precision_recall_per_class(g, p, labels=None if classes == "present"
                                             else list(range(k)))
            prec, rec, f = (float(per[c].mean()) for c in ("precision", "recall", "f1"))
        else:
            hit = (p == g).astype(np.float64)
            tp = np.bincount(seq * k + g, weights=hit, minlength=s * k).reshape(s, k)
            npred = np.bincount(seq * k + p, minlength=s * k).reshape(s, k)
            ngold = np.bincount(seq * k + g, minlength=s * k).reshape(s, k)
            weight = np.ones((s, k)) if classes == "all" else ((npred + ngold) > 0) * 1.0
            weight /= weight.sum(axis=1, keepdims=True)
            prec, rec, f = (float(np.mean((x * weight).sum(axis=1)))
                            for x in (_safe(tp, npred), _safe(tp, ngold),
                                      _safe(2 * tp, npred + ngold)))
    elif scheme == "entity":
        names = class_names if class_names is not None else (
            list(table.classes) if table is not None else None)
        if names is None or len(names) != k:
            raise ValueError(f"class_names must list the {k} BIO class names for 'entity'")
        chunks_p, chunks_g = entity_chunks(p, seq, names), entity_chunks(g, seq, names)

        def key(c):
            return (c[:, 0] * (n + 1) + c[:, 1]) * (k + 1) + c[:, 2]
        common = np.intersect1d(key(chunks_p), key(chunks_g))
        tp = np.bincount(seq[common // (k + 1) // (n + 1)], minlength=s)
        npred = np.bincount(seq[chunks_p[:, 0]], minlength=s)
        ngold = np.bincount(seq[chunks_g[:, 0]], minlength=s)
        prec, rec, f = _ratio_scores(tp, npred, ngold, tp, average)
    else:
        positive = check_int(positive, "positive", minimum=0, maximum=k - 1)
        pp, gp = p == positive, g == positive
        tp = np.bincount(seq, weights=pp & gp, minlength=s)
        npred = np.bincount(seq, weights=pp, minlength=s)
        ngold = np.bincount(seq, weights=gp, minlength=s)
        prec, rec, f = _ratio_scores(tp, npred, ngold, npred if paper_literal else tp, average)
    return Scores(prec, rec, f, accuracy, n, s)


def score_task(task, pred) -> Scores:
    """Score ``pred`` (``(N,)`` codes) on a CrowdTask with the task's own metric."""
    return sequence_scores(pred, task.gold, task.sequences, mask=task.eval_mask,
                           num_classes=task.num_classes, class_names=task.classes,
                           **task.metric)


@dataclass(frozen=True)
class SingleBest:
    """The oracle-selected learner: its id, its scores and every learner's scores."""

    worker: object
    scores: Scores
    table: pd.DataFrame


def worker_scores(task) -> pd.DataFrame:
    """Every learner scored on the scored items it labelled (the paper's single-best rule).

    Returns:
        DataFrame indexed by worker id with the :class:`Scores` fields as columns; a learner
        that labelled no scored item has ``num_items = 0`` and NaN scores.
    """
    table = task.table
    if table.allow_repeats:
        raise ValueError("worker_scores needs at most one label per (item, worker)")
    # Work on the scored items only, in order and with their sequence boundaries: every
    # scheme reads nothing else, so the scores are those of the full arrays.
    scorable = task.evaluation_mask().cpu()
    position = torch.full((table.num_items,), -1, dtype=torch.long)
    position[scorable] = torch.arange(int(scorable.sum()))
    sequences = None
    if task.sequences is not None:
        lengths = torch.bincount(task.sequences.sequence_ids().cpu()[scorable],
                                 minlength=task.sequences.num_sequences)
        sequences = Sequences(torch.zeros(int(scorable.sum())), lengths[lengths > 0])
    gold = task.gold.cpu()[scorable]
    item, worker, label = (t.cpu() for t in (table.item_idx, table.worker_idx, table.label_idx))
    keep = position[item] >= 0
    item, worker, label = position[item[keep]], worker[keep], label[keep]
    order = torch.argsort(worker, stable=True)
    counts = torch.bincount(worker, minlength=table.num_workers).tolist()
    rows = []
    for rows_m in torch.split(order, counts):
        if len(rows_m) == 0:
            rows.append({**dict.fromkeys(("precision", "recall", "f_score", "accuracy"),
                                         np.nan), "num_items": 0, "num_sequences": 0})
            continue
        pred = torch.full((len(gold),), -1, dtype=torch.long)
        pred[item[rows_m]] = label[rows_m]
        scores = sequence_scores(pred, gold, sequences, mask=pred >= 0,
                                 num_classes=task.num_classes, class_names=task.classes,
                                 **task.metric)
        rows.append(scores.as_dict())
    return pd.DataFrame(rows, index=table.workers)


def single_best(task, min_items: int = 1) -> SingleBest:
    """The learner with the best F-score on the items it labelled (an oracle: it uses gold).

    Ties in F go to the learner with more scored items, then to the first learner.

    Args:
        task: a CrowdTask.
        min_items: learners with fewer scored items are not eligible (the paper had no such
            rule: its Music Genre best learner labelled 10 songs).
    """
    min_items = check_int(min_items, "min_items", minimum=1)
    scores = worker_scores(task)
    eligible = scores[scores["num_items"] >= min_items]
    if eligible.empty:
        raise ValueError(f"no learner labelled at least min_items={min_items} scored items")
    ranked = eligible.assign(_pos=np.arange(len(eligible))).sort_values(
        ["f_score", "num_items", "_pos"], ascending=[False, False, True], kind="stable")
    best = ranked.index[0]
    row = eligible.loc[best]
    fields = Scores.__dataclass_fields__
    values = {name: (int(row[name]) if name.startswith("num_") else float(row[name]))
              for name in fields}
    return SingleBest(best, Scores(**values), scores)
