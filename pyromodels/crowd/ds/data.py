r"""Prepared data of the Dawid-Skene model: the annotation table, a padded view and the prior.

The user's labels arrive as a long :class:`~pyromodels.data.AnnotationTable` (or a
task/worker/label DataFrame). The Pyro program needs the labels of each item side by side, so
the prepared data carry a padded view, built on first use: item ``n``'s labels sit in slots
``0 .. c_n - 1`` of row ``n`` of ``(N, S)`` tensors, ``S = max_n c_n``, with a mask marking
the slots in use. The flat table stays the one the fast kernels use
(:mod:`pyromodels.crowd.emissions`); ``slot[l]`` says where row ``l`` of the table sits.

Resolved prior (all on the data's device and floating dtype):

* ``prior_concentration`` ``alpha`` ``(K,)``: ``prior ~ Dirichlet(alpha)``;
* ``confusion_concentration`` ``B`` ``(K, K)``: ``confusion[m, k] ~ Dirichlet(B[k])`` for
  every worker ``m``, ``B = beta 1 1^T + diag(diagonal)`` (``diagonal`` a number or one
  pseudo-count per class);
* ``fixed_prior`` ``(K,)`` or ``None``: a class prior held fixed instead of learned.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd
import torch

from ... import checks
from ...checks import as_float_tensor, check_int, check_positive
from ...core.backend import resolve_backend
from ...data.annotations import AnnotationTable, TableSizes
from ...data.tensors import on_device
from ..emissions import START_ATOL
from .kernels.native import have_c
from .label_checks import SingleWorkerClassWarning, SparseWorkerWarning, check_label_counts

__all__ = [
    "BACKENDS",
    "resolve_ds_backend",
    "DSData",
    "SparseWorkerWarning",
    "SingleWorkerClassWarning",
    "prepare_ds_data",
    "as_table",
    "check_stochastic",
    "check_num_classes",
]


#: where EM's passes can run: the compiled CPU passes (C built with the package, or numba) or
#: torch (log space, any device); ``"auto"`` picks (see :func:`resolve_ds_backend`)
BACKENDS = ("auto", "c", "numba", "torch")


def resolve_ds_backend(backend: str, *tensors: torch.Tensor) -> str:
    """``"c"``, ``"numba"`` or ``"torch"`` for ``backend`` (one of :data:`BACKENDS`).

    ``"auto"`` gives the C passes for CPU tensors when they were built with the package, else
    numba's, and torch on other devices (see :func:`~pyromodels.core.backend.resolve_backend`).
    """
    return resolve_backend(backend, *tensors, have_c=have_c)


class PaddedView(NamedTuple):
    """Each item's labels side by side (see the module doc)."""

    worker_pad: torch.Tensor
    label_pad: torch.Tensor
    mask: torch.Tensor
    slot: torch.Tensor


@dataclass(frozen=True, eq=False)
class DSData(TableSizes):
    """A validated annotation table with its resolved prior and (built on first use, for the
    Pyro program) its padded view.

    Attributes:
        table: the long table (``L`` rows).
        prior_concentration: ``(K,)`` Dirichlet concentration of the class prior.
        confusion_concentration: ``(K, K)`` Dirichlet concentration of each confusion row.
        fixed_prior: ``(K,)`` class prior held fixed, or ``None`` when the prior is learned.
        backend: where EM's passes run, chosen once when the data are prepared: ``"c"`` or
            ``"numba"`` (the compiled CPU passes, :mod:`.kernels.compiled`) or ``"torch"``
            (log space, any device).
        worker_pad: long ``(N, S)``: the worker of each slot (0 where unused).
        label_pad: long ``(N, S)``: the label of each slot (0 where unused).
        mask: bool ``(N, S)``: which slots hold a label.
        slot: long ``(L,)``: the slot of each table row (its item is ``table.item_idx``).
    """

    table: AnnotationTable
    prior_concentration: torch.Tensor
    confusion_concentration: torch.Tensor
    fixed_prior: torch.Tensor | None = None
    #: how the passes run, not what the data are: outside the checkpoints' data fingerprint
    backend: str = dataclasses.field(default="torch", metadata={"fingerprint": False})

    @functools.cached_property
    def padded(self) -> PaddedView:
        """The padded view, built once (the EM and Gibbs kernels use the flat table)."""
        return PaddedView(*_padded_view(self.table))

    worker_pad = property(lambda self: self.padded.worker_pad)
    label_pad = property(lambda self: self.padded.label_pad)
    mask = property(lambda self: self.padded.mask)
    slot = property(lambda self: self.padded.slot)

    @property
    def device(self) -> torch.device:
        return self.table.device

    @property
    def dtype(self) -> torch.dtype:
        return self.confusion_concentration.dtype

    def to(self, device) -> DSData:
        """A copy with every tensor on ``device`` (off the CPU the backend becomes torch)."""
        moved = {
            f.name: getattr(self, f.name).to(device)
            for f in dataclasses.fields(self)
            if hasattr(getattr(self, f.name), "to")
        }
        if torch.device(device).type != "cpu":
            moved["backend"] = "torch"
        return dataclasses.replace(self, **moved)

    def with_backend(self, backend: str) -> DSData:
        """These data with the backend ``backend`` (one of :data:`BACKENDS`) resolves to for
        them (see :func:`resolve_ds_backend`)."""
        chosen = resolve_ds_backend(backend, self.table.item_idx)
        return self if chosen == self.backend else dataclasses.replace(self, backend=chosen)

    def with_labels(self, label_pad: torch.Tensor) -> DSData:
        """The same items, workers and slots with new labels ``label_pad`` ``(N, S)``.

        Used to plug labels simulated from the program back in (the Geweke test).
        """
        label_pad = torch.as_tensor(label_pad, device=self.device)
        if label_pad.shape != self.label_pad.shape:
            raise ValueError(
                f"label_pad must have shape {tuple(self.label_pad.shape)}, "
                f"got {tuple(label_pad.shape)}"
            )
        label_idx = label_pad[self.table.item_idx, self.slot]
        table = dataclasses.replace(self.table, label_idx=label_idx)
        return dataclasses.replace(self, table=table)


def as_table(data, allow_repeats: bool = False) -> AnnotationTable:
    """``data`` as an :class:`AnnotationTable`: a table is returned as is, a DataFrame with
    ``task``, ``worker`` and ``label`` columns is converted (sorted ids)."""
    if isinstance(data, AnnotationTable):
        return data
    if isinstance(data, pd.DataFrame):
        return AnnotationTable.from_dataframe(data, allow_repeats=allow_repeats)
    raise TypeError(
        "data must be an AnnotationTable or a pandas DataFrame with task, worker and label "
        f"columns, got {type(data).__name__}"
    )


def check_stochastic(x, name: str, shape: tuple[int, ...], dtype, device,
                     atol: float = START_ATOL) -> torch.Tensor:
    """``x`` as a ``dtype`` tensor of ``shape`` whose last axis lies on the simplex.

    The positional form the Dawid-Skene entry points use for starting points a user passes in:
    :func:`pyromodels.checks.check_stochastic` with the tolerance floor ``atol``
    (default :data:`~pyromodels.crowd.emissions.START_ATOL`).
    """
    return checks.check_stochastic(x, name, shape=shape, dtype=dtype, device=device,
                                       atol=atol)


def _padded_view(table: AnnotationTable):
    n = table.num_items
    order = torch.argsort(table.item_idx, stable=True)
    counts = table.counts_per_item()
    offsets = torch.cumsum(counts, 0) - counts
    slot = torch.empty_like(table.item_idx)
    rank = torch.arange(table.num_labels, device=table.device)
    slot[order] = rank - offsets[table.item_idx[order]]
    width = max(int(counts.max()), 1)
    worker_pad = torch.zeros(n, width, dtype=torch.long, device=table.device)
    label_pad = torch.zeros_like(worker_pad)
    mask = torch.zeros(n, width, dtype=torch.bool, device=table.device)
    worker_pad[table.item_idx, slot] = table.worker_idx
    label_pad[table.item_idx, slot] = table.label_idx
    mask[table.item_idx, slot] = True
    return worker_pad, label_pad, mask, slot


def _concentration(value, name: str, K: int, shape: tuple, dtype, device) -> torch.Tensor:
    if value is None:
        return torch.ones(shape, dtype=dtype, device=device)
    t = as_float_tensor(value, name, dtype=dtype, device=device)
    if t.dim() not in (0, len(shape)) or (t.dim() and tuple(t.shape) != shape):
        raise ValueError(f"{name} must be a positive number or have shape {shape} for K = {K}, "
                         f"got shape {tuple(t.shape)}")
    if bool((t <= 0).any()):
        raise ValueError(f"{name} must be > 0 everywhere, found {float(t.min()):.3g}")
    return t.expand(shape).clone()


def _diagonal(value, K: int, dtype, device) -> torch.Tensor:
    """``diagonal`` as ``(K,)`` pseudo-counts: ``None`` (zeros), a number ``>= 0`` or one
    finite value ``>= 0`` per class."""
    if value is None or isinstance(value, numbers.Real):
        extra = 0.0 if value is None else check_positive(value, "diagonal", strict=False)
        return torch.full((K,), extra, dtype=dtype, device=device)
    t = as_float_tensor(value, "diagonal", dtype=dtype, device=device)
    if tuple(t.shape) != (K,):
        raise ValueError(f"diagonal must be a number >= 0 or have shape ({K},) (one value per "
                         f"class) for K = {K}, got shape {tuple(t.shape)}")
    if bool((t < 0).any()):
        raise ValueError(f"diagonal must be >= 0 for every class, got {t.tolist()}")
    return t.clone()


def _check_items_and_workers(table: AnnotationTable, allow_unlabelled: bool) -> None:
    per_item, per_worker, pairs = (t.cpu().numpy() for t in table.label_statistics())
    # the warnings name the caller of DawidSkene.prepare
    check_label_counts(per_item, per_worker, pairs, table, allow_unlabelled, stacklevel=4)


def prepare_ds_data(
    data,
    *,
    num_classes: int | None,
    prior_concentration=None,
    confusion_concentration=None,
    diagonal=None,
    update_prior: bool = True,
    class_prior=None,
    allow_unlabelled: bool = False,
    device=None,
    backend: str = "auto",
) -> DSData:
    """Validate the labels, build the padded view and resolve the prior (see the module doc).

    Args:
        data: an :class:`AnnotationTable` or a task/worker/label DataFrame.
        num_classes: ``K``, or ``None`` to take the table's classes.
        prior_concentration: ``alpha``: positive number or ``(K,)``; default 1.
        confusion_concentration: ``beta``: positive number or ``(K, K)``; default 1.
        diagonal: extra pseudo-count ``>= 0`` on each row's true class: a number, or
            ``(K,)`` (one per true class); default 0.
        update_prior: learn the class prior; otherwise hold it at ``class_prior``.
        class_prior: ``(K,)`` fixed prior (only with ``update_prior=False``); default uniform.
        allow_unlabelled: accept items with no label (only a table can hold them).
        device: target device; default the table's.
        backend: EM's passes, one of :data:`BACKENDS` (see :func:`resolve_ds_backend`);
            resolved here, once.

    Raises:
        ValueError: fewer than 2 classes, ``num_classes`` not matching the table, an item with
            no label (unless allowed), bad concentrations or class prior.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"task": ["a", "a", "b"], "worker": ["u", "v", "u"],
        ...                    "label": ["x", "y", "y"]})
        >>> d = prepare_ds_data(df, num_classes=None, diagonal=2.0)
        >>> d.label_pad.tolist(), d.mask.tolist()
        ([[0, 1], [1, 0]], [[True, True], [True, False]])
        >>> d.confusion_concentration.tolist()
        [[3.0, 1.0], [1.0, 3.0]]
    """
    table = on_device(as_table(data), device)
    K = table.num_classes
    if num_classes is not None and num_classes != K:
        raise ValueError(
            f"num_classes={num_classes} but the data have {K} classes {list(table.classes)}; "
            "build the table with the full class list (classes=...) to keep unused classes"
        )
    if K < 2:
        raise ValueError(
            f"Dawid-Skene needs at least 2 classes, the data have {K} ({list(table.classes)}); "
            "pass the full class list (classes=...) if some classes were never used"
        )
    _check_items_and_workers(table, allow_unlabelled)
    dtype, dev = torch.get_default_dtype(), table.device
    alpha = _concentration(prior_concentration, "prior_concentration", K, (K,), dtype, dev)
    beta = _concentration(confusion_concentration, "confusion_concentration", K, (K, K), dtype, dev)
    beta = beta + torch.diag(_diagonal(diagonal, K, dtype, dev))
    fixed = None
    if not update_prior:
        fixed = (torch.full((K,), 1.0 / K, dtype=dtype, device=dev) if class_prior is None
                 else checks.check_stochastic(class_prior, "class_prior", shape=(K,),
                                                  dtype=dtype, device=dev))
    elif class_prior is not None:
        raise ValueError("class_prior fixes the class prior, so it needs update_prior=False")
    return DSData(table, alpha, beta, fixed, resolve_ds_backend(backend, table.item_idx))


def check_num_classes(num_classes) -> int | None:
    """``None`` or an integer ``>= 2``."""
    return None if num_classes is None else check_int(num_classes, "num_classes", minimum=2)
