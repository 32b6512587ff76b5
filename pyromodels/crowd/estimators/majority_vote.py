"""The majority-vote facade: crowd-kit's ``MajorityVote`` interface.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b"],
    ...                    "worker": ["u", "v", "w", "u", "v", "w"],
    ...                    "label": ["cat", "cat", "dog", "dog", "dog", "dog"]})
    >>> MajorityVote().fit_predict(df).to_dict()
    {'a': 'cat', 'b': 'dog'}
"""

from __future__ import annotations

from ...checks import check_in, check_int
from ..majority import majority_vote, vote_fractions
from .base import CrowdAggregator

__all__ = ["MajorityVote"]


class MajorityVote(CrowdAggregator):
    """Majority vote: each task gets its most frequent label.

    Args:
        ties: ``"random"`` (seeded, default), ``"smallest"`` (the first class in sorted order)
            or ``"first"`` (the tied class that appears first in the table: crowd-kit's rule).
        seed: seed for random tie-breaking.
        random_state: scikit-learn's name for the seed (an int, a ``numpy.random.RandomState``
            or ``numpy.random.Generator``); when it is not ``None`` it wins over ``seed``.
        task, worker, label: column names of the DataFrame.
        classes: the class list (default: the sorted distinct labels); a label outside it is
            an error.
        allow_repeats: accept several labels from one worker on one task.

    Attributes:
        labels_: Series of labels indexed by task.
        probas_: vote fractions, DataFrame tasks x classes.
        table_: the :class:`~pyromodels.data.AnnotationTable` built from the data.
    """

    _per_worker_confusions = False

    def __init__(self, ties: str = "random", seed: int = 0, *, random_state=None,
                 task: str = "task", worker: str = "worker", label: str = "label", classes=None,
                 allow_repeats: bool = False):
        self.ties = ties
        self.seed = seed
        self.random_state = random_state
        self.task = task
        self.worker = worker
        self.label = label
        self.classes = classes
        self.allow_repeats = allow_repeats

    def fit(self, df) -> MajorityVote:
        """Count the votes of ``df`` (one row per judgement)."""
        check_in(self.ties, "ties", ("random", "smallest", "first"))
        seed = check_int(self._seed(), "seed", minimum=0)
        table = self._table(df)
        self._store(table, vote_fractions(table), majority_vote(table, ties=self.ties, seed=seed))
        return self
