r"""HMM forward-backward and Baum-Welch over crowd labels against hmmlearn.

Data: :func:`pyromodels.data.simulate_crowd.simulate_sequential_annotations` with ``K = 10``
states and ONE worker who labels every position, float64, at the true parameters. Shapes:
one sequence of ``T = 100,000`` steps and ``10,000`` sequences of ``40`` steps (quick: one of
2,000 and 50 of 40).

* ``crowd.hmm_forward_backward`` (seconds per call): log-likelihood and posterior marginals.
  Ours: :func:`pyromodels.crowd.hmm.inference.forward_backward` with ``pairwise=None`` on the ``(T, K)``
  log-emissions (backends ``numba`` and ``torch`` on the CPU, ``torch`` on CUDA). Peers:
  hmmlearn 0.3's ``score_samples`` with ``implementation="scaling"`` and ``"log"`` (its
  default) on the SAME ``(T, K)`` log-emissions: a ``BaseHMM`` subclass whose
  ``_compute_log_likelihood`` (hmmlearn's hook for emission models) returns the rows of the
  precomputed matrix, so neither side pays for emissions. Checks against both peers: the
  marginals to 1e-8 and the log-likelihood to 1e-8 relative (see ``LOGLIK_TOLERANCE``).
* ``crowd.hmm_baum_welch_step`` (seconds per call, one iteration): ours
  :func:`pyromodels.crowd.hmm.baum_welch_step` (E-step with summed pairwise marginals, then
  the M-step of the initial law, the transition and the worker's confusion matrix) against
  ``hmmlearn.hmm.CategoricalHMM(n_iter=1, init_params="", params="ste").fit`` on the same
  worker's labels from the same parameters (hmmlearn's priors of 1 are maximum likelihood,
  as ours without pseudo-counts). Checks: the three updated parameters to 1e-8.
* CUDA only: forward-backward on ``10,000`` sequences of ``1,000`` steps (25 copies of the
  ``10,000 x 40`` labels, cut into sequences of 1,000), no peer, checked against the numba
  backend on the CPU.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch
from hmmlearn.base import BaseHMM
from hmmlearn.hmm import CategoricalHMM

from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.hmm import baum_welch_step, forward_backward
from pyromodels.data.simulate_crowd import simulate_sequential_annotations

from .bench_crowd_ds import tile_table
from .bench_reference_mixture import _lazy
from .harness import Case, agreement

__all__ = ["cases", "GivenEmissionsHMM"]

SEED = 20240918
K = 10
MANY_LENGTH = 40
FULL_SHAPES = ((1, 100_000), (10_000, MANY_LENGTH))  # (sequences, length)
QUICK_SHAPES = ((1, 2_000), (50, MANY_LENGTH))
#: CUDA only: (sequences, length, copies of the labels of sequences of MANY_LENGTH)
CUDA_SHAPE = (10_000, 1_000, 25)
QUICK_CUDA_SHAPE = (100, 100, 5)
#: posterior marginals lie in [0, 1]; float64 recursions agree to ~1e-11
MARGINAL_TOLERANCE = 1e-8
#: relative: a log-likelihood of 1e5 terms of a few nats carries ~1e-11 relative round-off
LOGLIK_TOLERANCE = 1e-8
#: updated probabilities (transition, confusion, initial)
PARAM_TOLERANCE = 1e-8
PARAM_NAMES = ("initial", "transition", "confusion")


class GivenEmissionsHMM(BaseHMM):
    """hmmlearn's forward-backward on given emission log-likelihoods.

    Set ``frame_log_likelihood`` to the ``(T, K)`` matrix and pass the positions
    ``np.arange(T)[:, None]`` as ``X``: each sequence then reads its own rows (a view).
    """

    frame_log_likelihood: np.ndarray

    def _compute_log_likelihood(self, X):
        return self.frame_log_likelihood[X[0, 0]: X[-1, 0] + 1]


@dataclass(frozen=True)
class Problem:
    """One worker's labels of items in sequences, the true parameters and the emissions."""

    table: object  # AnnotationTable on the device (items = positions in order)
    lengths: torch.Tensor  # (S,) on the device
    params: dict  # true initial (K,), transition (K, K), confusion (1, K, K) on the device
    log_em: torch.Tensor  # (T, K) on the device
    labels: np.ndarray  # (T, 1) the worker's label at each position, for CategoricalHMM
    lengths_np: np.ndarray  # (S,)


@functools.cache
def _simulated(sequences: int, length: int):
    return simulate_sequential_annotations([length] * sequences, 1, K, seed=SEED)


@functools.cache
def _problem(sequences: int, length: int, copies: int, device: str) -> Problem:
    """``sequences x length`` steps. With ``copies > 1`` (the CUDA case) the labels of
    ``sequences * length / (copies * MANY_LENGTH)`` simulated sequences of ``MANY_LENGTH``
    steps are repeated ``copies`` times and cut into sequences of ``length``."""
    if copies == 1:
        seqs, truth = _simulated(sequences, length)
        table = seqs.data
    else:
        seqs, truth = _simulated(sequences * length // (copies * MANY_LENGTH), MANY_LENGTH)
        table, _ = tile_table(seqs.data, truth["z"], copies)
    labels = np.empty((table.num_items, 1), dtype=np.int64)
    labels[table.item_idx.numpy(), 0] = table.label_idx.numpy()
    table = table.to(device)
    params = {k: truth[k].to(device) for k in PARAM_NAMES}
    log_em = log_emissions(table, params["confusion"].log())
    lengths = torch.full((sequences,), length, dtype=torch.long, device=device)
    return Problem(table, lengths, params, log_em, labels, lengths.cpu().numpy())


def _log_params(pb: Problem):
    return pb.params["initial"].log(), pb.params["transition"].log()


# ------------------------------------------------------------------------ forward-backward
def _ours_fb(shape, device, backend):
    def factory():
        pb = _problem(*shape, device)
        a, tr = _log_params(pb)
        return lambda: forward_backward(pb.log_em, a, tr, pb.lengths, pairwise=None,
                                        backend=backend)

    return _lazy(factory)


def _hmmlearn_given(pb: Problem, implementation: str) -> GivenEmissionsHMM:
    hmm = GivenEmissionsHMM(n_components=K, implementation=implementation)
    hmm.startprob_ = pb.params["initial"].cpu().numpy()
    hmm.transmat_ = pb.params["transition"].cpu().numpy()
    hmm.frame_log_likelihood = np.ascontiguousarray(pb.log_em.cpu().numpy())
    return hmm


def _peer_fb(shape, implementation):
    def factory():
        pb = _problem(*shape, "cpu")
        hmm = _hmmlearn_given(pb, implementation)
        positions = np.arange(pb.labels.shape[0])[:, None]
        return lambda: hmm.score_samples(positions, pb.lengths_np)

    return _lazy(factory)


@functools.cache
def _reference_fb(shape, implementation):
    pb = _problem(*shape, "cpu")
    positions = np.arange(pb.labels.shape[0])[:, None]
    return _hmmlearn_given(pb, implementation).score_samples(positions, pb.lengths_np)


def _loglik_record(ours: float, reference: float, against: str) -> dict:
    """Relative agreement of two log-likelihoods (``max_abs_diff`` is ``|a - b| / |b|``)."""
    scale = max(abs(reference), 1.0)
    return agreement([ours / scale], [reference / scale], LOGLIK_TOLERANCE, against)


def _fb_check(shape, device, backend):
    def check():
        pb = _problem(*shape, device)
        a, tr = _log_params(pb)
        fb = forward_backward(pb.log_em, a, tr, pb.lengths, pairwise=None, backend=backend)
        out = {}
        for impl in ("scaling", "log"):
            ll, post = _reference_fb(shape, impl)
            against = f"hmmlearn score_samples (implementation={impl!r})"
            out[f"log_likelihood_{impl}"] = _loglik_record(float(fb.total_log_likelihood), ll,
                                                           against)
            out[f"posterior_{impl}"] = agreement(fb.posterior, post, MARGINAL_TOLERANCE, against)
        return out

    return check


def _cuda_fb_check(shape, device):
    def check():
        big, cpu = _problem(*shape, device), _problem(*shape, "cpu")
        fb = forward_backward(big.log_em, *_log_params(big), big.lengths, pairwise=None,
                              backend="torch")
        ref = forward_backward(cpu.log_em, *_log_params(cpu), cpu.lengths, pairwise=None,
                               backend="numba")
        against = "forward_backward(backend='numba') on the CPU"
        scale = ref.log_likelihood.abs().clamp_min(1.0)  # relative, as _loglik_record
        return {"log_likelihood": agreement(fb.log_likelihood.cpu() / scale,
                                            ref.log_likelihood / scale, LOGLIK_TOLERANCE,
                                            against),
                "posterior": agreement(fb.posterior, ref.posterior, MARGINAL_TOLERANCE, against)}

    return check


# ------------------------------------------------------------------------------ Baum-Welch
def _ours_bw(shape, device, backend):
    def factory():
        pb = _problem(*shape, device)
        return lambda: baum_welch_step(pb.table, pb.lengths, pb.params, backend=backend)

    return _lazy(factory)


def _fit_one_iteration(hmm: CategoricalHMM, pb: Problem) -> CategoricalHMM:
    hmm.startprob_ = pb.params["initial"].cpu().numpy().copy()
    hmm.transmat_ = pb.params["transition"].cpu().numpy().copy()
    hmm.emissionprob_ = pb.params["confusion"][0].cpu().numpy().copy()
    return hmm.fit(pb.labels, pb.lengths_np)


def _categorical(implementation: str) -> CategoricalHMM:
    return CategoricalHMM(n_components=K, n_features=K, n_iter=1, tol=-math.inf, init_params="",
                          params="ste", implementation=implementation)


def _peer_bw(shape, implementation):
    def factory():
        pb = _problem(*shape, "cpu")
        hmm = _categorical(implementation)
        return lambda: _fit_one_iteration(hmm, pb)

    return _lazy(factory)


def _bw_check(shape, device, backend):
    def check():
        pb = _problem(*shape, device)
        new, _ = baum_welch_step(pb.table, pb.lengths, pb.params, backend=backend)
        out = {}
        for impl in ("scaling", "log"):
            hmm = _fit_one_iteration(_categorical(impl), _problem(*shape, "cpu"))
            theirs = {"initial": hmm.startprob_, "transition": hmm.transmat_,
                      "confusion": hmm.emissionprob_[None]}
            against = f"hmmlearn CategoricalHMM.fit(n_iter=1, implementation={impl!r})"
            for name in PARAM_NAMES:
                out[f"{name}_{impl}"] = agreement(new[name], theirs[name], PARAM_TOLERANCE, against)
        return out

    return check


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The HMM cases; the ``10,000 x 1,000`` case only when ``device`` is CUDA."""
    dev = torch.device("cpu") if device is None else device
    dv = str(dev)
    backends = ("torch",) if dev.type == "cuda" else ("numba", "torch")
    out = []
    for sequences, length in QUICK_SHAPES if quick else FULL_SHAPES:
        shape = (sequences, length, 1)
        base = {"sequences": sequences, "length": length, "K": K}
        for backend in backends:
            slow = backend == "torch" and dev.type == "cpu"  # O(T K^3) scan: seconds per call
            out.append(Case(
                "crowd.hmm_forward_backward", {**base, "backend": backend, "dtype": "float64"},
                ours=_ours_fb(shape, dv, backend),
                peers={f"hmmlearn.score_samples[{impl}]": _peer_fb(shape, impl)
                       for impl in ("scaling", "log")},
                check=_fb_check(shape, dv, backend), warmup=1,
                repeats=2 if quick or slow else 3 if sequences > 1 else 5,
            ))
        bw_backend = backends[0]
        out.append(Case(
            "crowd.hmm_baum_welch_step", {**base, "backend": bw_backend, "dtype": "float64"},
            ours=_ours_bw(shape, dv, bw_backend),
            peers={f"hmmlearn.CategoricalHMM.fit[{impl}]": _peer_bw(shape, impl)
                   for impl in ("scaling", "log")},
            check=_bw_check(shape, dv, bw_backend), warmup=1, repeats=2 if quick else 3,
        ))
    if dev.type == "cuda":
        shape = QUICK_CUDA_SHAPE if quick else CUDA_SHAPE
        out.append(Case(
            "crowd.hmm_forward_backward",
            {"sequences": shape[0], "length": shape[1], "K": K, "backend": "torch",
             "dtype": "float64"},
            ours=_ours_fb(shape, dv, "torch"), check=_cuda_fb_check(shape, dv),
            warmup=2, repeats=2 if quick else 5,
        ))
    return out
