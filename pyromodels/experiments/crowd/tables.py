r"""The ensemble paper's methods, and Tables I (sequential) and II (networked) on real data.

Methods (keys as in :mod:`~pyromodels.experiments.crowd.paper_numbers`; ``mm`` and ``oracle`` appear
only in the synthetic studies):

=============  ==========================================================================
``mv``         majority vote, ties broken at random (seeded)
``mm``         moment matching (eq. 17) and the MAP rule (eq. 18)
``ds``         Dawid-Skene EM (eqs. 9, 11, class prior learned) started from ``mm``
``alg2``       ``mm``, the transition from the lag-1 moments (eqs. 22-23), Viterbi
``alg2_alg1``  Baum-Welch (Alg. 1, corrected orientation) started from ``alg2``
``mv_alg1``    Baum-Welch started from one M-step on the majority-vote labels
``alg4``       mode-field EM (Alg. 3) started from ``mm``: labels by eq. 18, then ICM
``mv_alg3``    Alg. 3 started from majority vote
``oracle``     Viterbi with the true parameters (synthetic data only)
=============  ==========================================================================

Moment estimates can hold exact zeros, and a zero never recovers in EM, so every estimate
handed on as a starting point is floored at ``floor`` (``normalize_rows(x, floor)``, default
``1e-6``); Baum-Welch runs with Dirichlet concentrations ``1 + 1e-8`` (the MAP step of a nearly
flat prior), which keeps its entries positive as well.

Example:
    >>> table, sizes = paper_table("II", ["cora"], seed=0)  # doctest: +SKIP
    >>> table.loc[("cora", "alg4"), "f_score"] > table.loc[("cora", "mv"), "f_score"]  # doctest: +SKIP
    True
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import pandas as pd
import torch

from ...checks import check_in, check_int
from ...core.errors import ConvergenceWarning
from ...core.seeding import derive_seed
from ...crowd.ds.model import DawidSkene
from ...crowd.emissions import log_emissions, normalize_rows
from ...crowd.hmm import SequentialDawidSkene, viterbi
from ...crowd.majority import majority_vote
from ...crowd.moments.fit import fit_moments, moment_labels
from ...crowd.moments.sequential import fit_sequential_moments
from ...crowd.mrf import networked_em
from . import paper_numbers as paper
from .inputs.builders import build_task
from .scores import score_task, single_best

__all__ = ["SEQUENTIAL_METHODS", "NETWORKED_METHODS", "MethodSettings", "Estimate",
           "sequential_estimates", "networked_estimates", "score_methods", "reasons",
           "task_options", "paper_table", "TABLE_I_TASKS", "TABLE_II_TASKS", "DELTA", "TOLERANCE"]

SEQUENTIAL_METHODS = ("mv", "mm", "ds", "alg2", "alg2_alg1", "mv_alg1", "oracle")
NETWORKED_METHODS = ("mv", "mm", "ds", "alg4", "mv_alg3")
TOLERANCE = 0.03  #: |ours - paper| above which a row gets a reason
_CONCENTRATION = 1.0 + 1e-8
#: the shared steps (moment estimates) each method builds on
_NEEDS = {"mm": ("mm",), "ds": ("mm",), "alg2": ("mm", "seq"), "alg2_alg1": ("mm", "seq"),
          "alg4": ("mm",)}


@dataclass(frozen=True)
class MethodSettings:
    """Iteration budgets of the methods.

    Attributes:
        mm_n_init, mm_max_iter, mm_tol, mm_max_workers: starts, sweeps, relative tolerance
            and workers (``None``: all) of :func:`~pyromodels.crowd.moments.fit.fit_moments`.
        em_max_iter, em_tol: Dawid-Skene EM and Baum-Welch iterations and tolerance.
        mrf_max_iter, icm_max_iter: Alg. 3 outer iterations and ICM sweeps per iteration.
        floor: floor of the moment estimates handed on as starting points.
    """

    mm_n_init: int = 1
    mm_max_iter: int = 100
    mm_tol: float = 1e-6
    mm_max_workers: int | None = None
    em_max_iter: int = 200
    em_tol: float = 1e-7
    mrf_max_iter: int = 50
    icm_max_iter: int = 50
    floor: float = 1e-6


@dataclass(frozen=True, eq=False)
class Estimate:
    """One method's output: labels ``(N,)``; confusion ``(M, K, K)``, transition ``(K, K)``
    and prior ``(K,)`` estimates (the class prior, or the law of a sequence's first label for
    the HMM methods; ``None`` where the method has none); seconds from scratch."""

    labels: torch.Tensor
    confusion: torch.Tensor | None = None
    transition: torch.Tensor | None = None
    prior: torch.Tensor | None = None
    seconds: float = 0.0


def _check_names(values, name: str, allowed) -> tuple[str, ...]:
    """``values`` as a tuple of names from ``allowed`` (at least one)."""
    if isinstance(values, str):
        raise TypeError(f"{name} must be a sequence of names, got the string {values!r}")
    values = tuple(values)
    if not values:
        raise ValueError(f"{name} must name at least one of {list(allowed)}")
    for value in values:
        check_in(value, name, allowed)
    return values


class _Shared:
    """Steps several methods share (the moment estimates), each run once and timed."""

    def __init__(self, makers: dict):
        self.makers, self.values, self.seconds = makers, {}, {}

    def __call__(self, key: str):
        if key not in self.values:
            start = time.perf_counter()
            self.values[key] = self.makers[key]()
            self.seconds[key] = time.perf_counter() - start
        return self.values[key]


def _run_all(methods, makers: dict, shared: _Shared) -> dict[str, Estimate]:
    """Run ``makers[method]()`` for each method; ``seconds`` is the method's cost from scratch
    (its own steps plus the shared steps :data:`_NEEDS` it uses, counted for each user)."""
    out = {}
    for method in methods:
        before = sum(shared.seconds.values())
        start = time.perf_counter()
        fields = makers[method]()
        own = time.perf_counter() - start - (sum(shared.seconds.values()) - before)
        seconds = own + sum(shared.seconds[k] for k in _NEEDS.get(method, ()))
        out[method] = Estimate(**fields, seconds=seconds)
    return out


def _moments(table, settings: MethodSettings, seed: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit_moments(table, n_init=settings.mm_n_init, max_iter=settings.mm_max_iter,
                           tol=settings.mm_tol, max_workers=settings.mm_max_workers,
                           seed=derive_seed(seed, "mm") % 2**62)


def _ds(table, mm, settings: MethodSettings, seed: int):
    """Dawid-Skene EM (class prior learned) from the floored moment estimate."""
    init = {"prior": normalize_rows(mm.prior, settings.floor),
            "confusion": normalize_rows(mm.confusion, settings.floor)}
    post = DawidSkene(allow_unlabelled=True).fit(
        table, method="em", init=init, max_iter=settings.em_max_iter, tol=settings.em_tol,
        seed=derive_seed(seed, "ds"), progress=False, warn_not_converged=False)
    return {"labels": post.params["labels"], "confusion": post.params["confusion"],
            "prior": post.params["prior"]}


def _mm(table, mm):
    return {"labels": moment_labels(table, mm), "confusion": mm.confusion, "prior": mm.prior}


def _mv(table, seed: int):  # ties broken at random
    return {"labels": majority_vote(table, seed=derive_seed(seed, "mv") % 2**62)}


def sequential_estimates(sequences, methods=SEQUENTIAL_METHODS[:-1], settings=None, *,
                         seed: int = 0, truth: dict | None = None) -> dict[str, Estimate]:
    r"""Run the sequential methods of Table I and Figs. 4-7 on ``sequences``.

    Args:
        sequences: :class:`~pyromodels.data.Sequences` over an AnnotationTable.
        methods: keys of :data:`SEQUENTIAL_METHODS` (default all but ``"oracle"``).
        settings: :class:`MethodSettings` (default ``MethodSettings()``).
        seed: integer seed; each method derives its own.
        truth: ``{"initial", "transition", "confusion"}``, the true parameters (``"oracle"``).

    Returns:
        ``{method: Estimate}`` in the order of ``methods``.
    """
    methods = _check_names(methods, "methods", SEQUENTIAL_METHODS)
    settings = MethodSettings() if settings is None else settings
    seed = check_int(seed, "seed", minimum=0)
    if "oracle" in methods and not (isinstance(truth, dict) and {
            "initial", "transition", "confusion"} <= set(truth)):
        raise ValueError("method 'oracle' needs truth={'initial', 'transition', 'confusion'}")
    table, lengths, floor = sequences.data, sequences.lengths, settings.floor
    hmm = SequentialDawidSkene(initial_concentration=_CONCENTRATION,
                               transition_concentration=_CONCENTRATION,
                               confusion_concentration=_CONCENTRATION)
    shared = _Shared({
        "mm": lambda: _moments(table, settings, seed),
        "seq": lambda: fit_sequential_moments(sequences, moment_estimate=shared("mm")),
    })

    def decode(initial, transition, confusion):
        e = log_emissions(table, normalize_rows(confusion, floor).log())
        return viterbi(e, normalize_rows(initial, floor).log(),
                       normalize_rows(transition, floor).log(), lengths)[0]

    def baum_welch(start):
        post = hmm.fit(sequences, method="em", init=start, seed=derive_seed(seed, "bw"),
                       max_iter=settings.em_max_iter, tol=settings.em_tol, progress=False,
                       warn_not_converged=False)
        return {k: post.params[k] for k in ("labels", "confusion", "transition")} | {
            "prior": post.params["initial"]}

    def alg2():
        seq = shared("seq")
        return {"labels": decode(seq.prior, seq.transition, seq.confusion), "prior": seq.prior,
                "confusion": seq.confusion, "transition": seq.transition}

    def alg2_alg1():
        seq = shared("seq")
        return baum_welch(hmm.start_from(
            sequences, confusion=normalize_rows(seq.confusion, floor),
            transition=normalize_rows(seq.transition, floor),
            initial=normalize_rows(seq.prior, floor)))

    makers = {
        "mv": lambda: _mv(table, seed),
        "mm": lambda: _mm(table, shared("mm")),
        "ds": lambda: _ds(table, shared("mm"), settings, seed),
        "alg2": alg2, "alg2_alg1": alg2_alg1, "mv_alg1": lambda: baum_welch(None),
        "oracle": lambda: {"labels": decode(truth["initial"], truth["transition"],
                                            truth["confusion"])},
    }
    return _run_all(methods, makers, shared)


def networked_estimates(table, graph, methods=NETWORKED_METHODS, settings=None, *,
                        delta="M", seed: int = 0) -> dict[str, Estimate]:
    """Run the networked methods of Table II and Figs. 8-10.

    Args:
        table, graph: the AnnotationTable and a :class:`~pyromodels.data.Graph` on its items.
        methods: keys of :data:`NETWORKED_METHODS`.
        settings, seed: as :func:`sequential_estimates`.
        delta: the Potts coupling: ``"M"`` (the paper's choice for classifier ensembles),
            ``"node"`` (``M_n / 2``, its choice for crowd data) or a number.

    Returns:
        ``{method: Estimate}`` in the order of ``methods``.
    """
    methods = _check_names(methods, "methods", NETWORKED_METHODS)
    settings = MethodSettings() if settings is None else settings
    seed = check_int(seed, "seed", minimum=0)
    shared = _Shared({"mm": lambda: _moments(table, settings, seed)})

    def alg3(**start):
        fit = networked_em(table, graph, delta, seed=derive_seed(seed, "mrf") % 2**62,
                           max_iter=settings.mrf_max_iter, icm_max_iter=settings.icm_max_iter,
                           init_floor=settings.floor, warn_not_converged=False, **start)
        return {"labels": fit.params["labels"], "confusion": fit.params["confusion"]}

    makers = {
        "mv": lambda: _mv(table, seed),
        "mm": lambda: _mm(table, shared("mm")),
        "ds": lambda: _ds(table, shared("mm"), settings, seed),
        "alg4": lambda: alg3(confusion=shared("mm").confusion,
                             prior=normalize_rows(shared("mm").prior, settings.floor)),
        "mv_alg3": alg3,
    }
    return _run_all(methods, makers, shared)


# ------------------------------------------------------------------------ Tables I and II
TABLE_I_TASKS = ("pos", "ner", "bioie")
TABLE_II_TASKS = ("cora", "citeseer", "pubmed", "music_genre")
#: the paper's coupling: delta = M for classifier ensembles, delta_n = M_n / 2 for crowds
DELTA = {"cora": "M", "citeseer": "M", "pubmed": "M", "music_genre": "node"}
_LEARNERS = ("different learners: ten scikit-learn classifiers in place of the paper's unnamed "
             "MATLAB ones, so every method sees other responses")
#: ``(data set, method or None for every method)`` -> starts of the crowd_paper notes that apply
_NOTES = {
    ("pos", None): ("POS:", "Eq. (37)"),
    ("ner", None): ("NER:",),
    ("ner", "alg2"): ("Table I, NER, Alg. 2",),
    ("ner", "single_best"): ("Table I, NER, single best",),
    ("bioie", None): ("Table I, Biomedical IE: the printed recall", "Table I, Biomedical IE: N"),
    ("cora", None): ("Table II: Cora K",),
    ("cora", "mv_alg3"): ("Text: 'Alg. 4",),
    ("citeseer", None): ("Table II: Cora K", "CiteSeer:"),
    ("pubmed", None): ("Pubmed:",),
    ("music_genre", "single_best"): ("Table II, Music Genre",),
}


def _paper_note(start: str) -> str:
    found = [t for t in paper.PAPER_ERRORS + paper.DATA_DIFFERENCES if t.startswith(start)]
    if len(found) != 1:
        raise LookupError(f"expected one crowd_paper note starting {start!r}, got {found}")
    return found[0]


def reasons(dataset: str, method: str, *, scored: int | None = None,
            paper_n: int | None = None) -> list[str]:
    """Why our number for ``(dataset, method)`` may differ from the paper's: the paper's
    errors and data differences of :mod:`~pyromodels.experiments.crowd.paper_numbers` that bear on
    the row, the citation graphs' different learners, the single best's oracle choice, and
    the size when the ``scored`` items differ from the paper's ``N`` by more than 5%."""
    notes = [_paper_note(s) for key in ((dataset, None), (dataset, method))
             for s in _NOTES.get(key, ())]
    if dataset in ("cora", "citeseer", "pubmed"):
        notes.append(_LEARNERS)
    if method == "single_best":
        notes.append("single best: chosen with the gold labels (an oracle), scored on the items "
                     "it labelled" + (" (the paper's '*')" * ((dataset, method)
                                                               in paper.SUBSET_SCORES)))
    if scored is not None and paper_n is not None and abs(scored - paper_n) > 0.05 * paper_n:
        notes.append(f"we score {scored:,} items, the paper's N is {paper_n:,}")
    return notes


def _paper_values(dataset: str, method: str, metric: str) -> float:
    row = (paper.TABLE_I[dataset]["scores"][metric] if dataset in paper.TABLE_I
           else paper.TABLE_II.get(dataset, {}).get(metric, {}))
    return row.get(method, float("nan"))


def score_methods(task, estimates: dict, metrics=("precision", "recall", "f_score")
                  ) -> pd.DataFrame:
    """Our scores beside the paper's for every method of one task (single best first).

    Returns:
        DataFrame indexed by ``(dataset, method)``: for each metric ``m`` the columns ``m``
        and ``m (paper)``, then ``accuracy``, ``seconds`` and ``reason`` (empty unless some
        metric differs from the paper's by more than :data:`TOLERANCE`).
    """
    best = single_best(task)
    scored = {"single_best": (best.scores, float("nan"))}
    scored.update({m: (score_task(task, e.labels), e.seconds) for m, e in estimates.items()})
    paper_n = (paper.TABLE_I.get(task.name) or paper.TABLE_II.get(task.name) or {}).get("N")
    rows = {}
    for method, (scores, seconds) in scored.items():
        row, gap = {}, 0.0
        for metric in metrics:
            ours, theirs = getattr(scores, metric), _paper_values(task.name, method, metric)
            row[metric], row[f"{metric} (paper)"] = ours, theirs
            if theirs == theirs:  # not NaN
                gap = max(gap, abs(ours - theirs))
        row["accuracy"], row["seconds"] = scores.accuracy, seconds
        row["reason"] = ("; ".join(reasons(task.name, method, scored=scores.num_items,
                                           paper_n=paper_n)) if gap > TOLERANCE else "")
        rows[(task.name, method)] = row
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.names = ["dataset", "method"]
    return frame


def task_options(name: str, scale: str) -> dict:
    """:func:`~pyromodels.experiments.crowd.inputs.builders.build_task` options of a task at reproduction
    ``scale``: ``small`` builds the small subsets, ``medium`` the full POS and NER tasks but
    Biomedical IE on its 191 expert-labelled abstracts, ``paper`` everything in full."""
    check_in(scale, "scale", ("small", "medium", "paper"))
    if name not in TABLE_I_TASKS:
        return {}
    return {"scale": "paper" if scale == "paper" or (scale == "medium" and name != "bioie")
            else "small"}


def paper_table(kind: str, names=None, settings=None, *, scale: str = "small", seed: int = 0,
                progress=None, tasks: dict | None = None):
    """Table I (``kind="I"``: sequential methods on POS, NER, Biomedical IE; precision, recall
    and F) or Table II (``kind="II"``: networked methods on Cora, CiteSeer, Pubmed, Music
    Genre; F only), ours beside the paper's.

    Args:
        kind: ``"I"`` or ``"II"``; names: its tasks (:data:`TABLE_I_TASKS` or
            :data:`TABLE_II_TASKS`, default all).
        settings: :class:`MethodSettings`; scale: see :func:`task_options`.
        seed: integer seed (task ``name`` uses ``derive_seed(seed, name)``); progress: an
            optional callable ``progress(message)``; tasks: prebuilt ``{name: CrowdTask}``.

    Returns:
        ``(table, sizes)``: the :func:`score_methods` rows of every task, and each task's
        ``summary()``.
    """
    check_in(kind, "kind", ("I", "II"))
    allowed = TABLE_I_TASKS if kind == "I" else TABLE_II_TASKS
    names = _check_names(allowed if names is None else names, "names", allowed)
    check_in(scale, "scale", ("small", "medium", "paper"))
    settings = MethodSettings() if settings is None else settings
    seed = check_int(seed, "seed", minimum=0)
    frames, sizes = [], {}
    for name in names:
        if progress is not None:
            progress(f"Table {kind}: {name}")
        task = (tasks or {}).get(name) or build_task(name, **task_options(name, scale))
        if kind == "I":
            est = sequential_estimates(task.sequences, paper.TABLE_I_METHODS[1:], settings,
                                       seed=derive_seed(seed, name))
            frames.append(score_methods(task, est))
        else:
            est = networked_estimates(task.table, task.graph, paper.TABLE_II_METHODS[1:],
                                      settings, delta=DELTA[name], seed=derive_seed(seed, name))
            frames.append(score_methods(task, est, ("f_score",)))
        sizes[name] = task.summary()
    return pd.concat(frames), sizes
