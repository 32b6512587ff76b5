r"""Compiled CPU kernels for long sequences: scaled forward-backward, Viterbi and FFBS.

Forward-backward uses Rabiner's scaling. With :math:`\tilde b_t(k) = \exp(\log b_t(k) - m_t)`,
:math:`m_t = \max_k \log b_t(k)` (so a product of many workers' response probabilities cannot
underflow), the scaled recursions are

.. math::

    \hat\alpha_1 \propto p_1 \tilde b_1, \quad
    \hat\alpha_t \propto (\hat\alpha_{t-1} A) \odot \tilde b_t, \quad
    c_t = \text{the normaliser of step } t, \qquad
    \hat\beta_T = 1, \quad \hat\beta_{t-1} = A (\tilde b_t \odot \hat\beta_t) / c_t,

giving :math:`\log p(F) = \sum_t (\log c_t + m_t)`, :math:`q_t = \hat\alpha_t \odot
\hat\beta_t` and :math:`\xi_t(i, j) = \hat\alpha_{t-1}(i) A_{ij} \tilde b_t(j)
\hat\beta_t(j) / c_t`. ``hat alpha_t`` is the filtering distribution :math:`P(y_t \mid F_{1:t})`.
A step whose normaliser underflows to zero reports a log-likelihood of ``-inf``; the
``"auto"`` backend then recomputes in log space.

Each kernel loops over the sequences given by ``offsets``; inputs are float64 numpy arrays.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from .result import ForwardBackward

__all__ = ["numba_forward", "numba_forward_backward", "numba_viterbi", "numba_backward_sample"]


@njit(cache=True)
def _forward(e, a, AT, offsets, filt, b, scale, loglik):  # pragma: no cover - compiled
    """Scaled forward pass; ``b`` receives the shifted emissions ``exp(e - max_k e)``;
    ``AT`` is the transposed transition matrix (its rows are contiguous)."""
    K = e.shape[1]
    prev = np.empty(K)
    for s in range(offsets.shape[0] - 1):
        total = 0.0
        start = offsets[s]
        for t in range(start, offsets[s + 1]):
            m = -np.inf
            for k in range(K):
                m = max(m, e[t, k])
            if m == -np.inf:
                total = -np.inf
                break
            c = 0.0
            for k in range(K):
                w = np.exp(e[t, k] - m)
                b[t, k] = w
                if t == start:
                    v = a[k]
                else:
                    v = 0.0
                    for i in range(K):
                        v += prev[i] * AT[k, i]
                v *= w
                filt[t, k] = v
                c += v
            scale[t] = c
            if c == 0.0:
                total = -np.inf
                break
            inv = 1.0 / c
            for k in range(K):
                prev[k] = filt[t, k] * inv
                filt[t, k] = prev[k]
            total += np.log(c) + m
        loglik[s] = total


@njit(cache=True)
def _backward(b, A, offsets, filt, scale, post, pair_seq, pair_step, mode):  # pragma: no cover
    K = b.shape[1]
    beta = np.empty(K)
    weighted = np.empty(K)
    for s in range(offsets.shape[0] - 1):
        start, end = offsets[s], offsets[s + 1]
        for k in range(K):
            beta[k] = 1.0
            post[end - 1, k] = filt[end - 1, k]
        for t in range(end - 1, start, -1):
            inv = 1.0 / scale[t]
            for j in range(K):
                weighted[j] = b[t, j] * beta[j] * inv
            if mode == 1:
                for i in range(K):
                    f = filt[t - 1, i]
                    for j in range(K):
                        pair_seq[s, i, j] += f * A[i, j] * weighted[j]
            elif mode == 2:
                for i in range(K):
                    f = filt[t - 1, i]
                    for j in range(K):
                        pair_step[t - s - 1, i, j] = f * A[i, j] * weighted[j]
            for i in range(K):
                v = 0.0
                for j in range(K):
                    v += A[i, j] * weighted[j]
                beta[i] = v
                post[t - 1, i] = filt[t - 1, i] * v


@njit(cache=True)
def _viterbi(e, a, L, offsets, path, score):  # pragma: no cover - compiled
    T, K = e.shape
    delta = np.empty(K)
    new = np.empty(K)
    back = np.zeros((T, K), dtype=np.int64)
    for s in range(offsets.shape[0] - 1):
        start, end = offsets[s], offsets[s + 1]
        for k in range(K):
            delta[k] = a[k] + e[start, k]
        for t in range(start + 1, end):
            for j in range(K):
                best, arg = -np.inf, 0
                for i in range(K):
                    v = delta[i] + L[i, j]
                    if v > best:
                        best, arg = v, i
                new[j] = best + e[t, j]
                back[t, j] = arg
            for k in range(K):
                delta[k] = new[k]
        best, arg = -np.inf, 0
        for k in range(K):
            if delta[k] > best:
                best, arg = delta[k], k
        score[s] = best
        path[end - 1] = arg
        for t in range(end - 1, start, -1):
            path[t - 1] = back[t, path[t]]


@njit(cache=True)
def _backward_sample(log_filt, L, offsets, u, out):  # pragma: no cover - compiled
    K = log_filt.shape[1]
    w = np.empty(K)
    for n in range(u.shape[0]):
        for s in range(offsets.shape[0] - 1):
            start, end = offsets[s], offsets[s + 1]
            for t in range(end - 1, start - 1, -1):
                m = -np.inf
                for k in range(K):
                    w[k] = log_filt[t, k] if t == end - 1 else log_filt[t, k] + L[k, out[n, t + 1]]
                    if w[k] > m:
                        m = w[k]
                total = 0.0
                for k in range(K):
                    w[k] = np.exp(w[k] - m)
                    total += w[k]
                target = u[n, t] * total
                z, acc = 0, 0.0
                for k in range(K):
                    acc += w[k]
                    if acc < target:
                        z += 1
                out[n, t] = min(z, K - 1)


def _np(x: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(x.detach().to(torch.float64).numpy())


def _run_forward(e, a, tr, lengths):
    en, T, K = _np(e), e.shape[0], e.shape[1]
    offsets = np.concatenate([[0], np.cumsum(lengths.numpy())]).astype(np.int64)
    A = np.exp(_np(tr))
    filt, b = np.zeros((T, K)), np.zeros((T, K))
    scale = np.ones(T)
    loglik = np.empty(len(offsets) - 1)
    _forward(en, np.exp(_np(a)), np.ascontiguousarray(A.T), offsets, filt, b, scale, loglik)
    return b, A, offsets, filt, scale, loglik


def numba_forward(e: torch.Tensor, a: torch.Tensor, tr: torch.Tensor, lengths: torch.Tensor):
    """``(filtered (T_total, K), log_likelihood (S,))`` from validated CPU inputs."""
    *_, filt, _, loglik = _run_forward(e, a, tr, lengths)
    return torch.from_numpy(filt).to(e.dtype), torch.from_numpy(loglik).to(e.dtype)


def numba_forward_backward(e, a, tr, lengths, pairwise: str | None) -> ForwardBackward:
    """Forward-backward (:func:`pyromodels.crowd.hmm.inference.forward_backward`) on validated
    CPU inputs."""
    b, A, offsets, filt, scale, loglik = _run_forward(e, a, tr, lengths)
    T, K = b.shape
    S = len(offsets) - 1
    mode = {None: 0, "sum": 1, "step": 2}[pairwise]
    post = np.zeros((T, K))
    pair_seq = np.zeros((S if mode == 1 else 0, K, K))
    pair_step = np.zeros((T - S if mode == 2 else 0, K, K))
    if np.all(np.isfinite(loglik)):
        _backward(b, A, offsets, filt, scale, post, pair_seq, pair_step, mode)
    pair = {0: None, 1: pair_seq, 2: pair_step}[mode]
    return ForwardBackward(
        torch.from_numpy(loglik).to(e.dtype),
        torch.from_numpy(post).to(e.dtype),
        None if pair is None else torch.from_numpy(pair).to(e.dtype),
        pairwise,
    )


def numba_viterbi(e, a, tr, lengths) -> tuple[torch.Tensor, torch.Tensor]:
    """``(path (T_total,), best log joint (S,))`` from validated CPU inputs."""
    offsets = np.concatenate([[0], np.cumsum(lengths.numpy())]).astype(np.int64)
    path = np.zeros(e.shape[0], dtype=np.int64)
    score = np.empty(len(offsets) - 1)
    _viterbi(_np(e), _np(a), _np(tr), offsets, path, score)
    return torch.from_numpy(path), torch.from_numpy(score).to(e.dtype)


def numba_backward_sample(log_filtered, tr, lengths, uniforms) -> torch.Tensor:
    """Backward sampling of FFBS by inverse CDF with the given uniforms ``(n, T_total)``."""
    offsets = np.concatenate([[0], np.cumsum(lengths.numpy())]).astype(np.int64)
    out = np.zeros(tuple(uniforms.shape), dtype=np.int64)
    _backward_sample(_np(log_filtered), _np(tr), offsets, _np(uniforms), out)
    return torch.from_numpy(out)
