"""Argument checks shared by every module.

Each check raises a ``ValueError`` or ``TypeError`` whose message names the argument and the
expected form; nothing is silently coerced, dropped or clipped.

torch is imported inside the checks that take tensors: the command line's answers that fit
nothing (``pyromodels --help``, ``list``, usage errors) use the other checks without it.
"""

from __future__ import annotations

import numbers
import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = [
    "seed_from_random_state",
    "broadcast_shapes",
    "check_bool",
    "check_int",
    "check_positive",
    "check_probability",
    "check_in",
    "check_name",
    "as_numeric_tensor",
    "as_float_tensor",
    "as_label_tensor",
    "check_same_length",
    "as_record",
    "check_finite",
    "check_stochastic",
    "check_memory",
    "memory_size",
    "format_bytes",
]


def check_bool(value, name: str) -> bool:
    """Return ``value`` if it is a ``bool``; anything else (``0``, ``"yes"``) is a ``TypeError``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return value


def check_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise if it is not an integer in range.

    Booleans and floats (even integral ones such as ``3.0``) are rejected.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum}, got {value}")
    return value


def check_positive(value, name: str, strict: bool = True, minimum: float | None = None) -> float:
    """Return ``value`` as a float after checking it is a finite positive real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if strict and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if not strict and value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_probability(value, name: str) -> float:
    """Return ``value`` as a float after checking it lies in [0, 1]."""
    value = check_positive(value, name, strict=False)
    if value > 1:
        raise ValueError(f"{name} must lie in [0, 1], got {value}")
    return value


def check_in(value, name: str, allowed: Sequence):
    """Raise unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


# Such names become directory and file names (report sections, NetCDF files), so they are
# restricted to a set that is portable across file systems.
_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def seed_from_random_state(random_state) -> int | None:
    """The seed that scikit-learn's ``random_state`` names, or ``None`` for ``None``.

    Args:
        random_state: ``None``, an int ``>= 0``, a ``numpy.random.RandomState`` or a
            ``numpy.random.Generator`` (one draw of it is the seed).

    Raises:
        TypeError: any other type. ValueError: a negative int.

    Example:
        >>> seed_from_random_state(7), seed_from_random_state(None)
        (7, None)
        >>> a, b = np.random.RandomState(0), np.random.RandomState(0)
        >>> seed_from_random_state(a) == seed_from_random_state(b)
        True
    """
    if random_state is None:
        return None
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31 - 1))
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(
            "random_state must be None, an int, a numpy RandomState or a numpy Generator, got "
            f"{type(random_state).__name__} {random_state!r}"
        )
    return check_int(random_state, "random_state", minimum=0)


def check_name(value, name: str) -> str:
    """Raise unless ``value`` is a name usable as a file name: letters, digits, ``.``, ``_``, ``-``.

    Example:
        >>> check_name("gaussian-mixture", "name")
        'gaussian-mixture'
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__} {value!r}")
    if not _NAME_PATTERN.fullmatch(value):
        raise ValueError(
            f"{name} must start with a letter or digit and hold only letters, digits, '.', '_' "
            f"and '-', got {value!r}"
        )
    return value


def check_finite(tensor: torch.Tensor, name: str) -> torch.Tensor:
    """Raise if ``tensor`` holds NaN or infinite values."""
    import torch

    # a finite sum rules out NaN and infinities (they propagate); only a sum that overflows,
    # or a real NaN or infinity, needs the elementwise look
    if (tensor.is_floating_point() and not bool(torch.isfinite(tensor.sum()))
            and not bool(torch.isfinite(tensor).all())):
        bad = int((~torch.isfinite(tensor)).sum())
        raise ValueError(f"{name} must be finite: found {bad} NaN or infinite value(s)")
    return tensor


def as_numeric_tensor(x, name: str) -> torch.Tensor:
    """Convert array-like ``x`` (list, numpy array, pandas object, tensor) to a tensor with its
    values and dtype unchanged; a tensor is returned as it is.

    Only the conversion is checked: object and string arrays are a ``TypeError``. Shape,
    dtype and finiteness are left to the caller (:func:`as_float_tensor` adds the usual
    float checks); a read-only numpy array is copied rather than shared.

    Example:
        >>> as_numeric_tensor([[0, -1], [2, 3]], "x").dtype
        torch.int64
    """
    import torch

    if isinstance(x, torch.Tensor):
        return x
    if hasattr(x, "to_numpy"):  # pandas objects
        x = x.to_numpy()
    try:
        arr = np.asarray(x)
    except Exception as exc:  # noqa: BLE001 - re-raised with the argument's name
        raise TypeError(f"{name} must be array-like, got {type(x).__name__}") from exc
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise TypeError(f"{name} must be numeric, got an array of dtype {arr.dtype}")
    if not arr.flags.writeable:
        arr = arr.copy()
    return torch.as_tensor(arr)


def as_float_tensor(
    x,
    name: str,
    ndim: int | None = None,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
    allow_empty: bool = False,
) -> torch.Tensor:
    """Convert array-like ``x`` to a finite floating tensor, checking its dimensionality.

    The result is contiguous (row-major): a transposed or sliced view is copied, so that
    reductions run in the same order, and fits make the same draws, for the same values
    whatever their memory layout.

    Args:
        x: array-like, numpy array or tensor.
        name: the argument's name, used in error messages.
        ndim: required number of dimensions, or ``None`` for any.
        dtype: floating dtype of the result; defaults to ``x``'s own floating dtype or
            ``torch.get_default_dtype()`` for non-floating input.
        device: device of the result; defaults to ``x``'s device.
        allow_empty: whether a tensor with zero elements is accepted.
    """
    import torch

    t = as_numeric_tensor(x, name)
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must hold real numbers, got dtype {t.dtype}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {tuple(t.shape)}")
    if not allow_empty and t.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(t.shape)}")
    if dtype is None:
        dtype = t.dtype if t.is_floating_point() else torch.get_default_dtype()
    t = t.to(dtype=dtype, device=device).contiguous()
    return check_finite(t, name)


def as_label_tensor(
    x,
    name: str,
    num_classes: int | None = None,
    ndim: int = 1,
    device: torch.device | str | None = None,
    allow_empty: bool = False,
    size_name: str | None = None,
) -> torch.Tensor:
    """Convert integer labels to a ``torch.long`` tensor, checking they lie in ``[0, num_classes)``.

    Float input is accepted only if every value is integral (``2.0``), otherwise ``TypeError``.
    ``size_name`` names the bound in the error (``num_items``) when it counts something other
    than classes. The result is contiguous (a strided view, ``codes[:, 0]``, is copied), as
    the compiled passes over codes read them row-major.
    """
    import torch

    t = as_numeric_tensor(x, name)
    if t.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer labels, got dtype bool")
    if t.is_floating_point():
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} must be finite integer labels: found NaN or infinity")
        if not bool((t == t.round()).all()):
            raise TypeError(f"{name} must hold integer labels, got non-integral values")
    if t.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {tuple(t.shape)}")
    if not allow_empty and t.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    t = t.to(dtype=torch.long, device=device).contiguous()
    if t.numel():
        lo, hi = (int(v) for v in torch.aminmax(t))
        if lo < 0:
            raise ValueError(f"{name} must be non-negative integer labels, found {lo}")
        if num_classes is not None and hi >= num_classes:
            what = (f"for {num_classes} classes" if size_name is None
                    else f"({size_name}={num_classes})")
            raise ValueError(f"{name} must lie in [0, {num_classes - 1}] {what}, found {hi}")
    return t


def as_record(value, record_type: type, parts: tuple[str, ...], name: str = "data"):
    """``value`` as a ``record_type``: an instance passes, a tuple of ``len(parts)`` items is
    unpacked into one, anything else is a ``TypeError``.

    Example:
        >>> from collections import namedtuple
        >>> Pair = namedtuple("Pair", "table graph")
        >>> as_record((1, 2), Pair, ("table", "graph"))
        Pair(table=1, graph=2)
    """
    shape = "(" + ", ".join(parts) + ")"
    if isinstance(value, tuple) and not isinstance(value, record_type):
        if len(value) != len(parts):
            raise ValueError(f"{name} must be a {shape} {'pair' if len(parts) == 2 else 'tuple'}, "
                             f"got a tuple of {len(value)}")
        value = record_type(*value)
    if not isinstance(value, record_type):
        raise TypeError(f"{name} must be {record_type.__name__} or a {shape} tuple, got "
                        f"{type(value).__name__}")
    return value


def check_same_length(name_a: str, a, name_b: str, b) -> None:
    """Raise unless ``a`` and ``b`` have the same length along their first axis."""
    if len(a) != len(b):
        raise ValueError(
            f"{name_a} and {name_b} must have the same length, got {len(a)} and {len(b)}"
        )


def _index(idx: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in idx) + "]"


def check_stochastic(
    x,
    name: str,
    *,
    shape: Sequence[int] | None = None,
    ndim: int | None = None,
    axis_sum: str = "rows",
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
    atol: float | None = None,
) -> torch.Tensor:
    r"""Convert ``x`` to a tensor of probabilities: a vector on the simplex, or a (stack of)
    row-stochastic matrices, or a table whose entries together sum to one.

    With ``axis_sum="rows"`` every slice along the last axis must satisfy
    :math:`x_{\ldots j} \ge 0,\ \sum_j x_{\ldots j} = 1`; with ``axis_sum="total"`` all the
    entries together must. The sums may be off by

    .. math:: \mathrm{tol} = \max(a, 16\, n\, \varepsilon),

    where :math:`n` is the number of entries in one sum, :math:`\varepsilon` the machine epsilon
    of ``x``'s OWN floating dtype (float64 for Python lists and integer input) and
    :math:`a = 10^{-8}` unless ``atol`` is given. So float32 input is accepted as it is, and
    float64 input must sum to one within ``1e-8``. The sums are checked before any cast to a
    lower-precision ``dtype``.

    Args:
        x: array-like, numpy array or tensor.
        name: the argument's name, used in error messages.
        shape: required shape, or ``None`` for any.
        ndim: required number of dimensions (implied by ``shape`` when that is given).
        axis_sum: ``"rows"`` (the last axis sums to one) or ``"total"`` (all entries do).
        dtype: floating dtype of the result; default ``x``'s own floating dtype, or
            ``torch.get_default_dtype()`` for non-floating input.
        device: device of the result; default ``x``'s device.
        atol: replaces the ``1e-8`` floor of the tolerance (for callers that accept rows
            rounded by other code); the dtype-based part still applies.

    Returns:
        The probabilities as a ``dtype`` tensor of ``shape`` on ``device``.

    Raises:
        TypeError: ``x`` is not numeric.
        ValueError: wrong shape, NaN or infinite entries, a negative entry, or a sum off by
            more than the tolerance (the message names the worst row and by how much).

    Example:
        >>> check_stochastic([[0.9, 0.1], [0.25, 0.75]], "transition", shape=(2, 2)).dtype
        torch.float64
        >>> check_stochastic([[0.5, 0.25], [0.0, 0.25]], "joint", axis_sum="total").sum().item()
        1.0
    """
    import torch

    check_in(axis_sum, "axis_sum", ("rows", "total"))
    if shape is not None:
        shape = tuple(check_int(s, "shape entries", minimum=1) for s in shape)
        if ndim is not None and ndim != len(shape):
            raise ValueError(f"ndim = {ndim} contradicts shape {shape}")
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    raw = as_numeric_tensor(x, name)
    if dtype is None:
        dtype = raw.dtype if raw.is_floating_point() else torch.get_default_dtype()
    source = raw.dtype if raw.is_floating_point() else torch.float64
    work = torch.promote_types(source, dtype)
    t = as_float_tensor(raw, name, ndim=ndim if shape is None else None, dtype=work, device=device)
    if shape is not None and tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
    negative = t < 0
    if bool(negative.any()):
        idx = tuple(int(i) for i in torch.nonzero(negative)[0])
        raise ValueError(
            f"{name} must be non-negative, found {name}{_index(idx)} = {float(t[idx]):.3g}"
        )
    rows = axis_sum == "rows" and t.dim() > 1
    n = t.shape[-1] if rows else t.numel()
    floor = 1e-8 if atol is None else check_positive(atol, "atol")
    tol = max(floor, 16 * n * torch.finfo(source).eps)
    sums = t.sum(-1) if rows else t.sum()
    err = (sums - 1).abs()
    worst = int(torch.argmax(err.flatten()))
    if float(err.flatten()[worst]) > tol:
        total = float(sums.flatten()[worst])
        off = f"off by {abs(total - 1):.3g}, tolerance {tol:.3g}"
        if rows:
            idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), sums.shape))
            raise ValueError(f"{name} must have rows summing to 1 (last axis); row "
                             f"{name}{_index(idx)} sums to {total:.10g} ({off})")
        what = "sum to 1" if t.dim() <= 1 else "have entries summing to 1 in total"
        raise ValueError(f"{name} must {what}, got sum {total:.10g} ({off})")
    return t.to(dtype=dtype)


def _device_type(device) -> str:
    """``device``'s type (``"cpu"``, ``"cuda"``, ...); the CPU without importing torch."""
    if device is None or device == "cpu":
        return "cpu"
    import torch

    try:
        return torch.device(device).type
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"device must name a torch device such as 'cpu' or 'cuda', got {device!r}"
        ) from exc


def memory_size(device=None) -> int | None:
    """Bytes of memory of ``device``: the GPU's for a CUDA device, else the machine's physical
    memory; ``None`` where the platform does not say."""
    if _device_type(device) == "cuda":
        import torch

        if torch.cuda.is_available():
            return int(torch.cuda.mem_get_info(device)[1])
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def format_bytes(nbytes: float) -> str:
    """``nbytes`` in the largest unit that keeps it >= 1, e.g. ``'4.0 TB'`` (powers of 1000).

    Example:
        >>> format_bytes(4e12), format_bytes(512)
        ('4.0 TB', '512 B')
    """
    for unit, size in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{int(nbytes)} B"


def check_memory(parts: Sequence[tuple[str, float]], device=None, hint: str = "") -> None:
    """Raise ``ValueError`` before allocating when ``parts`` need more than the device has.

    Args:
        parts: ``(what, bytes)`` of the arrays a computation will hold at once.
        device: where they will live (``None``: the CPU).
        hint: which arguments drive the sizes and how to shrink them, appended to the message.
    """
    total = sum(float(nbytes) for _, nbytes in parts)
    limit = memory_size(device)
    if limit is None or total <= limit:
        return
    listed = "; ".join(f"{what}: {format_bytes(nbytes)}" for what, nbytes in parts if nbytes)
    where = "the GPU" if _device_type(device) == "cuda" else "this machine"
    raise ValueError(
        f"this fit would need about {format_bytes(total)} of memory ({listed}), more than the "
        f"{format_bytes(limit)} of {where}{'; ' + hint if hint else ''}"
    )


def broadcast_shapes(*shapes) -> torch.Size:
    """The broadcast of ``shapes`` (NumPy's rules), as a ``torch.Size``.

    ``torch.broadcast_shapes`` gives the same answer, but its first call in a process imports
    torch's symbolic-shape machinery (about a quarter of a second); NumPy's does not.

    Raises:
        ValueError: shapes that do not broadcast.

    Example:
        >>> broadcast_shapes((3, 1), (4,))
        torch.Size([3, 4])
    """
    import torch

    return torch.Size(np.broadcast_shapes(*(tuple(shape) for shape in shapes)))

