"""Pairwise crowd annotations: worker ``w`` says whether items ``i`` and ``j`` belong together.

Row :math:`l` records a link :math:`a_l \\in \\{0, 1\\}` (1 = same class / must link, 0 =
different / cannot link) given by worker ``worker_idx[l]`` to the unordered pair
``{i_idx[l], j_idx[l]}``. Ids are kept as pandas indexes, as in
:class:`~pyromodels.data.annotations.AnnotationTable`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..checks import as_label_tensor, check_in, check_int
from .annotations import check_columns
from .idmaps import (
    ItemWorkerSizes,
    as_id_index,
    check_codes,
    check_no_missing,
    encode_ids,
    factorize_ids,
    index_values,
    plain,
    repeated_keys,
)
from .tensors import TensorFields

__all__ = ["PairwiseAnnotations", "pair_columns", "link_values", "DUPLICATES"]

#: the ``duplicates=`` choices of :meth:`PairwiseAnnotations.from_dataframe`
DUPLICATES = ("raise", "first", "last")
SHOW = 5  # how many offending values or rows an error message lists


@dataclass(frozen=True, eq=False)
class PairwiseAnnotations(ItemWorkerSizes, TensorFields):
    """Pairwise link judgements with id maps.

    Attributes:
        i_idx, j_idx: long tensors ``(L,)`` of item codes with ``i_idx != j_idx``.
        worker_idx: long tensor ``(L,)`` of worker codes.
        link: long tensor ``(L,)`` of 0/1 links (1 = must link, 0 = cannot link).
        items: the ``N`` item ids; workers: the ``M`` worker ids.

    A worker may judge a pair only once (in either order). The user-facing form is a long
    DataFrame with the columns ``item_a``, ``item_b``, ``worker`` and ``link``
    (:meth:`from_dataframe`, back with :meth:`to_frame`); the simulators of
    :mod:`pyromodels.data.simulate_pairs` build the table from codes.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"item_a": ["a", "a"], "item_b": ["b", "c"],
        ...                    "worker": ["w", "w"], "link": [1, 0]})
        >>> pairs = PairwiseAnnotations.from_dataframe(df, items=["a", "b", "c", "d"])
        >>> list(pairs.items), pairs.link.tolist()
        (['a', 'b', 'c', 'd'], [1, 0])
        >>> pairs.to_frame().equals(df)
        True
    """

    i_idx: torch.Tensor
    j_idx: torch.Tensor
    worker_idx: torch.Tensor
    link: torch.Tensor
    items: pd.Index
    workers: pd.Index

    _tensor_fields = ("i_idx", "j_idx", "worker_idx", "link")

    def __post_init__(self):
        items = as_id_index(self.items, "items")
        workers = as_id_index(self.workers, "workers")
        i_idx = check_codes(self.i_idx, "i_idx", len(items), "num_items")
        dev = i_idx.device
        j_idx = check_codes(self.j_idx, "j_idx", len(items), "num_items", device=dev)
        worker_idx = check_codes(self.worker_idx, "worker_idx", len(workers), "num_workers",
                                 device=dev)
        link = as_label_tensor(self.link, "link", num_classes=2, device=dev)
        sizes = [len(i_idx), len(j_idx), len(worker_idx), len(link)]
        if len(set(sizes)) != 1:
            raise ValueError(
                f"i_idx, j_idx, worker_idx and link must have the same length, got {sizes}"
            )
        same = torch.nonzero(i_idx == j_idx).flatten()
        if len(same):
            r = int(same[0])
            raise ValueError(
                f"{len(same)} row(s) pair an item with itself, e.g. row {r} "
                f"(item {plain(items[int(i_idx[r])])!r}); i and j must differ"
            )
        lo, hi = torch.minimum(i_idx, j_idx), torch.maximum(i_idx, j_idx)
        rows = repeated_keys(lo, hi, worker_idx)
        if len(rows):
            r = int(rows[0])
            raise ValueError(
                f"{len(rows)} repeated (pair, worker) row(s): worker "
                f"{plain(workers[int(worker_idx[r])])!r} judged the pair "
                f"({plain(items[int(i_idx[r])])!r}, {plain(items[int(j_idx[r])])!r}) more than "
                "once (the order of i and j does not matter)"
            )
        for name, value in (("items", items), ("workers", workers), ("i_idx", i_idx),
                            ("j_idx", j_idx), ("worker_idx", worker_idx), ("link", link)):
            object.__setattr__(self, name, value)

    @classmethod
    def from_dataframe(cls, df: pd.DataFrame, item_a: str = "item_a", item_b: str = "item_b",
                       worker: str = "worker", link: str = "link", *, items=None,
                       workers=None, duplicates: str = "raise") -> PairwiseAnnotations:
        """Build from a long DataFrame with one row per (item_a, item_b, worker, link) judgement.

        Args:
            df: the judgements, one row each: worker ``df[worker]`` says whether the items
                ``df[item_a]`` and ``df[item_b]`` belong together (``df[link]`` = 1, must
                link) or not (0, cannot link). The order of the two items does not matter.
            item_a, item_b, worker, link: column names. With the defaults, a table without
                ``item_a`` and ``item_b`` columns may name them ``i`` and ``j``.
            items: optional full list of item ids, fixing the code order (code ``n`` is
                ``items[n]``) and keeping items nobody judged, e.g. the row order of the
                feature matrix when only some items are annotated. A pair naming an item
                outside ``items`` is an error. Default: the sorted distinct ids of both item
                columns.
            workers: optional full list of worker ids, likewise.
            duplicates: what to do when a worker judged the same pair more than once (in
                either order): ``"raise"`` (default) names the repeated rows; ``"first"`` or
                ``"last"`` keeps that judgement of each (pair, worker) and drops the others,
                whether they agree or not.

        Raises:
            ValueError: missing columns, an empty table, missing ids or links (NaN, None),
                links other than 0/1 (booleans are read as 1/0), a row pairing an item with
                itself, an id outside ``items`` or ``workers``, repeated (pair, worker) rows
                under ``duplicates="raise"``. These checks do not depend on the number of
                clusters, which is the model's to check.
        """
        item_a, item_b = pair_columns(df, item_a, item_b)
        check_in(duplicates, "duplicates", DUPLICATES)
        names = {"item_a": item_a, "item_b": item_b, "worker": worker, "link": link}
        _check_distinct_names(names)
        check_columns(df, names)
        a_name, b_name = f"df[{item_a!r}]", f"df[{item_b!r}]"
        check_no_missing(df[item_a], a_name)
        check_no_missing(df[item_b], b_name)
        both = pd.concat([df[item_a], df[item_b]], ignore_index=True)
        codes, item_index = factorize_ids(both, f"{a_name} and {b_name}", items, "items")
        worker_codes, worker_index = factorize_ids(df[worker], f"df[{worker!r}]", workers,
                                                   "workers")
        values = link_values(df[link], f"df[{link!r}]")
        n = len(df)
        a, b = codes[:n], codes[n:]
        same = np.flatnonzero(a == b)
        if len(same):
            r = int(same[0])
            raise ValueError(
                f"{a_name} and {b_name} must name two different items in every row: "
                f"{len(same)} row(s) pair an item with itself, e.g. row "
                f"{plain(df.index[r])!r} (item {plain(item_index[a[r]])!r})"
            )
        keep = _kept_rows(a, b, worker_codes, df.index, item_index, worker_index,
                          (item_a, item_b), duplicates)
        if keep is not None:
            a, b, worker_codes, values = a[keep], b[keep], worker_codes[keep], values[keep]
        return cls(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(worker_codes),
                   torch.from_numpy(values), item_index, worker_index)

    @classmethod
    def from_arrays(cls, i_idx, j_idx, worker_idx, link, num_items: int | None = None,
                    num_workers: int | None = None) -> PairwiseAnnotations:
        """Build from integer codes; ids are ``0 .. n - 1`` (sizes default to max code + 1)."""
        i_t = check_codes(i_idx, "i_idx", None, "num_items")
        j_t = check_codes(j_idx, "j_idx", None, "num_items")
        w_t = check_codes(worker_idx, "worker_idx", None, "num_workers")
        n = max(int(i_t.max()), int(j_t.max())) + 1 if num_items is None else check_int(
            num_items, "num_items", minimum=2)
        m = int(w_t.max()) + 1 if num_workers is None else check_int(
            num_workers, "num_workers", minimum=1)
        return cls(i_t, j_t, w_t, link, pd.RangeIndex(n), pd.RangeIndex(m))

    @property
    def num_pairs(self) -> int:
        """Number of judgements ``L``."""
        return int(self.link.shape[0])

    def __len__(self) -> int:
        return self.num_pairs

    def __repr__(self) -> str:
        return (f"PairwiseAnnotations(num_items={self.num_items}, "
                f"num_workers={self.num_workers}, num_pairs={self.num_pairs})")

    def encode_items(self, ids) -> torch.Tensor:
        """Codes of item ids; raises on unknown ids."""
        return torch.from_numpy(encode_ids(self.items, ids, "ids", "the items"))

    def encode_workers(self, ids) -> torch.Tensor:
        """Codes of worker ids; raises on unknown ids."""
        return torch.from_numpy(encode_ids(self.workers, ids, "ids", "the workers"))

    def index_items(self, values, columns=None):
        """Per-item results ``(N,)`` / ``(N, C)`` as a Series / DataFrame indexed by item id."""
        return index_values(values, self.items, "values", columns)

    def index_workers(self, values, columns=None):
        """Per-worker results ``(M,)`` / ``(M, C)`` indexed by worker id."""
        return index_values(values, self.workers, "values", columns)

    def counts_per_worker(self) -> torch.Tensor:
        """Number of judgements of each worker, long tensor ``(M,)``."""
        return torch.bincount(self.worker_idx, minlength=self.num_workers)

    def to_frame(self, item_a: str = "item_a", item_b: str = "item_b", worker: str = "worker",
                 link: str = "link") -> pd.DataFrame:
        """The judgements back in long format with the user's ids, one row per judgement in
        the stored order: the columns ``item_a``, ``item_b``, ``worker`` (ids) and ``link``
        (int64 0/1), which :meth:`from_dataframe` reads back."""
        _check_distinct_names({"item_a": item_a, "item_b": item_b, "worker": worker,
                               "link": link})
        ids = self.items.to_numpy()
        return pd.DataFrame({
            item_a: ids[self.i_idx.cpu().numpy()],
            item_b: ids[self.j_idx.cpu().numpy()],
            worker: self.workers.to_numpy()[self.worker_idx.cpu().numpy()],
            link: self.link.cpu().numpy(),
        })


def pair_columns(df, item_a: str = "item_a", item_b: str = "item_b") -> tuple[str, str]:
    """The names of the two item columns of ``df``: ``(item_a, item_b)``, or ``("i", "j")``
    when both are the defaults, ``df`` has neither ``item_a`` nor ``item_b`` and has ``i``
    and ``j`` columns (the short names the pairwise tables first used).

    Example:
        >>> pair_columns(pd.DataFrame({"i": [0], "j": [1], "worker": [0], "link": [1]}))
        ('i', 'j')
    """
    if ((item_a, item_b) == ("item_a", "item_b") and isinstance(df, pd.DataFrame)
            and not {"item_a", "item_b"} & set(df.columns) and {"i", "j"} <= set(df.columns)):
        return "i", "j"
    return item_a, item_b


def link_values(series: pd.Series, name: str) -> np.ndarray:
    """The 0/1 links of a DataFrame column as an int64 array; ``name`` (``"df['link']"``)
    names the column in the errors. Booleans are read as 1/0 and integral floats as ints;
    missing values, other numbers and strings are errors naming the first offending rows."""
    check_no_missing(series, name)
    valid = series.isin([0, 1]).to_numpy()
    if not valid.all():
        bad = np.flatnonzero(~valid)
        found = [plain(v) for v in pd.unique(series.to_numpy()[bad])]
        rows = [plain(r) for r in series.index[bad]]
        raise ValueError(
            f"{name} must hold 0/1 links, found {found[:SHOW]}"
            f"{' ...' if len(found) > SHOW else ''} at row(s) {rows[:SHOW]}"
            f"{' ...' if len(rows) > SHOW else ''} (1 = must link, 0 = cannot link; booleans "
            "are read as 1/0)"
        )
    return series.to_numpy().astype(np.int64)


def _check_distinct_names(names: dict[str, str]) -> None:
    """Raise unless the column names ``{argument: column}`` are all different."""
    seen: dict[str, str] = {}
    for arg, col in names.items():
        if col in seen:
            raise ValueError(
                f"{seen[col]} and {arg} must name different columns, got {col!r} for both"
            )
        seen[col] = arg


def _kept_rows(a, b, w, rows: pd.Index, items: pd.Index, workers: pd.Index,
               columns: tuple[str, str], duplicates: str):
    """The rows to keep (a boolean array) under ``duplicates``, or ``None`` to keep every
    row; raises on repeated (pair, worker) keys when ``duplicates`` is ``"raise"``."""
    keys = pd.DataFrame({"lo": np.minimum(a, b), "hi": np.maximum(a, b), "w": w})
    later = keys.duplicated(keep="first").to_numpy()
    if not later.any():
        return None
    if duplicates != "raise":
        return ~keys.duplicated(keep=duplicates).to_numpy()
    r = int(np.flatnonzero(later)[0])
    lo, hi, wr = (int(keys.iloc[r][c]) for c in ("lo", "hi", "w"))
    group = np.flatnonzero((keys["lo"].to_numpy() == lo) & (keys["hi"].to_numpy() == hi)
                           & (keys["w"].to_numpy() == wr))
    shown = ", ".join(repr(plain(rows[g])) for g in group[:SHOW])
    raise ValueError(
        f"{int(later.sum())} repeated (pair, worker) row(s): worker {plain(workers[wr])!r} "
        f"judged the pair ({plain(items[lo])!r}, {plain(items[hi])!r}) in rows {shown} of df "
        f"(the order of {columns[0]} and {columns[1]} does not matter). Drop the repeats, or "
        "pass duplicates='first' or duplicates='last' to keep one judgement per pair and worker"
    )
