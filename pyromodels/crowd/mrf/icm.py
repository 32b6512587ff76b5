r"""Iterated conditional modes (ICM) for the networked crowd model (ensemble paper, eq. 33).

Each update gives node :math:`n` the label of least local cost

.. math:: \tilde y_n = \arg\min_k \big[ U_n(k) - \log b_n(k) \big],

with :math:`U_n` the Potts local energy (:mod:`pyromodels.crowd.mrf.energy`). A node keeps
its label unless another one is strictly better (ties never move a node). Schedules:

* ``"sequential"`` (default): Gauss-Seidel in node order ``0 .. N-1`` (or ``order``), each
  node seeing its neighbours' newest labels, as in the paper's ``for n = 1..N`` loop and
  Besag's ICM. A compiled CPU loop (numba; ``backend="python"`` runs the same loop
  uncompiled). Tensors on a GPU are copied to the CPU for the sweep.
* ``"colored"``: Gauss-Seidel by colour classes of a greedy proper colouring. Nodes of one
  colour are never neighbours, so updating them together equals updating them one by one; the
  sweep is vectorised in torch (any device) and equals ``"sequential"`` with ``order`` =
  nodes sorted by colour.
* ``"jacobi"``: every node at once from the previous sweep's labels (the paper's
  :math:`t-1` superscripts). It can cycle: on one edge with no data and two opposite labels it
  swaps them for ever.

Under either Gauss-Seidel schedule (symmetric coupling) the objective
:math:`E(y) = U(y) - \sum_n \log b_n(y_n)` never increases, and a fixed point is a local
minimum: no single-label change lowers :math:`E`. The paper leaves :math:`T_{max}` unset; the
default here is 100 sweeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ...checks import as_label_tensor, check_in, check_int
from .energy import (
    PottsCoupling,
    check_log_emissions,
    local_energies,
    loop_backend,
    total_energy,
)
from .kernels import gauss_seidel

__all__ = ["SCHEDULES", "ICMResult", "sequential_sweep", "label_sweep", "icm",
           "check_labels"]

SCHEDULES = ("sequential", "colored", "jacobi")


@dataclass
class ICMResult:
    """The outcome of :func:`icm`.

    Attributes:
        labels: long ``(N,)`` final labels.
        converged: whether a sweep changed no label before ``max_iter`` sweeps.
        n_iter: sweeps run.
        changes: labels changed by each sweep.
        energies: :math:`E(y)` before the first sweep and after each one (``None`` for a
            node-dependent coupling, which has no total energy).
    """

    labels: torch.Tensor
    converged: bool
    n_iter: int
    changes: list[int] = field(default_factory=list)
    energies: list[float] | None = None


def check_labels(labels, num_nodes: int, num_classes: int, device,
                 name: str = "labels") -> torch.Tensor:
    """``labels`` as a long ``(N,)`` tensor of codes in ``[0, K)`` on ``device``; errors call
    it ``name`` (the argument the user passed)."""
    y = as_label_tensor(labels, name, num_classes=num_classes, device=device)
    if y.shape[0] != num_nodes:
        raise ValueError(f"{name} must have one entry per node ({num_nodes}), got {y.shape[0]}")
    return y


def _keep_or_argmin(scores: torch.Tensor, current: torch.Tensor) -> torch.Tensor:
    """Per row: the current label unless some label scores strictly lower (then the smallest
    such argmin)."""
    best_val, best = scores.min(-1)
    cur_val = scores.gather(-1, current.unsqueeze(-1)).squeeze(-1)
    return torch.where(cur_val <= best_val, current, best)


def _colored_sweep(coupling: PottsCoupling, cost: torch.Tensor, labels: torch.Tensor):
    labels = labels.clone()
    changed = 0
    for cls in coupling.color_classes:
        u = local_energies(coupling, labels, cost.shape[1], cost.dtype, color_class=cls)
        old = labels[cls.nodes]
        new = _keep_or_argmin(u + cost[cls.nodes], old)
        changed += int((new != old).sum())
        labels[cls.nodes] = new
    return labels, changed


def _jacobi_sweep(coupling: PottsCoupling, cost: torch.Tensor, labels: torch.Tensor):
    scores = local_energies(coupling, labels, cost.shape[1], cost.dtype) + cost
    new = _keep_or_argmin(scores, labels)
    return new, int((new != labels).sum())


def sequential_sweep(coupling: PottsCoupling, cost: torch.Tensor, labels: torch.Tensor,
                     order=None, backend: str = "auto") -> tuple[torch.Tensor, int]:
    """One Gauss-Seidel sweep in ``order`` on the CPU kernel that ``backend`` names.

    The one place that picks between the compiled kernel and the same loop uncompiled
    (:mod:`.kernels.gauss_seidel`); arguments as in :func:`label_sweep`.

    Returns:
        ``(new_labels, number_changed)``, the labels on ``labels``' device.
    """
    kernel = (gauss_seidel.sequential_sweep if loop_backend(backend) == "numba"
              else gauss_seidel.sequential_sweep_py)
    indptr, indices, weights, wdeg = coupling.csr_numpy
    lab = labels.detach().cpu().numpy().astype(np.int64)  # a copy: the kernel writes in place
    cost_np = np.ascontiguousarray(cost.detach().cpu().numpy(), dtype=np.float64)
    changed = kernel(indptr, indices, weights, wdeg, cost_np, lab,
                     _check_order(order, coupling.num_nodes))
    return torch.from_numpy(lab).to(labels.device), int(changed)


def _check_order(order, num_nodes: int) -> np.ndarray:
    if order is None:
        return np.arange(num_nodes, dtype=np.int64)
    o = as_label_tensor(order, "order", num_classes=num_nodes).cpu().numpy().astype(np.int64)
    if len(o) != num_nodes or len(np.unique(o)) != num_nodes:
        raise ValueError(f"order must be a permutation of 0 .. {num_nodes - 1}")
    return o


def label_sweep(coupling: PottsCoupling, cost: torch.Tensor, labels: torch.Tensor, *,
                schedule: str = "sequential", order=None, backend: str = "auto"):
    r"""One sweep of :math:`y_n \leftarrow \arg\min_k [U_n(k) + c_n(k)]` over every node.

    ICM uses the cost :math:`c = -\log b`; a Gibbs sweep adds Gumbel noise,
    :math:`c = -\log b - G` (Gumbel-max), which turns each update into an exact draw from the
    full conditional.

    Args:
        coupling: the Potts coupling.
        cost: floating ``(N, K)`` unary costs (``+inf`` allowed, no NaN).
        labels: long ``(N,)`` current labels (not modified).
        schedule: ``"sequential"``, ``"colored"`` or ``"jacobi"`` (see the module notes).
        order: node visiting order for ``"sequential"`` (a permutation; default ``0 .. N-1``).
        backend: ``"auto"``, ``"numba"`` or ``"python"`` for ``"sequential"``.

    Returns:
        ``(new_labels, number_changed)``.
    """
    check_in(schedule, "schedule", SCHEDULES)
    if schedule == "sequential":
        return sequential_sweep(coupling, cost, labels, order, backend)
    if order is not None:
        raise ValueError(f"order applies only to schedule='sequential', got schedule={schedule!r}")
    if schedule == "colored":
        return _colored_sweep(coupling, cost, labels)
    return _jacobi_sweep(coupling, cost, labels)


def icm(log_b: torch.Tensor, coupling: PottsCoupling, labels=None, *,
        schedule: str = "sequential", max_iter: int = 100, order=None,
        backend: str = "auto") -> ICMResult:
    r"""Iterated conditional modes from ``labels`` until no label changes or ``max_iter`` sweeps.

    Args:
        log_b: ``(N, K)`` log emissions :math:`\log b_n(k)` (``-inf`` for impossible classes).
        coupling: the Potts coupling, on ``log_b``'s device.
        labels: long ``(N,)`` starting labels; default :math:`\arg\max_k \log b_n(k)`.
        schedule: ``"sequential"`` (Gauss-Seidel, default), ``"colored"`` or ``"jacobi"``.
        max_iter: the sweep budget :math:`T_{max}`.
        order: visiting order for ``"sequential"``.
        backend: ``"auto"``, ``"numba"`` or ``"python"`` for ``"sequential"``.

    Returns:
        An :class:`ICMResult`.

    Example:
        >>> from pyromodels.data import Graph
        >>> c = PottsCoupling.constant(Graph.from_edges([[0, 1], [1, 2]], num_nodes=3), 1.0)
        >>> log_b = torch.tensor([[0.0, -1.0], [-0.5, 0.0], [0.0, -1.0]])
        >>> icm(log_b, c).labels.tolist()
        [0, 0, 0]
    """
    check_log_emissions(log_b, coupling.num_nodes)
    if coupling.device != log_b.device:
        raise ValueError(f"coupling is on {coupling.device} but log_b on {log_b.device}; move "
                         "one of them with .to(device)")
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    check_in(schedule, "schedule", SCHEDULES)
    if schedule == "sequential":
        backend = loop_backend(backend)  # once for every sweep
    y = log_b.argmax(-1) if labels is None else check_labels(
        labels, coupling.num_nodes, log_b.shape[1], log_b.device)
    cost = -log_b
    energies = [float(total_energy(coupling, log_b, y))] if coupling.is_symmetric else None
    changes: list[int] = []
    converged = False
    for _ in range(max_iter):
        y, changed = label_sweep(coupling, cost, y, schedule=schedule, order=order,
                                 backend=backend)
        changes.append(changed)
        if energies is not None:
            energies.append(float(total_energy(coupling, log_b, y)))
        if changed == 0:
            converged = True
            break
    return ICMResult(y, converged, len(changes), changes, energies)
