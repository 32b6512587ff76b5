r"""From data to a clustering: our DP-mixture samplers against scikit-learn's variational
Dirichlet-process mixture, timed to the same adjusted Rand index.

Data: :func:`benchmarks.bench_bnp_dp.simulate_clusters` with ``K = 8`` clusters (means with
sd about 10, within-cluster sd about 1), at ``N = 10,000``, ``d = 10`` (scikit-learn converges)
and ``N = 100,000``, ``d = 2`` (the clusters overlap; scikit-learn stops at ``max_iter = 100``
unconverged); quick: ``N = 1,000``, ``d = 10`` and ``N = 2,000``, ``d = 2``. Our samplers get
the base measure the data were drawn from and ``alpha = 1``.

* ``bnp.dp_fit_to_ari`` (seconds per call): from the ``(N, d)`` points in memory to labels.
  Peer ``sklearn.BayesianGaussianMixture``:
  ``BayesianGaussianMixture(n_components=20, weight_concentration_prior_type=
  "dirichlet_process", max_iter=100, random_state=0).fit(x).predict(x)`` (its default k-means
  start, full covariances, tolerance ``1e-3``). Ours, ``sampler=alg3,start=one``: one
  cluster, then sweeps of :func:`pyromodels.bnp.sweep` (``algorithm="alg3"``, numba);
  ``sampler=blocked,start=random``: :func:`pyromodels.bnp.blocked_init` with labels uniform
  over 20 of ``T = 50`` sticks, then blocked sweeps, float64. A one-cluster start does not
  suit the blocked sampler: an empty stick's parameters are a prior draw, which almost never
  lands near a cluster, so it stays at one cluster for hundreds of sweeps.
  ``start=sequential`` (``sampler=alg3``, ``alg2``, and ``blocked`` with ``T = 50``):
  :func:`pyromodels.bnp.sequential_init`, one pass that seats the points in order, each drawn
  from its collapsed conditional given the points before it (the blocked sampler starts
  from its labels), then sweeps. Every variant's sweeps come from the iterators that check
  the inputs once (:func:`pyromodels.bnp.chain_sweeps`, :func:`pyromodels.bnp.blocked_chain`),
  as ``DPMixture.fit(method="gibbs")`` runs them.

  How many sweeps: the check fits the peer once and records its ARI against the simulated
  labels (``peer_ari``); it then runs our chain from the case's seed, computing the ARI at the
  start and after every sweep, until the ARI reaches ``peer_ari`` or ``cap`` sweeps (0 sweeps:
  the start alone reaches it). A timed call runs the same chain (same seed, so the same
  labels) for exactly that many sweeps, with no ARI computed inside the timing: the figure
  is the time ours needs to reach the peer's ARI, against the time the peer needs to reach
  it. The check ``ari`` passes when ours reaches it
  (``max_abs_diff`` is the shortfall ``max(peer_ari - ours, 0)``) and records both ARIs, the
  sweeps, the cap and the peer's ``converged_`` and ``n_iter_``; the check ``timed_labels``
  passes when the timed function gives exactly the labels of the chain that counted the
  sweeps (so the figure is the time to that ARI).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import BayesianGaussianMixture

from pyromodels.bnp import blocked_chain, blocked_init, chain_sweeps, init_state, sequential_init
from pyromodels.core.seeding import derive_seed, make_generator

from .bench_bnp_dp import ALPHA, simulate_clusters
from .bench_reference_mixture import _lazy
from .harness import Case, agreement

__all__ = ["cases", "peer_fit", "our_fit", "sweeps_to_ari", "VARIANTS"]

SEED = 20261126
K = 8
FULL_SIZES = ((10_000, 10), (100_000, 2))  # N, d
QUICK_SIZES = ((1_000, 10), (2_000, 2))
#: the peer's settings (its components bound the number of clusters, as our truncation does)
PEER = {"n_components": 20, "weight_concentration_prior_type": "dirichlet_process",
        "max_iter": 100, "random_state": 0}
#: our variants: (sampler, start, truncation of the blocked sampler or None)
VARIANTS = (("alg3", "one", None), ("blocked", "random", 50), ("alg3", "sequential", None),
            ("alg2", "sequential", None), ("blocked", "sequential", 50))
RANDOM_START_COMPONENTS = 20
#: sweep caps, by quick
CAP = {False: 300, True: 100}
MAX_SWEEPS = max(CAP.values())


@functools.cache
def _data(N: int, d: int):
    return simulate_clusters(N, d, K, derive_seed(SEED, "clusters", N, d))


def peer_fit(x: np.ndarray) -> tuple[np.ndarray, BayesianGaussianMixture]:
    """scikit-learn's fit and labels on ``x`` with :data:`PEER` (its convergence warning
    silenced): ``(labels, fitted model)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = BayesianGaussianMixture(**PEER).fit(x)
    return model.predict(x), model


class _Chain:
    """A chain of one variant from its start; ``labels()`` after any number of sweeps. The
    sweeps come from the checked-once iterators (:func:`pyromodels.bnp.chain_sweeps`,
    :func:`pyromodels.bnp.blocked_chain`), as a fit runs them."""

    def __init__(self, z, prior, sampler: str, start: str, truncation, seed: int):
        self.sampler = sampler
        gen = make_generator(seed)
        if start == "sequential":
            self.state = sequential_init(z, prior, ALPHA, gen,
                                         "alg3" if sampler == "blocked" else sampler)
            labels = self.state.assignments
        else:
            labels = torch.zeros(z.shape[0], dtype=torch.int64)
        if sampler == "blocked":
            if start == "random":
                labels = RANDOM_START_COMPONENTS
            self.state = blocked_init(z, labels, prior, ALPHA, truncation, gen)
            self._steps = blocked_chain(z, self.state, prior, gen, MAX_SWEEPS)
        else:
            if start == "one":
                self.state = init_state(z, labels, prior, gen, algorithm=sampler)
            self._steps = chain_sweeps(z, self.state, prior, ALPHA, gen, MAX_SWEEPS, sampler)

    def step(self) -> None:
        if self.sampler == "blocked":
            self.state = next(self._steps)
        else:
            next(self._steps)

    def labels(self) -> torch.Tensor:
        return self.state.labels if self.sampler == "blocked" else self.state.assignments


def _seed(size, variant) -> int:
    return derive_seed(SEED, "chain", *size, *variant[:2]) % 2**62


def our_fit(z, prior, variant, sweeps: int, seed: int) -> torch.Tensor:
    """Data in, labels out: the variant's start and ``sweeps`` sweeps (what a call times)."""
    chain = _Chain(z, prior, *variant, seed)
    for _ in range(sweeps):
        chain.step()
    return chain.labels()


@functools.cache
def _peer_result(N: int, d: int) -> tuple[float, bool, int]:
    z, truth, _ = _data(N, d)
    labels, model = peer_fit(z.numpy())
    return adjusted_rand_score(truth.numpy(), labels), bool(model.converged_), int(model.n_iter_)


def sweeps_to_ari(z, truth, prior, variant, seed: int, target: float, cap: int):
    """``(sweeps, ari, labels)``: the first sweep count whose labels reach ARI ``>= target``
    against ``truth``, or the cap; the ARI and the labels there."""
    chain = _Chain(z, prior, *variant, seed)
    truth = truth.numpy()
    sweeps = 0
    while True:
        labels = chain.labels().clone()
        ari = adjusted_rand_score(truth, labels.numpy())
        if ari >= target or sweeps == cap:
            return sweeps, ari, labels
        chain.step()
        sweeps += 1


@functools.cache
def _sweeps(N: int, d: int, variant, cap: int) -> tuple[int, float, torch.Tensor]:
    z, truth, prior = _data(N, d)
    return sweeps_to_ari(z, truth, prior, variant, _seed((N, d), variant),
                         _peer_result(N, d)[0], cap)


def _ours(size, variant, cap):
    def factory():
        z, _, prior = _data(*size)
        sweeps = _sweeps(*size, variant, cap)[0]
        return lambda: our_fit(z, prior, variant, sweeps, _seed(size, variant))

    return _lazy(factory)


def _peer(size):
    def factory():
        x = _data(*size)[0].numpy()
        return lambda: peer_fit(x)

    return _lazy(factory)


def _check(size, variant, cap):
    def check():
        z, truth, prior = _data(*size)
        peer_ari, converged, n_iter = _peer_result(*size)
        sweeps, ours_ari, searched = _sweeps(*size, variant, cap)
        rec = agreement([max(peer_ari - ours_ari, 0.0)], [0.0], 0.0,
                        "the peer's ARI against the simulated labels (shortfall of ours)")
        rec.update({"ours_ari": ours_ari, "peer_ari": peer_ari, "sweeps": sweeps, "cap": cap,
                    "reached": bool(ours_ari >= peer_ari), "peer_converged": converged,
                    "peer_n_iter": n_iter})
        # the timed function must give the labels the search found (same seed, same chain)
        timed = our_fit(z, prior, variant, sweeps, _seed(size, variant))
        differ = (timed != searched).to(torch.float64)
        same = agreement(differ, torch.zeros_like(differ), 0.0,
                         "the labels of the chain that counted the sweeps (1 = a label differs)")
        return {"ari": rec, "timed_labels": same}

    return check


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """One case per size and variant, each with the scikit-learn peer; CPU runs only (the
    compiled sweeps of Algorithm 3 are CPU code)."""
    if device is not None and device.type != "cpu":
        return []
    cap = CAP[quick]
    peer = "sklearn.BayesianGaussianMixture"
    out = []
    for size in QUICK_SIZES if quick else FULL_SIZES:
        n, d = size
        for variant in VARIANTS:
            sampler, start, truncation = variant
            params = {"N": n, "d": d, "K": K, "sampler": sampler, "start": start}
            if truncation is not None:
                params["T"] = truncation
            params["dtype"] = "float64"
            out.append(Case("bnp.dp_fit_to_ari", params, ours=_ours(size, variant, cap),
                            peers={peer: _peer(size)}, check=_check(size, variant, cap),
                            warmup=1, repeats=2 if quick else 3))
    return out
