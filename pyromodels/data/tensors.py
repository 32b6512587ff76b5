"""Moving a data contract's tensors between devices.

A contract names the fields that hold tensors (or other contracts with a ``to`` method) in
``_tensor_fields``; the first of them decides the contract's device. Everything else (ids,
sizes, flags) stays as it is when the contract is moved.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Self

import torch

__all__ = ["TensorFields", "on_device"]


class TensorFields:
    """Mixin for frozen dataclass contracts: ``device`` and ``to(device)`` over the fields
    named in the class attribute ``_tensor_fields``.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Codes(TensorFields):
        ...     codes: torch.Tensor
        ...     _tensor_fields = ("codes",)
        >>> Codes(torch.arange(3)).to("cpu").device
        device(type='cpu')
    """

    _tensor_fields: ClassVar[tuple[str, ...]]

    @property
    def device(self) -> torch.device:
        """Device of the contract's tensors."""
        return getattr(self, self._tensor_fields[0]).device

    def to(self, device) -> Self:
        """A copy with the tensor fields on ``device`` (validated again on construction)."""
        moved = {name: getattr(self, name).to(device) for name in self._tensor_fields}
        return dataclasses.replace(self, **moved)


def on_device(contract, device):
    """``contract`` itself when ``device`` is ``None`` or already its device, else
    ``contract.to(device)``: preparing data for a fit does not copy (and validate again) a
    contract that is where it should be, and caches keyed on it stay valid."""
    if device is None or contract.device == torch.device(device):
        return contract
    return contract.to(device)
