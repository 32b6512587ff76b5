"""The reference Gaussian mixture's fast paths against scikit-learn and SciPy.

Cases, at ``N`` in {10,000, 100,000} points, ``d`` in {2, 10}, ``K = 5``, float64:

* ``mixture.em_iteration``: one MAP-EM iteration (:func:`pyromodels.mixture.em.em_step`)
  against one EM iteration of ``sklearn.mixture.GaussianMixture`` (maximum likelihood,
  ``covariance_type="full"``) and one variational iteration of
  ``sklearn.mixture.BayesianGaussianMixture`` (finite Dirichlet weights, the same prior).
  Each timed call does the same work on every side: ``iterations`` E+M iterations followed by one
  closing E-step and the labels. The peers run ``fit`` with ``warm_start=True``,
  ``max_iter=iterations`` and ``tol=0`` (never stops early); their initialisation happens in the
  untimed warm-up call, so a timed ``fit`` is input validation, ``iterations`` E+M iterations
  (with the lower bound each iteration) and the closing E-step. Ours runs ``iterations`` calls
  of ``em_step`` and then ``responsibilities(...).argmax(-1)``. Figure = seconds per call /
  ``iterations``. Agreement: our E-step responsibilities at fixed parameters against
  ``scipy.stats.multivariate_normal`` and ``scipy.special.softmax`` (to 1e-10).
* ``mixture.gibbs_sweep``: one blocked Gibbs sweep (:func:`pyromodels.mixture.gibbs.sweep`),
  ours only (no peer samples this model). The chain carries on between calls.
* ``mixture.component_log_density``: :func:`pyromodels.mixture.densities.component_log_density`
  for all ``N x K`` pairs against ``scipy.stats.multivariate_normal.logpdf`` looped over the
  components (covariances computed beforehand, outside the timing). Agreement to 1e-8 nats.
* ``mixture.quickstart_gibbs`` (seconds per sweep): the README's quick start, the Gibbs fit of
  :class:`~pyromodels.mixture.GaussianMixtureModel` on 200 points in 2-D (two chains of
  ``QUICKSTART_SWEEPS`` sweeps each; ``--quick``: ``QUICK_QUICKSTART_SWEEPS``), run with the
  caller's thread count at torch's start-up default (:data:`TORCH_DEFAULT_THREADS`, the
  harness's own limit lifted). Ours lets the engine choose its threads for the problem's
  size (:mod:`pyromodels.core.threads`: one thread here); the peer ``default_threads``
  passes ``num_threads=TORCH_DEFAULT_THREADS``, how every fit ran before the engines chose.
  Same seed on both sides, so the check compares the draws (equal up to the last bits of
  sums taken on another thread count).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import softmax
from scipy.stats import multivariate_normal
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import BayesianGaussianMixture as SkBayesianGaussianMixture
from sklearn.mixture import GaussianMixture as SkGaussianMixture

from pyromodels.conjugate.suffstats import one_hot
from pyromodels.core.device import num_threads
from pyromodels.core.seeding import derive_seed, make_generator
from pyromodels.data import simulate_gaussian_mixture
from pyromodels.mixture import GaussianMixtureModel, MixtureData
from pyromodels.mixture.densities import component_log_density
from pyromodels.mixture.em import em_step, m_step, responsibilities
from pyromodels.mixture.gibbs import sweep
from pyromodels.mixture.init import kmeans_init

from .harness import Case, agreement

__all__ = ["cases", "make_points", "scipy_log_density"]

SEED = 20240611
K = 5
FULL_SIZES = ((10_000, 2), (10_000, 10), (100_000, 2), (100_000, 10))
QUICK_SIZES = ((300, 2),)
#: responsibilities lie in [0, 1]: float64 round-off is ~1e-15, so 1e-10 leaves room only for bugs
RESPONSIBILITY_TOLERANCE = 1e-10
#: torch's intra-op threads when this module is imported, before the harness limits them
TORCH_DEFAULT_THREADS = torch.get_num_threads()
#: warm-up and kept sweeps of each quick-start chain (the README runs 200 and 300); quick runs
#: take QUICK_QUICKSTART_SWEEPS
QUICKSTART_SWEEPS = (20, 30)
QUICK_QUICKSTART_SWEEPS = (1, 2)
#: log densities reach a few hundred nats for far points; float64 Cholesky vs eigh differs ~1e-12
LOG_DENSITY_TOLERANCE = 1e-8


@dataclass(frozen=True)
class Problem:
    """Prepared data and the starting point shared by ours and the peers."""

    data: MixtureData
    params: dict  # starting weights (K,), locs (K, d), precisions (K, d, d)
    state: dict  # a full Gibbs state (the same plus labels z)
    x_numpy: np.ndarray  # (N, d) float64 on the CPU, for the peers
    params_numpy: dict  # params on the CPU as float64 arrays, plus "covariances" (K, d, d)


def make_points(N: int, d: int, num_components: int, generator: torch.Generator) -> torch.Tensor:
    """``(N, d)`` float64 draws from a mixture of unit-covariance Gaussians with means ~ N(0, 16 I)."""
    centers = 4.0 * torch.randn(num_components, d, generator=generator, dtype=torch.float64)
    z = torch.randint(num_components, (N,), generator=generator)
    return centers[z] + torch.randn(N, d, generator=generator, dtype=torch.float64)


@functools.cache
def _problem(N: int, d: int, device: str) -> Problem:
    gen = make_generator(derive_seed(SEED, "points", N, d))
    x = make_points(N, d, K, gen)
    model = GaussianMixtureModel(K)
    data = model.prepare(x, device=device)
    z = kmeans_init(data.x, K, make_generator(derive_seed(SEED, "init", N, d), device))
    # the model's own starting point (init_state), with the labels one-hot in the data's dtype
    params = m_step(data, one_hot(z, K, data.x.dtype), map_weights=False)
    state = {**params, "z": z}
    params_numpy = {k: v.detach().cpu().numpy() for k, v in params.items()}
    covs = np.linalg.inv(params_numpy["precisions"])
    params_numpy["covariances"] = 0.5 * (covs + np.swapaxes(covs, -1, -2))
    return Problem(data, params, state, x.numpy(), params_numpy)


def scipy_log_density(x: np.ndarray, locs: np.ndarray, covariances: np.ndarray) -> np.ndarray:
    """``(N, K)`` ``log N(x_n | locs_k, covariances_k)`` by SciPy, one component at a time."""
    return np.stack(
        [multivariate_normal.logpdf(x, mean=locs[k], cov=covariances[k]) for k in range(len(locs))], -1
    )


def _lazy(factory):
    """A zero-argument callable that builds ``factory()`` on its first call, then calls it."""
    built = []

    def call():
        if not built:
            built.append(factory())
        return built[0]()

    return call


# ------------------------------------------------------------------------------ EM iteration
def _ours_em(N, d, device, iterations):
    def factory():
        pb = _problem(N, d, device)

        def run():
            params = pb.params
            for _ in range(iterations):
                params = em_step(pb.data, params)
            return responsibilities(pb.data, params).argmax(-1)

        return run

    return _lazy(factory)


def _sklearn_em(N, d, device, iterations, bayesian: bool):
    def factory():
        pb = _problem(N, d, device)
        common = {"n_components": K, "covariance_type": "full", "tol": 0.0, "max_iter": iterations,
                  "warm_start": True, "init_params": "random_from_data", "random_state": 0}
        if bayesian:
            p = pb.data.prior
            est = SkBayesianGaussianMixture(
                weight_concentration_prior_type="dirichlet_distribution",
                weight_concentration_prior=float(p.weight_concentration),
                mean_precision_prior=float(p.mean_precision),
                mean_prior=p.mean_prior.cpu().numpy(),
                degrees_of_freedom_prior=float(p.degrees_of_freedom),
                covariance_prior=p.covariance_prior.cpu().numpy(),
                **common,
            )
        else:
            q = pb.params_numpy
            est = SkGaussianMixture(
                weights_init=q["weights"], means_init=q["locs"], precisions_init=q["precisions"], **common
            )

        def run():
            with warnings.catch_warnings():
                # tol=0 never converges by design; the warning says just that
                warnings.simplefilter("ignore", ConvergenceWarning)
                est.fit(pb.x_numpy)

        return run

    return _lazy(factory)


def _em_check(N, d, device):
    def check():
        pb = _problem(N, d, device)
        q = pb.params_numpy
        comp = scipy_log_density(pb.x_numpy, q["locs"], q["covariances"])
        reference = softmax(comp + np.log(q["weights"]), axis=-1)
        ours = responsibilities(pb.data, pb.params)
        against = "scipy.stats.multivariate_normal + scipy.special.softmax"
        return {"responsibilities": agreement(ours, reference, RESPONSIBILITY_TOLERANCE, against)}

    return check


# ------------------------------------------------------------------------------ Gibbs sweep
def _ours_gibbs(N, d, device, iterations):
    def factory():
        pb = _problem(N, d, device)
        blocked = sweep()
        gen = make_generator(derive_seed(SEED, "gibbs", N, d), device)
        chain = [pb.state]

        def run():
            state = chain[-1]
            for _ in range(iterations):
                state = blocked(state, pb.data, gen)
            chain[-1] = state

        return run

    return _lazy(factory)


# ----------------------------------------------------------------------- component densities
def _ours_density(N, d, device):
    def factory():
        pb = _problem(N, d, device)
        return lambda: component_log_density(pb.data.x, pb.params["locs"], pb.params["precisions"])

    return _lazy(factory)


def _scipy_density(N, d, device):
    def factory():
        pb = _problem(N, d, device)
        q = pb.params_numpy
        return lambda: scipy_log_density(pb.x_numpy, q["locs"], q["covariances"])

    return _lazy(factory)


def _density_check(N, d, device):
    def check():
        pb = _problem(N, d, device)
        q = pb.params_numpy
        ours = component_log_density(pb.data.x, pb.params["locs"], pb.params["precisions"])
        reference = scipy_log_density(pb.x_numpy, q["locs"], q["covariances"])
        against = "scipy.stats.multivariate_normal"
        return {"log_density": agreement(ours, reference, LOG_DENSITY_TOLERANCE, against)}

    return check


# ----------------------------------------------------------------------- README quick start
def _quickstart(threads: int | None, sweeps: tuple[int, int]):
    """The quick start's Gibbs fit at the caller's default thread count, ``sweeps`` (warm-up,
    kept) per chain; ``threads`` is the engine's ``num_threads`` (``None``: it chooses)."""
    x, _ = simulate_gaussian_mixture(200, weights=[0.6, 0.4], means=[[-2.0, 0.0], [2.0, 1.0]],
                                     covs=[[[1.0, 0.0], [0.0, 1.0]]] * 2, seed=0)
    model = GaussianMixtureModel(num_components=2)
    warmup, kept = sweeps

    def run():
        with num_threads(TORCH_DEFAULT_THREADS):
            return model.fit(x, method="gibbs", num_chains=2, num_warmup=warmup,
                             num_samples=kept, seed=0, progress=False, num_threads=threads)

    return run


def _quickstart_check(sweeps: tuple[int, int]):
    chosen = _quickstart(None, sweeps)()
    default = _quickstart(TORCH_DEFAULT_THREADS, sweeps)()
    # sums over 200 points may round differently on another thread count: 1e-9 is far above
    # float64 rounding and far below any change of the draws
    return {"locs": agreement(chosen.samples["locs"], default.samples["locs"], 1e-9,
                              f"num_threads={TORCH_DEFAULT_THREADS}")}


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The mixture cases; ``quick`` gives one tiny size and few repeats (a harness check).

    ``device`` (default the CPU) is where our side runs; the peers always run on the CPU.
    """
    dev = "cpu" if device is None else str(device)
    out = []
    for N, d in QUICK_SIZES if quick else FULL_SIZES:
        # full run: under a minute on two cores with one thread
        iterations = 2 if quick else (10 if N <= 10_000 else 3)
        repeats = 2 if quick else (7 if N <= 10_000 else 5)
        base = {"N": N, "d": d, "K": K, "dtype": "float64"}
        timing = {"warmup": 1, "repeats": repeats}
        out.append(Case(
            "mixture.em_iteration", {**base, "iterations_per_call": iterations},
            ours=_ours_em(N, d, dev, iterations),
            peers={
                "sklearn.GaussianMixture": _sklearn_em(N, d, dev, iterations, bayesian=False),
                "sklearn.BayesianGaussianMixture": _sklearn_em(N, d, dev, iterations, bayesian=True),
            },
            metric="seconds_per_iter", iterations=iterations, check=_em_check(N, d, dev), **timing,
        ))
        out.append(Case(
            "mixture.gibbs_sweep", {**base, "iterations_per_call": iterations},
            ours=_ours_gibbs(N, d, dev, iterations), peers={},
            metric="seconds_per_iter", iterations=iterations, **timing,
        ))
        out.append(Case(
            "mixture.component_log_density", base,
            ours=_ours_density(N, d, dev),
            peers={"scipy.stats.multivariate_normal": _scipy_density(N, d, dev)},
            metric="seconds", check=_density_check(N, d, dev), **timing,
        ))
    if device is None or torch.device(device).type == "cpu":
        per_chain = QUICK_QUICKSTART_SWEEPS if quick else QUICKSTART_SWEEPS
        sweeps = 2 * sum(per_chain)
        out.append(Case(
            "mixture.quickstart_gibbs",
            {"N": 200, "d": 2, "K": 2, "chains": 2, "sweeps_per_call": sweeps},
            ours=_quickstart(None, per_chain),
            peers={"default_threads": _quickstart(TORCH_DEFAULT_THREADS, per_chain)},
            metric="seconds_per_iter", iterations=sweeps,
            check=functools.partial(_quickstart_check, per_chain),
            warmup=1, repeats=2 if quick else 5,
        ))
    return out
