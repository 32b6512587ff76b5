"""Long-format crowd annotations: one row per (item, worker, label) judgement.

The table stores integer codes in long tensors and keeps the user's ids as pandas indexes, so
a model can work on codes while its results are returned indexed by the user's own item,
worker and class ids. Items need not be labelled by every worker (missing labels are simply
absent rows); an item may even have no label at all when the item ids are given explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from ..checks import check_int
from .columns import (
    IdMaps,
    LabelCodes,
    MissingColumnError,
    check_columns,
    count_labels,
    item_column,
)
from .idmaps import (
    as_id_index,
    c_table_passes,
    check_codes,
    encode_ids,
    plain,
    repeated_keys,
)
from .tensors import TensorFields

__all__ = ["AnnotationTable", "TableSizes", "MissingColumnError", "check_columns", "item_column"]


class TableSizes:
    """``num_items``, ``num_workers`` and ``num_classes`` of a container that holds an
    :class:`AnnotationTable` as its ``table`` attribute (prepared model data, crowd tasks)."""

    @property
    def num_items(self) -> int:
        """Number of items ``N``."""
        return self.table.num_items

    @property
    def num_workers(self) -> int:
        """Number of workers ``M``."""
        return self.table.num_workers

    @property
    def num_classes(self) -> int:
        """Number of classes ``K``."""
        return self.table.num_classes


@dataclass(frozen=True, eq=False)
class AnnotationTable(IdMaps, TensorFields):
    r"""Crowd labels in long format with id maps.

    Row :math:`l` says that worker ``worker_idx[l]`` gave label ``label_idx[l]`` to item
    ``item_idx[l]``. With :math:`N` items, :math:`M` workers, :math:`K` classes and :math:`L`
    rows, the codes lie in :math:`[0, N)`, :math:`[0, M)` and :math:`[0, K)`.

    Attributes:
        item_idx: long tensor ``(L,)``.
        worker_idx: long tensor ``(L,)``.
        label_idx: long tensor ``(L,)``.
        items: the ``N`` item ids (``pandas.Index``); code ``n`` means ``items[n]``.
        workers: the ``M`` worker ids.
        classes: the ``K`` class ids.
        allow_repeats: whether one worker may label one item more than once. Off by default:
            repeated (item, worker) rows are an error.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"task": ["a", "a", "b"], "worker": ["w1", "w2", "w1"],
        ...                    "label": ["cat", "dog", "dog"]})
        >>> table = AnnotationTable.from_dataframe(df)
        >>> table.num_items, table.num_workers, table.num_classes
        (2, 2, 2)
        >>> table.to_dense().tolist()
        [[0, 1], [1, -1]]
    """

    item_idx: torch.Tensor
    worker_idx: torch.Tensor
    label_idx: torch.Tensor
    items: pd.Index
    workers: pd.Index
    classes: pd.Index
    allow_repeats: bool = False

    _tensor_fields = ("item_idx", "worker_idx", "label_idx")

    def __post_init__(self):
        items = as_id_index(self.items, "items")
        workers = as_id_index(self.workers, "workers")
        classes = as_id_index(self.classes, "classes")
        item_idx = check_codes(self.item_idx, "item_idx", len(items), "num_items")
        worker_idx = check_codes(self.worker_idx, "worker_idx", len(workers), "num_workers")
        label_idx = check_codes(self.label_idx, "label_idx", len(classes), "num_classes")
        lengths = {len(item_idx), len(worker_idx), len(label_idx)}
        if len(lengths) != 1:
            raise ValueError(
                "item_idx, worker_idx and label_idx must have the same length, got "
                f"{len(item_idx)}, {len(worker_idx)} and {len(label_idx)}"
            )
        if not isinstance(self.allow_repeats, bool):
            raise TypeError(f"allow_repeats must be a bool, got {self.allow_repeats!r}")
        device = item_idx.device
        for name, value in (
            ("items", items), ("workers", workers), ("classes", classes),
            ("item_idx", item_idx), ("worker_idx", worker_idx.to(device)),
            ("label_idx", label_idx.to(device)),
        ):
            object.__setattr__(self, name, value)
        if not self.allow_repeats:
            rows = repeated_keys(item_idx, worker_idx, sizes=(len(items), len(workers)))
            if len(rows):
                pairs = [
                    (plain(items[int(item_idx[r])]), plain(workers[int(worker_idx[r])]))
                    for r in rows[:5]
                ]
                raise ValueError(
                    f"{len(rows)} repeated (item, worker) row(s): a worker labelled the same item "
                    f"more than once, e.g. {pairs}. Remove the repeats or pass "
                    "allow_repeats=True to keep every judgement"
                )

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_dataframe(
        cls,
        df: pd.DataFrame,
        item: str = "task",
        worker: str = "worker",
        label: str = "label",
        classes=None,
        *,
        items=None,
        workers=None,
        allow_repeats: bool = False,
    ) -> AnnotationTable:
        """Build the table from a long DataFrame with one row per judgement.

        Args:
            df: DataFrame with (at least) the item, worker and label columns.
            item, worker, label: column names (defaults follow crowd-kit). With the default
                ``item="task"``, a table without a ``task`` column may name it ``item``.
            classes: the class ids in the order wanted for the codes; every label must be one
                of them and classes nobody used are kept. Default: the categories of a
                categorical label column (in their order, used or not), else the sorted
                distinct labels.
            items, workers: optional full id lists (fixing the code order and keeping items or
                workers without labels); default: the sorted distinct ids in ``df``.
            allow_repeats: keep repeated (item, worker) rows instead of raising.

        Raises:
            ValueError: missing columns, empty table, NaN ids or labels, labels outside
                ``classes``, repeated (item, worker) rows, a column mixing strings with other
                values (``'1'`` and ``1`` would be two ids).

        Warns:
            UserWarning: string ids or labels that differ only by surrounding whitespace
                (``'cat '`` and ``'cat'``): they stay different ids.
        """
        codes = LabelCodes.from_dataframe(df, item, worker, label, classes, items=items,
                                          workers=workers)
        return cls.from_codes(codes, allow_repeats=allow_repeats)

    @classmethod
    def from_codes(cls, codes: LabelCodes, allow_repeats: bool = False) -> AnnotationTable:
        """The table of NumPy-coded labels (:class:`~pyromodels.data.columns.LabelCodes`),
        validated as any table."""
        return cls(
            torch.from_numpy(codes.item_idx),
            torch.from_numpy(codes.worker_idx),
            torch.from_numpy(codes.label_idx),
            codes.items,
            codes.workers,
            codes.classes,
            allow_repeats=allow_repeats,
        )

    @classmethod
    def from_arrays(
        cls,
        item_idx,
        worker_idx,
        label_idx,
        num_items: int | None = None,
        num_workers: int | None = None,
        num_classes: int | None = None,
        *,
        allow_repeats: bool = False,
    ) -> AnnotationTable:
        """Build the table from integer codes; ids are ``0 .. n - 1``.

        Sizes default to ``max code + 1``; give them to keep unlabelled items, idle workers or
        unused classes.
        """
        codes = []
        for name, x, size, size_name in (
            ("item_idx", item_idx, num_items, "num_items"),
            ("worker_idx", worker_idx, num_workers, "num_workers"),
            ("label_idx", label_idx, num_classes, "num_classes"),
        ):
            if size is not None:
                size = check_int(size, size_name, minimum=1)
            t = check_codes(x, name, size, size_name)
            codes.append((t, size if size is not None else int(t.max()) + 1))
        (it, n), (wt, m), (lt, k) = codes
        return cls(it, wt, lt, pd.RangeIndex(n), pd.RangeIndex(m), pd.RangeIndex(k),
                   allow_repeats=allow_repeats)

    # ------------------------------------------------------------------ sizes
    @property
    def num_labels(self) -> int:
        """Number of rows ``L``."""
        return int(self.item_idx.shape[0])

    def __len__(self) -> int:
        return self.num_labels

    def __repr__(self) -> str:
        return (
            f"AnnotationTable(num_items={self.num_items}, num_workers={self.num_workers}, "
            f"num_classes={self.num_classes}, num_labels={self.num_labels})"
        )

    # ------------------------------------------------------------------ summaries
    def counts_per_item(self) -> torch.Tensor:
        """Number of labels of each item, long tensor ``(N,)``."""
        return torch.bincount(self.item_idx, minlength=self.num_items)

    def counts_per_worker(self) -> torch.Tensor:
        """Number of labels given by each worker, long tensor ``(M,)``."""
        return torch.bincount(self.worker_idx, minlength=self.num_workers)

    def label_statistics(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(counts_per_item(), counts_per_worker(), pairs)`` with ``pairs`` the ``(K, M)``
        bool mask of the (class, worker) pairs that occur; one C pass over the rows for a CPU
        table (where the extension was built), three scatters otherwise."""
        M, K = self.num_workers, self.num_classes
        passes = c_table_passes() if self.device.type == "cpu" else None
        if passes is None:
            pairs = torch.zeros(K, M, dtype=torch.bool, device=self.device)
            pairs[self.label_idx, self.worker_idx] = True
            return self.counts_per_item(), self.counts_per_worker(), pairs
        per_item, per_worker, pairs = count_labels(self, passes)
        return (torch.from_numpy(per_item), torch.from_numpy(per_worker),
                torch.from_numpy(pairs))

    def vote_counts(self) -> torch.Tensor:
        r"""Votes per item and class, long tensor ``(N, K)``: :math:`c_{nk} = \#\{l: n_l=n,
        y_l=k\}`."""
        flat = self.item_idx * self.num_classes + self.label_idx
        counts = torch.bincount(flat, minlength=self.num_items * self.num_classes)
        return counts.reshape(self.num_items, self.num_classes)

    def to_dense(self, fill: int = -1) -> torch.Tensor:
        """Items x workers matrix of label codes, ``fill`` where a worker gave no label.

        Args:
            fill: integer marking a missing label; it must not be a class code.

        Returns:
            Long tensor ``(N, M)``.
        """
        fill = check_int(fill, "fill")
        if 0 <= fill < self.num_classes:
            raise ValueError(
                f"fill must not be a class code in [0, {self.num_classes - 1}], got {fill}"
            )
        if self.allow_repeats and len(repeated_keys(self.item_idx, self.worker_idx)):
            raise ValueError(
                "to_dense needs at most one label per (item, worker); this table has repeats"
            )
        dense = torch.full(
            (self.num_items, self.num_workers), fill, dtype=torch.long, device=self.device
        )
        dense[self.item_idx, self.worker_idx] = self.label_idx
        return dense

    # ------------------------------------------------------------------ id maps
    def encode_items(self, ids) -> torch.Tensor:
        """Codes of item ids (raises on ids this table does not know)."""
        return torch.from_numpy(encode_ids(self.items, ids, "ids", "the table's items"))

    def encode_workers(self, ids) -> torch.Tensor:
        """Codes of worker ids, for prediction on new rows; raises on unknown workers."""
        return torch.from_numpy(encode_ids(self.workers, ids, "ids", "the table's workers"))

    def encode_classes(self, ids) -> torch.Tensor:
        """Codes of class ids (raises on ids that are not classes of this table)."""
        return torch.from_numpy(encode_ids(self.classes, ids, "ids", "the table's classes"))

    def to_frame(self, item: str = "task", worker: str = "worker",
                 label: str = "label") -> pd.DataFrame:
        """The table back in long format with the user's ids, one row per judgement."""
        return pd.DataFrame({
            item: self.items.to_numpy()[self.item_idx.cpu().numpy()],
            worker: self.workers.to_numpy()[self.worker_idx.cpu().numpy()],
            label: self.classes.to_numpy()[self.label_idx.cpu().numpy()],
        })
