r"""Reproduction of the ensemble paper: Traganitis & Giannakis, *Unsupervised Ensemble
Classification with Sequential and Networked Data* (IEEE TKDE; arXiv 1906.09356).

The report entry ``crowd`` (``pyromodels demo``) and ``crowd-<scale>``
(``pyromodels reproduce crowd --scale small|medium|paper``) hold:

* **Table I** (sequential: POS, NER, Biomedical IE): single best, MV, DS (EM from moment
  matching), Alg. 2, Alg. 2 + Alg. 1 and MV + Alg. 1; precision, recall, F beside the paper's,
  with the reasons where they differ (:mod:`.crowd_tables`);
* **Table II** (networked: Cora, CiteSeer, Pubmed, Music Genre): single best, MV, DS, Alg. 4,
  MV + Alg. 3; F beside the paper's;
* **Figs. 4-10** (synthetic, :mod:`.crowd_synthetic`): F-score, confusion and transition
  errors against N and M for sequences, F and confusion error against N on SBM graphs of
  mean degree 0.5 and 5, mean +-1 sd over Monte Carlo runs;
* the **ten i.i.d. crowd sets** (:mod:`.crowd_iid`): MV, Dawid-Skene EM, Bayesian
  Dawid-Skene (Gibbs) and crowd-kit's DawidSkene against gold.

Sizes (:data:`PLANS`): ``smoke`` (seconds, for tests) and ``demo`` (under a minute) run NER
(500 sentences), Cora, one synthetic panel and a few crowd sets; ``small`` every table on
subsets and every figure with 2 runs; ``medium`` the full POS, NER and graphs and 5 runs;
``paper`` everything in full with 10 runs and longer solves.

Example:
    >>> result = demo(smoke=True, progress=False, seed=0)  # doctest: +SKIP
    >>> sorted(result.tables)[:1]  # doctest: +SKIP
    ['Table I (sequential): ours vs the paper']
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from ...core.device import default_dtype
from ...core.errors import ConvergenceWarning
from ...crowd.ds.model import DawidSkene
from ...registry import register
from ..arguments import demo_arguments, reproduction_arguments
from ..catalogue import CROWD
from ..stages import stage_reporter
from . import iid as crowd_iid
from .fit_entries import crowd_table, describe_fit
from .synthetic import SyntheticSettings
from .tables import MethodSettings

if TYPE_CHECKING:  # the report package loads ArviZ: registering the entry stays light
    from ...report import DemoResult

__all__ = ["NAME", "SCALES", "Plan", "PLANS", "PANELS", "ENTRY", "run", "demo", "reproduce",
           "read_annotations", "loader"]

NAME = "crowd"
#: the scales :func:`reproduce` runs at
SCALES = CROWD.scales
#: the synthetic panels: sequential against N (Figs. 4-5) and M (Figs. 6-7), networked at mean
#: degree 0.5 (Figs. 8-9) and 5 (Fig. 10)
PANELS = ("sequential-N", "sequential-M", "networked-0.5", "networked-5")


@dataclass(frozen=True)
class Plan:
    """What one run computes.

    Attributes:
        scale: task sizes of the real data (see
            :func:`~pyromodels.experiments.crowd.tables.task_options`).
        methods: iteration budgets of the methods on real data.
        table_i, table_ii: the tasks of Tables I and II.
        synthetic: sizes of the synthetic studies; panels: which of :data:`PANELS` to run.
        iid: settings of the i.i.d. crowd-set table; iid_methods: its methods.
    """

    scale: str
    methods: MethodSettings
    table_i: tuple[str, ...]
    table_ii: tuple[str, ...]
    synthetic: SyntheticSettings
    panels: tuple[str, ...]
    iid: crowd_iid.IidSettings
    iid_methods: tuple[str, ...] = crowd_iid.METHODS


_FAST = MethodSettings(mm_max_iter=10, mm_max_workers=8, em_max_iter=10, mrf_max_iter=5,
                       icm_max_iter=10)
_DEMO = MethodSettings(mm_max_iter=40, mm_max_workers=10, em_max_iter=50, mrf_max_iter=20)
#: ``pyromodels demo``: short budgets, for a first look in seconds
_FIRST_LOOK = MethodSettings(mm_max_iter=20, mm_max_workers=8, em_max_iter=30, mrf_max_iter=10,
                             icm_max_iter=20)
_SMALL = MethodSettings(mm_max_iter=50, mm_max_workers=15, em_max_iter=50, em_tol=1e-6,
                        mrf_max_iter=20)
_MEDIUM = MethodSettings(mm_n_init=3, mm_max_iter=300, mm_tol=1e-8, em_max_iter=300,
                         em_tol=1e-8, mrf_max_iter=50)
_PAPER = MethodSettings(mm_n_init=5, mm_max_iter=500, mm_tol=1e-8, em_max_iter=1000,
                        em_tol=1e-9, mrf_max_iter=100, icm_max_iter=100)
_ALL_I, _ALL_II = ("pos", "ner", "bioie"), ("cora", "citeseer", "pubmed", "music_genre")

#: the runs: ``smoke`` and ``demo`` for ``pyromodels demo``, the others for ``reproduce``
PLANS = {
    "smoke": Plan("small", _FAST, ("ner",), ("cora",),
                  SyntheticSettings(runs=1, sizes=(200, 400), methods=_FAST), ("sequential-N",),
                  crowd_iid.IidSettings(("rte",), 100, 1e-6, 10, 20, 1)),
    "demo": Plan("small", _FIRST_LOOK, ("ner",), ("cora",),
                 SyntheticSettings(runs=1, sizes=(400, 1000), methods=_FIRST_LOOK),
                 ("sequential-N",), crowd_iid.IidSettings(("temp", "bluebirds"), 300, 1e-6,
                                                          30, 60, 2)),
    "small": Plan("small", _SMALL, _ALL_I, ("cora", "citeseer", "music_genre"),
                  SyntheticSettings(runs=2, sizes=(400, 1000, 2000), worker_counts=(4, 8, 12),
                                    networked_sizes=(500, 2000), methods=_DEMO),
                  PANELS, crowd_iid.SETTINGS["small"]),
    "medium": Plan("medium", _MEDIUM, _ALL_I, _ALL_II,
                   SyntheticSettings(runs=5, sizes=(200, 480, 1000, 2000, 5000),
                                     worker_counts=(4, 6, 10, 14, 20),
                                     networked_sizes=(200, 500, 1000, 2000, 5000),
                                     methods=MethodSettings()), PANELS,
                   crowd_iid.SETTINGS["medium"]),
    "paper": Plan("paper", _PAPER, _ALL_I, _ALL_II, SyntheticSettings(methods=_MEDIUM), PANELS,
                  crowd_iid.SETTINGS["paper"], crowd_iid.METHODS + crowd_iid.EXTRA_METHODS),
}




def _panel(panel: str, settings: SyntheticSettings, seed: int, report):
    from .synthetic import networked_study, sequential_study

    if panel.startswith("sequential"):
        return sequential_study(settings, vary=panel[-1], seed=seed, progress=report)
    return networked_study(settings, mean_degree=float(panel.split("-")[1]), seed=seed,
                           progress=report)


def _dataset_table(sizes: dict):
    """Our task sizes beside the paper's (its K, M, N and mean degree as printed)."""
    import pandas as pd

    from .paper_numbers import TABLE_I, TABLE_II

    rows = {}
    for name, ours in sizes.items():
        theirs = TABLE_I.get(name) or TABLE_II.get(name)
        rows[name] = {"N": ours["N"], "N (paper)": theirs["N"], "M": ours["M"],
                      "M (paper)": theirs["M"], "K": ours["K"], "K (paper)": theirs["K"],
                      "scored": ours["scored"], "mean degree": ours.get("mean_degree"),
                      "mean degree (paper)": theirs.get("mean_degree")}
    return pd.DataFrame.from_dict(rows, orient="index")


def _table_metrics(table) -> dict:
    out = {}
    for (dataset, method), row in table.iterrows():
        values = {k: float(v) for k, v in row.items() if k != "reason"}
        out.setdefault(dataset, {})[method] = values
    return out


def _best_line(table, sizes: dict) -> str:
    from .figures import LABELS
    from .paper_numbers import BOLD

    parts = []
    for dataset in dict.fromkeys(table.index.get_level_values("dataset")):
        f = table.xs(dataset, level="dataset")["f_score"].drop("single_best")
        ours = f.idxmax()
        theirs = BOLD.get((dataset, "f_score"))
        parts.append(f"{dataset} (N = {sizes[dataset]['N']:,}): ours {LABELS[ours]} "
                     f"{f[ours]:.3f}, the paper's best {LABELS.get(theirs, theirs)}")
    return "; ".join(parts)


def _synthetic_line(panel: str, summary) -> str:
    from .figures import LABELS

    last = summary.index.get_level_values("x").max()
    f = summary.xs(last, level="x")[("f_score", "mean")].dropna().sort_values(ascending=False)
    first = summary.index.get_level_values("x").min()
    err = summary[("confusion_error", "mean")].unstack("method")
    trend = [m for m in err.columns if err[m].notna().all()
             and err.loc[last, m] < err.loc[first, m]]
    return (f"{panel} at {last}: F " + ", ".join(f"{LABELS.get(m, m)} {v:.3f}"
                                                 for m, v in f.items())
            + (f"; the confusion error falls from {first} to {last} for "
               + ", ".join(LABELS.get(m, m) for m in trend) if trend else ""))


def run(plan: Plan, name: str, *, progress: bool, seed: int) -> DemoResult:
    """Compute everything ``plan`` asks for and assemble the report entry ``name``.

    Torch's default dtype is float64 meanwhile (restored afterwards); convergence and sparse
    worker warnings of the many short fits are not shown.
    """
    from ...core.seeding import derive_seed
    from ...crowd.ds.data import SparseWorkerWarning
    from .synthetic import summarize
    from .tables import paper_table

    report = stage_reporter("crowd", progress)
    start, seconds = time.perf_counter(), {}
    with default_dtype(torch.float64), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", SparseWorkerWarning)
        tables, sizes = {}, {}
        for kind, names in (("I", plan.table_i), ("II", plan.table_ii)):
            t0 = time.perf_counter()
            tables[kind], found = paper_table(kind, names, plan.methods, scale=plan.scale,
                                              seed=derive_seed(seed, "table", kind),
                                              progress=report)
            sizes.update(found)
            seconds[f"table_{kind}"] = time.perf_counter() - t0
        summaries = {}
        for panel in plan.panels:
            t0 = time.perf_counter()
            frame = _panel(panel, plan.synthetic, derive_seed(seed, panel), report)
            summaries[panel] = summarize(frame)
            seconds[panel] = time.perf_counter() - t0
        if report is not None:
            report("i.i.d. crowd sets")
        t0 = time.perf_counter()
        iid = crowd_iid.ds_accuracy_table(plan.iid.names, plan.iid_methods,
                                          derive_seed(seed, "iid"), settings=plan.iid)
        seconds["iid"] = time.perf_counter() - t0
        posterior_figures = _posterior_figures(plan.iid, derive_seed(seed, "posterior plots"))
    seconds["total"] = time.perf_counter() - start
    result = _assemble(name, plan, tables, sizes, summaries, iid, seconds)
    result.figures.update(posterior_figures)
    return result


def _posterior_figures(settings, seed: int) -> dict:
    """Posterior plots of the Bayesian Dawid-Skene model on the first i.i.d. crowd set: the
    busiest workers' confusion matrices (mean +- sd) and the Gibbs chains' trace plot and,
    with two chains or more, rank plot (label-invariant statistics and the log joint)."""
    from ...data import AnnotationTable, load_crowd
    from ...diagnostics import plot_rank, plot_trace
    from .figures import plot_worker_confusions

    name = settings.names[0]
    table = AnnotationTable.from_dataframe(load_crowd(name)[0], allow_repeats=True)
    posterior = DawidSkene().fit(table, method="gibbs", seed=seed, progress=False,
                                 num_warmup=settings.gibbs_warmup,
                                 num_samples=settings.gibbs_samples,
                                 num_chains=settings.gibbs_chains)
    counts = torch.bincount(table.worker_idx, minlength=table.num_workers).numpy()
    where = (f"Bayesian Dawid-Skene on {name}, Gibbs: {settings.gibbs_chains} chain(s) of "
             f"{settings.gibbs_samples} draws")
    figures = {
        f"{where}: confusion matrices of the busiest workers (mean +- sd)":
            plot_worker_confusions(posterior, counts=counts, names=list(table.workers)),
        f"{where}: trace plot (one line per chain)": plot_trace(posterior, site="z"),
    }
    if posterior.num_chains > 1:  # ranks compare chains
        figures[f"{where}: rank plot (uniform bars: the chains mix)"] = plot_rank(posterior,
                                                                                  site="z")
    return figures


_FIGURES = {
    "sequential-N": ("Figs. 4-5: sequential data against N (K = 4, M = {m}, sequences of "
                     "{length})", ("f_score", "confusion_error", "transition_error"), "N", True),
    "sequential-M": ("Figs. 6-7: sequential data against M (K = 4, N = {n_m})",
                     ("f_score", "confusion_error", "transition_error"), "M", False),
    "networked-0.5": ("Figs. 8-9: SBM graph of mean degree 0.5 against N (K = 4, M = {m}, "
                      "delta = M)", ("f_score", "confusion_error"), "N", True),
    "networked-5": ("Fig. 10: SBM graph of mean degree 5 against N (K = 4, M = {m}, "
                    "delta = M)", ("f_score", "confusion_error"), "N", True),
}


def _assemble(name, plan, tables, sizes, summaries, iid, seconds) -> DemoResult:
    from ...report import DemoResult
    from . import figures as figs

    syn = plan.synthetic
    out_tables = {"Table I (sequential): ours vs the paper": tables["I"],
                  "Table II (networked, F-score): ours vs the paper": tables["II"],
                  "data sets: ours vs the paper": _dataset_table(sizes)}
    figures = {}
    for panel, summary in summaries.items():
        title, metrics, xlabel, log_x = _FIGURES[panel]
        title = title.format(m=syn.num_workers, length=syn.length, n_m=syn.size_for_workers)
        out_tables[f"synthetic {panel}: mean and sd over {syn.runs} runs"] = summary
        figures[title] = figs.plot_study(summary, metrics, xlabel=xlabel, log_x=log_x,
                                         title=f"{title}; {syn.runs} runs, +-1 sd")
    out_tables["i.i.d. crowd sets: accuracy against gold"] = iid
    figures["Table I: our F-scores against the paper's"] = figs.plot_ours_vs_paper(tables["I"])
    figures["Table II: our F-scores against the paper's"] = figs.plot_ours_vs_paper(tables["II"])
    metrics = {
        "table_i": _table_metrics(tables["I"]), "table_ii": _table_metrics(tables["II"]),
        "sizes": sizes,
        "synthetic": {panel: {f"{x}/{m}": {k[0]: float(v) for k, v in row.items()
                                           if k[1] == "mean"}
                              for (x, m), row in summary.iterrows()}
                      for panel, summary in summaries.items()},
        "iid": {s: {k: float(v) for k, v in row.items()} for s, row in iid.iterrows()},
        "seconds": seconds, "settings": asdict(plan),
    }
    best = iid[list(plan.iid_methods)].idxmax(axis=1)
    summary = "\n\n".join([
        "Reproduction of Traganitis & Giannakis, 'Unsupervised Ensemble Classification with "
        f"Sequential and Networked Data' (TKDE), real-data scale {plan.scale!r}, in "
        f"{seconds['total']:.0f} s. Tables I and II list our precision / recall / F beside the "
        "paper's, with the reasons where they differ by more than 0.03.",
        "Table I, best F: " + _best_line(tables["I"], sizes) + ".",
        "Table II, best F: " + _best_line(tables["II"], sizes) + ".",
        *(f"Synthetic, {_synthetic_line(p, s)}." for p, s in summaries.items()),
        "i.i.d. crowd sets, most accurate: " + ", ".join(f"{k}: {v}" for k, v in best.items())
        + ".",
        "Not reproduced: Sentence Polarity and BU-BIL MRI (no data here). Exact numbers are "
        "not expected: the paper's learners, seeds and solver settings are not published, and "
        "our POS taggers and citation-graph classifiers are our own.",
    ])
    return DemoResult(name=name, summary=summary, metrics=metrics, tables=out_tables,
                      figures=figures)


def demo(*, smoke: bool, progress: bool, seed: int) -> DemoResult:
    """The demo: NER (500 sentences), Cora, the synthetic study against N and three crowd
    sets (``smoke``: tiny iteration counts, one run, one crowd set).

    Returns:
        The :class:`~pyromodels.report.DemoResult` named ``"crowd"``.
    """
    key, options = demo_arguments(smoke, progress, seed, size="demo")
    return run(PLANS[key], NAME, **options)


def reproduce(*, scale: str, progress: bool, seed: int) -> DemoResult:
    """Tables I and II, Figs. 4-10 and the i.i.d. crowd-set table at ``scale`` (``"small"``,
    ``"medium"`` or ``"paper"``; see :data:`PLANS`).

    Returns:
        The :class:`~pyromodels.report.DemoResult` named ``"crowd-<scale>"``.
    """
    scale, options = reproduction_arguments(scale, progress, seed, scales=SCALES)
    return run(PLANS[scale], f"{NAME}-{scale}", **options)


def read_annotations(path, task_col=None, worker_col=None, label_col=None):
    """Read a crowd-label CSV with columns ``task`` (or ``item``), ``worker``, ``label`` (one
    row per judgement; other columns are ignored; other names with ``task_col``,
    ``worker_col``, ``label_col``) into an AnnotationTable.

    Repeated ``(task, worker)`` rows are kept as separate judgements (the Dawid-Skene
    likelihood treats every row as one).

    Raises:
        ValueError: an empty file, a missing column, or a missing id or label (the message
            names the file).
    """
    import pandas as pd

    if not isinstance(path, str | Path):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} is empty: expected a CSV with columns task, worker, "
                         "label") from None
    try:
        return crowd_table(frame, task_col=task_col, worker_col=worker_col, label_col=label_col)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc} (expected a CSV with columns task (or item), worker, "
                         "label, one row per judgement)") from exc


def loader(path: str | None, *, dataset=None, task_col=None, worker_col=None, label_col=None):
    """The data ``pyromodels fit crowd`` fits: a task/worker/label CSV
    (:func:`read_annotations`), a named crowd set (``dataset``), or by default the
    ``bluebirds`` crowd set."""
    if path is None:
        return crowd_table(dataset=dataset, model=NAME)
    if dataset is not None:
        raise ValueError("give either a data file or --dataset, not both")
    return read_annotations(path, task_col, worker_col, label_col)


# The i.i.d. Dawid-Skene model with flat Dirichlet priors, declared in the catalogue.
ENTRY = register(CROWD.entry(factory=DawidSkene, demo=demo, reproduce=reproduce, loader=loader,
                             describe=describe_fit))
