"""Ragged sequences stored as one concatenated array plus the length of each sequence.

Sequence :math:`s` occupies positions ``offsets[s] .. offsets[s + 1] - 1`` of the data, with
``offsets = [0, cumsum(lengths)]``. The data are either a tensor whose first axis runs over
all positions, or an :class:`~pyromodels.data.annotations.AnnotationTable` whose items are the
positions in order (crowd labels on tokens, say).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..checks import as_label_tensor, as_numeric_tensor, check_finite
from .annotations import AnnotationTable
from .tensors import TensorFields

__all__ = ["Sequences"]


@dataclass(frozen=True, eq=False)
class Sequences(TensorFields):
    r"""Concatenated sequences with their lengths.

    Attributes:
        data: tensor ``(T_total, ...)`` or an AnnotationTable with ``T_total`` items.
        lengths: long tensor ``(S,)`` of positive lengths with ``sum(lengths) == T_total``.

    Example:
        >>> import torch
        >>> seqs = Sequences(torch.tensor([1, 2, 3, 4, 5]), [2, 3])
        >>> padded, mask = seqs.pad(fill=0)
        >>> padded.tolist(), mask.tolist()
        ([[1, 2, 0], [3, 4, 5]], [[True, True, False], [True, True, True]])
    """

    data: torch.Tensor | AnnotationTable
    lengths: torch.Tensor

    _tensor_fields = ("data", "lengths")

    def __post_init__(self):
        data = self.data
        if not isinstance(data, AnnotationTable):
            if not isinstance(data, torch.Tensor):
                try:
                    data = as_numeric_tensor(data, "data")
                except TypeError as err:
                    raise TypeError(f"data must be a numeric array or an AnnotationTable, got "
                                    f"{type(data).__name__} ({err})") from err
            if data.dim() == 0:
                raise ValueError("data must have at least one dimension (positions)")
            check_finite(data, "data")
        lengths = as_label_tensor(self.lengths, "lengths", device=data.device)
        if lengths.numel() and int(lengths.min()) < 1:
            raise ValueError(f"lengths must all be >= 1, found {int(lengths.min())}")
        total = data.num_items if isinstance(data, AnnotationTable) else data.shape[0]
        if (lengths.numel() and int(lengths.max()) > total) or int(lengths.sum()) != total:
            got = sum(lengths.tolist())  # Python ints: a sum past 2**63 is reported as it is
            raise ValueError(f"lengths must sum to the data length {total}, got sum {got}")
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "lengths", lengths)

    # ------------------------------------------------------------------ sizes
    @property
    def num_sequences(self) -> int:
        """Number of sequences ``S``."""
        return int(self.lengths.shape[0])

    @property
    def total_length(self) -> int:
        """Number of positions over all sequences."""
        return int(self.lengths.sum())

    @property
    def max_length(self) -> int:
        """Length of the longest sequence."""
        return int(self.lengths.max())

    @property
    def offsets(self) -> torch.Tensor:
        """Long tensor ``(S + 1,)``: start of each sequence, then the total length."""
        out = torch.zeros(self.num_sequences + 1, dtype=torch.long, device=self.lengths.device)
        out[1:] = torch.cumsum(self.lengths, 0)
        return out

    def __len__(self) -> int:
        return self.num_sequences

    def __repr__(self) -> str:
        kind = "AnnotationTable" if isinstance(self.data, AnnotationTable) else "tensor"
        return (
            f"Sequences(num_sequences={self.num_sequences}, total_length={self.total_length}, "
            f"max_length={self.max_length}, data={kind})"
        )

    def sequence_ids(self) -> torch.Tensor:
        """Long tensor ``(T_total,)``: the sequence of every position."""
        ids = torch.arange(self.num_sequences, device=self.lengths.device)
        return torch.repeat_interleave(ids, self.lengths)

    def positions(self) -> torch.Tensor:
        """Long tensor ``(T_total,)``: the position of every entry within its sequence."""
        start = self.offsets[:-1]
        return torch.arange(self.total_length, device=self.lengths.device) - torch.repeat_interleave(
            start, self.lengths
        )

    # ------------------------------------------------------------------ views
    def values(self) -> torch.Tensor:
        """The data as a tensor: ``data`` itself, or the table's ``to_dense()`` ``(T_total, M)``
        label matrix (``-1`` = no label)."""
        if isinstance(self.data, AnnotationTable):
            return self.data.to_dense(fill=-1)
        return self.data

    def _resolve(self, x) -> torch.Tensor:
        if x is None:
            return self.values()
        x = as_numeric_tensor(x, "x")
        if x.dim() == 0 or x.shape[0] != self.total_length:
            raise ValueError(
                f"x must have {self.total_length} rows (one per position), got shape "
                f"{tuple(x.shape)}"
            )
        return x

    def split(self, x=None) -> tuple[torch.Tensor, ...]:
        """Per-sequence pieces of ``x`` (default: :meth:`values`)."""
        return torch.split(self._resolve(x), self.lengths.tolist(), dim=0)

    def iter_sequences(self, x=None) -> Iterator[torch.Tensor]:
        """Iterate over the per-sequence pieces of ``x`` (default: :meth:`values`)."""
        yield from self.split(x)

    def pad(self, x=None, fill=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Pad to a ``(S, max_length, ...)`` block.

        Args:
            x: tensor ``(T_total, ...)``; default :meth:`values`.
            fill: value of padded cells; default ``-1`` for a table's labels, else ``0``.

        Returns:
            ``(padded, mask)`` with ``mask[s, t]`` true where ``t < lengths[s]``.
        """
        if fill is None:
            fill = -1 if x is None and isinstance(self.data, AnnotationTable) else 0
        elif isinstance(fill, bool) or not isinstance(fill, numbers.Number):
            raise TypeError(f"fill must be a number, got {type(fill).__name__} {fill!r}")
        x = self._resolve(x)
        shape = (self.num_sequences, self.max_length) + tuple(x.shape[1:])
        padded = torch.full(shape, fill, dtype=x.dtype, device=x.device)
        seq, pos = self.sequence_ids().to(x.device), self.positions().to(x.device)
        padded[seq, pos] = x
        mask = torch.arange(self.max_length, device=x.device) < self.lengths.to(x.device)[:, None]
        return padded, mask

    def unpad(self, padded) -> torch.Tensor:
        """Inverse of :meth:`pad`: the ``(T_total, ...)`` concatenation of the valid cells."""
        padded = as_numeric_tensor(padded, "padded")
        if padded.dim() < 2 or tuple(padded.shape[:2]) != (self.num_sequences, self.max_length):
            raise ValueError(
                f"padded must have leading shape ({self.num_sequences}, {self.max_length}), "
                f"got {tuple(padded.shape)}"
            )
        seq, pos = self.sequence_ids().to(padded.device), self.positions().to(padded.device)
        return padded[seq, pos]
