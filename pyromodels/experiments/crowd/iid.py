"""i.i.d. crowd aggregation on the ten vendored crowd sets: MV, DS-EM, Bayesian DS, crowd-kit.

For every data set of :func:`pyromodels.data.load_crowd` the labels of each method are scored
against the gold labels of the tasks that have both crowd labels and gold (``adult``: 333 of
11,040 tasks; ``web``: 2,653 of 2,665; all tasks elsewhere).

Methods:

* ``mv``: majority vote, ties broken at random (seeded);
* ``ds_em``: Dawid-Skene by EM from crowd-kit's majority-vote start, run to convergence
  (relative change of the log joint below ``em_tol``), class prior learned, ML (Dirichlet(1));
* ``bayes_ds_gibbs``: the Bayesian Dawid-Skene model (Dirichlet(1) priors) by blocked Gibbs
  sampling; each task gets the mode of its posterior class probabilities (averaged over draws);
* ``bayes_ds_gibbs_diag`` (optional, in :data:`EXTRA_METHODS`): the same sampler with a
  diagonal pseudo-count of ``K - 1`` on every confusion row (prior mean accuracy one half).
  With flat priors and many classes the posterior of a sparse worker's ``K x K`` confusion
  matrix is dominated by the prior's volume and its mode is a poor classifier (``music_genre``,
  ``K = 10``, about 67 labels per worker); the diagonal prior repairs that;
* ``crowdkit_ds``: crowd-kit's ``DawidSkene(n_iter=100, tol=1e-5)`` (needs ``crowd-kit``),
  which stops early on several sets (see ``gotchas.md``).

Label leaks: ``product`` and ``music_genre`` task ids encode the gold label. The models only
ever see integer codes, and here the task ids are further replaced by a seeded random
permutation of integers before fitting (so not even the order of the codes follows the ids);
results are mapped back to the original ids for scoring.

Example:
    >>> table = ds_accuracy_table(["bluebirds"], methods=("mv", "ds_em"))  # doctest: +SKIP
    >>> table.loc["bluebirds", "ds_em"] > table.loc["bluebirds", "mv"]  # doctest: +SKIP
    True
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch

from ...checks import check_in, check_int
from ...core.errors import ConvergenceWarning
from ...core.seeding import derive_seed, make_generator
from ...crowd.ds.data import SparseWorkerWarning
from ...crowd.estimators import DawidSkeneEstimator, MajorityVote
from ...data import list_crowd_datasets, load_crowd
from ...metrics import macro_f1

__all__ = [
    "METHODS",
    "EXTRA_METHODS",
    "IidSettings",
    "SETTINGS",
    "PAPER_TABLE_II",
    "aggregate",
    "ds_accuracy_table",
    "reproduce_iid",
]

METHODS = ("mv", "ds_em", "bayes_ds_gibbs", "crowdkit_ds")
EXTRA_METHODS = ("bayes_ds_gibbs_diag",)

#: F-scores the ensemble paper reports (Table II) on the one set it shares with ours.
PAPER_TABLE_II = {"music_genre": {"mv": 0.7046, "ds": 0.4746}}


@dataclass(frozen=True)
class IidSettings:
    """Data sets and iteration counts of one run."""

    names: tuple[str, ...]
    em_max_iter: int
    em_tol: float
    gibbs_warmup: int
    gibbs_samples: int
    gibbs_chains: int


#: ``small``: four small sets and short chains; ``medium``: every set; ``paper``: longer runs.
SETTINGS = {
    "small": IidSettings(("rte", "temp", "bluebirds", "face"), 1000, 1e-8, 100, 200, 2),
    "medium": IidSettings(tuple(list_crowd_datasets()), 2000, 1e-8, 300, 500, 2),
    "paper": IidSettings(tuple(list_crowd_datasets()), 10000, 1e-10, 1000, 2000, 4),
}


def _anonymise(answers: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.Index]:
    """Replace task ids by a seeded random permutation of ``0 .. n - 1``.

    Returns the new answers and ``ids`` with ``ids[code]`` the original id of ``code``.
    """
    ids = pd.Index(pd.unique(answers["task"]))
    codes = torch.randperm(len(ids), generator=make_generator(seed)).numpy()
    out = answers.assign(task=codes[ids.get_indexer(answers["task"])])
    original = pd.Index(ids.to_numpy()[np.argsort(codes)])
    return out, original


def aggregate(answers: pd.DataFrame, method: str, *, seed: int, settings: IidSettings,
              progress: bool = False) -> pd.Series:
    """Labels of ``method`` for the tasks of ``answers`` (task/worker/label DataFrame).

    Returns a Series indexed by the original task ids.
    """
    check_in(method, "method", METHODS + EXTRA_METHODS)
    anon, original = _anonymise(answers, derive_seed(seed, "anonymise"))
    if method == "crowdkit_ds":
        try:
            from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "method 'crowdkit_ds' needs crowd-kit: pip install crowd-kit"
            ) from exc
        labels = CrowdKitDawidSkene(n_iter=100, tol=1e-5).fit_predict(anon)
    elif method == "mv":
        labels = MajorityVote(ties="random", seed=derive_seed(seed, "mv") % 2**32,
                              allow_repeats=True).fit_predict(anon)
    else:
        common = {"allow_repeats": True, "seed": derive_seed(seed, method), "progress": progress}
        if method == "ds_em":
            est = DawidSkeneEstimator(method="em", n_iter=settings.em_max_iter, tol=settings.em_tol,
                                      diagonal=0.0, **common)  # ML, as documented above
        else:
            diagonal = answers["label"].nunique() - 1.0 if method.endswith("_diag") else None
            est = DawidSkeneEstimator(method="gibbs", num_warmup=settings.gibbs_warmup,
                                      num_samples=settings.gibbs_samples,
                                      num_chains=settings.gibbs_chains, diagonal=diagonal,
                                      **common)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SparseWorkerWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            labels = est.fit_predict(anon)
    return pd.Series(labels.to_numpy(), index=original[labels.index.to_numpy()], name=method)


def _scores(names, methods, seed: int, settings: IidSettings, progress: bool):
    acc, f1 = {}, {}
    for name in names:
        answers, gold = load_crowd(name)
        tasks = gold.index.intersection(pd.Index(answers["task"].unique()))
        acc[name], f1[name] = {"n_gold": len(tasks)}, {"n_gold": len(tasks)}
        truth = gold.loc[tasks].to_numpy()
        for method in methods:
            labels = aggregate(answers, method, seed=derive_seed(seed, name), settings=settings,
                               progress=progress)
            pred = labels.loc[tasks].to_numpy()
            acc[name][method] = float(np.mean(pred == truth))
            f1[name][method] = macro_f1(truth, pred)
    columns = ["n_gold", *methods]
    return (pd.DataFrame.from_dict(acc, orient="index")[columns],
            pd.DataFrame.from_dict(f1, orient="index")[columns])


def _check_names_methods(names, methods) -> tuple[tuple, tuple]:
    names = tuple(list_crowd_datasets()) if names is None else tuple(names)
    for name in names:
        check_in(name, "names", list_crowd_datasets())
    methods = tuple(methods)
    if not methods:
        raise ValueError(f"methods must name at least one of {list(METHODS)}")
    for method in methods:
        check_in(method, "methods", METHODS + EXTRA_METHODS)
    return names, methods


def ds_accuracy_table(names=None, methods=METHODS, seed: int = 0, *,
                      settings: IidSettings | None = None, progress: bool = False) -> pd.DataFrame:
    """Accuracy against gold of each method on each data set.

    Args:
        names: data sets (default: all ten of :func:`~pyromodels.data.list_crowd_datasets`).
        methods: names from :data:`METHODS` and :data:`EXTRA_METHODS`.
        seed: integer seed; every (set, method) derives its own.
        settings: iteration counts (default ``SETTINGS["medium"]``; its ``names`` are ignored).
        progress: show progress bars.

    Returns:
        DataFrame indexed by data set with a column ``n_gold`` (tasks scored) and one accuracy
        column per method.
    """
    names, methods = _check_names_methods(names, methods)
    seed = check_int(seed, "seed", minimum=0)
    settings = SETTINGS["medium"] if settings is None else settings
    return _scores(names, methods, seed, settings, progress)[0]


def reproduce_iid(*, scale: str = "small", progress: bool = False, seed: int = 0):
    """The accuracy and macro-F1 tables at ``scale`` (``"small"``, ``"medium"``, ``"paper"``).

    Returns:
        A :class:`~pyromodels.report.DemoResult` named ``"crowd-iid-<scale>"`` with tables
        ``accuracy`` and ``macro-F1``, metrics ``{set: {method: accuracy}}`` and, for
        ``music_genre``, the paper's Table II F-scores beside ours.
    """
    from ...report import DemoResult

    check_in(scale, "scale", tuple(SETTINGS))
    seed = check_int(seed, "seed", minimum=0)
    settings = SETTINGS[scale]
    methods = METHODS + EXTRA_METHODS
    acc, f1 = _scores(settings.names, methods, seed, settings, progress)
    metrics = {name: {k: (int(v) if k == "n_gold" else float(v)) for k, v in row.items()}
               for name, row in acc.to_dict("index").items()}
    if "music_genre" in f1.index:
        metrics["music_genre"]["paper_table_ii_f1"] = dict(PAPER_TABLE_II["music_genre"])
        metrics["music_genre"]["macro_f1"] = {m: float(f1.loc["music_genre", m]) for m in methods}
    metrics["settings"] = {k: (list(v) if isinstance(v, tuple) else v)
                           for k, v in asdict(settings).items()}
    best = acc[list(methods)].idxmax(axis=1)
    summary = (
        "Accuracy against gold of majority vote, Dawid-Skene EM, Bayesian Dawid-Skene (Gibbs; "
        "flat and diagonal priors) and crowd-kit's DawidSkene on "
        f"{len(acc)} crowd data sets. Best per set: "
        + ", ".join(f"{n}: {m}" for n, m in best.items()) + "."
    )
    return DemoResult(name=f"crowd-iid-{scale}", summary=summary, metrics=metrics,
                      tables={"accuracy": acc, "macro-F1": f1})
