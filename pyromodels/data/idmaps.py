"""Id maps shared by the data contracts: user ids <-> integer codes.

Every contract keeps the user's own ids (items, workers, classes) as a :class:`pandas.Index`
and stores integer codes ``0 .. len(index) - 1`` in long tensors. These helpers build the
indexes, encode ids into codes and turn per-item / per-worker results back into pandas objects
indexed by the user's ids.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..checks import as_label_tensor

if TYPE_CHECKING:
    import torch

__all__ = [
    "as_id_index",
    "factorize_ids",
    "encode_ids",
    "check_codes",
    "check_no_missing",
    "check_id_kinds",
    "warn_padded_ids",
    "to_numpy",
    "index_values",
    "repeated_keys",
    "c_table_passes",
    "plain",
    "is_tensor",
    "ItemWorkerSizes",
]

_SHOW = 5  # how many offending values an error message lists


def is_tensor(value) -> bool:
    """Whether ``value`` is a torch tensor, without importing torch (a process that has not
    imported torch holds no tensor)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def plain(value):
    """A numpy scalar as the Python scalar it holds (for readable error messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _preview(values) -> str:
    values = list(values)
    text = ", ".join(repr(plain(v)) for v in values[:_SHOW])
    return text + (f", ... ({len(values)} in all)" if len(values) > _SHOW else "")


def check_no_missing(series: pd.Series, name: str) -> None:
    """Raise ``ValueError`` if ``series`` holds NaN / None, naming the first offending rows."""
    missing = series.isna().to_numpy()
    if missing.any():
        rows = series.index[missing]
        raise ValueError(
            f"{name} has {int(missing.sum())} missing value(s) (NaN or None) at row(s) "
            f"{_preview(rows)}; drop or fill those rows first"
        )


def _id_values(ids, name: str):
    """``ids`` ready for :class:`pandas.Index` (a tensor as a NumPy array); a single string,
    which pandas would refuse without naming the argument, is a ``TypeError`` naming it."""
    if is_tensor(ids):
        return ids.detach().cpu().numpy()
    if isinstance(ids, (str, bytes)):
        raise TypeError(
            f"{name} must be a list (or array, Index) of ids, got the single string {ids!r}; "
            f"write [{ids!r}] for one id"
        )
    return ids


def as_id_index(ids, name: str) -> pd.Index:
    """Return ``ids`` as a :class:`pandas.Index` after checking it is non-empty, unique, no NaN."""
    ids = _id_values(ids, name)
    index = ids if isinstance(ids, pd.Index) else pd.Index(ids)
    if len(index) == 0:
        raise ValueError(f"{name} must not be empty")
    if index.hasnans:
        raise ValueError(f"{name} must not contain NaN or None")
    if not index.is_unique:
        dup = index[index.duplicated()].unique()
        raise ValueError(f"{name} must hold unique ids; repeated: {_preview(dup)}")
    return index


def encode_ids(index: pd.Index, values, name: str, index_name: str) -> np.ndarray:
    """Codes of ``values`` in ``index``; raise ``ValueError`` listing ids not in ``index``."""
    values = _id_values(values, name)
    values = pd.Index(values) if not isinstance(values, pd.Index) else values
    codes = np.asarray(index.get_indexer(values), dtype=np.int64)
    unknown = codes < 0
    if unknown.any():
        raise ValueError(
            f"{name} holds id(s) not in {index_name}: {_preview(values[unknown].unique())}"
        )
    return codes


def factorize_ids(values: pd.Series, name: str, known=None, known_name: str = "the given ids"):
    """Integer codes of ``values`` and the id index.

    With ``known`` (an id list) the index is ``known`` in its own order and every value must be
    in it; without, the index is the sorted set of distinct values.

    Returns:
        ``(codes, index)``: an int64 array with ``len(values)`` codes and a ``pandas.Index``.
    """
    try:
        check_no_missing(values, name)
        check_id_kinds(values, name)
        if known is not None:
            index = as_id_index(known, known_name)
            return encode_ids(index, values, name, known_name), index
        codes, uniques = pd.factorize(values, sort=True)
    except TypeError as err:
        _raise_if_unhashable(values, name, err)
        raise
    uniques = pd.Index(uniques)
    warn_padded_ids(uniques, name)
    return np.asarray(codes, dtype=np.int64), uniques


def _raise_if_unhashable(values: pd.Series, name: str, err: TypeError) -> None:
    """Name the first unhashable id of ``values`` (a list in a cell, say) when ``err`` came
    from one; looked for only after a failure, so valid columns pay nothing for it."""
    if "unhashable" not in str(err):
        return
    for row, value in zip(values.index, values.to_numpy()):
        try:
            hash(value)
        except TypeError:
            raise TypeError(
                f"{name} holds an id that cannot be an id, {value!r} ({type(value).__name__}) at "
                f"row {row!r}: ids must be numbers, strings or other hashable values"
            ) from err


def check_id_kinds(values: pd.Series, name: str) -> None:
    """Raise ``ValueError`` if ``values`` holds both strings and non-strings.

    ``'1'`` and ``1`` are different ids to pandas, so a column that mixes them (a file read
    partly as text) would silently split one id into two. The message shows the clashing
    values, those whose text is the same first.
    """
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        values = pd.Series(dtype.categories)
    elif not pd.api.types.is_object_dtype(dtype):
        return  # numeric, boolean, datetime or pandas string columns hold one kind
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind in ("string", "empty") or "mixed" not in kind:
        return
    arr = pd.unique(values.dropna().to_numpy())
    is_str = np.fromiter((isinstance(v, str) for v in arr), dtype=bool, count=len(arr))
    if is_str.all() or not is_str.any():
        return
    strings, others = arr[is_str], arr[~is_str]
    as_text = {str(plain(v)): v for v in others}
    same = [(s, as_text[s]) for s in strings if s in as_text]
    shown = same or [(strings[0], others[0])]
    pairs = ", ".join(f"{s!r} (str) and {plain(v)!r} ({type(plain(v)).__name__})"
                      for s, v in shown[:_SHOW])
    raise ValueError(
        f"{name} mixes strings and non-strings, which would be different ids: {pairs}. "
        "Convert the column to one type first, e.g. with .astype(str)"
    )


def warn_padded_ids(ids: pd.Index, name: str) -> None:
    """Warn if some string ids of ``ids`` differ only by surrounding whitespace.

    ``'cat '`` and ``'cat'`` stay two ids (they are different values, and some data sets mean
    them so), but such pairs are almost always a formatting slip, so they are named.
    """
    if pd.api.types.is_object_dtype(ids.dtype):
        if pd.api.types.infer_dtype(ids, skipna=True) != "string":
            return
    elif not isinstance(ids.dtype, pd.StringDtype):
        return
    if not any(v[:1].isspace() or v[-1:].isspace() for v in ids.tolist()):
        return  # the common case, about ten times faster than stripping every id
    stripped = ids.str.strip()
    clash = stripped.duplicated(keep=False)
    if not clash.any():
        return
    groups = pd.Series(ids[clash]).groupby(stripped[clash].to_numpy(), sort=True)
    shown = [tuple(group) for _, group in groups][:_SHOW]
    warnings.warn(
        f"{name} holds values that differ only by surrounding whitespace, kept apart: "
        f"{', '.join(' and '.join(repr(v) for v in g) for g in shown)}. Strip the column "
        "(e.g. .str.strip()) if they are the same",
        UserWarning,
        stacklevel=2,
    )


def check_codes(x, name: str, size: int | None, size_name: str, device=None) -> torch.Tensor:
    """Return ``x`` as a 1-D long tensor of codes in ``[0, size)``."""
    return as_label_tensor(x, name, num_classes=size, device=device, size_name=size_name)


def to_numpy(values, name: str) -> np.ndarray:
    """``values`` (tensor, array, list) as a numpy array, detached and on the CPU."""
    if is_tensor(values):
        return values.detach().cpu().numpy()
    if isinstance(values, (pd.Series, pd.DataFrame)):
        return values.to_numpy()
    arr = np.asarray(values)
    if arr.dtype == object and arr.ndim == 0:
        raise TypeError(f"{name} must be array-like, got {type(values).__name__}")
    return arr


def index_values(values, index: pd.Index, name: str, columns=None):
    """Attach ``index`` to the rows of ``values``.

    A 1-D input of length ``len(index)`` becomes a Series; a 2-D input a DataFrame whose
    columns are ``columns`` (a list of the right width) or ``0 .. width - 1``.
    """
    arr = to_numpy(values, name)
    if arr.ndim == 0 or arr.shape[0] != len(index):
        raise ValueError(
            f"{name} must have {len(index)} rows (one per id), got shape {tuple(arr.shape)}"
        )
    if arr.ndim == 1:
        if columns is not None:
            raise ValueError(f"columns is only used with 2-D {name}, got a 1-D array")
        return pd.Series(arr, index=index)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D, got shape {tuple(arr.shape)}")
    cols = pd.RangeIndex(arr.shape[1]) if columns is None else pd.Index(columns)
    if len(cols) != arr.shape[1]:
        raise ValueError(
            f"columns must have {arr.shape[1]} entries to match {name}, got {len(cols)}"
        )
    return pd.DataFrame(arr, index=index, columns=cols)


@functools.cache
def c_table_passes():
    """The C passes over table columns (``_ctable.c``: ``count_repeats``, ``dense_codes``,
    ``label_statistics``), built with the package, or ``None`` where it was built without a C
    compiler or the environment variable ``PYROMODELS_NO_C`` is set (not empty)."""
    if os.environ.get("PYROMODELS_NO_C"):
        return None
    try:
        from . import _ctable
    except ImportError:
        return None
    return _ctable


def repeated_keys(*codes: torch.Tensor, sizes: tuple[int, ...] | None = None) -> torch.Tensor:
    """Row numbers (sorted long tensor) of rows whose key ``(codes[0][r], codes[1][r], ...)``
    already occurred in an earlier row.

    Most tables have none. For two columns (an annotation table's items and workers) the C
    count answers that in one pass over the rows; any repeat, more columns, or a build without
    the C extension take the sort of the keys, which also lists the rows. ``sizes``: the
    number of codes of each column when they are known to lie in ``0 .. size - 1`` (checked
    codes), which saves two passes over each column; default: read from the codes.
    """
    import torch

    cols = [c.cpu() for c in codes]
    if cols[0].numel() == 0:
        return torch.zeros(0, dtype=torch.long)
    if sizes is None:
        ranges = [torch.aminmax(c) for c in cols]
        lowest, sizes = min(int(lo) for lo, _ in ranges), [int(hi) + 1 for _, hi in ranges]
    else:
        lowest = 0
    # the C count holds one slot per code: for dense codes (every table's), not for sparse ones
    dense = max(sizes) <= 4 * len(cols[0]) + 1024 and lowest >= 0
    passes = c_table_passes() if len(cols) == 2 and dense else None
    if passes is not None:
        first, second = (np.ascontiguousarray(c.numpy(), dtype=np.int64) for c in cols)
        if passes.count_repeats(sizes[0], sizes[1], first, second) == 0:
            return torch.zeros(0, dtype=torch.long)
    span = float(np.prod([float(s) for s in sizes]))
    if span < 2.0**62:  # the mixed-radix key fits in int64
        key = cols[0]
        for c, size in zip(cols[1:], sizes[1:]):
            key = key * size + c
    else:
        key = torch.unique(torch.stack(cols, dim=1), dim=0, return_inverse=True)[1]
    # Most tables have no repeats: an unstable sort of the keys alone answers that (about
    # a third of the time of the stable sort with its permutation, which only a repeat
    # needs; int32 keys sort twice as fast as int64 ones).
    values = key.numpy().astype(np.int32 if span < 2.0**31 else np.int64)
    values.sort()
    if not np.any(values[1:] == values[:-1]):
        return torch.zeros(0, dtype=torch.long)
    sorted_key, order = torch.sort(key, stable=True)
    later = sorted_key[1:] == sorted_key[:-1]
    return torch.sort(order[1:][later]).values


class ItemWorkerSizes:
    """Sizes of the id maps of a contract over items and workers.

    Mixed into the contracts that keep ``items`` (``N`` ids) and ``workers`` (``M`` ids) as
    :class:`pandas.Index` attributes.

    Example:
        >>> import pandas as pd
        >>> class Ids(ItemWorkerSizes):
        ...     items, workers = pd.Index(["a", "b"]), pd.Index(["w"])
        >>> Ids().num_items, Ids().num_workers
        (2, 1)
    """

    @property
    def num_items(self) -> int:
        """Number of items ``N``."""
        return len(self.items)

    @property
    def num_workers(self) -> int:
        """Number of workers ``M``."""
        return len(self.workers)
