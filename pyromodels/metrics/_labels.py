"""Validation and integer encoding of the label vectors that every metric receives.

Labels may come as lists, numpy arrays, pandas Series or torch tensors. Integer labels (or
floats with integral values, such as ``2.0``) become ``int64``; text labels and other mutually
comparable hashable values are kept as they are. Missing values (NaN, None, ``pd.NA``), booleans,
complex numbers and non-integral floats are rejected with an error naming the argument.

The metrics hand scikit-learn the integer codes of validated labels (``0 .. C-1`` in the order of
the sorted labels), never the raw input, so every input container gives the same result and
scikit-learn's own input conversion never sees text, floats or tensors.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
import torch
from sklearn.metrics.cluster import contingency_matrix

from ..checks import check_same_length

__all__ = ["as_labels", "encode", "encode_jointly", "encode_pair", "same_partition",
           "contingency_table"]

_INT64_MAX = np.iinfo(np.int64).max


def _to_numpy(x, name: str) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.is_floating_point() and x.dtype not in (torch.float32, torch.float64):
            x = x.to(torch.float64)  # numpy has no bfloat16
        return x.numpy()
    if hasattr(x, "to_numpy"):  # pandas objects
        x = x.to_numpy()
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a 1-dimensional array-like of labels, got {type(x).__name__}"
        ) from exc


def _check_missing(arr: np.ndarray, name: str) -> None:
    missing = int(np.count_nonzero(pd.isna(arr)))
    if missing:
        raise ValueError(f"{name} must not contain NaN or None, found {missing} missing label(s)")


def _integral_floats_to_int(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` holds finite floats; return them as int64 if every value is integral."""
    if np.isinf(arr).any():
        raise ValueError(f"{name} must hold finite labels, found infinity")
    bad = arr != np.round(arr)
    if bad.any():
        raise TypeError(f"{name} must hold integer labels, got non-integral value {arr[bad][0].item()!r}")
    if np.abs(arr).max() >= 2.0**63:
        raise ValueError(f"{name} holds labels outside the int64 range")
    return arr.astype(np.int64)


def _object_labels(arr: np.ndarray, name: str) -> np.ndarray:
    values = arr.tolist()
    if any(isinstance(v, bool | np.bool_) for v in values):
        raise TypeError(f"{name} must hold integer or text labels, got booleans")
    if all(isinstance(v, str) for v in values):
        return np.array(values, dtype=str)
    if all(isinstance(v, numbers.Integral) for v in values):
        if max(abs(int(v)) for v in values) > _INT64_MAX:
            raise ValueError(f"{name} holds labels outside the int64 range")
        return np.array([int(v) for v in values], dtype=np.int64)
    if all(isinstance(v, numbers.Real) for v in values):
        return _integral_floats_to_int(np.array(values, dtype=np.float64), name)
    return arr


def as_labels(x, name: str) -> np.ndarray:
    """Validate a vector of labels and return it as a 1-D numpy array.

    Args:
        x: list, numpy array, pandas Series or torch tensor of shape ``(n,)`` with ``n >= 1``.
        name: the argument's name, used in error messages.

    Returns:
        An ``int64`` array for integer-valued input, a ``str`` array for text, otherwise an
        ``object`` array of the original (mutually comparable) values.

    Raises:
        ValueError: if ``x`` is not 1-dimensional, is empty, or holds NaN, None or infinity.
        TypeError: if ``x`` holds booleans, complex numbers or non-integral floats.
    """
    arr = _to_numpy(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    kind = arr.dtype.kind
    if kind == "b":
        raise TypeError(f"{name} must hold integer or text labels, got dtype bool")
    if kind in "cV":
        raise TypeError(f"{name} must hold integer or text labels, got dtype {arr.dtype}")
    if kind == "i":
        return arr.astype(np.int64, copy=False)
    if kind == "u":
        if arr.max() > _INT64_MAX:
            raise ValueError(f"{name} holds labels outside the int64 range")
        return arr.astype(np.int64)
    _check_missing(arr, name)
    if kind == "f":
        return _integral_floats_to_int(arr, name)
    if kind == "O":
        return _object_labels(arr, name)
    return arr


def encode(labels: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(classes, codes)``: the sorted distinct labels and each entry's index into them."""
    try:
        classes, codes = np.unique(labels, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"{name} must hold mutually comparable labels: {exc}") from exc
    return classes, codes.reshape(-1)


def encode_jointly(arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Encode several validated label arrays on the union of their labels.

    Args:
        arrays: mapping from argument name to the output of :func:`as_labels`.

    Returns:
        ``(classes, codes)`` where ``classes`` is the sorted union and ``codes[name]`` indexes it.

    Raises:
        TypeError: if the arrays hold labels of different kinds (say integers and text), which
            would otherwise be compared after an implicit conversion.
    """
    names = list(arrays)
    kinds = {name: arrays[name].dtype.kind for name in names}
    first = names[0]
    for name in names[1:]:
        if kinds[name] != kinds[first]:
            raise TypeError(
                f"{first} and {name} must hold labels of the same kind, got dtypes "
                f"{arrays[first].dtype} and {arrays[name].dtype}"
            )
    joined = np.concatenate([arrays[name] for name in names])
    classes, codes = encode(joined, " and ".join(names))
    bounds = np.cumsum([0] + [len(arrays[name]) for name in names])
    return classes, {name: codes[bounds[i] : bounds[i + 1]] for i, name in enumerate(names)}


def encode_pair(
    y_true, y_pred, name_true: str = "y_true", name_pred: str = "y_pred"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate two labelings of the same samples and encode each on its own labels.

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: predicted or cluster labels, shape ``(n,)``.
        name_true: name of ``y_true`` in error messages.
        name_pred: name of ``y_pred`` in error messages.

    Returns:
        ``(classes, true_codes, clusters, pred_codes)``: the sorted distinct labels of each
        argument and, for each sample, the index of its label in them (``int64``, shape ``(n,)``).
    """
    t = as_labels(y_true, name_true)
    p = as_labels(y_pred, name_pred)
    check_same_length(name_true, t, name_pred, p)
    classes, true_codes = encode(t, name_true)
    clusters, pred_codes = encode(p, name_pred)
    return classes, true_codes, clusters, pred_codes


def same_partition(true_codes: np.ndarray, pred_codes: np.ndarray) -> bool:
    """Whether two encodings (as returned by :func:`encode_pair`) induce the same partition.

    They do exactly when both have the same number of blocks and every block of one meets a
    single block of the other, that is when there are as many distinct code pairs as blocks.
    """
    n_true, n_pred = int(true_codes.max()) + 1, int(pred_codes.max()) + 1
    return n_true == n_pred and np.unique(true_codes * n_pred + pred_codes).size == n_true


def contingency_table(
    y_true, y_pred, name_true: str = "y_true", name_pred: str = "y_pred"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate two labelings and count their co-occurrences.

    The counting is ``sklearn.metrics.cluster.contingency_matrix`` on the labels' codes.

    Returns:
        ``(table, classes, clusters)``: ``table[i, j]`` (``int64``, shape ``(C, K)``) is the
        number of samples whose true label is ``classes[i]`` and predicted label is
        ``clusters[j]``; both label arrays are sorted.
    """
    classes, true_codes, clusters, pred_codes = encode_pair(y_true, y_pred, name_true, name_pred)
    table = contingency_matrix(true_codes, pred_codes, dtype=np.int64)
    return table, classes, clusters
