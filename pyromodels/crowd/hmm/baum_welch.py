r"""Baum-Welch EM for crowd labels on sequences (the ensemble paper's Alg. 1, corrected).

E-step: forward-backward with the emissions :math:`\log b_t(k) = \sum_{m \text{ responding}}
\log \Gamma_m[k, f_{m,t}]` gives :math:`q_t(k)` and :math:`\xi_t(i, j) = P(y_{t-1} = i, y_t = j
\mid F)`. M-step (MAP with Dirichlet pseudo-counts :math:`c`; zero pseudo-counts give ML):

.. math::

    A_{ij} \propto c^A_{ij} + \sum_s \sum_{t \ge 2} \xi_{s,t}(i, j), \qquad
    \Gamma_m[k, j] \propto c^\Gamma_{kj} + \sum_{t:\, f_{m,t} = j} q_t(k), \qquad
    p_1(k) \propto c^0_k + \sum_s q_{s,1}(k) \;\; (\text{initial} = \text{"learned"}).

``initial="fixed"`` keeps :math:`p_1` (uniform unless given) and ``"stationary"`` sets it to the
stationary law of the new :math:`A` (the paper's moment-matching assumption :math:`y_0 \sim
\pi`; then the step is no longer an exact EM step and the likelihood need not increase).

**Orientation.** The paper writes :math:`T(k, k') = P(y_n = k \mid y_{n-1} = k')` (columns =
previous state) but its update (26), :math:`[\hat T]_{k'k} = \sum_n \xi_n(k', k) / \sum_n
q_{nk'}`, estimates :math:`P(y_{n+1} = k \mid y_n = k')` and stores it at :math:`(k', k)`: the
transpose. ``paper_literal=True`` reproduces (26) as printed read in the paper's convention, so
the returned ``transition`` (rows = previous state here) is the transpose of the correct
update: on a deterministic cycle it runs the cycle backwards, and its rows need not sum to one.
"""

from __future__ import annotations

import torch

from ...checks import check_in
from ..emissions import confusion_counts, log_emissions, normalize_rows
from ..majority import majority_vote
from .inference import ForwardBackward, forward_backward
from .kernels.inputs import sequence_bounds
from .params import INITIAL_MODES, check_params, stationary_distribution

__all__ = [
    "e_step",
    "m_step",
    "baum_welch_step",
    "count_transitions",
    "majority_vote_params",
]


def e_step(table, lengths, params: dict, *, pairwise: str | None = "sum", backend: str = "auto",
           paper_literal: bool = False) -> ForwardBackward:
    """Forward-backward for crowd labels under ``params`` (validated first).

    Args:
        table: :class:`~pyromodels.data.AnnotationTable` whose items are the positions.
        lengths: ``(S,)`` sequence lengths summing to ``table.num_items``.
        params: ``{"initial", "transition", "confusion"}`` probabilities.
        pairwise, backend: as :func:`~pyromodels.crowd.hmm.inference.forward_backward`.
        paper_literal: accept a column-stochastic ``transition`` (the literal update's output).
    """
    params = check_params(params, table.num_classes, table.num_workers,
                          row_stochastic_transition=not paper_literal)
    log_em = log_emissions(table, params["confusion"].log())
    return forward_backward(log_em, params["initial"].log(), params["transition"].log(), lengths,
                            pairwise=pairwise, backend=backend)


def count_transitions(labels: torch.Tensor, starts: torch.Tensor, num_classes: int) -> torch.Tensor:
    """``(K, K)`` counts of ``(labels[t-1], labels[t])`` over the steps within sequences."""
    K = num_classes
    inside = ~starts[1:]
    flat = labels[:-1][inside] * K + labels[1:][inside]
    counts = torch.bincount(flat, minlength=K * K).reshape(K, K)
    return counts.to(torch.float64)


def _pseudo(pseudo_counts: dict | None, key: str):
    value = 0.0 if pseudo_counts is None else pseudo_counts.get(key, 0.0)
    if float(torch.as_tensor(value).min()) < 0:
        raise ValueError(f"pseudo_counts[{key!r}] must be >= 0 (a Dirichlet concentration >= 1)")
    return value


def m_step(table, lengths, posterior: torch.Tensor, pairwise_sum: torch.Tensor, *,
           initial: str = "learned", initial_probs=None, paper_literal: bool = False,
           pseudo_counts: dict | None = None) -> dict:
    """Closed-form M-step from posteriors ``(T_total, K)`` and summed pairwise marginals ``(K, K)``.

    Args:
        table, lengths: the data.
        posterior: ``q``; for hard labels, their one-hot encoding.
        pairwise_sum: ``sum_s sum_t xi_{s,t}`` ``(K, K)`` (previous, next).
        initial: ``"learned"``, ``"fixed"`` or ``"stationary"``.
        initial_probs: the fixed law of the first label (``"fixed"``; default uniform).
        paper_literal: return the transpose of the transition update (eq. 26 as printed).
        pseudo_counts: optional ``{"initial", "transition", "confusion"}`` non-negative
            pseudo-counts (Dirichlet concentration minus one), scalars or tensors shaped
            ``(K,)``, ``(K, K)`` and ``(K, K)``.

    Returns:
        ``{"initial", "transition", "confusion"}``.
    """
    check_in(initial, "initial", INITIAL_MODES)
    if paper_literal and initial == "stationary":
        raise ValueError("paper_literal=True returns a column-stochastic transition, which has no "
                         "stationary law as a row-stochastic chain; use initial='learned' or 'fixed'")
    K = posterior.shape[-1]
    confusion = normalize_rows(confusion_counts(table, posterior) + _pseudo(pseudo_counts, "confusion"))
    rows = normalize_rows(pairwise_sum + _pseudo(pseudo_counts, "transition"))
    transition = rows.T.contiguous() if paper_literal else rows
    if initial == "learned":
        starts = sequence_bounds(lengths)[1]
        init = normalize_rows(posterior[starts].sum(0) + _pseudo(pseudo_counts, "initial"))
    elif initial == "fixed":
        init = (torch.full((K,), 1.0 / K, dtype=posterior.dtype, device=posterior.device)
                if initial_probs is None else initial_probs)
    else:
        init = stationary_distribution(transition)
    return {"initial": init, "transition": transition, "confusion": confusion}


def baum_welch_step(table, lengths, params: dict, *, initial: str = "learned", initial_probs=None,
                    paper_literal: bool = False, pseudo_counts: dict | None = None,
                    backend: str = "auto") -> tuple[dict, torch.Tensor]:
    """One EM iteration.

    Returns:
        ``(new_params, log_likelihood)`` where the log-likelihood (summed over sequences) is
        that of the INPUT ``params``.

    Example:
        >>> from pyromodels.data.simulate_crowd import simulate_sequential_annotations
        >>> seqs, truth = simulate_sequential_annotations([5, 6], 3, 2, seed=0)
        >>> start = {k: truth[k] for k in ("initial", "transition", "confusion")}
        >>> new, ll = baum_welch_step(seqs.data, seqs.lengths, start)
        >>> new["transition"].shape
        torch.Size([2, 2])
    """
    fb = e_step(table, lengths, params, pairwise="sum", backend=backend, paper_literal=paper_literal)
    new = m_step(table, lengths, fb.posterior, fb.pairwise.sum(0), initial=initial,
                 initial_probs=initial_probs, paper_literal=paper_literal, pseudo_counts=pseudo_counts)
    return new, fb.total_log_likelihood


def majority_vote_params(table, lengths, *, initial: str = "learned", initial_probs=None,
                         pseudo_counts: dict | None = None, ties: str = "random", seed: int = 0) -> dict:
    """A starting point: one M-step on the majority-vote labels treated as the truth.

    Confusion rows are the empirical answer frequencies against the majority labels, the
    transition rows the frequencies of consecutive majority labels.
    """
    labels = majority_vote(table, ties=ties, seed=seed).to(lengths.device)
    K = table.num_classes
    q = torch.nn.functional.one_hot(labels, K).to(torch.float64)
    pairs = count_transitions(labels, sequence_bounds(lengths)[1], K)
    return m_step(table, lengths, q, pairs, initial=initial, initial_probs=initial_probs,
                  pseudo_counts=pseudo_counts)
