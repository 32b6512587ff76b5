r"""Exact HMM quantities by enumerating every state path: a reference for tiny problems.

For each sequence every one of the :math:`K^{T_s}` paths is scored with

.. math:: \log p(y, F) = \log p_1(y_1) + \sum_{t \ge 2} \log A_{y_{t-1} y_t} + \sum_t \log b_t(y_t),

and the log-likelihood, the marginals, the pairwise marginals and the best path follow by
summation and maximisation over the list of paths. Nothing here shares code with the
recursions, which is the point: the tests compare the recursions with it.
"""

from __future__ import annotations

import itertools

import torch

from .kernels.inputs import check_log_inputs

__all__ = ["enumerate_paths", "brute_force"]

#: refuse problems with more paths than this in one sequence
MAX_PATHS = 200_000


def enumerate_paths(log_emissions, log_initial, log_transition, offset: int, length: int):
    """``(paths (P, length) long, log joint (P,))`` of one sequence: positions ``offset ..
    offset + length - 1`` of the (validated) inputs."""
    K = log_emissions.shape[1]
    if K**length > MAX_PATHS:
        raise ValueError(f"a sequence of length {length} with K={K} has too many paths to enumerate")
    paths = torch.tensor(list(itertools.product(range(K), repeat=length)), dtype=torch.long)
    paths = paths.reshape(-1, length)
    e = log_emissions[offset : offset + length]
    score = log_initial[paths[:, 0]] + e[torch.arange(length), paths].sum(-1)
    if length > 1:
        score = score + log_transition[paths[:, :-1], paths[:, 1:]].sum(-1)
    return paths, score


def brute_force(log_emissions, log_initial, log_transition, lengths=None) -> dict:
    """Exact results by enumeration (``K ** length`` paths per sequence).

    Returns:
        ``{"log_likelihood": (S,), "posterior": (T_total, K), "pairwise": (T_total - S, K, K),
        "viterbi": (T_total,), "viterbi_score": (S,)}`` with the pairwise marginals oriented
        (previous, next), one per step after the first of each sequence.
    """
    e, a, tr, lengths = check_log_inputs(log_emissions, log_initial, log_transition, lengths)
    K = e.shape[1]
    loglik, post, pair, best, best_score = [], [], [], [], []
    offset = 0
    for length in lengths.tolist():
        paths, score = enumerate_paths(e, a, tr, offset, length)
        z = torch.logsumexp(score, 0)
        w = torch.exp(score - z)
        loglik.append(z)
        onehot = torch.nn.functional.one_hot(paths, K).to(e.dtype)  # (P, T, K)
        post.append(torch.einsum("p,ptk->tk", w, onehot))
        if length > 1:
            pair.append(torch.einsum("p,pti,ptj->tij", w, onehot[:, :-1], onehot[:, 1:]))
        i = int(torch.argmax(score))
        best.append(paths[i])
        best_score.append(score[i])
        offset += length
    return {
        "log_likelihood": torch.stack(loglik),
        "posterior": torch.cat(post),
        "pairwise": torch.cat(pair) if pair else e.new_zeros(0, K, K),
        "viterbi": torch.cat(best),
        "viterbi_score": torch.stack(best_score),
    }
