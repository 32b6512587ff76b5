r"""Mode-field EM for the networked crowd model (ensemble paper, section 5.2, Alg. 3 and 4).

The pieces of one iteration, its objective and its starting points. The loop is the core's
:func:`~pyromodels.core.run_em`, driven by the hooks of
:class:`~pyromodels.crowd.mrf.model.NetworkedDawidSkene`;
:func:`~pyromodels.crowd.mrf.fit.networked_em` is its functional front end.

The exact E-step needs the marginals of a Potts posterior, which is intractable; the paper
clamps each node's neighbours at their ICM labels (a mode-field approximation in the sense of
Celeux, Forbes and Peyrard 2003). One outer iteration ``i`` is:

1. ICM (eq. 33) from the current labels with the current confusions
   :math:`\hat\Gamma^{(i)}` gives :math:`\hat y^{(i+1)}`;
2. E-step (eqs. 34-35): :math:`\hat q_{nk} \propto \exp(-U_n(k) + \log b_n(k))` with the
   neighbours of :math:`n` clamped at :math:`\hat y^{(i+1)}` and
   :math:`\log b_n(k) = \sum_m \log \hat\Gamma^{(i)}_m(f_{mn}, k)`;
3. M-step (eq. 36, the Dawid-Skene M-step):
   :math:`\hat\Gamma^{(i+1)}_{m}[k, j] \propto \sum_{n: f_{mn} = j} \hat q_{nk}` (+ an optional
   pseudo-count ``smoothing``; 0 is the paper's maximum likelihood).

The objective recorded is the mode-field log likelihood

.. math::

    \mathcal L(\Gamma; \hat y) = \sum_n \log \sum_k p(y_n = k \mid \hat y_{N_n})\, b_n(k),
    \qquad p(y_n = k \mid \hat y_{N_n}) = \frac{e^{-U_n(k)}}{\sum_{k'} e^{-U_n(k')}},

the Dawid-Skene likelihood with a per-item prior set by the clamped neighbours. For fixed
labels the E- and M-steps are an EM for it, but ICM moves the labels between iterations, so
**the objective is not monotone** and no monotonicity is claimed or checked. The iterations
stop once ICM changes no label and the objective moves by less than a relative tolerance. With
:math:`\delta = 0` or no edges it is exactly the equal-prior Dawid-Skene log likelihood, and
the iteration is Dawid-Skene EM (eqs. 9 and 11).

Starting points (Alg. 4 and "MV + Alg. 3"): given confusions (for instance from moment
matching) and optionally a class prior, the labels start at the MAP rule (eq. 18)
:math:`\arg\max_k \log\pi_k + \log b_n(k)`; given labels, the confusions start at one M-step
on them; given neither, the labels start at majority vote.

Items without responses (``unlabelled``). Eq. 18 gives every such node the prior's mode and
majority vote a uniform draw, whatever the graph says; where most nodes have no response (a
few labelled nodes in a large graph), the Potts coupling then spreads that one class. With
``unlabelled="propagate"`` (the default) they start from the graph instead
(:func:`propagate_labels`): in order of graph distance from the nodes with responses, each
takes the label of least local energy given the neighbours labelled before it. The start is
deterministic (it needs no seed), and ``unlabelled="prior"`` keeps the rules above.
"""

from __future__ import annotations

import torch

from ...checks import as_float_tensor, check_in, check_int, check_positive, check_stochastic
from ...data.annotations import AnnotationTable
from ..emissions import (
    START_ATOL,
    check_confusion,
    confusion_counts,
    log_emissions,
    normalize_rows,
)
from ..majority import majority_vote
from .energy import PottsCoupling, conditional_logits, local_energies, weighted_label_counts
from .icm import check_labels, icm

__all__ = [
    "check_table",
    "check_concentration",
    "check_smoothing",
    "m_step",
    "map_labels",
    "UNLABELLED",
    "propagate_labels",
    "initialize",
    "mode_field_posteriors",
    "mode_field_objective",
    "em_step",
]


def check_table(table) -> AnnotationTable:
    """Raise unless ``table`` is an AnnotationTable with at least two classes."""
    if not isinstance(table, AnnotationTable):
        raise TypeError(f"table must be a pyromodels.data.AnnotationTable, got "
                        f"{type(table).__name__}")
    if table.num_classes < 2:
        raise ValueError(f"table must have at least 2 classes (K >= 2), got K = "
                         f"{table.num_classes}")
    return table


def check_concentration(concentration, num_workers: int, num_classes: int, device=None,
                        name: str = "confusion_concentration") -> torch.Tensor:
    """Dirichlet parameters of the confusion rows as a positive ``(M, K, K)`` tensor; a number
    or any array broadcastable to that shape is accepted."""
    alpha = as_float_tensor(concentration, name, dtype=torch.get_default_dtype(), device=device)
    shape = (num_workers, num_classes, num_classes)
    try:
        alpha = alpha.expand(shape).clone()
    except RuntimeError:
        raise ValueError(f"{name} must broadcast to (M, K, K) = {shape}, got shape "
                         f"{tuple(alpha.shape)}") from None
    if bool((alpha <= 0).any()):
        raise ValueError(f"{name} must be > 0 everywhere")
    return alpha


def check_smoothing(smoothing):
    """A pseudo-count ``>= 0``: a number or a tensor broadcastable to ``(M, K, K)``."""
    if isinstance(smoothing, torch.Tensor):
        s = as_float_tensor(smoothing, "smoothing")
        if bool((s < 0).any()):
            raise ValueError("smoothing must be >= 0 everywhere")
        return s
    return check_positive(smoothing, "smoothing", strict=False)


def m_step(table, q: torch.Tensor, smoothing=0.0) -> torch.Tensor:
    """Eq. 36: confusions from class posteriors ``q`` ``(N, K)``; ``smoothing`` is added to
    every count (the MAP under a ``Dirichlet(1 + smoothing)`` prior on each row)."""
    return normalize_rows(confusion_counts(table, q), floor=smoothing)


UNLABELLED = ("propagate", "prior")  #: starting rules for the nodes without responses


def _check_prior(prior, num_classes: int, dtype, device) -> torch.Tensor | None:
    """``prior`` as a ``(K,)`` probability vector (``None`` stays ``None``: uniform)."""
    if prior is None:
        return None
    return check_stochastic(prior, "prior", shape=(num_classes,), dtype=dtype, device=device,
                            atol=START_ATOL)


def map_labels(log_b: torch.Tensor, prior=None) -> torch.Tensor:
    r"""Eq. 18: :math:`\arg\max_k \log \pi_k + \log b_n(k)`; uniform :math:`\pi` by default."""
    p = _check_prior(prior, log_b.shape[1], log_b.dtype, log_b.device)
    return log_b.argmax(-1) if p is None else (p.log() + log_b).argmax(-1)


def propagate_labels(coupling: PottsCoupling, labels, known, num_classes: int,
                     prior=None) -> torch.Tensor:
    r"""Labels for the nodes outside ``known``, spread breadth-first from the ``known`` ones.

    With :math:`W_{nn'}` the weight node :math:`n` gives neighbour :math:`n'` (arcs of weight
    0 count as absent), the layers are :math:`L_0` = the ``known`` nodes and :math:`L_d` = the
    other nodes with an arc to :math:`L_{d-1}`. Every node of :math:`L_d` at once takes

    .. math::

        y_n = \arg\max_k \sum_{n' \in L_{d-1}} W_{nn'} [y_{n'} = k]
            = \arg\min_k U_n(k) \text{ over the neighbours labelled so far,}

    the ICM update (eq. 33) of a node with no evidence; nodes of one layer do not see each
    other, so the result does not depend on the node order. Ties go to the class of largest
    ``prior``, then to the smallest code. Nodes in no layer (no path of positive arcs to a
    ``known`` node) keep their entry of ``labels``, as do the ``known`` nodes.

    Args:
        coupling: the Potts coupling on ``N`` nodes.
        labels: long ``(N,)``: the labels of the ``known`` nodes and the fall-back of the rest.
        known: bool ``(N,)``: the nodes whose labels are kept and spread.
        num_classes: ``K``.
        prior: optional ``(K,)`` class probabilities for ties (default uniform).

    Returns:
        long ``(N,)`` labels (a new tensor).

    Example:
        >>> from pyromodels.data import Graph
        >>> c = PottsCoupling.constant(Graph.from_edges([[0, 1], [1, 2], [3, 4]], num_nodes=5), 1.0)
        >>> known = torch.tensor([True, False, False, False, False])
        >>> propagate_labels(c, torch.tensor([2, 0, 0, 0, 0]), known, 3).tolist()
        [2, 2, 2, 0, 0]
    """
    if not isinstance(coupling, PottsCoupling):
        raise TypeError(f"coupling must be a PottsCoupling, got {type(coupling).__name__}")
    num_nodes, device = coupling.num_nodes, coupling.device
    num_classes = check_int(num_classes, "num_classes", minimum=2)
    y = check_labels(labels, num_nodes, num_classes, device).clone()
    if not (isinstance(known, torch.Tensor) and known.dtype == torch.bool
            and tuple(known.shape) == (num_nodes,)):
        raise TypeError(f"known must be a bool tensor of shape ({num_nodes},)")
    p = _check_prior(prior, num_classes, torch.float64, device)
    rank = torch.zeros(num_classes, dtype=torch.float64, device=device) if p is None else p
    done = known.to(device).clone()
    live = coupling.weight > 0
    src, dst, weight = coupling.src[live], coupling.dst[live], coupling.weight[live]
    while True:
        arcs = done[dst] & ~done[src]
        if not bool(arcs.any()):
            return y
        layer = torch.unique(src[arcs])
        votes = weighted_label_counts(src[arcs], y[dst[arcs]], weight[arcs], num_nodes,
                                      num_classes, torch.float64)[layer]
        tied = votes == votes.max(-1, keepdim=True).values
        # among the tied classes the largest prior, then the first (smallest) code
        y[layer] = torch.where(tied, rank.expand_as(votes), torch.full_like(votes, -1.0)).argmax(-1)
        done[layer] = True


def initialize(table, *, coupling: PottsCoupling | None = None, confusion=None, prior=None,
               labels=None, unlabelled: str = "propagate", smoothing=0.0, floor: float = 1e-6,
               ties: str = "random", seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Starting ``(confusion, labels)`` for Alg. 3 (see the module notes).

    Args:
        table: the annotations.
        coupling: the Potts coupling on the table's items, used by
            ``unlabelled="propagate"``; ``None`` stands for a graph without edges.
        confusion: optional ``(M, K, K)`` starting confusions (Alg. 4: from moment matching).
        prior: optional ``(K,)`` class prior for the MAP rule; only with ``confusion``.
        labels: optional ``(N,)`` starting labels, used as given; not together with
            ``confusion``.
        unlabelled: the starting labels of items without responses when they are computed
            (from ``confusion``, or by majority vote): ``"propagate"`` (default) spreads the
            labels of the items with responses over the graph (:func:`propagate_labels`,
            ties to the larger ``prior``), and items that no path of positive coupling joins
            to one keep the rule's label; ``"prior"`` keeps the rule's label for all of them
            (the MAP rule gives the argmax of ``prior``, majority vote its tie rule).
        smoothing: pseudo-count of the M-step that turns labels into confusions.
        floor: given confusions are raised to at least ``floor`` and renormalised (default
            1e-6; 0 keeps them as given). Moment-matching estimates can hold exact zeros,
            which would make some items' labels impossible under every class.
        ties, seed: majority-vote tie rule and seed (see
            :func:`~pyromodels.crowd.majority.majority_vote`).

    Example:
        >>> from pyromodels.crowd.mrf.energy import resolve_coupling
        >>> from pyromodels.data import WorkerPopulation, simulate_networked_annotations
        >>> table, graph, truth = simulate_networked_annotations(
        ...     50, WorkerPopulation(4, labels_per_item=2), 3, mean_degree=3, seed=0)
        >>> coupling = resolve_coupling(graph, "M", table)
        >>> conf, y = initialize(table, coupling=coupling, confusion=truth["confusion"])
        >>> conf.shape, y.shape
        (torch.Size([4, 3, 3]), torch.Size([50]))
    """
    check_table(table)
    M, K, N = table.num_workers, table.num_classes, table.num_items
    device = table.device
    check_in(unlabelled, "unlabelled", UNLABELLED)
    if coupling is not None and not isinstance(coupling, PottsCoupling):
        raise TypeError(f"coupling must be a PottsCoupling or None, got {type(coupling).__name__}")
    if coupling is not None and coupling.num_nodes != N:
        raise ValueError(f"coupling must be on the table's {N} items, got {coupling.num_nodes} "
                         "nodes")
    if confusion is not None and labels is not None:
        raise ValueError("give at most one of confusion and labels as the starting point")
    if prior is not None and confusion is None:
        raise ValueError("prior is used only with a starting confusion (the MAP rule, eq. 18)")
    if confusion is not None:
        conf = check_confusion(confusion, "confusion", K, num_workers=M, dtype=None,
                               device=device, atol=START_ATOL)
        floor = check_positive(floor, "floor", strict=False)
        if floor > 0:
            conf = normalize_rows(conf.clamp_min(floor))
        y = map_labels(log_emissions(table, conf.log()), prior)
    elif labels is None:
        y = majority_vote(table, ties=ties, seed=seed)
    else:
        y = check_labels(labels, N, K, device)
    if unlabelled == "propagate" and coupling is not None and labels is None:
        coupling = coupling if coupling.device == device else coupling.to(device)
        y = propagate_labels(coupling, y, table.counts_per_item() > 0, K, prior)
    if confusion is not None:
        return conf, y
    q = torch.nn.functional.one_hot(y, K).to(torch.get_default_dtype())
    return m_step(table, q, smoothing), y


def mode_field_posteriors(log_b: torch.Tensor, coupling: PottsCoupling, labels) -> torch.Tensor:
    """Eqs. 34-35: ``(N, K)`` posteriors with every node's neighbours clamped at ``labels``."""
    return torch.softmax(conditional_logits(coupling, log_b, labels), -1)


def mode_field_objective(log_b: torch.Tensor, coupling: PottsCoupling, labels) -> torch.Tensor:
    """The mode-field log likelihood (module notes) at the clamped ``labels``; a scalar."""
    u = local_energies(coupling, labels, log_b.shape[1], log_b.dtype)
    return (torch.logsumexp(log_b - u, -1) - torch.logsumexp(-u, -1)).sum()


def em_step(table, coupling: PottsCoupling, confusion: torch.Tensor, labels: torch.Tensor, *,
            smoothing=0.0, schedule: str = "sequential", icm_max_iter: int = 100,
            backend: str = "auto") -> tuple[torch.Tensor, torch.Tensor, dict]:
    """One outer iteration of Alg. 3: ICM, mode-field E-step, M-step.

    Returns:
        ``(new_confusion, new_labels, info)`` with ``info = {"icm": ICMResult, "posteriors":
        q}`` (``q`` computed with the old confusions, as in eq. 34).
    """
    log_b = log_emissions(table, confusion.log())
    result = icm(log_b, coupling, labels, schedule=schedule, max_iter=icm_max_iter,
                 backend=backend)
    q = mode_field_posteriors(log_b, coupling, result.labels)
    return m_step(table, q, smoothing), result.labels, {"icm": result, "posteriors": q}
