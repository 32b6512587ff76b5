"""The crowd models as ``pyromodels fit`` choices: plain, sequential and networked Dawid-Skene.

Each entry reads the user's crowd labels (a CSV with one row per judgement, or a named data
set), fits the model and reports what a user needs: ``labels.csv`` (the label and the class
probabilities of every task, and its posterior entropy), the worker confusions with their
uncertainty and, with ``--gold``, the scores against gold labels
(:mod:`pyromodels.report.crowd`).

The paper reproduction is the separate entry ``crowd`` (:mod:`.reproduction`), which fits
plain Dawid-Skene when asked to ``fit``.
"""

from __future__ import annotations

import torch

from ...crowd.ds.model import DawidSkene
from ...crowd.hmm.model import SequentialDawidSkene
from ...crowd.mrf.model import NetworkedData, NetworkedDawidSkene
from ...data import AnnotationTable, Graph, Sequences, node_ids
from ...data.crowd_files import (
    CrowdColumns,
    find_crowd_dataset,
    load_answers_and_gold,
    order_by_sequence,
    read_answers,
    read_csv_table,
    read_edges,
)
from ...registry import FitOutput, register
from ..catalogue import (
    ANSWERS_FORMAT,
    DAWID_SKENE,
    NETWORKED_DAWID_SKENE,
    NETWORKED_FORMAT,
    SEQUENTIAL_DAWID_SKENE,
    SEQUENTIAL_FORMAT,
)

__all__ = [
    "COLUMN_HINT",
    "ANSWERS_FORMAT",
    "crowd_table",
    "load_plain",
    "load_sequential",
    "load_networked",
    "describe_fit",
    "PLAIN",
    "SEQUENTIAL",
    "NETWORKED",
]

COLUMN_HINT = "choose the columns with --task-col, --worker-col and --label-col"


def _hinted(exc: ValueError) -> ValueError:
    message = str(exc)
    if message.startswith("no column(s)"):
        message += f"; {COLUMN_HINT}"
    return ValueError(message)


def _answers(path, dataset, columns: CrowdColumns, default: str | None, model: str):
    """The judgements of ``path`` or of the data set ``dataset`` (or of ``default``)."""
    if path is not None and dataset is not None:
        raise ValueError("give either a data file or --dataset, not both")
    if path is None:
        name = dataset if dataset is not None else default
        if name is None:
            raise ValueError(f"{model} needs data: give --data FILE or --dataset NAME")
        return load_answers_and_gold(find_crowd_dataset(name))[0]
    try:
        return read_answers(path, columns)
    except ValueError as exc:
        raise _hinted(exc) from None


def crowd_table(path=None, *, dataset=None, task_col=None, worker_col=None, label_col=None,
                default: str | None = "bluebirds", model: str = "the model",
                items=None) -> AnnotationTable:
    """The :class:`~pyromodels.data.AnnotationTable` of an answer file or named data set.

    Args:
        path: an answer CSV (see :data:`ANSWERS_FORMAT`) or DataFrame, or ``None``.
        dataset: a data set name (see :func:`~pyromodels.data.crowd_files.find_crowd_dataset`).
        task_col, worker_col, label_col: the column names in ``path``.
        default: the data set read when neither ``path`` nor ``dataset`` is given (``None``:
            that is an error).
        model: the model's name, for the message.
        items: optional task ids in the order wanted (keeping tasks without labels).

    Repeated (task, worker) judgements are kept, each one a separate response.
    """
    columns = CrowdColumns(task_col, worker_col, label_col)
    answers = _answers(path, dataset, columns, default, model)
    return AnnotationTable.from_dataframe(answers, items=items, allow_repeats=True)


def load_plain(path=None, **options) -> AnnotationTable:
    """Data of ``fit dawid-skene``: :func:`crowd_table` (default: the bluebirds set)."""
    return crowd_table(path, model="dawid-skene", **options)


def load_sequential(path=None, *, dataset=None, task_col=None, worker_col=None, label_col=None,
                    sequence_col=None, position_col=None) -> Sequences:
    """Data of ``fit sequential-dawid-skene``: an answer CSV with two more columns, the
    sequence of each task and its position in the sequence (``sequence`` and ``position`` by
    default), as :class:`~pyromodels.data.Sequences` over the tasks in sequence order."""
    if path is None:
        raise ValueError("sequential-dawid-skene needs --data FILE: " + SEQUENTIAL_FORMAT)
    if dataset is not None:
        raise ValueError("--dataset names i.i.d. crowd sets without sequences; give --data FILE")
    frame = read_csv_table(path, "a CSV of judgements with sequence and position columns")
    columns = {"sequence": sequence_col or "sequence", "position": position_col or "position"}
    missing = [col for col in columns.values() if col not in frame.columns]
    if missing:
        raise ValueError(f"no column(s) {missing} among the table's columns "
                         f"{list(frame.columns)}; name them with --sequence-col, --position-col")
    try:
        answers = read_answers(frame, CrowdColumns(task_col, worker_col, label_col))
    except ValueError as exc:
        raise _hinted(exc) from None
    tasks, lengths = order_by_sequence(answers, frame[columns["sequence"]],
                                       frame[columns["position"]])
    table = AnnotationTable.from_dataframe(answers, items=tasks)
    return Sequences(table, lengths)


def load_networked(path=None, *, dataset=None, task_col=None, worker_col=None, label_col=None,
                   edges=None) -> NetworkedData:
    """Data of ``fit networked-dawid-skene``: the judgements (as :func:`crowd_table`) and an
    edge list between tasks (``--edges FILE``: two columns of task ids, one edge per row);
    tasks that appear only in the edge list are kept, without labels."""
    if edges is None:
        raise ValueError("networked-dawid-skene needs --edges FILE: " + NETWORKED_FORMAT)
    pairs = read_edges(edges)
    answers = _answers(path, dataset, CrowdColumns(task_col, worker_col, label_col), None,
                       "networked-dawid-skene")
    items = node_ids({"the data's task column": answers["task"],
                      "the edge list's first column": pairs["source"],
                      "the edge list's second column": pairs["target"]})
    table = AnnotationTable.from_dataframe(answers, items=items, allow_repeats=True)
    codes = torch.stack([table.encode_items(pairs["source"]), table.encode_items(pairs["target"])],
                        dim=1)
    graph = Graph.from_edges(codes, num_nodes=table.num_items, nodes=table.items)
    return NetworkedData(table, graph)


def _table_of(data) -> AnnotationTable:
    """The annotation table inside the data of any of the three entries."""
    if isinstance(data, AnnotationTable):
        return data
    return data.data if isinstance(data, Sequences) else data.table


def _probabilities(posterior, table: AnnotationTable) -> torch.Tensor:
    """``(N, K)`` class probabilities of the tasks: the model's own for Dawid-Skene (each
    draw's exact posterior, averaged), the EM posteriors of the sequential and networked
    models, or the frequencies of the sampled labels."""
    if isinstance(posterior.model, DawidSkene):
        return posterior.predict(table)
    for key in ("posterior", "posteriors"):
        if key in posterior.params:
            return posterior.params[key]
    site = "z" if "z" in posterior.samples else "y"
    labels = posterior.samples[site].reshape(-1, table.num_items)
    counts = torch.nn.functional.one_hot(labels, table.num_classes).sum(0)
    return counts.double() / labels.shape[0]


def describe_fit(posterior, data, *, name: str, gold=None) -> FitOutput:
    """The report of one crowd fit: the generic one plus labels, worker confusions with their
    uncertainty, entropies and, given ``gold`` (a Series indexed by task), the scores beside
    those of majority vote (ties broken at random with the fit's seed)."""
    from ...crowd.majority import majority_vote
    from ...report import result_from_posterior
    from ...report.crowd import crowd_outputs, with_crowd_outputs

    table = _table_of(data)
    majority = None
    if gold is not None:
        majority = majority_vote(table, seed=int(posterior.attrs.get("seed") or 0))
    outputs = crowd_outputs(table, _probabilities(posterior, table),
                            posterior.samples["confusion"], gold=gold, majority=majority)
    result = with_crowd_outputs(result_from_posterior(posterior, name), outputs, posterior.method)
    return FitOutput(result, outputs.files)


# What each entry says of itself (name, engines, data format, options, prior arguments) is
# its declaration in the catalogue; here it gains its callables.
PLAIN = register(DAWID_SKENE.entry(factory=DawidSkene, loader=load_plain, describe=describe_fit))

SEQUENTIAL = register(SEQUENTIAL_DAWID_SKENE.entry(
    factory=SequentialDawidSkene, loader=load_sequential, describe=describe_fit))

NETWORKED = register(NETWORKED_DAWID_SKENE.entry(
    factory=NetworkedDawidSkene, loader=load_networked, describe=describe_fit))
