"""The data an SCDC fit reads: the observations, the links as row numbers, and the batch sizes.

:func:`prepare_scdc` checks the user's data once; the model, its guide and the relational
term receive the :class:`SCDCData` it returns. The links come as a
:class:`~pyromodels.data.pairwise.PairwiseAnnotations` or as a DataFrame read by
``PairwiseAnnotations.from_dataframe`` (columns ``item_a``, ``item_b``, ``worker``,
``link``). Their items name rows of the observations in one of two ways: the pairs' ``items``
list all ``N`` rows in order (``items=`` given to ``from_dataframe``; any ids), or the item
ids are themselves row numbers (integers ``0 .. N - 1``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import torch

from ..checks import as_float_tensor, check_int, check_probability
from ..data.pairwise import PairwiseAnnotations
from ..nn.amortized import resolve_likelihood

__all__ = ["SCDCData", "prepare_scdc", "balanced_pair_batch", "resolve_likelihood",
           "steps_per_epoch", "id_coords"]


@dataclasses.dataclass(frozen=True, eq=False)
class SCDCData:
    """Prepared data of an SCDC fit.

    Attributes:
        o: ``(N, D)`` floating observations.
        i_idx, j_idx: ``(N_a,)`` long row numbers of the two items of each link.
        worker_idx: ``(N_a,)`` long worker codes ``0 .. M - 1``.
        link: ``(N_a,)`` long links, 1 = must link, 0 = cannot link (``N_a`` may be 0).
        workers: the ``M`` worker ids.
        likelihood: ``"bernoulli"`` or ``"normal"``, the decoder's likelihood.
        batch_size: ``|B|``, the data minibatch of one step (``N``: the full data).
        pair_batch_size: ``|S|``, the links drawn with each data minibatch.
        coin_init: the workers' initial ``alpha`` and ``beta``: ``None`` draws each from
            Beta(1, 1), a number in (0, 1) starts every worker there.
    """

    o: torch.Tensor
    i_idx: torch.Tensor
    j_idx: torch.Tensor
    worker_idx: torch.Tensor
    link: torch.Tensor
    workers: pd.Index
    likelihood: str
    batch_size: int
    pair_batch_size: int
    coin_init: float | None = None

    @property
    def num_items(self) -> int:
        """``N``."""
        return int(self.o.shape[0])

    @property
    def num_links(self) -> int:
        """``N_a``, the number of link judgements."""
        return int(self.link.shape[0])

    @property
    def num_workers(self) -> int:
        """``M``."""
        return len(self.workers)

    @property
    def device(self) -> torch.device:
        """Where the tensors are."""
        return self.o.device

    def to(self, device) -> SCDCData:
        """A copy with the tensors on ``device``."""
        fields = ("o", "i_idx", "j_idx", "worker_idx", "link")
        return dataclasses.replace(self, **{f: getattr(self, f).to(device) for f in fields})


def balanced_pair_batch(num_links: int, num_items: int, batch_size: int) -> int:
    """``|S| = N_a |B| / N`` rounded, at least 1 and at most ``N_a`` (0 without links), so
    that links and items are fed in proportion (the paper's appendix B)."""
    if num_links == 0:
        return 0
    return min(num_links, max(1, round(num_links * batch_size / num_items)))


def _rows(pairs: PairwiseAnnotations, num_items: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = pairs.items
    if len(ids) == num_items:  # the items list every row of o, in order: codes are rows
        return pairs.i_idx.cpu(), pairs.j_idx.cpu()
    if not pd.api.types.is_integer_dtype(ids.dtype):
        raise ValueError(f"pairs' item ids must be row numbers of o (integers 0 .. "
                         f"{num_items - 1}), got ids of dtype {ids.dtype} such as {ids[0]!r}; "
                         f"or give every row's id in order (items= of from_dataframe)")
    rows = ids.to_numpy().astype(np.int64)
    bad = (rows < 0) | (rows >= num_items)
    if bad.any():
        raise ValueError(f"pairs' item ids must be row numbers of o (0 .. {num_items - 1}), "
                         f"found {int(rows[bad][0])}")
    table = torch.from_numpy(rows)
    return table[pairs.i_idx.cpu()], table[pairs.j_idx.cpu()]


def prepare_scdc(o, pairs=None, *, likelihood: str = "auto", batch_size: int = 128,
                 pair_batch_size: int | None = None, coin_init: float | None = None,
                 dtype: torch.dtype | None = None, device=None) -> SCDCData:
    """Check an SCDC fit's data and return them prepared.

    Args:
        o: ``(N, D)`` observations (array-like or tensor), finite.
        pairs: ``None`` (no links), a :class:`~pyromodels.data.pairwise.PairwiseAnnotations`
            or a DataFrame with columns ``item_a``, ``item_b``, ``worker``, ``link``; its
            items list the ``N`` rows of ``o`` in order, or its item ids are row numbers.
        likelihood: ``"auto"``, ``"bernoulli"`` or ``"normal"`` (see
            :func:`resolve_likelihood`).
        batch_size: ``|B|``; larger than ``N`` means the full data.
        pair_batch_size: ``|S|``; default :func:`balanced_pair_batch`.
        coin_init: ``None`` or a number strictly between 0 and 1 (see :class:`SCDCData`).
        dtype: floating dtype of ``o``; default: ``o``'s own (a floating tensor or array), else
            torch's default.
        device: where the tensors go (default: ``o``'s device).

    Returns:
        :class:`SCDCData`.
    """
    o = as_float_tensor(o, "o", ndim=2, dtype=dtype, device=device)
    if o.shape[0] < 2:
        raise ValueError(f"o must hold at least 2 rows, got {o.shape[0]}")
    num_items = int(o.shape[0])
    batch_size = min(check_int(batch_size, "batch_size", minimum=1), num_items)
    if isinstance(pairs, pd.DataFrame):
        pairs = PairwiseAnnotations.from_dataframe(pairs)
    if pairs is None:
        empty = torch.zeros(0, dtype=torch.long, device=o.device)
        i_idx = j_idx = worker_idx = link = empty
        workers = pd.RangeIndex(0)
    elif isinstance(pairs, PairwiseAnnotations):
        i_idx, j_idx = (t.to(o.device) for t in _rows(pairs, num_items))
        worker_idx, link = pairs.worker_idx.to(o.device), pairs.link.to(o.device)
        workers = pairs.workers
    else:
        raise TypeError(f"pairs must be None, a PairwiseAnnotations or a DataFrame with columns "
                        f"item_a, item_b, worker, link, got {type(pairs).__name__}")
    num_links = int(link.shape[0])
    if pair_batch_size is None:
        pair_batch_size = balanced_pair_batch(num_links, num_items, batch_size)
    elif num_links == 0:
        raise ValueError("pair_batch_size was given but there are no links (pairs is None)")
    else:
        pair_batch_size = check_int(pair_batch_size, "pair_batch_size", minimum=1,
                                    maximum=num_links)
    if coin_init is not None:
        coin_init = check_probability(coin_init, "coin_init")
        if coin_init in (0.0, 1.0):
            raise ValueError(f"coin_init must lie strictly between 0 and 1, got {coin_init}")
    return SCDCData(o, i_idx, j_idx, worker_idx, link, workers,
                    resolve_likelihood(likelihood, o), batch_size, pair_batch_size, coin_init)


def steps_per_epoch(data: SCDCData) -> int:
    """Optimisation steps in one pass over the data: ``ceil(N / |B|)``."""
    return math.ceil(data.num_items / data.batch_size)


def id_coords(workers: pd.Index | None = None, items: pd.Index | None = None) -> dict:
    """ArviZ coordinates of the family's ``worker`` and ``item`` axes: the users' ids, in the
    order of the codes ``0 .. M - 1`` and ``0 .. N - 1`` (an axis given as ``None`` is left
    to ArviZ's default ``0, 1, ...``)."""
    named = {"worker": workers, "item": items}
    return {dim: ids.to_numpy() for dim, ids in named.items() if ids is not None}
