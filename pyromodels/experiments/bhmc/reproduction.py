r"""Reproduction of the RBHMC paper (*Posterior Regularisation on Bayesian Hierarchical Mixture
Clustering*, Huang, Ng, Laitonjam and Hurley).

The report entry ``bhmc`` (``pyromodels demo``) and ``bhmc-<scale>`` (``pyromodels reproduce
bhmc --scale small|medium|paper``) run the paper's four protocols (:mod:`.protocol`) with
BHMC and RBHMC (:func:`pyromodels.bhmc.fit_bhmc`) on the animals, on 100 Fashion-MNIST images
(where the files are installed) and on a planted two-level hierarchy with a known truth:

* CDL / RCDL traces (Figs. 3 and 7);
* AID and AOD of the last tree on a ``(C, eps_0)`` grid with repeats (Figs. 4 and 8);
* the best trees of the first chains, drawn with the animals' names (Fig. 5) and the images'
  classes (Fig. 9);
* per-level F-measure of each chain's best tree, BHMC against RBHMC (Figs. 6 and 10), and on
  the planted set against the true clusters of each level.

The paper prints no numbers (its figures are lost), so the tables put our settings beside the
paper's and report what we measured. Every chain a plan needs is listed first and run once
(:class:`~.chains.ChainSampler`; a chain that serves several protocols with the same seed and
length is shared, which the ``demo`` and ``smoke`` plans use to keep to one set of chains per
setting): one after another for ``smoke`` and ``demo``, through joblib with one worker per
core for ``small``, ``medium`` and ``paper`` (``pyromodels reproduce --n-jobs`` or
``--scheduler`` choose otherwise; see ``guides/scale-out.md``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ...bhmc import BHMC, BHMCPrior
from ...core.parallel import configured_n_jobs, resolve_n_jobs
from ...registry import register
from ..arguments import demo_arguments, reproduction_arguments
from ..catalogue import BHMC as BHMC_INFO
from ..stages import stage_reporter
from .chains import ChainSampler, planned_requests
from .paper_numbers import HYPERPARAMETERS
from .protocol import ChainRequest
from .settings import PROTOCOLS, ProtocolRun, protocol_settings

if TYPE_CHECKING:  # the report package loads ArviZ: registering the entry stays light
    from ...report import DemoResult

__all__ = ["NAME", "SCALES", "DatasetPlan", "Plan", "PLANS", "prior_for",
           "load_dataset", "ENTRY", "run", "demo", "reproduce", "loader", "describe",
           "default_model"]

NAME = "bhmc"
SCALES = BHMC_INFO.scales


@dataclass(frozen=True)
class DatasetPlan:
    """The protocols run on one data set.

    Attributes:
        dataset: ``"animals"``, ``"fashion_mnist"`` or ``"planted"``.
        runs: ``{protocol: ProtocolRun}`` for every protocol of :data:`~.settings.PROTOCOLS`.
        planted_per_leaf: data per leaf of the planted set (ignored by the others).
    """

    dataset: str
    runs: dict
    planted_per_leaf: int = 5


@dataclass(frozen=True)
class Plan:
    """What one run computes: one :class:`DatasetPlan` per data set; ``n_jobs`` workers run
    the chains through joblib (``-1``: one per CPU core; ``1``: one after another in this
    process), unless an enclosing ``joblib.parallel_config`` (the command line's
    ``--n-jobs`` and ``--scheduler``) sets its own."""

    datasets: tuple[DatasetPlan, ...]
    n_jobs: int = 1


def shared_runs(settings, chains: int, burn_in: int, draws: int) -> dict:
    """Every protocol on the same chains: ``chains`` per method, ``burn_in + draws`` sweeps;
    sensitivity scores the last tree of each (``repeats = chains``), the case study and the
    F-measure the best after burn-in, the convergence figure the whole trace."""
    sel = {"convergence": "last", "sensitivity": "last", "case_study": "best",
           "f_measure": "best"}
    return {p: ProtocolRun(p, tuple(settings), 1 if p == "sensitivity" else chains,
                           chains if p == "sensitivity" else 1, burn_in, draws, sel[p], False)
            for p in PROTOCOLS}


def _scaled(dataset: str, scale: str) -> DatasetPlan:
    return DatasetPlan(dataset, {p: protocol_settings(dataset, p, scale) for p in PROTOCOLS})


_DEMO_SETTINGS = ((1.0, 1.0), (0.01, 1.0))

#: ``smoke`` (seconds, tests), ``demo`` (``pyromodels demo``), ``small``, ``medium`` and
#: ``paper`` (the paper's chains and iterations, :mod:`.settings`)
PLANS = {
    "smoke": Plan((DatasetPlan("animals", shared_runs(((1.0, 1.0),), 1, 2, 3)),
                   DatasetPlan("planted", shared_runs(((1.0, 1.0),), 1, 2, 3), 2))),
    "demo": Plan((DatasetPlan("animals", shared_runs(_DEMO_SETTINGS, 2, 6, 18)),
                  DatasetPlan("planted", shared_runs(((1.0, 1.0),), 2, 6, 18), 3))),
    "small": Plan((_scaled("animals", "small"), _scaled("planted", "small")), -1),
    "medium": Plan(tuple(_scaled(d, "medium") for d in ("animals", "fashion_mnist", "planted")),
                   -1),
    "paper": Plan(tuple(_scaled(d, "paper") for d in ("animals", "fashion_mnist", "planted")),
                  -1),
}


def prior_for(dataset: str) -> BHMCPrior:
    """The paper's hyperparameters of ``dataset`` (the planted set takes the animals'), the story
    applied to the data as they are (``loc = 0``, ``scale = 1``), as in the paper."""
    h = HYPERPARAMETERS["fashion_mnist" if dataset == "fashion_mnist" else "animals"]
    return BHMCPrior(alpha=h.alpha, gamma=h.gamma, gamma0=h.gamma0, depth=h.depth, nu0=h.nu0,
                     loc=0.0, scale=1.0)


def load_dataset(plan: DatasetPlan, seed: int = 0):
    """The :class:`~.data.HierarchyData` of ``plan`` (Fashion-MNIST: ``FileNotFoundError``
    when its files are not installed)."""
    from .data import animals, fashion_mnist, planted_hierarchy

    if plan.dataset == "animals":
        return animals()
    if plan.dataset == "fashion_mnist":
        return fashion_mnist(seed=seed, kind="t10k")
    return planted_hierarchy(n_per_leaf=plan.planted_per_leaf, seed=seed)


def run(plan: Plan, name: str, *, progress: bool, seed: int) -> DemoResult:
    """Run every protocol of ``plan`` and assemble the report entry ``name``."""
    from .assemble import assemble
    from .protocol import run_convergence, run_f_measure, run_seed, run_sensitivity

    report = stage_reporter(NAME, progress)
    start = time.perf_counter()
    results, skipped = {}, {}
    n_jobs = configured_n_jobs() or plan.n_jobs
    for dplan in plan.datasets:
        try:
            data = load_dataset(dplan, seed=0)
        except FileNotFoundError as exc:
            skipped[dplan.dataset] = str(exc)
            continue
        prior = prior_for(dplan.dataset)
        hyper = HYPERPARAMETERS["fashion_mnist" if dplan.dataset == "fashion_mnist" else "animals"]
        sampler = ChainSampler(dplan.dataset, prior)
        out = {"data": data, "prior": prior, "plan": dplan, "sampler": sampler}
        requests = planned_requests(data, hyper, dplan.runs, seed)
        if report:
            report(f"{dplan.dataset}: {len(sampler.missing(requests))} chains, "
                   f"{resolve_n_jobs(n_jobs)} worker(s)")
        sampler.prefetch(requests, n_jobs, progress=progress)
        for protocol, fn in (("convergence", run_convergence), ("sensitivity", run_sensitivity),
                             ("f_measure", run_f_measure)):
            if report:
                report(f"{dplan.dataset}: {protocol}")
            out[protocol] = fn(data, hyper, sampler, dplan.runs[protocol], seed=seed)
        case = dplan.runs["case_study"]
        settings = [(0, "BHMC", None, 1.0)] + [(i, "RBHMC", c, e) for i, (c, e)
                                               in enumerate(case.settings, start=1)]
        out["case_study"] = {
            (method, c, e, chain): sampler(ChainRequest(
                data, hyper, c, e, case.burn_in, case.draws, "best",
                run_seed(seed, index, chain))).paths
            for index, method, c, e in settings for chain in range(min(2, case.chains))}
        results[dplan.dataset] = out
    return assemble(name, replace(plan, n_jobs=resolve_n_jobs(n_jobs)), results, skipped,
                    time.perf_counter() - start)


def demo(*, smoke: bool = False, progress: bool = True, seed: int = 0) -> DemoResult:
    """The report entry ``bhmc``: animals and the planted set, short chains (``smoke``:
    seconds)."""
    key, options = demo_arguments(smoke, progress, seed, size="demo")
    return run(PLANS[key], NAME, **options)


def reproduce(*, scale: str = "small", progress: bool = True, seed: int = 0) -> DemoResult:
    """The report entry ``bhmc-<scale>`` at ``scale`` in :data:`SCALES`."""
    scale, options = reproduction_arguments(scale, progress, seed, scales=SCALES)
    return run(PLANS[scale], f"{NAME}-{scale}", **options)


def loader(path: str | None):
    """The data ``pyromodels fit bhmc`` fits: a numeric CSV (one row per point), or by
    default the animals' 7 principal components."""
    from ..reference_mixture.reproduction import read_numeric_csv
    from .data import animals

    if path is None:
        return animals().x.numpy()
    return read_numeric_csv(path)


def describe(posterior, data, *, name: str):
    """The report of ``pyromodels fit bhmc`` (:func:`~.assemble.describe_fit`)."""
    from .assemble import describe_fit

    return describe_fit(posterior, data, name=name)


def default_model(**prior) -> BHMC:
    """The registered model: BHMC with the paper's animals hyperparameters, each of which
    ``prior`` may replace (``alpha``, ``gamma``, ``gamma0``, ``depth``, ``num_components``,
    ``nu0``, ``loc``, ``scale``: the fields of :class:`~pyromodels.bhmc.BHMCPrior`). Unlike the
    reproductions, which apply the story to the data as they are, ``loc`` and ``scale`` default
    to the data's own units, so a user's data fit alike in any units (``--loc 0 --scale 1``
    gives the paper's convention)."""
    return BHMC(replace(prior_for("animals"), **{"loc": None, "scale": None, **prior}))


ENTRY = register(BHMC_INFO.entry(factory=default_model, demo=demo, reproduce=reproduce,
                                 loader=loader, describe=describe))
