r"""Sample and population moments of crowd labels for moment matching (ensemble paper §3.2).

With one-hot responses :math:`e_{f_m(n)}` and the conventions of :mod:`pyromodels.crowd`
(``confusion[m, k, j] = P(worker m answers j | true class k)``, so the paper's
:math:`\Gamma_m` is ``confusion[m].T``), the Dawid–Skene model gives, for distinct workers
:math:`a, b, c` (eqs. 13–16):

.. math::
    \mu_a[i] = \sum_k \pi_k C_a[k, i], \qquad
    R_{ab}[i, j] = \sum_k \pi_k C_a[k, i] C_b[k, j], \qquad
    \Psi_{abc}[i, j, l] = \sum_k \pi_k C_a[k, i] C_b[k, j] C_c[k, l].

**Missing responses.** Crowd workers label only some items, so each sample moment averages
over the items that the worker (pair, triple) actually labelled:

.. math::
    \hat\mu_a = \frac{1}{N_a} \sum_{n \in I_a} e_{f_a(n)}, \quad
    \hat S_{ab} = \frac{1}{N_{ab}} \sum_{n \in I_a \cap I_b} e_{f_a(n)} e_{f_b(n)}^\top, \quad
    \hat T_{abc} = \frac{1}{N_{abc}} \sum_{n \in I_a \cap I_b \cap I_c}
        e_{f_a(n)} \circ e_{f_b(n)} \circ e_{f_c(n)},

with :math:`I_a` the items worker :math:`a` labelled and :math:`N_{ab} = |I_a \cap I_b|`
(the co-occurrence count). When who-labels-what does not depend on the labels, each of these
is an unbiased estimate of its population moment; the paper's :math:`1/N` normalisation is
instead biased towards zero by the fraction of items a pair or triple shares, which is why it
is not used. Pairs and triples that share no item have no moment; their counts are stored so
that a fit can leave them out.

Everything is computed from the long table: rows are sorted by (item, worker), the rows of
one item form a contiguous block, and all pairs (triples) of rows inside a block are listed
with :func:`expand_ranges` and accumulated with one ``bincount``. The cost is
:math:`O(\sum_n c_n^2)` for pairs and :math:`O(\sum_n c_n^3 / 6)` for triples, with
:math:`c_n` the number of labels of item ``n`` among the selected workers; only triples that
occur are stored. The number of possible triples is :math:`\binom{M}{3}`, so ``max_workers``
keeps the workers with the most labels (the paper keeps 120 of 312 annotators on
Biomedical IE).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...checks import as_label_tensor, check_int, check_stochastic
from ...data.annotations import AnnotationTable
from ..emissions import check_confusion

__all__ = [
    "Moments",
    "sample_moments",
    "population_moments",
    "select_workers",
    "resolve_workers",
    "sorted_rows",
    "check_table",
    "check_prior",
    "expand_ranges",
    "triple_ranks",
    "model_moments",
]

DTYPE = torch.float64


@dataclass(frozen=True, eq=False)
class Moments:
    r"""First-, second- and third-order moments of ``M'`` selected workers.

    Local worker ``a`` (``0 <= a < M'``) is the table's worker ``workers[a]``.

    Attributes:
        workers: long ``(M',)`` table worker codes, ascending.
        first: ``(M', K)``, ``first[a] = mu_a``.
        second: ``(M', M', K, K)``, ``second[a, b] = S_ab`` (so ``second[b, a] =
            second[a, b].T``); the diagonal blocks ``a == b`` are zero and never used.
        triples: long ``(P, 3)`` worker triples ``a < b < c`` (local codes), lexicographic.
        third: ``(P, K, K, K)``, ``third[p]`` the moment of ``triples[p]`` with its axes in
            that order.
        first_counts, second_counts, third_counts: long ``(M',)``, ``(M', M')`` and ``(P,)``
            numbers of items behind each moment, or ``None`` for exact (population) moments.
    """

    workers: torch.Tensor
    first: torch.Tensor
    second: torch.Tensor
    triples: torch.Tensor
    third: torch.Tensor
    first_counts: torch.Tensor | None = None
    second_counts: torch.Tensor | None = None
    third_counts: torch.Tensor | None = None

    @property
    def num_workers(self) -> int:
        """Number of selected workers ``M'``."""
        return int(self.first.shape[0])

    @property
    def num_classes(self) -> int:
        """Number of classes ``K``."""
        return int(self.first.shape[1])

    def weights(self, min_overlap: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Unit weights of the moment-matching terms: 1 where a moment rests on at least
        ``min_overlap`` items (always 1 for population moments), else 0; pair weights are zero
        on the diagonal. Returns float ``(M',)``, ``(M', M')`` and ``(P,)`` tensors."""
        min_overlap = check_int(min_overlap, "min_overlap", minimum=1)
        m, dev = self.num_workers, self.first.device
        off_diag = 1.0 - torch.eye(m, dtype=DTYPE, device=dev)
        if self.first_counts is None:
            return (torch.ones(m, dtype=DTYPE, device=dev), off_diag,
                    torch.ones(self.triples.shape[0], dtype=DTYPE, device=dev))
        return ((self.first_counts >= min_overlap).to(DTYPE),
                (self.second_counts >= min_overlap).to(DTYPE) * off_diag,
                (self.third_counts >= min_overlap).to(DTYPE))


def check_table(table, num_classes: int | None = None) -> int:
    """Raise unless ``table`` is an AnnotationTable fit for moment matching; return ``K``.

    Moment matching needs ``K >= 2`` classes and at most one label per (item, worker).
    """
    if not isinstance(table, AnnotationTable):
        raise TypeError(f"table must be an AnnotationTable, got {type(table).__name__}")
    k = table.num_classes
    if num_classes is not None:
        num_classes = check_int(num_classes, "num_classes", minimum=2)
        if num_classes != k:
            raise ValueError(
                f"num_classes must equal the table's number of classes {k} (the latent classes "
                f"are the response classes), got {num_classes}; build the table with the full "
                "class list to keep classes nobody used"
            )
    if k < 2:
        raise ValueError(f"moment matching needs at least 2 classes, the table has {k}")
    if table.allow_repeats:
        key = table.item_idx * table.num_workers + table.worker_idx
        if int(torch.unique(key).numel()) != table.num_labels:
            raise ValueError(
                "table must hold at most one label per (item, worker) for moment matching; "
                "it has repeated (item, worker) rows"
            )
    return k


def check_prior(prior, name: str, num_classes: int) -> torch.Tensor:
    """``prior`` as a float64 ``(K,)`` tensor on the simplex."""
    return check_stochastic(prior, name, shape=(num_classes,), dtype=DTYPE)


def select_workers(table, max_workers: int | None = None) -> torch.Tensor:
    """Codes (ascending) of the ``max_workers`` workers with the most labels (all if ``None``).

    Ties in the label count go to the smaller worker code.
    """
    m = table.num_workers
    if max_workers is None:
        return torch.arange(m, device=table.device)
    max_workers = check_int(max_workers, "max_workers", minimum=1)
    counts = table.counts_per_worker()
    order = torch.sort(-counts, stable=True).indices[: min(max_workers, m)]
    return torch.sort(order).values


def expand_ranges(lo: torch.Tensor, hi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """All pairs ``(s, d)`` with ``lo[s] <= d < hi[s]``, as two long tensors grouped by ``s``.

    Example:
        >>> s, d = expand_ranges(torch.tensor([0, 5]), torch.tensor([2, 7]))
        >>> s.tolist(), d.tolist()
        ([0, 0, 1, 1], [0, 1, 5, 6])
    """
    reps = (hi - lo).clamp_min(0)
    src = torch.repeat_interleave(torch.arange(lo.shape[0], device=lo.device), reps)
    start = torch.cumsum(reps, 0) - reps
    dst = torch.arange(src.shape[0], device=lo.device) - start[src] + lo[src]
    return src, dst


def triple_ranks(a, b, c, m: int) -> torch.Tensor:
    r"""Position of the triple ``a < b < c`` among ``torch.combinations(arange(m), 3)``:
    :math:`\binom{m}{3} - \binom{m-a}{3} + \binom{m-a-1}{2} - \binom{m-b}{2} + c - b - 1`."""

    def c3(x):
        return x * (x - 1) * (x - 2) // 6

    def c2(x):
        return x * (x - 1) // 2

    return c3(m) - c3(m - a) + c2(m - a - 1) - c2(m - b) + (c - b - 1)


def resolve_workers(table, workers=None, max_workers: int | None = None) -> torch.Tensor:
    """Ascending table worker codes: ``workers`` checked, or :func:`select_workers`."""
    if workers is not None and max_workers is not None:
        raise ValueError("give at most one of workers and max_workers")
    if workers is None:
        return select_workers(table, max_workers)
    codes = as_label_tensor(workers, "workers", num_classes=table.num_workers, device=table.device)
    codes = torch.sort(codes).values
    if codes.numel() > 1 and bool((codes[1:] == codes[:-1]).any()):
        raise ValueError("workers must not repeat a worker code")
    return codes


def sorted_rows(table, codes: torch.Tensor):
    """The rows of the workers ``codes``, sorted by (item, worker), with local worker codes.

    Returns:
        ``(item, worker, label, offsets)``: long tensors over the kept rows (``worker`` is the
        position in ``codes``) and ``offsets`` ``(N + 1,)``, item ``n``'s rows lying at
        ``offsets[n] .. offsets[n + 1] - 1``.
    """
    m, dev = codes.shape[0], table.device
    local = torch.full((table.num_workers,), -1, dtype=torch.long, device=dev)
    local[codes] = torch.arange(m, device=dev)
    keep = local[table.worker_idx] >= 0
    item, worker, label = table.item_idx[keep], local[table.worker_idx[keep]], table.label_idx[keep]
    order = torch.argsort(item * m + worker)
    offsets = torch.zeros(table.num_items + 1, dtype=torch.long, device=dev)
    offsets[1:] = torch.cumsum(torch.bincount(item, minlength=table.num_items), 0)
    return item[order], worker[order], label[order], offsets


def sample_moments(table, *, workers=None, max_workers: int | None = None,
                   num_classes: int | None = None, third: bool = True) -> Moments:
    r"""Co-occurrence-normalised sample moments :math:`\hat\mu_a, \hat S_{ab}, \hat T_{abc}`.

    Args:
        table: an :class:`~pyromodels.data.AnnotationTable` (at most one label per item and
            worker, ``K >= 2``).
        workers: table worker codes to use (default: all); give at most one of ``workers``
            and ``max_workers``.
        max_workers: keep the workers with the most labels (:func:`select_workers`).
        num_classes: expected ``K`` (checked against the table).
        third: whether to compute third-order moments (needs at least 3 workers).

    Returns:
        :class:`Moments` on the table's device, float64, with only the triples that share at
        least one item.

    Example:
        >>> from pyromodels.data import WorkerPopulation, simulate_annotations
        >>> table, _ = simulate_annotations(50, WorkerPopulation(4, missing_rate=0.2), 3, seed=0)
        >>> mom = sample_moments(table)
        >>> mom.second.shape, mom.third.shape[1:]
        (torch.Size([4, 4, 3, 3]), torch.Size([3, 3, 3]))
    """
    k = check_table(table, num_classes)
    codes = resolve_workers(table, workers, max_workers)
    m, dev = codes.shape[0], table.device
    if third and m < 3:
        raise ValueError(
            f"third-order moments need at least 3 workers, got {m}; moment matching cannot "
            "identify the confusion matrices from fewer"
        )
    item, worker, label, offsets = sorted_rows(table, codes)
    ends = offsets[item + 1]

    first_counts = torch.bincount(worker, minlength=m)
    first = torch.bincount(worker * k + label, minlength=m * k).reshape(m, k).to(DTYPE)
    first = first / first_counts.clamp_min(1)[:, None]

    i, j = expand_ranges(torch.arange(item.shape[0], device=dev) + 1, ends)
    pair = worker[i] * m + worker[j]
    second_counts = torch.bincount(pair, minlength=m * m).reshape(m, m)
    second = torch.bincount((pair * k + label[i]) * k + label[j], minlength=m * m * k * k)
    second = second.reshape(m, m, k, k).to(DTYPE)
    second = second + second.transpose(0, 1).transpose(2, 3)
    second_counts = second_counts + second_counts.T
    second = second / second_counts.clamp_min(1)[:, :, None, None]

    if third:
        p, q = expand_ranges(j + 1, ends[j])
        a, b, c = worker[i[p]], worker[j[p]], worker[q]
        ranks = triple_ranks(a, b, c, m)
        num_all = m * (m - 1) * (m - 2) // 6
        if num_all * k ** 3 <= 10 ** 6 + 4 * ranks.shape[0]:  # few possible triples: count all
            seen = torch.nonzero(torch.bincount(ranks, minlength=num_all)).squeeze(1)
            position = torch.zeros(num_all, dtype=torch.long, device=dev)
            position[seen] = torch.arange(seen.shape[0], device=dev)
            where = position[ranks]
            triples = torch.combinations(torch.arange(m, device=dev), 3)[seen]
        else:  # many possible triples: keep only those that occur
            seen, where = torch.unique(ranks, return_inverse=True)
            triples = torch.zeros(seen.shape[0], 3, dtype=torch.long, device=dev)
            triples[where] = torch.stack([a, b, c], 1)
        cells = ((label[i[p]] * k + label[j[p]]) * k + label[q])
        third_counts = torch.bincount(where, minlength=seen.shape[0])
        third_m = torch.bincount(where * k ** 3 + cells, minlength=seen.shape[0] * k ** 3)
        third_m = third_m.reshape(-1, k, k, k).to(DTYPE)
        third_m = third_m / third_counts.clamp_min(1)[:, None, None, None]
    else:
        triples = torch.zeros(0, 3, dtype=torch.long, device=dev)
        third_m = torch.zeros(0, k, k, k, dtype=DTYPE, device=dev)
        third_counts = torch.zeros(0, dtype=torch.long, device=dev)
    return Moments(codes, first, second, triples, third_m, first_counts, second_counts,
                   third_counts)


def model_moments(prior: torch.Tensor, confusion: torch.Tensor, triples: torch.Tensor):
    """Unchecked model moments ``(first (M, K), second (M, M, K, K), third (P, K, K, K))``
    of ``prior`` ``(K,)`` and ``confusion`` ``(M, K, K)``; ``second`` has zero diagonal
    blocks."""
    first = torch.einsum("k,mki->mi", prior, confusion)
    weighted = prior[None, :, None] * confusion
    second = torch.einsum("aki,bkj->abij", weighted, confusion)
    m = confusion.shape[0]
    second = second * (1 - torch.eye(m, dtype=second.dtype, device=second.device))[:, :, None, None]
    pair = weighted[triples[:, 0]][:, :, :, None] * confusion[triples[:, 1]][:, :, None, :]
    third = torch.einsum("pkij,pkl->pijl", pair, confusion[triples[:, 2]])
    return first, second, third


def population_moments(prior, confusion, triples=None) -> Moments:
    r"""Exact moments :math:`\mu_a, R_{ab}, \Psi_{abc}` (eqs. 13–16) of the Dawid–Skene model.

    Args:
        prior: ``(K,)`` class prior on the simplex.
        confusion: ``(M, K, K)`` confusion matrices, rows = true class.
        triples: long ``(P, 3)`` worker triples ``a < b < c``; default all
            :math:`\binom{M}{3}` of them in lexicographic order.

    Returns:
        :class:`Moments` with ``workers = arange(M)`` and no counts (unit weights).

    Example:
        >>> mom = population_moments(torch.tensor([0.5, 0.5]),
        ...                          torch.eye(2).expand(3, 2, 2))
        >>> mom.third[0, 0, 0, 0].item(), mom.third[0, 0, 1, 0].item()
        (0.5, 0.0)
    """
    c = check_confusion(confusion)
    m, k, _ = c.shape
    p = check_prior(prior, "prior", k).to(c.device)
    if triples is None:
        triples = torch.combinations(torch.arange(m, device=c.device), 3).reshape(-1, 3)
    else:
        triples = as_label_tensor(triples, "triples", num_classes=m, ndim=2, device=c.device)
        if triples.shape[1] != 3 or bool((triples[:, 1:] <= triples[:, :-1]).any()):
            raise ValueError(
                "triples must have shape (P, 3) with increasing worker codes a < b < c")
    first, second, third = model_moments(p, c, triples)
    return Moments(torch.arange(m, device=c.device), first, second, triples, third)
