"""A fingerprint of a run's data: one SHA-256 over every value it holds, wherever it lives.

A checkpoint stores the fingerprint of the data its run was fitted to, and a resume refuses
data with another one (see :mod:`pyromodels.core.checkpoint`). The fingerprint covers the
values, shapes and dtypes of tensors and arrays (read from the CPU, so a GPU copy of the data
has the fingerprint of the CPU original), the labels of pandas objects, numbers, strings and
the structure around them: lists, tuples, dicts and dataclasses, with their class names. A
dataclass field that says how to compute rather than what the data are (a backend choice)
opts out with ``field(metadata={"fingerprint": False})``. Anything else is a ``TypeError``: a
value that cannot be read exactly cannot vouch for data.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import torch

__all__ = ["data_fingerprint"]

_SCALARS = (type(None), bool, int, float, complex, str, bytes)


def data_fingerprint(data, name: str = "data") -> str:
    """The SHA-256 (hex) of ``data``: tensors and arrays by dtype, shape and bytes, pandas
    objects by dtype and hashed labels, scalars by value, and lists, tuples, dicts and
    dataclasses by their class and items.

    A bare tensor's fingerprint is the SHA-256 of ``"<dtype>|<shape>|"`` and its bytes in C
    order.

    Args:
        data: the data, as a model's ``prepare`` returns it.
        name: how errors name ``data``.

    Raises:
        TypeError: ``data`` holds a value of another kind (the message names where).

    Example:
        >>> import torch
        >>> a = data_fingerprint(torch.zeros(2, 3))
        >>> a == data_fingerprint(torch.zeros(3, 2)), a == data_fingerprint(torch.zeros(2, 3))
        (False, True)
    """
    digest = hashlib.sha256()
    _feed(digest, data, name)
    return digest.hexdigest()


def _feed(digest, value, where: str) -> None:
    if isinstance(value, torch.Tensor):
        _feed_tensor(digest, value, where)
    elif isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"{where} is a NumPy array of Python objects, which has no fingerprint")
        digest.update(f"numpy.{value.dtype.str}|{value.shape}|".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, np.generic):
        _feed(digest, np.asarray(value), where)
    elif isinstance(value, _SCALARS):
        digest.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, torch.dtype | torch.device):
        digest.update(f"{type(value).__name__}:{value};".encode())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        digest.update(f"{_class_name(value)}(".encode())
        for field in dataclasses.fields(value):
            if not field.metadata.get("fingerprint", True):
                continue
            digest.update(f"{field.name}=".encode())
            _feed(digest, getattr(value, field.name), f"{where}.{field.name}")
        digest.update(b")")
    elif isinstance(value, dict):
        digest.update(f"{_class_name(value)}{{{len(value)}".encode())
        for key, item in value.items():
            _feed(digest, key, f"{where} key {key!r}")
            _feed(digest, item, f"{where}[{key!r}]")
        digest.update(b"}")
    elif isinstance(value, list | tuple):
        digest.update(f"{_class_name(value)}[{len(value)}".encode())
        for i, item in enumerate(value):
            _feed(digest, item, f"{where}[{i}]")
        digest.update(b"]")
    elif _is_pandas(value):
        _feed_pandas(digest, value, where)
    else:
        raise TypeError(
            f"{where} holds a {_class_name(value)}, which has no fingerprint: data must be "
            "tensors, arrays, pandas objects, numbers or strings, in lists, tuples, dicts or "
            "dataclasses"
        )


#: the parts of a sparse tensor that fix it, by layout
_SPARSE_PARTS = {torch.sparse_csr: ("crow_indices", "col_indices", "values"),
                 torch.sparse_coo: ("indices", "values")}


def _feed_tensor(digest, value: torch.Tensor, where: str) -> None:
    if value.layout in _SPARSE_PARTS:
        if value.layout == torch.sparse_coo:
            value = value.coalesce()
        digest.update(f"{value.layout}|{tuple(value.shape)}|".encode())
        for part in _SPARSE_PARTS[value.layout]:
            _feed_tensor(digest, getattr(value, part)(), f"{where}.{part}")
        return
    if value.layout != torch.strided:
        raise TypeError(f"{where} is a {value.layout} tensor, which has no fingerprint; "
                        "pass it dense")
    digest.update(f"{value.dtype}|{tuple(value.shape)}|".encode())
    flat = value.detach().to("cpu").contiguous().reshape(-1)
    if flat.numel():
        digest.update(memoryview(flat.view(torch.uint8).numpy()))


def _is_pandas(value) -> bool:
    module = type(value).__module__
    return module == "pandas" or module.startswith("pandas.")


def _feed_pandas(digest, value, where: str) -> None:
    import pandas as pd

    if not isinstance(value, pd.Index | pd.Series | pd.DataFrame):
        raise TypeError(f"{where} holds a {_class_name(value)}, which has no fingerprint")
    hashed = pd.util.hash_pandas_object(value, index=not isinstance(value, pd.Index))
    dtypes = value.dtypes.tolist() if isinstance(value, pd.DataFrame) else [value.dtype]
    digest.update(f"pandas.{type(value).__name__}|{[str(d) for d in dtypes]}|{len(value)}|".encode())
    if isinstance(value, pd.DataFrame):
        _feed_pandas(digest, value.columns, f"{where}.columns")
    digest.update(hashed.to_numpy().tobytes())


def _class_name(value) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"
