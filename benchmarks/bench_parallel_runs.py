r"""Independent chains on two workers against one: the speed-up of ``n_jobs=2`` and the check
that it changes nothing in the result.

* ``parallel.chains[fit=mixture_gibbs]`` (seconds per call): :func:`pyromodels.core.run_gibbs`
  on the reference mixture (``K = 3``, ``D = 2``), 4 chains. Full: ``N = 5,000`` points from
  :func:`pyromodels.data.simulate_gaussian_mixture` (three separated components), 100
  warm-up and 100 kept sweeps a chain;
  quick: ``N = 200``, 2 and 3 sweeps.
* ``parallel.chains[fit=bhmc]`` (seconds per call): :meth:`pyromodels.bhmc.BHMC.fit`, 8 chains
  on the 33 animals (PCA 7, :func:`pyromodels.experiments.bhmc.data.animals`) with the paper's
  Animals prior. Full: 40 warm-up and 60 kept sweeps a chain; quick: 2 and 3.

Ours is the fit with ``n_jobs=2`` (loky worker processes, one torch thread each); the peer
``n_jobs=1`` is the same fit with the chains one after another in this process, so the
record's ratio is the speed-up (at most 2). The first, untimed call starts the workers; later
calls reuse them. The check ``identical`` compares every draw of the two fits (tolerance 0:
the chains' seeds are derived before dispatch, so they must agree bit for bit). Run on a
quiet machine with at least two free cores, or the figures measure the other work.
"""

from __future__ import annotations

import functools

import torch

from .harness import Case, agreement

__all__ = ["cases", "mixture_fit", "bhmc_fit"]

SEED = 20261128
#: ``(N, warm-up, kept sweeps)`` of the mixture chains, full and quick
MIXTURE = {False: (5_000, 100, 100), True: (200, 2, 3)}
#: ``(warm-up, kept sweeps)`` of the BHMC chains, full and quick
BHMC_SWEEPS = {False: (40, 60), True: (2, 3)}
MIXTURE_CHAINS = 4
BHMC_CHAINS = 8


@functools.cache
def _mixture_points(n: int) -> torch.Tensor:
    from pyromodels.data import simulate_gaussian_mixture

    eye = torch.eye(2, dtype=torch.float64)
    x, _ = simulate_gaussian_mixture(n, [0.5, 0.3, 0.2], [[-3.0, 0.0], [0.0, 3.0], [3.0, 0.0]],
                                     torch.stack([eye, 0.5 * eye, 2 * eye]), seed=SEED)
    return x


def mixture_fit(quick: bool, n_jobs: int):
    """The mixture's Gibbs chains with ``n_jobs`` workers: ``{site: (chain, draw, ...)}``."""
    from pyromodels.core import run_gibbs
    from pyromodels.mixture import GaussianMixtureModel

    n, warm, kept = MIXTURE[quick]
    post = run_gibbs(GaussianMixtureModel(3), _mixture_points(n), num_chains=MIXTURE_CHAINS,
                     num_warmup=warm, num_samples=kept, seed=SEED, progress=False,
                     diagnostic_warnings=False, n_jobs=n_jobs)
    return post.samples


def bhmc_fit(quick: bool, n_jobs: int):
    """BHMC's chains with ``n_jobs`` workers: ``{"cdl": (chain, draw)}`` and the best paths."""
    from pyromodels.bhmc import BHMC, BHMCPrior
    from pyromodels.experiments.bhmc.data import animals
    from pyromodels.experiments.bhmc.paper_numbers import HYPERPARAMETERS

    h = HYPERPARAMETERS["animals"]
    prior = BHMCPrior(alpha=h.alpha, gamma=h.gamma, gamma0=h.gamma0, depth=h.depth, nu0=h.nu0,
                      loc=0.0, scale=1.0)
    warm, kept = BHMC_SWEEPS[quick]
    post = BHMC(prior).fit(animals().x, num_chains=BHMC_CHAINS, num_warmup=warm,
                           num_samples=kept, seed=SEED, progress=False,
                           diagnostic_warnings=False, n_jobs=n_jobs)
    return {"cdl": post.samples["cdl"], "paths": post.params["paths"]}


def _identical(fit) -> dict:
    serial, parallel = fit(1), fit(2)
    worst = max((agreement(parallel[k].double(), serial[k].double(), 0.0, "n_jobs=1")
                 for k in serial), key=lambda r: r["max_abs_diff"])
    return {"identical": worst}


def cases(quick: bool) -> list[Case]:
    """The two fits, ``n_jobs=2`` (ours) against ``n_jobs=1`` (the peer)."""
    out = []
    n, *mixture_sweeps = MIXTURE[quick]
    for name, fit, size, sweeps in (
            ("mixture_gibbs", mixture_fit, {"N": n, "chains": MIXTURE_CHAINS}, mixture_sweeps),
            ("bhmc", bhmc_fit, {"N": 33, "chains": BHMC_CHAINS}, BHMC_SWEEPS[quick])):
        run = functools.partial(fit, quick)
        params = {"fit": name, **size, "sweeps": list(sweeps), "n_jobs": 2}
        out.append(Case("parallel.chains", params, ours=functools.partial(run, 2),
                        peers={"n_jobs=1": functools.partial(run, 1)},
                        check=functools.partial(_identical, run),
                        warmup=1, repeats=2 if quick else 3))
    return out
