"""Prepared data of the sequential crowd model: the labels, the sequences and the priors."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property

import torch

from ...checks import as_float_tensor, check_in, check_stochastic
from ...core.backend import resolve_backend
from ...data.annotations import AnnotationTable
from ...data.sequences import Sequences
from ...data.tensors import on_device
from .kernels.inputs import sequence_bounds
from .params import INITIAL_MODES

__all__ = ["SequentialCrowdData", "prepare_sequential", "choose_backend"]

DTYPE = torch.float64


@dataclass(frozen=True, eq=False)
class SequentialCrowdData:
    """Validated crowd labels of items in sequences, with the model's priors resolved.

    Attributes:
        table: the :class:`~pyromodels.data.AnnotationTable`; its items are the positions of
            the sequences in order.
        lengths: long ``(S,)`` sequence lengths summing to ``table.num_items``.
        initial_mode: ``"learned"``, ``"fixed"`` or ``"stationary"``.
        initial_probs: ``(K,)`` the fixed law of the first label (``"fixed"`` only), else None.
        initial_concentration: ``(K,)`` Dirichlet concentration of ``initial`` (``"learned"``).
        transition_concentration: ``(K, K)`` Dirichlet concentration of each transition row.
        confusion_concentration: ``(K, K)`` Dirichlet concentration of each worker's confusion
            row ``k`` (shared by the workers).
        backend: the backend of the forward-backward, filtering and Viterbi kernels, chosen
            when the data are prepared: ``"torch"``, ``"numba"``, or ``"auto"`` where numba
            was chosen for these (CPU) data and a scaled step that underflows is redone in
            log space.
    """

    table: AnnotationTable
    lengths: torch.Tensor
    initial_mode: str
    initial_probs: torch.Tensor | None
    initial_concentration: torch.Tensor
    transition_concentration: torch.Tensor
    confusion_concentration: torch.Tensor
    #: how the passes run, not what the data are: outside the checkpoints' data fingerprint
    backend: str = field(default="torch", metadata={"fingerprint": False})

    @property
    def device(self) -> torch.device:
        return self.lengths.device

    @property
    def num_classes(self) -> int:
        return self.table.num_classes

    @property
    def num_workers(self) -> int:
        return self.table.num_workers

    @property
    def num_sequences(self) -> int:
        return int(self.lengths.shape[0])

    @cached_property
    def starts(self) -> torch.Tensor:
        """Bool ``(T_total,)``: the first position of each sequence."""
        return sequence_bounds(self.lengths)[1]

    @cached_property
    def dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(responses (S, T_max, M), mask (S, T_max))``: padded label codes, ``-1`` = none."""
        return Sequences(self.table, self.lengths).pad()

    def to(self, device) -> SequentialCrowdData:
        """A copy on ``device`` (off the CPU the backend becomes torch)."""
        moved = {}
        for f in fields(self):
            value = getattr(self, f.name)
            moved[f.name] = value.to(device) if hasattr(value, "to") else value
        if torch.device(device).type != "cpu":
            moved["backend"] = "torch"
        return replace(self, **moved)

    def with_backend(self, backend: str) -> SequentialCrowdData:
        """These data with ``backend`` (``"auto"``, ``"numba"`` or ``"torch"``) chosen for them
        (see :func:`choose_backend`)."""
        chosen = choose_backend(backend, self.lengths)
        return self if chosen == self.backend else replace(self, backend=chosen)


def choose_backend(backend: str, lengths: torch.Tensor) -> str:
    """``"torch"`` where ``backend`` resolves to torch for data on ``lengths``' device, else
    ``backend`` itself (``"auto"`` keeps its fallback to log space); raises for ``"numba"``
    where it cannot run (see :func:`~pyromodels.core.backend.resolve_backend`)."""
    return "torch" if resolve_backend(backend, lengths) == "torch" else backend


def _concentration(value, name: str, shape: tuple[int, ...]) -> torch.Tensor:
    t = as_float_tensor(value, name, dtype=DTYPE)
    if t.dim() == 0:
        t = t.expand(shape).clone()
    if tuple(t.shape) != shape:
        raise ValueError(f"{name} must be a positive number or have shape {shape}, got {tuple(t.shape)}")
    if bool((t <= 0).any()):
        raise ValueError(f"{name} must be > 0, found {float(t.min()):.3g}")
    return t


def prepare_sequential(data, *, initial_mode, initial_probs, initial_concentration,
                       transition_concentration, confusion_concentration, device=None,
                       backend: str = "auto") -> SequentialCrowdData:
    """Validate ``data`` (a :class:`~pyromodels.data.Sequences` over an AnnotationTable),
    resolve the priors against its number of classes and choose the kernels' ``backend``.
    Prepared data are moved to ``device`` if needed and given ``backend``."""
    if isinstance(data, SequentialCrowdData):
        same = device is None or data.device == torch.device(device)
        return (data if same else data.to(device)).with_backend(backend)
    if not isinstance(data, Sequences) or not isinstance(data.data, AnnotationTable):
        raise TypeError(
            "data must be a pyromodels.data.Sequences whose data is an AnnotationTable (the items "
            "are the sequence positions in order), e.g. from simulate_sequential_annotations; got "
            f"{type(data).__name__}"
        )
    table = on_device(data.data, device)
    K = table.num_classes
    if K < 2:
        raise ValueError(f"the labels must have at least 2 classes (num_classes >= 2), got {K}")
    check_in(initial_mode, "initial", INITIAL_MODES)
    probs = None
    if initial_probs is not None:
        probs = check_stochastic(initial_probs, "initial_probs", shape=(K,), dtype=torch.float64,
                                 device=table.device)
    elif initial_mode == "fixed":
        probs = torch.full((K,), 1.0 / K, dtype=DTYPE, device=table.device)
    return SequentialCrowdData(
        table=table,
        lengths=data.lengths.to(table.device),
        initial_mode=initial_mode,
        initial_probs=probs,
        initial_concentration=_concentration(
            initial_concentration, "initial_concentration", (K,)).to(table.device),
        transition_concentration=_concentration(
            transition_concentration, "transition_concentration", (K, K)).to(table.device),
        confusion_concentration=_concentration(
            confusion_concentration, "confusion_concentration", (K, K)).to(table.device),
        backend=choose_backend(backend, data.lengths.to(table.device)),
    )
