"""The labels of an annotation table grouped by item, as the compiled passes read them."""

from __future__ import annotations

import weakref

import numpy as np
from numba import njit

__all__ = ["item_groups", "scatter_by_item"]

_GROUPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@njit(cache=True)
def scatter_by_item(item, workers, labels, ptr, out_workers, out_labels):  # pragma: no cover
    """Copy row ``i``'s worker and label to the next free slot of item ``item[i]`` (slots
    ``ptr[n] .. ptr[n + 1] - 1``), rows taken in order: a stable counting sort by item, one
    pass over the rows whatever their order."""
    fill = ptr[:-1].copy()
    for i in range(item.shape[0]):
        n = item[i]
        j = fill[n]
        out_workers[j] = workers[i]
        out_labels[j] = labels[i]
        fill[n] = j + 1


def item_groups(table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ptr, workers, labels)``: the table's labels grouped by item, cached per table.

    Item ``n``'s labels are rows ``ptr[n] .. ptr[n + 1] - 1`` of ``workers`` and ``labels``
    (in the table's order within an item). int32 codes when every code fits. A table whose
    rows are already in item order is only cast; any other order is grouped by
    :func:`scatter_by_item` (a sort by item would cost ``O(L log L)``: 20 times longer on
    500,000 shuffled labels).

    Args:
        table: an annotation table (``item_idx``, ``worker_idx``, ``label_idx`` of length
            ``num_labels``, and ``num_items``, ``num_workers``, ``num_classes``).
    """
    if table not in _GROUPS:
        item = table.item_idx.cpu().numpy()
        small = max(table.num_workers, table.num_classes, table.num_labels) < 2 ** 31
        code = np.int32 if small else np.int64
        ptr = np.zeros(table.num_items + 1, dtype=np.int64)
        np.cumsum(np.bincount(item, minlength=table.num_items), out=ptr[1:])
        workers = table.worker_idx.cpu().numpy()
        labels = table.label_idx.cpu().numpy()
        if bool(np.all(item[1:] >= item[:-1])):
            grouped = workers.astype(code), labels.astype(code)
        else:
            grouped = np.empty(len(item), dtype=code), np.empty(len(item), dtype=code)
            scatter_by_item(item, workers, labels, ptr, *grouped)
        _GROUPS[table] = (ptr, *grouped)
    return _GROUPS[table]
