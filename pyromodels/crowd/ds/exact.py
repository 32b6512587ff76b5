r"""Exact Dawid-Skene quantities by enumerating every labelling of the items: the oracle.

Every one of the :math:`K^N` labellings :math:`z` is scored with the program's own log joint
:math:`\log p(z, \text{labels}, \theta)` (:meth:`~pyromodels.core.Model.log_joint`, which traces
the Pyro program), and the class posteriors, the log evidence
:math:`\log \sum_z p(z, \text{labels}, \theta)` and the most probable labelling follow by
summation and maximisation. Nothing here shares code with the E-step, which is the point: the
tests compare the E-step, the EM objective and the compiled passes with it. Only for tiny
problems (``K**N <= max_labelings``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from ...checks import check_int

__all__ = ["ExactPosterior", "exact_posterior"]


@dataclass(frozen=True)
class ExactPosterior:
    """The posterior of the true classes by enumeration.

    Attributes:
        marginals: ``(N, K)``, ``P(z_n = k | labels, theta)``.
        log_evidence: ``log sum_z p(z, labels, theta)`` (the EM objective at ``theta``).
        map_labels: ``(N,)`` long, the most probable labelling (ties: the first in
            lexicographic order).
    """

    marginals: torch.Tensor
    log_evidence: float
    map_labels: torch.Tensor


def exact_posterior(model, data, params: dict, *, max_labelings: int = 200_000) -> ExactPosterior:
    """Enumerate every labelling of the items under the program of ``model`` at ``params``.

    Args:
        model: a :class:`~pyromodels.crowd.DawidSkene` (or any model whose program has one
            item-level discrete site ``z`` and the global sites ``model.em_sites``).
        data: the model's prepared data (``model.prepare(table)``).
        params: values of the global sites, e.g. ``{"prior": (K,), "confusion": (M, K, K)}``;
            keys outside ``model.em_sites`` are ignored.
        max_labelings: refuse problems with more labellings than this.

    Returns:
        An :class:`ExactPosterior`.

    Example:
        >>> from pyromodels.crowd import DawidSkene
        >>> from pyromodels.data import simulate_annotations
        >>> table, truth = simulate_annotations(4, 3, 2, seed=0)
        >>> model = DawidSkene()
        >>> exact = exact_posterior(model, model.prepare(table), truth)
        >>> exact.marginals.shape
        torch.Size([4, 2])
    """
    max_labelings = check_int(max_labelings, "max_labelings", minimum=1)
    N, K = data.table.num_items, data.table.num_classes
    if K**N > max_labelings:
        raise ValueError(f"{N} items with K={K} have {K}**{N} labellings, more than "
                         f"max_labelings={max_labelings}; enumerate only tiny problems")
    missing = [k for k in model.em_sites if k not in params]
    if missing:
        raise ValueError(f"params lacks the global sites {missing}")
    fixed = {k: params[k] for k in model.em_sites}
    labellings = torch.tensor(list(itertools.product(range(K), repeat=N)), dtype=torch.long)
    scores = torch.stack([model.log_joint(data, {**fixed, "z": z}) for z in labellings])
    scores = scores.to(torch.float64)
    log_evidence = torch.logsumexp(scores, 0)
    weights = torch.exp(scores - log_evidence)
    marginals = torch.zeros(N, K, dtype=torch.float64)
    marginals.scatter_add_(1, labellings.T.contiguous(), weights.expand(N, -1).contiguous())
    return ExactPosterior(marginals, float(log_evidence), labellings[int(scores.argmax())])
