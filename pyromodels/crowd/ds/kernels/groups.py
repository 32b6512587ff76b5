"""The labels of an annotation table grouped by item, as the compiled passes read them."""

from __future__ import annotations

import weakref

import numpy as np

from .native import c_passes, have_c

__all__ = ["item_groups"]

_GROUPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _scatter(table, item: np.ndarray, ptr: np.ndarray, out: tuple[np.ndarray, np.ndarray]):
    """Fill ``out`` (workers, labels) with the rows grouped by item, rows taken in order: the
    C pass for int32 codes when it was built, else numba's."""
    workers = table.worker_idx.cpu().numpy()
    labels = table.label_idx.cpu().numpy()
    if out[0].dtype == np.int32 and have_c():
        c_passes().group_by_item(table.num_items, table.num_workers, table.num_classes,
                                 item, workers, labels, ptr, *out)
        return
    from .passes import scatter_by_item

    scatter_by_item(item, workers, labels, ptr, *out)


def item_groups(table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ptr, workers, labels)``: the table's labels grouped by item, cached per table.

    Item ``n``'s labels are rows ``ptr[n] .. ptr[n + 1] - 1`` of ``workers`` and ``labels``
    (in the table's order within an item). int32 codes when every worker and class code fits
    (the C passes read only those). A table whose rows are already in item order is only
    cast; any other order is grouped by a stable counting sort, one pass over the rows whatever
    their order (a sort by item would cost ``O(L log L)``: 20 times longer on 500,000
    shuffled labels).

    Args:
        table: an annotation table (``item_idx``, ``worker_idx``, ``label_idx`` of length
            ``num_labels``, and ``num_items``, ``num_workers``, ``num_classes``).
    """
    if table not in _GROUPS:
        item = table.item_idx.cpu().numpy()
        small = max(table.num_workers, table.num_classes) < 2 ** 31
        code = np.int32 if small else np.int64
        ptr = np.zeros(table.num_items + 1, dtype=np.int64)
        np.cumsum(np.bincount(item, minlength=table.num_items), out=ptr[1:])
        if bool(np.all(item[1:] >= item[:-1])):
            grouped = (table.worker_idx.cpu().numpy().astype(code),
                       table.label_idx.cpu().numpy().astype(code))
        else:
            grouped = np.empty(len(item), dtype=code), np.empty(len(item), dtype=code)
            _scatter(table, item, ptr, grouped)
        _GROUPS[table] = (ptr, *grouped)
    return _GROUPS[table]
