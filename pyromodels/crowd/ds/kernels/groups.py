"""The labels of an annotation table grouped by item, as the compiled passes read them."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from .native import c_passes

__all__ = ["item_groups", "item_cells", "GroupedCells", "grouped_cells"]

_GROUPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cached(table, kind: str, build):
    per_table = _GROUPS.setdefault(table, {})
    if kind not in per_table:
        per_table[kind] = build()
    return per_table[kind]


def _codes(codes) -> np.ndarray:
    """A code column (a CPU tensor or a NumPy array) as a NumPy array."""
    return codes.cpu().numpy() if hasattr(codes, "cpu") else np.asarray(codes)


def _ptr(table) -> np.ndarray:
    """``(N + 1,)`` int64: item ``n``'s labels are rows ``ptr[n] .. ptr[n + 1] - 1`` of the
    grouped arrays."""
    def build():
        item = _codes(table.item_idx)
        ptr = np.zeros(table.num_items + 1, dtype=np.int64)
        np.cumsum(np.bincount(item, minlength=table.num_items), out=ptr[1:])
        return ptr

    return _cached(table, "ptr", build)


def item_groups(table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ptr, workers, labels)``: the table's labels grouped by item, as the numba passes read
    them; cached per table.

    Item ``n``'s labels are rows ``ptr[n] .. ptr[n + 1] - 1`` of ``workers`` and ``labels``
    (in the table's order within an item). int32 codes when every worker and class code fits.
    A table whose rows are already in item order is only cast; any other order is grouped by
    a stable counting sort, one pass over the rows whatever their order (a sort by item would
    cost ``O(L log L)``: 20 times longer on 500,000 shuffled labels).

    Args:
        table: an annotation table (``item_idx``, ``worker_idx``, ``label_idx`` of length
            ``num_labels``, CPU tensors or NumPy arrays, and ``num_items``, ``num_workers``,
            ``num_classes``).
    """
    def build():
        ptr = _ptr(table)
        item = _codes(table.item_idx)
        workers, labels = _codes(table.worker_idx), _codes(table.label_idx)
        small = max(table.num_workers, table.num_classes) < 2 ** 31
        code = np.int32 if small else np.int64
        if bool(np.all(item[1:] >= item[:-1])):
            return ptr, workers.astype(code), labels.astype(code)
        from .passes import scatter_by_item

        grouped = np.empty(len(item), dtype=code), np.empty(len(item), dtype=code)
        scatter_by_item(item, workers, labels, ptr, *grouped)
        return (ptr, *grouped)

    return _cached(table, "groups", build)


@dataclass(frozen=True, eq=False)
class GroupedCells:
    """Labels already grouped by item as the C passes read them (:func:`item_cells`), with
    their sizes: what a data-parallel fit keeps of each partition (4 bytes a label).

    Attributes:
        ptr: ``(N + 1,)`` int64, item ``n``'s labels are ``cells[ptr[n]:ptr[n + 1]]``.
        cells: ``(L,)`` int32, ``worker * K + label``.
        num_workers, num_classes: ``M`` and ``K`` of the codes.
    """

    ptr: np.ndarray
    cells: np.ndarray
    num_workers: int
    num_classes: int

    @property
    def num_items(self) -> int:
        return len(self.ptr) - 1

    @property
    def num_labels(self) -> int:
        return len(self.cells)


def grouped_cells(table) -> GroupedCells:
    """:func:`item_cells` of ``table`` kept with its sizes, without the codes themselves."""
    return GroupedCells(*item_cells(table), table.num_workers, table.num_classes)


def item_cells(table) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, cells)``: the table's labels grouped by item as the C passes read them, one
    int32 per label, ``cell = worker * K + label`` (the row of that pair in the confusion
    columns and the counts); cached per table. Built by one C pass (a stable counting sort by
    item; rows already in item order are only coded). Needs the C passes and ``M * K`` below
    ``2^31``. A :class:`GroupedCells` holds them already."""
    if isinstance(table, GroupedCells):
        return table.ptr, table.cells

    def build():
        ptr = _ptr(table)
        cells = np.empty(table.num_labels, dtype=np.int32)
        c_passes().group_by_item(table.num_items, table.num_workers, table.num_classes,
                                 *(np.ascontiguousarray(_codes(t), dtype=np.int64)
                                   for t in (table.item_idx, table.worker_idx, table.label_idx)),
                                 ptr, cells)
        return ptr, cells

    return _cached(table, "cells", build)
