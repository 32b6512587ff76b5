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

from ..checks import as_label_tensor, check_int
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

__all__ = ["PairwiseAnnotations"]


@dataclass(frozen=True, eq=False)
class PairwiseAnnotations(ItemWorkerSizes, TensorFields):
    """Pairwise link judgements with id maps.

    Attributes:
        i_idx, j_idx: long tensors ``(L,)`` of item codes with ``i_idx != j_idx``.
        worker_idx: long tensor ``(L,)`` of worker codes.
        link: long tensor ``(L,)`` of 0/1 links.
        items: the ``N`` item ids; workers: the ``M`` worker ids.

    A worker may judge a pair only once (in either order).

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"i": ["a", "a"], "j": ["b", "c"], "worker": ["w", "w"],
        ...                    "link": [1, 0]})
        >>> pairs = PairwiseAnnotations.from_dataframe(df)
        >>> list(pairs.items), pairs.link.tolist()
        (['a', 'b', 'c'], [1, 0])
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
    def from_dataframe(cls, df: pd.DataFrame, i: str = "i", j: str = "j",
                       worker: str = "worker", link: str = "link", *, items=None,
                       workers=None) -> PairwiseAnnotations:
        """Build from a DataFrame with one row per (i, j, worker, link) judgement.

        Args:
            df: the judgements.
            i, j, worker, link: column names. ``link`` must hold 0/1 (or booleans).
            items, workers: optional full id lists; default: sorted distinct ids (items from
                both the ``i`` and ``j`` columns).
        """
        check_columns(df, {"i": i, "j": j, "worker": worker, "link": link})
        check_no_missing(df[i], f"df[{i!r}]")
        check_no_missing(df[j], f"df[{j!r}]")
        both = pd.concat([df[i], df[j]], ignore_index=True)
        codes, item_index = factorize_ids(both, f"df[{i!r}] and df[{j!r}]", items, "items")
        worker_codes, worker_index = factorize_ids(df[worker], f"df[{worker!r}]", workers,
                                                   "workers")
        check_no_missing(df[link], f"df[{link!r}]")
        values = df[link].to_numpy()
        if values.dtype == bool:
            values = values.astype(np.int64)
        bad = ~np.isin(values, [0, 1])
        if bad.any():
            raise ValueError(
                f"df[{link!r}] must hold 0/1 links, found {sorted(set(values[bad].tolist()))[:5]}"
            )
        n = len(df)
        return cls(torch.from_numpy(codes[:n]), torch.from_numpy(codes[n:]),
                   torch.from_numpy(worker_codes), torch.from_numpy(values.astype(np.int64)),
                   item_index, worker_index)

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

    def to_frame(self, i: str = "i", j: str = "j", worker: str = "worker",
                 link: str = "link") -> pd.DataFrame:
        """The judgements back in long format with the user's ids."""
        ids = self.items.to_numpy()
        return pd.DataFrame({
            i: ids[self.i_idx.cpu().numpy()],
            j: ids[self.j_idx.cpu().numpy()],
            worker: self.workers.to_numpy()[self.worker_idx.cpu().numpy()],
            link: self.link.cpu().numpy(),
        })
