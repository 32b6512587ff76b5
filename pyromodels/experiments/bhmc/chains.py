"""The chains of a reproduction: listed from the protocols' runs, run once each (in parallel
through joblib when asked, see :mod:`pyromodels.core.parallel`) and served to the protocols
(:mod:`.protocol`) as their sampler.

Example:
    >>> from .data import planted_hierarchy
    >>> from .paper_numbers import HYPERPARAMETERS
    >>> from .settings import protocol_settings
    >>> runs = {"f_measure": protocol_settings("planted", "f_measure", "smoke")}
    >>> requests = planned_requests(planted_hierarchy(n_per_leaf=2), HYPERPARAMETERS["animals"],
    ...                             runs, seed=0)
    >>> len(requests)   # 2 chains of BHMC and of the one RBHMC setting
    4
"""

from __future__ import annotations

import math
import time

from ...bhmc import BHMC, BHMCPrior
from ...core.parallel import run_jobs
from .protocol import ChainOutput, ChainRequest, run_seed

__all__ = ["ChainSampler", "planned_requests"]


def planned_requests(data, hyper, runs: dict, seed: int) -> list[ChainRequest]:
    """Every chain that :func:`~.protocol.run_convergence`, :func:`~.protocol.run_sensitivity`,
    :func:`~.protocol.run_f_measure` and the case study (the first two chains) will ask for,
    with the same seeds (``run_seed(seed, setting index, chain or repeat)``).

    Args:
        data: the :class:`~.data.HierarchyData`.
        hyper: its :class:`~.paper_numbers.Hyperparameters`.
        runs: ``{protocol: ProtocolRun}`` (any subset of the four protocols).
        seed: the reproduction's seed.
    """
    out = []
    for protocol, run in runs.items():
        methods = [(0, None, math.nan)] + [(i, c, e) for i, (c, e)
                                           in enumerate(run.settings, start=1)]
        if protocol == "convergence":
            methods = methods[1:]
        count = {"sensitivity": run.repeats, "case_study": min(2, run.chains)}.get(
            protocol, run.chains)
        out += [ChainRequest(data, hyper, c, e, run.burn_in, run.draws, run.selection,
                             run_seed(seed, index, k)) for index, c, e in methods
                for k in range(count)]
    return out


def _fit_one(task, shared):
    """One chain of a request (a :func:`~pyromodels.core.parallel.run_jobs` function):
    ``task`` is ``(data index, C, eps0, burn_in, draws, seed)``, ``shared`` holds the prior
    and the data sets, sent to the workers once."""
    data, C, eps0, burn_in, draws, seed = task
    margin = {} if C is None else {"eps0": eps0}
    return BHMC(shared["prior"]).fit(shared["data"][data], C=C, **margin, num_warmup=burn_in,
                                     num_samples=draws, num_chains=1, seed=seed,
                                     progress=False, n_jobs=1)


class ChainSampler:
    """The protocols' sampler (``sampler(request) -> ChainOutput``): one chain of
    :meth:`BHMC.fit <pyromodels.bhmc.BHMC.fit>` per request, remembered by ``(data set, C,
    eps0, burn_in, draws, seed)`` so that protocols asking for the same chain share it.

    Attributes:
        fits: ``{key: Posterior}`` of every chain run.
        seconds: wall time spent sampling.
    """

    def __init__(self, name: str, prior: BHMCPrior):
        self.name, self.prior = name, prior
        self.fits: dict = {}
        self.seconds = 0.0

    def key(self, request: ChainRequest) -> tuple:
        eps0 = None if request.C is None else float(request.eps0)
        return (self.name, request.C, eps0, request.burn_in, request.draws, request.seed)

    def missing(self, requests) -> dict:
        """``{key: request}`` of the requests whose chain has not run yet (one per key)."""
        out = {}
        for r in requests:
            if self.key(r) not in self.fits:
                out.setdefault(self.key(r), r)
        return out

    def prefetch(self, requests, n_jobs: int | None = 1, progress: bool = False) -> None:
        """Run the chains of ``requests`` not run yet, ``n_jobs`` at once through joblib
        (:func:`~pyromodels.core.parallel.run_jobs`: ``1`` in this process, ``-1`` all
        cores, ``None`` the enclosing ``joblib.parallel_config``'s, a Dask cluster's
        workers under ``parallel_config(backend="dask")``); each chain's seed is the
        request's, so the chains do not depend on ``n_jobs``."""
        todo = self.missing(requests)
        start = time.perf_counter()
        data: dict[int, object] = {}  # the data sets, each sent once
        for r in todo.values():
            data.setdefault(id(r.data.x), r.data.x)
        index = {key: i for i, key in enumerate(data)}
        tasks = [(index[id(r.data.x)], r.C, r.eps0, r.burn_in, r.draws, r.seed)
                 for r in todo.values()]
        fits = run_jobs(_fit_one, tasks, n_jobs=n_jobs, progress=progress,
                        shared={"prior": self.prior, "data": list(data.values())},
                        desc=f"{self.name} chains",
                        labels=[f"C={r.C} seed={r.seed}" for r in todo.values()])
        self.fits.update(zip(todo, fits))
        self.seconds += time.perf_counter() - start

    def __call__(self, request: ChainRequest) -> ChainOutput:
        self.prefetch([request], 1)
        params = self.fits[self.key(request)].params
        paths = params["paths"] if request.selection == "best" else params["last_paths"][0]
        rcdl = params["rcdl_trace"][0] if "rcdl_trace" in params else None
        return ChainOutput(paths, params["cdl_trace"][0], rcdl)
