r"""Mean-field variational inference for the labels of the networked crowd model.

The paper mentions mean field (Zhang 1992) as an alternative to ICM (section 5.1, Remark 2).
With a fully factorised :math:`q(y) = \prod_n q_n(y_n)` and fixed confusions, the optimal
factor given the others is

.. math::

    q_n(k) \propto \exp\Big(-\tfrac12 \sum_{n'} W_{nn'} (1 - q_{n'}(k)) + \log b_n(k)\Big),

the local energy with every neighbour's indicator replaced by its expectation
(:func:`~pyromodels.crowd.mrf.energy.local_energies` of ``q``). These equations are iterated
to a fixed point, which is a stationary point of the variational free energy

.. math::

    F(q) = \tfrac12 \sum_{\{i,j\} \in E} \delta_{ij} \Big(1 - \sum_k q_i(k) q_j(k)\Big)
           - \sum_{n,k} q_n(k) \log b_n(k) + \sum_{n,k} q_n(k) \log q_n(k)
         \ \ge\ -\log Z.

Schedules: ``"parallel"`` updates every node from the previous iterate (fast, but may
oscillate on bipartite graphs with strong coupling; ``damping`` :math:`\lambda` takes
:math:`q \leftarrow (1-\lambda)\,\mathrm{update}(q) + \lambda q`), ``"colored"`` updates one
colour class at a time, a block coordinate descent on :math:`F` that never increases it
(also with damping, since :math:`F` is convex in each :math:`q_n`). For a node-dependent
coupling the equations are the paper's local form and :math:`F` is not defined.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ...checks import check_in, check_int, check_positive, check_stochastic
from .energy import PottsCoupling, check_log_emissions, local_energies

__all__ = ["MeanFieldResult", "mean_field_update", "free_energy", "mean_field"]


@dataclass
class MeanFieldResult:
    """The outcome of :func:`mean_field`.

    Attributes:
        q: ``(N, K)`` label probabilities at the last iterate.
        converged: whether the largest change fell below ``tol``.
        n_iter: iterations run.
        changes: the largest absolute change of ``q`` at each iteration.
        free_energies: :math:`F(q)` at the start and after each iteration (``None`` for a
            node-dependent coupling).
    """

    q: torch.Tensor
    converged: bool
    n_iter: int
    changes: list[float] = field(default_factory=list)
    free_energies: list[float] | None = None


def mean_field_update(log_b: torch.Tensor, coupling: PottsCoupling, q: torch.Tensor):
    """The right-hand side of the fixed-point equations for every node at once, ``(N, K)``."""
    return torch.softmax(log_b - local_energies(coupling, q), -1)


def free_energy(log_b: torch.Tensor, coupling: PottsCoupling, q: torch.Tensor) -> torch.Tensor:
    """The variational free energy :math:`F(q)` (module notes); needs a symmetric coupling."""
    if not coupling.is_symmetric:
        raise ValueError("a node-dependent coupling has no free energy; use "
                         "coupling.symmetrized() for one")
    e = coupling.graph.edges
    overlap = (q[e[:, 0]] * q[e[:, 1]]).sum(-1)
    potts = 0.5 * (coupling.edge_delta.to(q.dtype) * (1 - overlap)).sum()
    zero = torch.zeros((), dtype=q.dtype, device=q.device)
    emit = torch.where(q > 0, q * log_b, zero).sum()
    entropy = torch.where(q > 0, q * q.log(), zero).sum()
    return potts - emit + entropy


def _colored_pass(log_b, coupling, q, damping):
    q = q.clone()
    for cls in coupling.color_classes:
        u = local_energies(coupling, q, color_class=cls)
        new = torch.softmax(log_b[cls.nodes] - u, -1)
        q[cls.nodes] = (1 - damping) * new + damping * q[cls.nodes]
    return q


def mean_field(log_b: torch.Tensor, coupling: PottsCoupling, *, init=None,
               damping: float = 0.0, schedule: str = "parallel", max_iter: int = 500,
               tol: float = 1e-10) -> MeanFieldResult:
    """Iterate the mean-field equations to a fixed point.

    Args:
        log_b: ``(N, K)`` log emissions.
        coupling: the Potts coupling, on ``log_b``'s device.
        init: starting ``(N, K)`` probabilities, each row on the simplex (checked by
            :func:`~pyromodels.checks.check_stochastic`); default ``softmax(log_b)``.
        damping: :math:`\\lambda \\in [0, 1)`.
        schedule: ``"parallel"`` or ``"colored"``.
        max_iter: iterations at most.
        tol: stop when no entry of ``q`` moves by more than ``tol``.

    Returns:
        A :class:`MeanFieldResult`.

    Example:
        >>> from pyromodels.data import Graph
        >>> from pyromodels.crowd.mrf.energy import PottsCoupling
        >>> c = PottsCoupling.constant(Graph.from_edges([[0, 1]], num_nodes=2), 2.0)
        >>> fit = mean_field(torch.tensor([[0.0, -2.0], [0.0, 0.0]]), c)
        >>> bool(fit.converged), fit.q.argmax(-1).tolist()
        (True, [0, 0])
    """
    check_log_emissions(log_b, coupling.num_nodes)
    check_in(schedule, "schedule", ("parallel", "colored"))
    damping = check_positive(damping, "damping", strict=False)
    if damping >= 1:
        raise ValueError(f"damping must lie in [0, 1), got {damping}")
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    if init is None:
        q = torch.softmax(log_b, -1)
    else:
        q = check_stochastic(init, "init", shape=tuple(log_b.shape), dtype=log_b.dtype,
                             device=log_b.device)
    track = coupling.is_symmetric
    out = MeanFieldResult(q, False, 0, free_energies=[float(free_energy(log_b, coupling, q))]
                          if track else None)
    for _ in range(max_iter):
        if schedule == "parallel":
            new = (1 - damping) * mean_field_update(log_b, coupling, q) + damping * q
        else:
            new = _colored_pass(log_b, coupling, q, damping)
        change = float((new - q).abs().max())
        q = new
        out.changes.append(change)
        if track:
            out.free_energies.append(float(free_energy(log_b, coupling, q)))
        if change < tol:
            out.converged = True
            break
    out.q, out.n_iter = q, len(out.changes)
    return out
