"""The majority-vote facade: crowd-kit's ``MajorityVote`` interface, plain or weighted.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b"],
    ...                    "worker": ["u", "v", "w", "u", "v", "w"],
    ...                    "label": ["cat", "cat", "dog", "dog", "dog", "dog"]})
    >>> MajorityVote().fit_predict(df).to_dict()
    {'a': 'cat', 'b': 'dog'}
    >>> skills = pd.Series({"u": 0.2, "v": 0.2, "w": 0.9})
    >>> MajorityVote().fit_predict(df, skills=skills).to_dict()
    {'a': 'dog', 'b': 'dog'}
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
import torch

from ...checks import check_in, check_int
from ..majority import majority_vote, vote_fractions
from .base import CrowdAggregator

__all__ = ["MajorityVote"]

ON_MISSING_SKILL = ("error", "ignore", "value")


class MajorityVote(CrowdAggregator):
    """Majority vote: each task gets its most frequent label, or with ``fit(df, skills=...)``
    the label whose workers' skills sum highest (a weighted vote).

    Args:
        ties: ``"random"`` (seeded, default), ``"smallest"`` (the first class in sorted order)
            or ``"first"`` (the tied class that appears first in the table: crowd-kit's rule).
        seed: seed for random tie-breaking.
        random_state: scikit-learn's name for the seed (an int, a ``numpy.random.RandomState``
            or ``numpy.random.Generator``); when it is not ``None`` it wins over ``seed``.
        on_missing_skill: what a weighted vote does with a worker that ``skills`` lacks:
            ``"error"`` (default) raises a ``ValueError``, ``"ignore"`` drops that worker's
            labels (a task left without labels is an error), ``"value"`` gives the worker
            ``default_skill`` (crowd-kit's names and rules).
        default_skill: the skill of a worker missing from ``skills``; only with
            ``on_missing_skill="value"``, which needs it.
        task, worker, label: column names of the DataFrame.
        classes: the class list (default: the sorted distinct labels); a label outside it is
            an error.
        allow_repeats: accept several labels from one worker on one task.

    Attributes:
        labels_: Series of labels indexed by task (name ``agg_label``).
        probas_: vote fractions (weighted ones for a weighted vote), float64 DataFrame tasks x
            classes.
        skills_: the share of each worker's labels that agree with ``labels_``, Series indexed
            by worker (name ``skill``), as crowd-kit; with ``on_missing_skill="ignore"`` only
            the workers whose labels were counted.
        table_: the :class:`~pyromodels.data.AnnotationTable` built from the data.

    A ``df`` without rows (but with the columns) gives crowd-kit's empty results, an empty
    ``probas_``, ``labels_`` and ``skills_`` and ``table_=None``, with a ``UserWarning`` that
    there were no labels to aggregate.
    """

    _fitted = ("labels_", "probas_", "skills_", "table_")
    _per_worker_confusions = False

    def __init__(self, ties: str = "random", seed: int = 0, *, random_state=None,
                 on_missing_skill: str = "error", default_skill: float | None = None,
                 task: str = "task", worker: str = "worker", label: str = "label", classes=None,
                 allow_repeats: bool = False):
        self.ties = ties
        self.seed = seed
        self.random_state = random_state
        self.on_missing_skill = on_missing_skill
        self.default_skill = default_skill
        self.task = task
        self.worker = worker
        self.label = label
        self.classes = classes
        self.allow_repeats = allow_repeats

    def _check_skill_options(self) -> None:
        check_in(self.on_missing_skill, "on_missing_skill", ON_MISSING_SKILL)
        if self.on_missing_skill != "value":
            if self.default_skill is not None:
                raise ValueError(
                    f"default_skill={self.default_skill!r} is used only with "
                    f"on_missing_skill='value', got on_missing_skill={self.on_missing_skill!r}"
                )
            return
        value = self.default_skill
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not np.isfinite(value) or value < 0):
            raise ValueError(
                "on_missing_skill='value' needs default_skill, a finite number >= 0, got "
                f"{value!r}"
            )

    def _skilled_rows(self, df: pd.DataFrame, skills) -> tuple[pd.DataFrame, pd.Series]:
        """``df`` (without the labels of unskilled workers under ``"ignore"``) and the skill of
        each of its workers (Series indexed by worker), per ``on_missing_skill``."""
        if not isinstance(skills, pd.Series):
            raise TypeError(f"skills must be a pandas Series indexed by worker, got "
                            f"{type(skills).__name__}")
        values = pd.to_numeric(skills, errors="coerce")
        bad = values.isna() | ~np.isfinite(values) | (values < 0)
        if bad.any():
            raise ValueError(
                f"skills must be finite numbers >= 0; worker(s) {list(skills.index[bad][:5])} "
                f"have {list(skills[bad][:5])}"
            )
        if skills.index.has_duplicates:
            dup = skills.index[skills.index.duplicated()].unique()
            raise ValueError(f"skills lists worker(s) {list(dup[:5])} more than once")
        row_skill = df[self.worker].map(values)
        missing = row_skill.isna()
        if missing.any() and self.on_missing_skill == "error":
            workers = pd.unique(df.loc[missing, self.worker])
            raise ValueError(
                f"skills lacks {len(workers)} worker(s) of df, e.g. {list(workers[:5])} "
                f"({int(missing.sum())} labels); give every worker a skill, or use "
                "on_missing_skill='ignore' or 'value'"
            )
        if self.on_missing_skill == "value":
            default = pd.Series(float(self.default_skill), index=pd.unique(df[self.worker]))
            return df, values.combine_first(default)
        if missing.any():  # "ignore"
            kept = df.loc[~missing]
            lost = pd.Index(pd.unique(df[self.task])).difference(pd.unique(kept[self.task]))
            if len(lost) or kept.empty:
                raise ValueError(
                    f"{len(lost)} task(s) have no label from a worker with a known skill, e.g. "
                    f"{list(lost[:5])}; give their workers skills or use on_missing_skill='value'"
                )
            return kept, values
        return df, values

    def fit(self, df, skills: pd.Series | None = None) -> MajorityVote:
        """Count the votes of ``df`` (one row per judgement), weighted by ``skills`` (a Series
        ``worker -> skill >= 0``) when given."""
        check_in(self.ties, "ties", ("random", "smallest", "first"))
        self._check_skill_options()
        seed = check_int(self._seed(), "seed", minimum=0)
        if self._empty_input(df):  # crowd-kit's empty results, after a warning
            self._store_empty(object)
            named = lambda name: pd.Index([], dtype=object, name=name)  # noqa: E731
            self.probas_ = pd.DataFrame(index=named(self.task), columns=named(self.label))
            self.skills_ = pd.Series(index=named(self.worker), dtype=float, name="skill")
            return self
        weights = None
        table = self._table(df)  # the columns and labels checked before the skills are read
        if skills is not None:
            kept, worker_skill = self._skilled_rows(df, skills)
            if kept is not df:  # "ignore" dropped the labels of workers without a skill
                table = self._table(kept)
            per_worker = worker_skill.reindex(table.workers).to_numpy(dtype=np.float64)
            weights = torch.tensor(per_worker)[table.worker_idx]
        labels = majority_vote(table, ties=self.ties, seed=seed, weights=weights)
        self._store(table, vote_fractions(table, weights), labels)
        self.skills_ = self._agreement(table, labels)
        return self

    def _agreement(self, table, labels: torch.Tensor) -> pd.Series:
        """Share of each worker's labels equal to the task's label."""
        agree = (table.label_idx == labels[table.item_idx]).double()
        given = torch.bincount(table.worker_idx, minlength=table.num_workers).double()
        hits = torch.zeros(table.num_workers, dtype=torch.float64).index_add_(
            0, table.worker_idx, agree)
        skills = table.index_workers(hits / given.clamp_min(1)).rename("skill")
        skills.index.name = self.worker
        return skills
