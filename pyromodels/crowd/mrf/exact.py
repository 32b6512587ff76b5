r"""Exact inference for tiny graphs by enumerating all :math:`K^N` labelings: the oracle.

For fixed confusions the label posterior is
:math:`p(y \mid F, \Gamma) = e^{-E(y)} / Z` with :math:`E(y) = U(y) - \sum_n \log b_n(y_n)`;
:func:`exact_posterior` returns its node marginals, :math:`\log Z`, the MAP labeling
(eq. 32) and its energy. With independent :math:`\mathrm{Dirichlet}(\alpha_{mk\cdot})` priors
on the confusion rows integrated out (the Bayesian variant),
:func:`exact_collapsed_posterior` uses the Dirichlet-multinomial evidence

.. math::

    \log p(y \mid F) = \text{const} - U(y) + \sum_{m,k} \Big[\log\Gamma(A_{mk})
      - \log\Gamma(A_{mk} + c_{mk}) + \sum_j \big(\log\Gamma(\alpha_{mkj} + c_{mkj})
      - \log\Gamma(\alpha_{mkj})\big)\Big],

with :math:`A_{mk} = \sum_j \alpha_{mkj}` and :math:`c_{mkj}` the number of items labelled
:math:`k` by :math:`y` that worker :math:`m` answered :math:`j`.

Both need a symmetric coupling (a node-dependent one has no joint: use its
:meth:`~pyromodels.crowd.mrf.energy.PottsCoupling.symmetrized` version). The labelings are
enumerated in chunks, so memory stays bounded; ``max_states`` guards against graphs too big
to enumerate. :class:`UniformLabelings` is the uniform base measure over labelings whose
enumerated support lets a Pyro program enumerate every labeling at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from pyro.distributions import constraints
from pyro.distributions.torch_distribution import TorchDistribution

from ...checks import check_int
from .em import check_concentration, check_table
from .energy import PottsCoupling, check_log_emissions, potts_energy, total_energy

__all__ = [
    "MAX_STATES",
    "enumerate_labelings",
    "UniformLabelings",
    "ExactPosterior",
    "exact_posterior",
    "exact_collapsed_posterior",
]

MAX_STATES = 2**20
_CHUNK = 2**15


def _check_size(num_nodes: int, num_classes: int, max_states: int) -> int:
    num_nodes = check_int(num_nodes, "num_nodes", minimum=1)
    num_classes = check_int(num_classes, "num_classes", minimum=2)
    max_states = check_int(max_states, "max_states", minimum=1)
    total = num_classes**num_nodes
    if total > max_states:
        raise ValueError(
            f"exact enumeration of {num_classes}^{num_nodes} = {total} labelings exceeds "
            f"max_states={max_states}; it is meant for tiny graphs (N <= 12 nodes)")
    return total


def _decode(index: torch.Tensor, num_nodes: int, num_classes: int) -> torch.Tensor:
    """Labelings ``(S, N)`` of the state codes ``index`` ``(S,)``; node 0 is the most
    significant digit (the order of ``itertools.product``)."""
    powers = num_classes ** torch.arange(num_nodes - 1, -1, -1, device=index.device)
    return (index.unsqueeze(-1) // powers) % num_classes


def enumerate_labelings(num_nodes: int, num_classes: int, *, max_states: int = MAX_STATES,
                        device=None) -> torch.Tensor:
    """Every labeling of ``num_nodes`` nodes with ``num_classes`` classes, long ``(K^N, N)``, in
    ``itertools.product`` order."""
    total = _check_size(num_nodes, num_classes, max_states)
    return _decode(torch.arange(total, device=device), num_nodes, num_classes)


class UniformLabelings(TorchDistribution):
    """The uniform distribution over the :math:`K^N` labelings of ``N`` nodes (event ``(N,)``).

    Its :meth:`enumerate_support` lists every labeling, so a Pyro site drawn from it with
    ``infer={"enumerate": "parallel"}`` is summed over all labelings jointly; combined with
    ``pyro.factor("potts", -U(y))`` it gives an (unnormalised) Potts prior.
    """

    arg_constraints: dict = {}
    has_enumerate_support = True

    def __init__(self, num_nodes: int, num_classes: int, *, max_states: int = MAX_STATES,
                 device=None, validate_args=None):
        self.num_nodes = check_int(num_nodes, "num_nodes", minimum=1)
        self.num_classes = check_int(num_classes, "num_classes", minimum=2)
        self.max_states = max_states
        self._device = torch.device(device) if device is not None else torch.device("cpu")
        super().__init__(torch.Size(), torch.Size((self.num_nodes,)), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.independent(constraints.integer_interval(0, self.num_classes - 1), 1)

    def sample(self, sample_shape=()):
        shape = torch.Size(sample_shape) + self.event_shape
        return torch.randint(self.num_classes, shape, device=self._device)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return torch.full(value.shape[:-1], -self.num_nodes * math.log(self.num_classes),
                          dtype=torch.get_default_dtype(), device=value.device)

    def enumerate_support(self, expand: bool = True):
        return enumerate_labelings(self.num_nodes, self.num_classes, max_states=self.max_states,
                                   device=self._device)


@dataclass
class ExactPosterior:
    """Exact summaries of a label posterior.

    Attributes:
        marginals: ``(N, K)`` posterior probabilities of each node's label.
        log_partition: :math:`\\log \\sum_y e^{-E(y)}` (or the collapsed analogue).
        map_labels: long ``(N,)``: the most probable labeling (eq. 32), smallest code on ties.
        map_log_weight: its unnormalised log probability (:math:`-E` at the MAP).
        log_weights: ``(K^N,)`` unnormalised log probability of every labeling, in
            :func:`enumerate_labelings` order.
    """

    marginals: torch.Tensor
    log_partition: float
    map_labels: torch.Tensor
    map_log_weight: float
    log_weights: torch.Tensor


def _enumerate(num_nodes: int, num_classes: int, max_states: int, device, dtype,
               log_weight: Callable[[torch.Tensor], torch.Tensor]) -> ExactPosterior:
    total = _check_size(num_nodes, num_classes, max_states)
    chunks = [log_weight(_decode(torch.arange(s, min(s + _CHUNK, total), device=device),
                                 num_nodes, num_classes)) for s in range(0, total, _CHUNK)]
    log_w = torch.cat(chunks).to(dtype)
    log_z = torch.logsumexp(log_w, 0)
    marginals = torch.zeros(num_nodes, num_classes, dtype=dtype, device=device)
    for s in range(0, total, _CHUNK):
        idx = torch.arange(s, min(s + _CHUNK, total), device=device)
        y = _decode(idx, num_nodes, num_classes)
        w = torch.exp(log_w[idx] - log_z)
        for n in range(num_nodes):
            marginals[n] += torch.bincount(y[:, n], weights=w, minlength=num_classes).to(dtype)
    best = int(torch.argmax(log_w))
    map_y = _decode(torch.tensor([best], device=device), num_nodes, num_classes)[0]
    return ExactPosterior(marginals, float(log_z), map_y, float(log_w[best]), log_w)


def _require_symmetric(coupling: PottsCoupling) -> None:
    if not coupling.is_symmetric:
        raise ValueError("exact enumeration needs a symmetric coupling; a node-dependent one "
                         "defines only local energies: pass coupling.symmetrized()")


def exact_posterior(log_b: torch.Tensor, coupling: PottsCoupling, *,
                    max_states: int = MAX_STATES) -> ExactPosterior:
    """The exact label posterior :math:`\\propto e^{-E(y)}` for fixed confusions.

    Args:
        log_b: ``(N, K)`` log emissions.
        coupling: a symmetric Potts coupling.
        max_states: refuse graphs with more than this many labelings.

    Example:
        >>> from pyromodels.data import Graph
        >>> c = PottsCoupling.constant(Graph.from_edges([[0, 1]], num_nodes=2), 100.0)
        >>> exact_posterior(torch.tensor([[0.0, -1.0], [-0.5, 0.0]]), c).map_labels.tolist()
        [0, 0]
    """
    check_log_emissions(log_b, coupling.num_nodes)
    _require_symmetric(coupling)
    N, K = log_b.shape
    return _enumerate(N, K, max_states, log_b.device, log_b.dtype,
                      lambda y: -total_energy(coupling, log_b, y))


def exact_collapsed_posterior(table, coupling: PottsCoupling, concentration, *,
                              max_states: int = MAX_STATES) -> ExactPosterior:
    """The exact label posterior with the confusions integrated over Dirichlet priors.

    Args:
        table: the :class:`~pyromodels.data.AnnotationTable` (its items are the nodes).
        coupling: a symmetric Potts coupling.
        concentration: positive Dirichlet parameters of the rows, a number or an array
            broadcastable to ``(M, K, K)``.
        max_states: refuse graphs with more than this many labelings.

    Returns:
        An :class:`ExactPosterior` (``log_partition`` up to the constant of the module notes).
    """
    _require_symmetric(coupling)
    check_table(table)
    M, K, N = table.num_workers, table.num_classes, table.num_items
    if coupling.num_nodes != N:
        raise ValueError(f"coupling has {coupling.num_nodes} nodes but the table {N} items")
    alpha = check_concentration(concentration, M, K, table.device, "concentration")
    dtype = alpha.dtype
    a_rows = alpha.sum(-1).reshape(-1)
    base = (torch.lgamma(a_rows).sum() - torch.lgamma(alpha).sum())
    alpha_flat = alpha.reshape(-1)

    def log_weight(y):  # (S, N) -> (S,)
        idx = (table.worker_idx * K + y[:, table.item_idx]) * K + table.label_idx  # (S, L)
        counts = torch.zeros(y.shape[0], M * K * K, dtype=dtype, device=y.device)
        counts.scatter_add_(1, idx, torch.ones_like(idx, dtype=dtype))
        row = counts.reshape(-1, M * K, K).sum(-1)
        evidence = (base - torch.lgamma(a_rows + row).sum(-1)
                    + torch.lgamma(alpha_flat + counts).sum(-1))
        return evidence - potts_energy(coupling, y, dtype)

    return _enumerate(N, K, max_states, table.device, dtype, log_weight)
