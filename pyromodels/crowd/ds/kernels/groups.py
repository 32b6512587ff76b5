"""The labels of an annotation table grouped by item, as the compiled passes read them."""

from __future__ import annotations

import weakref

import numpy as np

__all__ = ["item_groups"]

_GROUPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def item_groups(table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ptr, workers, labels)``: the table's labels grouped by item, cached per table.

    Item ``n``'s labels are rows ``ptr[n] .. ptr[n + 1] - 1`` of ``workers`` and ``labels``
    (in the table's order within an item). int32 codes when every code fits.

    Args:
        table: an annotation table (``item_idx``, ``worker_idx``, ``label_idx`` of length
            ``num_labels``, and ``num_items``, ``num_workers``, ``num_classes``).
    """
    if table not in _GROUPS:
        item = table.item_idx.cpu().numpy()
        order = np.argsort(item, kind="stable")
        small = max(table.num_workers, table.num_classes, table.num_labels) < 2 ** 31
        code = np.int32 if small else np.int64
        ptr = np.zeros(table.num_items + 1, dtype=np.int64)
        np.cumsum(np.bincount(item, minlength=table.num_items), out=ptr[1:])
        workers = table.worker_idx.cpu().numpy()[order].astype(code)
        labels = table.label_idx.cpu().numpy()[order].astype(code)
        _GROUPS[table] = (ptr, workers, labels)
    return _GROUPS[table]
