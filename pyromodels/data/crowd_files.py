"""Crowd labels read from files: answer tables, gold labels, sequence positions and edge lists.

An answer file is a CSV with one row per judgement and a task, a worker and a label column
(named ``task``, ``worker``, ``label`` by default; ``item`` is accepted for ``task``, as the
shared data sets name it). A named data set is one of the bundled crowd sets
(:func:`~pyromodels.data.list_crowd_datasets`) or a folder ``<name>/`` under
``$PYROMODELS_DATA`` holding ``answers.csv`` (or ``answers.csv.gz``) and optionally
``gold.csv``. Messages never repeat the file's path: the caller names the file once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .annotations import item_column
from .crowd_sets import list_crowd_datasets, load_crowd
from .idmaps import plain
from .paths import ENV_VAR, env_roots

__all__ = [
    "CrowdColumns",
    "CrowdFiles",
    "read_csv_table",
    "read_answers",
    "read_gold",
    "find_crowd_dataset",
    "order_by_sequence",
    "read_edges",
    "load_answers_and_gold",
]


@dataclass(frozen=True)
class CrowdColumns:
    """Column names of an answer table; ``None`` takes the default (``task`` or ``item``,
    ``worker``, ``label``)."""

    task: str | None = None
    worker: str | None = None
    label: str | None = None

    def resolve(self, frame: pd.DataFrame) -> dict[str, str]:
        """``{"task": ..., "worker": ..., "label": ...}``: the columns of ``frame`` to read."""
        task = self.task if self.task is not None else item_column(frame)
        return {"task": task, "worker": self.worker or "worker", "label": self.label or "label"}


@dataclass(frozen=True)
class CrowdFiles:
    """Where a named data set's files are: ``answers`` and, if the set has one, ``gold``
    (``None`` for the bundled sets, which :func:`~pyromodels.data.load_crowd` reads)."""

    name: str
    answers: Path | None
    gold: Path | None


def read_csv_table(path, what: str = "a CSV table") -> pd.DataFrame:
    """Read a CSV file into a DataFrame, raising ``ValueError`` for an empty file.

    Args:
        path: ``str`` or ``Path``.
        what: what the file should hold, for the message.
    """
    if not isinstance(path, str | Path):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"the file is empty: expected {what}") from None


def _pick(frame: pd.DataFrame, chosen: dict[str, str]) -> pd.DataFrame:
    if len(frame) == 0:
        raise ValueError("the table has no rows")
    missing = [col for col in chosen.values() if col not in frame.columns]
    if missing:
        raise ValueError(f"no column(s) {missing} among the table's columns {list(frame.columns)}")
    return frame[list(chosen.values())].set_axis(list(chosen), axis=1)


def read_answers(source, columns: CrowdColumns = CrowdColumns()) -> pd.DataFrame:
    """The judgements of an answer CSV (or DataFrame) as a DataFrame with columns ``task``,
    ``worker``, ``label`` in the user's ids (other columns are dropped).

    Args:
        source: a CSV path or a DataFrame.
        columns: the names of the three columns in ``source``.

    Raises:
        ValueError: an empty file or table, or a missing column (the message lists the
            columns the table has).

    Example:
        >>> df = pd.DataFrame({"item": [1, 1], "worker": ["a", "b"], "label": [0, 1]})
        >>> list(read_answers(df).columns)
        ['task', 'worker', 'label']
    """
    frame = source if isinstance(source, pd.DataFrame) else read_csv_table(
        source, "a CSV with task, worker and label columns, one row per judgement")
    return _pick(frame, columns.resolve(frame))


def read_gold(path, columns: CrowdColumns = CrowdColumns()) -> pd.Series:
    """Gold labels from a CSV with a task column (``task`` or ``item``) and a ``label``
    column: a Series named ``label`` indexed by task.

    Raises:
        ValueError: an empty file, a missing column, a task listed twice or a missing label.
    """
    frame = read_csv_table(path, "a CSV with task and label columns, one row per task")
    chosen = columns.resolve(frame)
    chosen.pop("worker")
    picked = _pick(frame, chosen)
    gold = picked.set_index("task")["label"]
    if gold.index.has_duplicates:
        twice = [plain(t) for t in gold.index[gold.index.duplicated()].unique()[:5]]
        raise ValueError(f"gold lists task(s) {twice} more than once")
    if gold.isna().any():
        raise ValueError(f"gold has {int(gold.isna().sum())} task(s) without a label")
    return gold


def find_crowd_dataset(name: str) -> CrowdFiles:
    """Locate the crowd data set ``name``: a bundled set, else ``$PYROMODELS_DATA/<name>/``.

    Raises:
        ValueError: no such set (the message lists the bundled ones and where else it looked).
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    if name in list_crowd_datasets():
        return CrowdFiles(name, None, None)
    for root in env_roots(ENV_VAR):
        folder = root / name
        for answers in (folder / "answers.csv", folder / "answers.csv.gz"):
            if answers.is_file():
                gold = folder / "gold.csv"
                return CrowdFiles(name, answers, gold if gold.is_file() else None)
    roots = [str(r) for r in env_roots(ENV_VAR)] or [f"(${ENV_VAR} is not set)"]
    raise ValueError(
        f"unknown crowd data set {name!r}: the bundled sets are "
        f"{', '.join(list_crowd_datasets())}; no {name}/answers.csv under {', '.join(roots)}"
    )


def load_answers_and_gold(files: CrowdFiles) -> tuple[pd.DataFrame, pd.Series | None]:
    """``(answers, gold)`` of a located data set (see :func:`find_crowd_dataset`); ``gold`` is
    ``None`` when the set has none."""
    if files.answers is None:
        return load_crowd(files.name)
    gold = read_gold(files.gold) if files.gold is not None else None
    return read_answers(files.answers), gold



def order_by_sequence(answers: pd.DataFrame, sequence: pd.Series,
                      position: pd.Series) -> tuple[pd.Index, list[int]]:
    """The tasks in sequence order and the sequence lengths, from per-judgement columns.

    Args:
        answers: the judgements (``task`` column), as :func:`read_answers` returns them.
        sequence, position: for each judgement, the sequence of its task and the task's
            position in it (aligned with ``answers``).

    Returns:
        ``(tasks, lengths)``: the task ids ordered by (sequence, position), and the number of
        tasks of each sequence in that order.

    Raises:
        ValueError: a missing value, a task given two sequences or positions, or two tasks
            at one position of a sequence.
    """
    frame = pd.DataFrame({"task": answers["task"].to_numpy(), "sequence": sequence.to_numpy(),
                          "position": position.to_numpy()})
    if frame.isna().any().any():
        raise ValueError("the sequence and position columns must have a value on every row")
    per_task = frame.drop_duplicates()
    if per_task["task"].duplicated().any():
        task = per_task.loc[per_task["task"].duplicated(), "task"].iloc[0]
        raise ValueError(f"task {plain(task)!r} is given more than one (sequence, position)")
    if per_task.duplicated(["sequence", "position"]).any():
        row = per_task.loc[per_task.duplicated(["sequence", "position"])].iloc[0]
        raise ValueError(f"two tasks share position {plain(row['position'])!r} of sequence "
                         f"{plain(row['sequence'])!r}")
    per_task = per_task.sort_values(["sequence", "position"], kind="stable")
    lengths = per_task.groupby("sequence", sort=False).size().tolist()
    return pd.Index(per_task["task"].to_numpy()), lengths


def read_edges(path) -> pd.DataFrame:
    """An undirected edge list: a CSV whose first two columns hold the task ids of each edge.

    Returns:
        DataFrame with columns ``source`` and ``target``.

    Raises:
        ValueError: an empty file, fewer than two columns or a missing id.
    """
    frame = read_csv_table(path, "a CSV edge list with two columns of task ids")
    if frame.shape[1] < 2:
        raise ValueError(f"an edge list needs two columns of task ids, got {list(frame.columns)}")
    edges = frame.iloc[:, :2].set_axis(["source", "target"], axis=1)
    if edges.isna().any().any():
        raise ValueError("the edge list has rows with a missing task id")
    return edges
