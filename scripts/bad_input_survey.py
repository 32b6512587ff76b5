"""A catalogue of bad or awkward inputs, each run in isolation and classified.

Every case is something a user might try: through the Python API (data contracts, the crowd
facades, the Gaussian mixture, ``Posterior``, the engines, the loaders) or through the command
line (``python -m pyromodels ...``). Each runs in its own forked process (API) or subprocess
(CLI) with a timeout, and gets one of four kinds:

* ``clear error``: ``ValueError``, ``TypeError``, ``FileNotFoundError``, ``KeyError``,
  ``PermissionError`` (and their subclasses) whose message names the argument or column (the
  case lists the words it accepts); on the CLI: exit status 2 and a one-line message naming it;
* ``handled``: a result that passes the case's check of what is sensible (a warning is fine);
* ``silent``: a result where the case expected an error, or one that fails the check: the
  input was coerced or dropped without a word (the case states what it expected);
* ``unclear``: any other exception, a message that does not name the argument, a traceback,
  another exit status, a hang (timeout) or a crash.

Run from the repository root::

    python scripts/bad_input_survey.py [--only SUBSTRING] [--no-cli] [--timeout SECONDS]
                                       [--json PATH]

It prints a table of counts by kind and area, then every case that is not a clear error or
handled. The script never stops on a case: whatever a case does is recorded as its result.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)

KINDS = ("clear error", "handled", "silent", "unclear")
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
CLEAR_TYPES = (ValueError, TypeError, FileNotFoundError, KeyError, PermissionError,
               NotADirectoryError, IsADirectoryError)


@dataclass
class Case:
    """One input to try.

    Attributes:
        area: what is exercised (for the table).
        name: what the input is.
        run: ``run()`` makes the call (API) or ``None`` for a CLI case.
        names: the words a clear error must contain (any one of them).
        check: for inputs with a sensible answer: ``check(result)`` returns ``None`` when the
            result is sensible, else what is wrong with it. ``None``: an error is expected.
        expect: the expectation, stated for the report.
        argv: the command line arguments of a CLI case.
        bad_warning: text of a warning that would be a false alarm for this input: a result
            that comes with it is ``unclear``.
    """

    area: str
    name: str
    run: Callable[[], Any] | None
    names: tuple[str, ...] = ()
    check: Callable[[Any], str | None] | None = None
    expect: str = "an error naming the argument"
    argv: list[str] = field(default_factory=list)
    bad_warning: str | None = None


def names_one_of(message: str, names) -> bool:
    """Whether ``message`` holds one of ``names`` as a whole word (case-insensitive)."""
    return any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", message, re.IGNORECASE) for n in names)


def classify_exception(case: Case, err: BaseException) -> tuple[str, str]:
    text = f"{type(err).__name__}: {err}".replace("\n", " ")[:300]
    if isinstance(err, CLEAR_TYPES) and names_one_of(str(err), case.names):
        return "clear error", text
    return "unclear", text


def classify_result(case: Case, result, caught: list) -> tuple[str, str]:
    said = "; ".join(sorted({f"{w.category.__name__}: {w.message}" for w in caught}))[:200]
    if case.check is None:
        return "silent", f"returned {type(result).__name__}; expected {case.expect}" + (
            f" (warned: {said})" if said else "")
    try:
        problem = case.check(result)
    except Exception as err:  # noqa: BLE001 - a failing check is a finding, not a crash
        problem = f"the result could not be checked: {type(err).__name__}: {err}"
    if problem:
        return "silent", f"{problem}; expected {case.expect}"
    if case.bad_warning and case.bad_warning in said:
        return "unclear", f"a result with a misleading warning ({said})"
    return "handled", f"warned: {said}" if said else "no warning"


def _child(case: Case, conn) -> None:
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = case.run()
        outcome = classify_result(case, result, caught)
    except BaseException as err:  # noqa: BLE001 - every outcome is recorded
        outcome = classify_exception(case, err)
    conn.send(outcome)
    conn.close()


def run_api_case(case: Case, timeout: float) -> tuple[str, str]:
    """Run one API case in a forked process; a hang or crash is ``unclear``."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(case, child))
    proc.start()
    child.close()
    try:
        if parent.poll(timeout):
            outcome = parent.recv()
        else:
            outcome = ("unclear", f"no answer within {timeout:.0f} s (hang)")
    except EOFError:
        outcome = None
    proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if outcome is None:
        outcome = ("unclear", f"the process died (exit code {proc.exitcode})")
    return outcome


_WARNING_LINE = re.compile(r"^\S.*:\d+: \w*Warning: ")


def message_lines(stderr: str) -> list[str]:
    """The non-blank lines of ``stderr`` less Python warnings (a warning line and the source
    line indented below it): a warning beside the error message is not a second message."""
    lines, skip = [], False
    for line in stderr.splitlines():
        if _WARNING_LINE.match(line):
            skip = True
        elif skip and line.startswith("  "):
            skip = False
        elif line.strip():
            skip = False
            lines.append(line)
    return lines


def run_cli_case(case: Case, timeout: float) -> tuple[str, str]:
    """Run ``python -m pyromodels *argv``; exit 2 with one line naming the argument is clear."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    try:
        proc = subprocess.run([sys.executable, "-m", "pyromodels", *case.argv], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "unclear", f"no exit within {timeout:.0f} s (hang)"
    err_lines = message_lines(proc.stderr)
    last = err_lines[-1][:300] if err_lines else ""
    if proc.returncode == 0:
        if case.check is None:
            return "silent", f"exit 0; expected {case.expect}"
        problem = case.check(proc)
        return ("silent", f"{problem}; expected {case.expect}") if problem else (
            "handled", "exit 0")
    if "Traceback" in proc.stderr:
        return "unclear", f"exit {proc.returncode} with a traceback: {last}"
    if proc.returncode == 2 and len(err_lines) == 1 and names_one_of(last, case.names):
        return "clear error", last
    return "unclear", f"exit {proc.returncode}, {len(err_lines)} stderr line(s): {last}"


# ====================================================================== shared inputs
def unwritable_folder(tmp: Path) -> Path:
    """A folder nothing can be written into: read-only, or (for root, who may write anywhere)
    a path below a plain file."""
    if ROOT:
        blocker = tmp / "a-file"
        blocker.write_text("")
        return blocker / "folder"
    folder = tmp / "read-only"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return folder



ANSWERS = pd.DataFrame({
    "task": ["t1", "t1", "t1", "t2", "t2", "t3", "t3", "t3", "t4", "t4"],
    "worker": ["a", "b", "c", "a", "c", "a", "b", "c", "b", "c"],
    "label": ["x", "x", "y", "y", "y", "x", "y", "x", "y", "y"],
})
TAGGED = pd.DataFrame({
    "sequence": ["s1", "s1", "s1", "s1", "s1", "s2", "s2", "s2"],
    "position": [0, 0, 1, 1, 2, 0, 0, 1],
    "worker": ["a", "b", "a", "b", "b", "a", "c", "c"],
    "label": ["B", "B", "I", "O", "O", "O", "O", "B"],
})
EDGES = pd.DataFrame({"source": ["t1", "t2", "t3"], "target": ["t2", "t3", "t4"]})
X = torch.cat([torch.randn(15, 2, generator=torch.Generator().manual_seed(0)) - 3,
               torch.randn(15, 2, generator=torch.Generator().manual_seed(1)) + 3])


def with_col(df: pd.DataFrame, col: str, values) -> pd.DataFrame:
    out = df.astype({col: object}) if col in df.columns else df.copy()
    out[col] = values
    return out


def set_cell(df: pd.DataFrame, row: int, col: str, value) -> pd.DataFrame:
    out = df.astype({col: object})
    out.at[row, col] = value
    return out


# ----------------------------------------------------------------- result checks
def labels_cover(tasks) -> Callable[[Any], str | None]:
    """A fitted facade whose ``labels_`` index is exactly ``tasks``."""
    def check(est):
        got = list(est.labels_.index)
        return None if got == list(tasks) else f"labels_ index is {got}, not {list(tasks)}"
    return check


def labels_in_answers(est) -> str | None:
    bad = set(est.labels_) - set(ANSWERS["label"]) - set(TAGGED["label"])
    return f"labels_ holds classes never given: {bad}" if bad else None


def is_posterior(post) -> str | None:
    from pyromodels import Posterior
    if not isinstance(post, Posterior):
        return f"returned {type(post).__name__}, not a Posterior"
    finite = all(bool(torch.isfinite(v.double()).all()) for v in post.samples.values())
    return None if finite else "the posterior holds NaN or infinite draws"


def distinct_mixture_locs(post) -> str | None:
    """Two well-separated clusters must get two different component means."""
    problem = is_posterior(post)
    if problem:
        return problem
    locs = post.mean("locs")
    spread = float((locs[0] - locs[1]).norm() / (post.data.x.std(0).norm() + 1e-300))
    return None if spread > 0.5 else f"both components sit at the same place (spread {spread:.2g})"


def table_rows(n: int) -> Callable[[Any], str | None]:
    def check(table):
        return None if table.num_labels == n else f"{table.num_labels} rows kept out of {n}"
    return check


def not_none(result) -> str | None:
    return None if result is not None else "returned None"


# ====================================================================== API cases
def annotation_cases() -> list[Case]:
    from pyromodels.data import AnnotationTable as T

    area = "AnnotationTable"
    df = ANSWERS
    return [
        Case(area, "df is None", lambda: T.from_dataframe(None), ("df",)),
        Case(area, "df is a list of tuples", lambda: T.from_dataframe([("t", "w", 1)]), ("df",)),
        Case(area, "df is a dict of lists", lambda: T.from_dataframe(dict(df)), ("df",)),
        Case(area, "empty DataFrame with the columns", lambda: T.from_dataframe(df.iloc[:0]),
             ("df",)),
        Case(area, "wrong item column", lambda: T.from_dataframe(df, item="id"), ("item", "id")),
        Case(area, "item column given as an int", lambda: T.from_dataframe(df, item=0),
             ("item",)),
        Case(area, "None label", lambda: T.from_dataframe(set_cell(df, 1, "label", None)),
             ("label",)),
        Case(area, "NaN worker", lambda: T.from_dataframe(set_cell(df, 0, "worker", np.nan)),
             ("worker",)),
        Case(area, "nullable Int64 ids with <NA>", lambda: T.from_dataframe(with_col(
            df, "task", pd.array([1, 2, None, 3, 4, 5, 6, 7, 8, 9], dtype="Int64"))), ("task",)),
        Case(area, "a list inside a task cell",
             lambda: T.from_dataframe(set_cell(df, 0, "task", ["t1"])), ("task",)),
        Case(area, "two columns named task",
             lambda: T.from_dataframe(pd.concat([df, df[["task"]]], axis=1)), ("task",)),
        Case(area, "repeated (task, worker)",
             lambda: T.from_dataframe(pd.concat([df, df.iloc[:1]])), ("allow_repeats",)),
        Case(area, "allow_repeats=1", lambda: T.from_dataframe(df, allow_repeats=1),
             ("allow_repeats",)),
        Case(area, "classes missing a used label", lambda: T.from_dataframe(df, classes=["x"]),
             ("classes",)),
        Case(area, "classes as a plain string", lambda: T.from_dataframe(df, classes="xy"),
             ("classes",)),
        Case(area, "classes with a repeat", lambda: T.from_dataframe(df, classes=["x", "y", "x"]),
             ("classes",)),
        Case(area, "items list missing a task",
             lambda: T.from_dataframe(df, items=["t1", "t2", "t3"]), ("items",)),
        Case(area, "mixed int/str task ids", lambda: T.from_dataframe(with_col(
            df, "task", [1, 1, 1, "t2", "t2", 3, 3, 3, "t4", "t4"])), ("task",),
             table_rows(len(df)), "either a table of every row or an error naming task"),
        Case(area, "labels 1.0/2.0 as floats", lambda: T.from_dataframe(
            with_col(df, "label", [1.0, 1.0, 2.0, 2.0, 2.0, 1.0, 2.0, 1.0, 2.0, 2.0])),
             check=table_rows(len(df)), expect="a table keeping every row"),
        Case(area, "from_arrays: lengths differ",
             lambda: T.from_arrays([0, 1], [0], [0, 1]), ("item_idx", "worker_idx")),
        Case(area, "from_arrays: negative code", lambda: T.from_arrays([0, -1], [0, 1], [0, 1]),
             ("item_idx",)),
        Case(area, "from_arrays: 1.5 code", lambda: T.from_arrays([0, 1.5], [0, 1], [0, 1]),
             ("item_idx",)),
        Case(area, "from_arrays: num_classes too small",
             lambda: T.from_arrays([0, 1], [0, 1], [0, 2], num_classes=2), ("num_classes",
                                                                           "label_idx")),
        Case(area, "from_arrays: num_items=2.0",
             lambda: T.from_arrays([0, 1], [0, 1], [0, 1], num_items=2.0), ("num_items",)),
        Case(area, "from_arrays: None codes", lambda: T.from_arrays(None, [0], [0]),
             ("item_idx",)),
        Case(area, "to_dense(fill=0): a class code", lambda: T.from_dataframe(df).to_dense(0),
             ("fill",)),
        Case(area, "encode_items('t1'): a bare string",
             lambda: T.from_dataframe(df).encode_items("t1"), ("ids",),
             lambda r: None if r.tolist() == [0] else f"codes {r.tolist()}",
             "code [0] or an error naming ids"),
        Case(area, "encode_workers: unknown worker",
             lambda: T.from_dataframe(df).encode_workers(["zed"]), ("ids", "workers")),
        Case(area, "decode_classes: code 5", lambda: T.from_dataframe(df).decode_classes([5]),
             ("codes",)),
        Case(area, "index_items: wrong length",
             lambda: T.from_dataframe(df).index_items([0, 1]), ("values",)),
    ]


def sequence_graph_cases() -> list[Case]:
    from pyromodels.data import Graph, PairwiseAnnotations, Sequences

    seqs = lambda: Sequences(torch.arange(5.0), [2, 3])  # noqa: E731
    return [
        Case("Sequences", "lengths do not sum to the data",
             lambda: Sequences(torch.zeros(5), [2, 2]), ("lengths",)),
        Case("Sequences", "a zero length", lambda: Sequences(torch.zeros(5), [5, 0]),
             ("lengths",)),
        Case("Sequences", "lengths as floats 2.5", lambda: Sequences(torch.zeros(5), [2.5, 2.5]),
             ("lengths",)),
        Case("Sequences", "lengths None", lambda: Sequences(torch.zeros(5), None), ("lengths",)),
        Case("Sequences", "lengths a scalar 5", lambda: Sequences(torch.zeros(5), 5),
             ("lengths",)),
        Case("Sequences", "data with NaN", lambda: Sequences(torch.tensor([0.0, np.nan]), [2]),
             ("data",)),
        Case("Sequences", "data a ragged list", lambda: Sequences([[1, 2], [3]], [2]),
             ("data",)),
        Case("Sequences", "data strings", lambda: Sequences(["a", "b"], [2]), ("data",)),
        Case("Sequences", "data a scalar", lambda: Sequences(3.0, [1]), ("data",)),
        Case("Sequences", "pad(fill='a')", lambda: seqs().pad(fill="a"), ("fill",)),
        Case("Sequences", "split of text rows", lambda: seqs().split(["a"] * 5), ("x",)),
        Case("Sequences", "pad x of the wrong length", lambda: seqs().pad(torch.zeros(4)),
             ("x",)),
        Case("Sequences", "unpad of the wrong shape", lambda: seqs().unpad(torch.zeros(3, 3)),
             ("padded",)),
        Case("Graph", "self loop", lambda: Graph.from_edges([[1, 1]], 3), ("edges",)),
        Case("Graph", "edge in both orientations",
             lambda: Graph.from_edges([[0, 1], [1, 0]], 3), ("edges",)),
        Case("Graph", "node code out of range", lambda: Graph.from_edges([[0, 3]], 3),
             ("edges", "num_nodes")),
        Case("Graph", "negative node code", lambda: Graph.from_edges([[0, -1]], 3), ("edges",)),
        Case("Graph", "edges of width 3", lambda: Graph.from_edges([[0, 1, 2]], 3), ("edges",)),
        Case("Graph", "edges flat [0, 1]", lambda: Graph.from_edges([0, 1], 3), ("edges",)),
        Case("Graph", "num_nodes=3.0", lambda: Graph.from_edges([[0, 1]], 3.0), ("num_nodes",)),
        Case("Graph", "num_nodes=0", lambda: Graph.from_edges([], 0), ("num_nodes",)),
        Case("Graph", "nodes of the wrong length",
             lambda: Graph.from_edges([[0, 1]], 3, nodes=["a", "b"]), ("nodes",)),
        Case("Graph", "symmetric='yes'", lambda: Graph.from_edges([[0, 1]], 3, symmetric="yes"),
             ("symmetric",)),
        Case("Graph", "from_scipy: weighted", lambda: Graph.from_scipy(np.array([[0, 2], [2, 0]])),
             ("matrix",)),
        Case("Graph", "from_scipy: not square", lambda: Graph.from_scipy(np.zeros((2, 3))),
             ("matrix",)),
        Case("Graph", "from_scipy: asymmetric", lambda: Graph.from_scipy(np.array([[0, 1], [0, 0]])),
             ("matrix", "symmetric")),
        Case("Graph", "from_scipy: strings", lambda: Graph.from_scipy(np.array([["0", "1"],
                                                                                ["1", "0"]])),
             ("matrix",)),
        Case("Graph", "adjacency(dtype='float')",
             lambda: Graph.from_edges([[0, 1]], 3).adjacency(dtype="float"), ("dtype",)),
        Case("Graph", "neighbors(5) of 3 nodes", lambda: Graph.from_edges([[0, 1]], 3).neighbors(5),
             ("node",)),
        Case("Graph", "check_matches(a DataFrame)",
             lambda: Graph.from_edges([[0, 1]], 3).check_matches(ANSWERS), ("table",)),
        Case("Pairwise", "link 2", lambda: PairwiseAnnotations.from_dataframe(pd.DataFrame(
            {"i": ["a"], "j": ["b"], "worker": ["w"], "link": [2]})), ("link",)),
        Case("Pairwise", "pair of an item with itself",
             lambda: PairwiseAnnotations.from_dataframe(pd.DataFrame(
                 {"i": ["a"], "j": ["a"], "worker": ["w"], "link": [1]})), ("i", "j")),
        Case("Pairwise", "a pair judged twice, swapped",
             lambda: PairwiseAnnotations.from_dataframe(pd.DataFrame(
                 {"i": ["a", "b"], "j": ["b", "a"], "worker": ["w", "w"], "link": [1, 0]})),
             ("worker", "pair")),
        Case("Pairwise", "link 'yes'", lambda: PairwiseAnnotations.from_dataframe(pd.DataFrame(
            {"i": ["a"], "j": ["b"], "worker": ["w"], "link": ["yes"]})), ("link",)),
        Case("Pairwise", "from_arrays: num_items=1",
             lambda: PairwiseAnnotations.from_arrays([0], [1], [0], [1], num_items=1),
             ("num_items",)),
        Case("Pairwise", "from_arrays: link 0.5",
             lambda: PairwiseAnnotations.from_arrays([0], [1], [0], [0.5]), ("link",)),
    ]


def ds_cases() -> list[Case]:
    from pyromodels.crowd.estimators import DawidSkeneEstimator as DS
    from pyromodels.crowd.estimators import MajorityVote

    area = "DawidSkeneEstimator"
    tasks = sorted(set(ANSWERS["task"]))
    one_class = with_col(ANSWERS, "label", "x")
    return [
        Case(area, "fit(None)", lambda: DS().fit(None), ("df",)),
        Case(area, "fit(numpy array)", lambda: DS().fit(ANSWERS.to_numpy()), ("df",)),
        Case(area, "task column misnamed", lambda: DS(task="item_id").fit(ANSWERS),
             ("task", "item_id")),
        Case(area, "task=3 (not a str)", lambda: DS(task=3).fit(ANSWERS), ("task",)),
        Case(area, "NaN label", lambda: DS().fit(set_cell(ANSWERS, 2, "label", np.nan)),
             ("label",)),
        Case(area, "one class only", lambda: DS().fit(one_class), ("label", "class", "classes"),
             lambda e: None if set(e.labels_) == {"x"} else f"labels {set(e.labels_)}",
             "every task labelled 'x', or an error naming the classes"),
        Case(area, "one worker only", lambda: DS().fit(ANSWERS[ANSWERS.worker == "a"]),
             ("worker", "workers"), labels_cover(["t1", "t2", "t3"]),
             "labels for the three tasks (perhaps with a warning) or an error naming workers"),
        Case(area, "a single row", lambda: DS().fit(ANSWERS.iloc[:1]),
             ("df", "worker", "label", "classes"),
             labels_cover(["t1"]), "a label for t1 or an error"),
        Case(area, "repeated judgement", lambda: DS().fit(pd.concat([ANSWERS, ANSWERS.iloc[:1]])),
             ("allow_repeats",)),
        Case(area, "method='EM' (upper case)", lambda: DS(method="EM").fit(ANSWERS),
             ("method",)),
        Case(area, "method='mcmc'", lambda: DS(method="mcmc").fit(ANSWERS), ("method",)),
        Case(area, "n_iter=0", lambda: DS(n_iter=0).fit(ANSWERS), ("n_iter",)),
        Case(area, "n_iter=2.5", lambda: DS(n_iter=2.5).fit(ANSWERS), ("n_iter",)),
        Case(area, "tol=-1", lambda: DS(tol=-1).fit(ANSWERS), ("tol",)),
        Case(area, "seed='a'", lambda: DS(seed="a").fit(ANSWERS), ("seed",)),
        Case(area, "random_state=1.5", lambda: DS(random_state=1.5).fit(ANSWERS),
             ("random_state",)),
        Case(area, "classes missing a label", lambda: DS(classes=["x"]).fit(ANSWERS),
             ("classes",)),
        Case(area, "an unused class in classes", lambda: DS(classes=["x", "y", "z"]).fit(ANSWERS),
             check=lambda e: None if list(e.probas_.columns) == ["x", "y", "z"] else
             f"probas_ columns {list(e.probas_.columns)}", expect="probas_ over x, y, z"),
        Case(area, "diagonal=-1", lambda: DS(diagonal=-1.0).fit(ANSWERS), ("diagonal",)),
        Case(area, "confusion_concentration=0",
             lambda: DS(confusion_concentration=0.0).fit(ANSWERS), ("confusion_concentration",)),
        Case(area, "em_floor=-1", lambda: DS(em_floor=-1.0).fit(ANSWERS), ("em_floor",)),
        Case(area, "em_floor=2 (a large pseudo-count)", lambda: DS(em_floor=2.0).fit(ANSWERS),
             ("em_floor",), labels_cover(tasks), "a smoothed fit (em_floor is a pseudo-count "
             ">= 0) without a false alarm that EM went the wrong way",
             bad_warning="should not decrease"),
        Case(area, "init_confusion of the wrong shape",
             lambda: DS(init_confusion=np.eye(3)).fit(ANSWERS), ("init_confusion",)),
        Case(area, "update_prior='no'", lambda: DS(update_prior="no").fit(ANSWERS),
             ("update_prior",)),
        Case(area, "device='tpu'", lambda: DS(device="tpu").fit(ANSWERS), ("device",)),
        Case(area, "device='cuda' without a GPU" if not torch.cuda.is_available() else
             "device='cuda:7' (no such GPU)",
             lambda: DS(device="cuda" if not torch.cuda.is_available() else "cuda:7").fit(ANSWERS),
             ("device", "cuda"), labels_cover(tasks) if not torch.cuda.is_available() else None,
             "a CPU fit with a warning (documented fallback), or an error naming device"),
        Case(area, "gibbs with num_samples=0",
             lambda: DS(method="gibbs", num_samples=0).fit(ANSWERS), ("num_samples",)),
        Case(area, "gibbs with num_chains=-1",
             lambda: DS(method="gibbs", num_chains=-1).fit(ANSWERS), ("num_chains",)),
        Case(area, "labels_ before fit", lambda: DS().labels_, ("fit",)),
        Case(area, "predict: unknown worker", lambda: DS().fit(ANSWERS).predict(
            with_col(ANSWERS.iloc[:2], "worker", ["a", "zed"])), ("worker",)),
        Case(area, "predict: a label never seen", lambda: DS().fit(ANSWERS).predict(
            with_col(ANSWERS.iloc[:2], "label", ["x", "q"])), ("label", "classes")),
        Case(area, "predict: label column missing",
             lambda: DS().fit(ANSWERS).predict(ANSWERS.drop(columns="label")), ("label",)),
        Case(area, "task ids differing by a trailing space",
             lambda: DS().fit(set_cell(ANSWERS, 1, "task", "t1 ")),
             check=labels_cover(sorted(tasks + ["t1 "])),
             expect="'t1 ' kept as its own task (ids are compared exactly)"),
        Case("MajorityVote", "ties='bogus'", lambda: MajorityVote(ties="bogus").fit(ANSWERS),
             ("ties",)),
        Case("MajorityVote", "every task tied, ties='smallest'",
             lambda: MajorityVote(ties="smallest").fit(pd.DataFrame(
                 {"task": ["a", "a"], "worker": ["u", "v"], "label": ["y", "x"]})),
             check=lambda e: None if e.labels_.tolist() == ["x"] else f"{e.labels_.tolist()}",
             expect="the smallest class 'x'"),
    ]


def sequential_networked_cases() -> list[Case]:
    from pyromodels.crowd import NetworkedDawidSkeneEstimator as Net
    from pyromodels.crowd import SequentialDawidSkeneEstimator as Seq

    sq, nt = "SequentialEstimator", "NetworkedEstimator"
    return [
        Case(sq, "position column missing", lambda: Seq().fit(TAGGED.drop(columns="position")),
             ("position",)),
        Case(sq, "NaN position", lambda: Seq().fit(set_cell(TAGGED, 2, "position", np.nan)),
             ("position",)),
        Case(sq, "mixed int/str positions", lambda: Seq().fit(set_cell(TAGGED, 2, "position", "1")),
             ("position",)),
        Case(sq, "positions with gaps (0, 5, 9)", lambda: Seq().fit(with_col(
            TAGGED, "position", [0, 0, 5, 5, 9, 0, 0, 5])),
             check=lambda e: None if len(e.labels_) == 5 else f"{len(e.labels_)} positions",
             expect="five positions ordered by their values"),
        Case(sq, "repeated (sequence, position, worker)",
             lambda: Seq().fit(pd.concat([TAGGED, TAGGED.iloc[:1]])), ("allow_repeats",)),
        Case(sq, "one class only", lambda: Seq().fit(with_col(TAGGED, "label", "O")),
             ("label", "class", "classes"),
             lambda e: None if set(e.labels_) == {"O"} else f"labels {set(e.labels_)}",
             "every position 'O', or an error naming the classes"),
        Case(sq, "initial='bogus'", lambda: Seq(initial="bogus").fit(TAGGED), ("initial",)),
        Case(sq, "transition_concentration=0",
             lambda: Seq(transition_concentration=0.0).fit(TAGGED), ("transition_concentration",)),
        Case(sq, "method='svi'", lambda: Seq(method="svi").fit(TAGGED), ("method",)),
        Case(sq, "sequence=None", lambda: Seq(sequence=None).fit(TAGGED), ("sequence",)),
        Case(nt, "edges missing", lambda: Net().fit(ANSWERS), ("edges",)),
        Case(nt, "edges a list of pairs", lambda: Net().fit(ANSWERS, [("t1", "t2")]), ("edges",)),
        Case(nt, "edges without target column",
             lambda: Net().fit(ANSWERS, EDGES.rename(columns={"target": "to"})), ("target",)),
        Case(nt, "NaN in edges", lambda: Net().fit(ANSWERS, set_cell(EDGES, 0, "target", None)),
             ("target",)),
        Case(nt, "a self loop edge", lambda: Net().fit(ANSWERS, set_cell(EDGES, 0, "target", "t1")),
             ("edges", "self loop")),
        Case(nt, "an edge listed both ways", lambda: Net().fit(ANSWERS, pd.concat(
            [EDGES, EDGES.iloc[:1].rename(columns={"source": "target", "target": "source"})])),
             ("edges",)),
        Case(nt, "an edge to a task without labels",
             lambda: Net().fit(ANSWERS, set_cell(EDGES, 2, "target", "t9")),
             check=labels_cover(["t1", "t2", "t3", "t4", "t9"]),
             expect="t9 added as a task without labels"),
        Case(nt, "no edges at all", lambda: Net().fit(ANSWERS, EDGES.iloc[:0]),
             ("edges",), labels_cover(["t1", "t2", "t3", "t4"]),
             "labels without the graph's help, or an error naming edges"),
        Case(nt, "delta='bogus'", lambda: Net(delta="bogus").fit(ANSWERS, EDGES), ("delta",)),
        Case(nt, "delta=-1", lambda: Net(delta=-1.0).fit(ANSWERS, EDGES), ("delta",)),
        Case(nt, "method='nuts'", lambda: Net(method="nuts").fit(ANSWERS, EDGES), ("method",)),
        Case(nt, "edge ids of another type (ints for str tasks)",
             lambda: Net().fit(ANSWERS, pd.DataFrame({"source": [1], "target": [2]})),
             ("edges", "source", "target"),
             labels_cover(["t1", "t2", "t3", "t4", 1, 2]),
             "an error naming edges, or tasks 1 and 2 added without labels"),
    ]


def mixture_cases() -> list[Case]:
    from pyromodels.mixture import GaussianMixtureModel as B

    area = "GaussianMixture"
    em = {"method": "em", "seed": 0, "progress": False}
    return [
        Case(area, "num_components=0", lambda: B(0), ("num_components",)),
        Case(area, "num_components=2.0", lambda: B(2.0), ("num_components",)),
        Case(area, "num_components='3'", lambda: B("3"), ("num_components",)),
        Case(area, "1-D data", lambda: B(2).fit(X[:, 0], **em), ("data",)),
        Case(area, "3-D data", lambda: B(2).fit(X[None], **em), ("data",)),
        Case(area, "data with NaN", lambda: B(2).fit(torch.where(X > 4, np.nan, X), **em),
             ("data",)),
        Case(area, "data with inf", lambda: B(2).fit(torch.where(X > 4, np.inf, X), **em),
             ("data",)),
        Case(area, "string data", lambda: B(2).fit(np.full((4, 2), "1"), **em), ("data",)),
        Case(area, "a DataFrame with a text column", lambda: B(2).fit(pd.DataFrame(
            {"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]}), **em), ("data",)),
        Case(area, "boolean data", lambda: B(2).fit(X > 0, **em), ("data",)),
        Case(area, "fewer rows than components", lambda: B(5).fit(X[:3], **em),
             ("data", "num_components")),
        Case(area, "integer data", lambda: B(2).fit((X * 10).long(), **em), check=is_posterior,
             expect="a fit on the values as floats"),
        Case(area, "a DataFrame of floats", lambda: B(2).fit(pd.DataFrame(X.numpy()), **em),
             check=is_posterior, expect="a fit"),
        Case(area, "constant data", lambda: B(2).fit(torch.ones(10, 2), **em), ("data",),
             is_posterior, "a fit or an error naming data"),
        Case(area, "data on a 1e-100 scale", lambda: B(2).fit(X * 1e-100, **em), ("data",),
             distinct_mixture_locs, "two separate components, as for the same data at scale 1"),
        Case(area, "data on a 1e155 scale", lambda: B(2).fit(X * 1e155, **em), ("data",),
             distinct_mixture_locs, "a fit or an error naming data"),
        Case(area, "weight_concentration=0", lambda: B(2, weight_concentration=0).fit(X, **em),
             ("weight_concentration",)),
        Case(area, "weight_concentration=tensor(1.)",
             lambda: B(2, weight_concentration=torch.tensor(1.0)).fit(X, **em),
             ("weight_concentration",), is_posterior, "a fit or an error naming it"),
        Case(area, "mean_prior of length 3", lambda: B(2, mean_prior=[0, 0, 0]).fit(X, **em),
             ("mean_prior",)),
        Case(area, "covariance_prior not symmetric",
             lambda: B(2, covariance_prior=[[1, 0.5], [0, 1]]).fit(X, **em),
             ("covariance_prior",)),
        Case(area, "covariance_prior indefinite",
             lambda: B(2, covariance_prior=-np.eye(2)).fit(X, **em), ("covariance_prior",)),
        Case(area, "degrees_of_freedom=0.5",
             lambda: B(2, degrees_of_freedom=0.5).fit(X, **em), ("degrees_of_freedom",)),
        Case(area, "EM with degrees_of_freedom=1.5 (<= d)",
             lambda: B(2, degrees_of_freedom=1.5).fit(X, **em), ("degrees_of_freedom", "nu")),
        Case(area, "EM with weight_concentration=0.5",
             lambda: B(2, weight_concentration=0.5).fit(X, **em), ("weight_concentration",
                                                                  "alpha")),
        Case(area, "method='mcmc'", lambda: B(2).fit(X, method="mcmc"), ("method",)),
        Case(area, "method=None", lambda: B(2).fit(X, method=None), ("method",)),
        Case(area, "predict: wrong number of columns", lambda: B(2).fit(X, **em).predict(
            torch.zeros(3, 3)), ("new_data",)),
        Case(area, "predict: NaN", lambda: B(2).fit(X, **em).predict(
            torch.tensor([[np.nan, 0.0]])), ("new_data",)),
        Case(area, "predict: 1-D new point", lambda: B(2).fit(X, **em).predict(
            torch.zeros(2)), ("new_data",)),
    ]


def engine_cases() -> list[Case]:
    from pyromodels import run_em, run_gibbs, run_nuts, run_svi
    from pyromodels.mixture import GaussianMixtureModel as B

    area = "engines"
    m = B(2)
    quiet = {"progress": False, "seed": 0}
    g = {**quiet, "num_samples": 5, "num_warmup": 5, "num_chains": 1}
    return [
        Case(area, "run_em max_iter=0", lambda: run_em(m, X, max_iter=0, **quiet), ("max_iter",)),
        Case(area, "run_em max_iter='10'", lambda: run_em(m, X, max_iter="10", **quiet),
             ("max_iter",)),
        Case(area, "run_em tol=-1", lambda: run_em(m, X, tol=-1, **quiet), ("tol",)),
        Case(area, "run_em n_init=0", lambda: run_em(m, X, n_init=0, **quiet), ("n_init",)),
        Case(area, "run_em init with an unknown site",
             lambda: run_em(m, X, init={"bogus": torch.zeros(2)}, **quiet), ("init", "bogus")),
        Case(area, "run_em seed=-1", lambda: run_em(m, X, seed=-1, progress=False), ("seed",)),
        Case(area, "run_em seed='a'", lambda: run_em(m, X, seed="a", progress=False), ("seed",)),
        Case(area, "run_em device='tpu'", lambda: run_em(m, X, device="tpu", **quiet),
             ("device",)),
        Case(area, "run_em model=None", lambda: run_em(None, X, **quiet), ("model",)),
        Case(area, "run_em unknown keyword", lambda: run_em(m, X, max_iters=5, **quiet),
             ("max_iters",)),
        Case(area, "run_gibbs num_samples=0", lambda: run_gibbs(m, X, **{**g, "num_samples": 0}),
             ("num_samples",)),
        Case(area, "run_gibbs num_chains=0", lambda: run_gibbs(m, X, **{**g, "num_chains": 0}),
             ("num_chains",)),
        Case(area, "run_gibbs thin=0", lambda: run_gibbs(m, X, thin=0, **g), ("thin",)),
        Case(area, "run_gibbs scan='bogus'", lambda: run_gibbs(m, X, scan="bogus", **g),
             ("scan",)),
        Case(area, "run_gibbs lp_every=-1", lambda: run_gibbs(m, X, lp_every=-1, **g),
             ("lp_every",)),
        Case(area, "run_gibbs num_warmup=-5", lambda: run_gibbs(m, X, **{**g, "num_warmup": -5}),
             ("num_warmup",)),
        Case(area, "run_svi num_steps=0", lambda: run_svi(m, X, num_steps=0, **quiet),
             ("num_steps",)),
        Case(area, "run_svi lr=0", lambda: run_svi(m, X, num_steps=5, lr=0, **quiet), ("lr",)),
        Case(area, "run_svi num_particles=0",
             lambda: run_svi(m, X, num_steps=5, num_particles=0, **quiet), ("num_particles",)),
        Case(area, "run_svi num_samples=0",
             lambda: run_svi(m, X, num_steps=5, num_samples=0, **quiet), ("num_samples",)),
        Case(area, "run_nuts target_accept_prob=1.5",
             lambda: run_nuts(m, X, target_accept_prob=1.5, **g), ("target_accept_prob",)),
        Case(area, "run_nuts max_tree_depth=0", lambda: run_nuts(m, X, max_tree_depth=0, **g),
             ("max_tree_depth",)),
    ]


def posterior_cases() -> list[Case]:
    from pyromodels import Posterior
    from pyromodels.mixture import GaussianMixtureModel as B

    area = "Posterior"
    fit = lambda: B(2).fit(X, method="em", seed=0, progress=False)  # noqa: E731
    tmp = Path(tempfile.mkdtemp(prefix="survey-"))
    (tmp / "not-netcdf.nc").write_text("hello")
    unwritable = unwritable_folder(tmp)
    return [
        Case(area, "samples without chain/draw axes",
             lambda: Posterior({"a": torch.zeros(3)}, "em"), ("samples",)),
        Case(area, "samples of different (chain, draw)",
             lambda: Posterior({"a": torch.zeros(1, 2), "b": torch.zeros(1, 3)}, "gibbs"),
             ("samples",)),
        Case(area, "samples a numpy array",
             lambda: Posterior({"a": np.zeros((1, 2))}, "gibbs"), ("samples",)),
        Case(area, "method='bogus'", lambda: Posterior({"a": torch.zeros(1, 2)}, "bogus"),
             ("method",)),
        Case(area, "post['nope']", lambda: fit()["nope"], ("nope",)),
        Case(area, "post.mean('nope')", lambda: fit().mean("nope"), ("nope",)),
        Case(area, "load a missing file", lambda: Posterior.load(tmp / "missing.nc"),
             ("missing.nc", "path")),
        Case(area, "load a file that is not NetCDF", lambda: Posterior.load(tmp / "not-netcdf.nc"),
             ("not-netcdf.nc", "path")),
        Case(area, "save into a missing folder", lambda: fit().save(tmp / "no" / "such" / "f.nc"),
             ("f.nc", "path", "no"), lambda p: None if Path(p).is_file() else "no file written",
             "the folder created and the file written, or an error naming the path"),
        Case(area, "save into a read-only folder" if not ROOT else "save below a file",
             lambda: fit().save(unwritable / "f.nc"), ("f.nc", "path", str(unwritable))),
        Case(area, "save to a path that is a folder", lambda: fit().save(tmp),
             ("path", str(tmp))),
        Case(area, "sample_discrete(temperature=2)", lambda: fit().sample_discrete(temperature=2),
             ("temperature",)),
        Case(area, "sample_discrete(temperature=True)",
             lambda: fit().sample_discrete(temperature=True), ("temperature",)),
        Case(area, "summary of an EM fit", lambda: fit().summary(), ("em", "EM", "summary"),
             not_none, "a table or an error saying why EM has no summary"),
        Case(area, "predict(None)", lambda: fit().predict(None), ("new_data",)),
    ]


def loader_cases() -> list[Case]:
    from pyromodels.data import loaders

    area = "loaders"
    tmp = Path(tempfile.mkdtemp(prefix="survey-"))
    (tmp / "text.idx").write_text("not an idx file")
    return [
        Case(area, "load_crowd('nope')", lambda: loaders.load_crowd("nope"), ("nope", "name")),
        Case(area, "load_crowd(3)", lambda: loaders.load_crowd(3), ("name",)),
        Case(area, "load_crowd('')", lambda: loaders.load_crowd(""), ("name",)),
        Case(area, "load_sklearn('nope')", lambda: loaders.load_sklearn("nope"), ("nope", "name")),
        Case(area, "load_planetoid('nope')", lambda: loaders.load_planetoid("nope"),
             ("nope", "name")),
        Case(area, "load_planetoid missing path",
             lambda: loaders.load_planetoid("cora", path=tmp / "absent"), ("absent", "path")),
        Case(area, "load_nltk_brown missing path",
             lambda: loaders.load_nltk_brown(path=tmp / "absent"), ("absent", "path")),
        Case(area, "load_nltk_brown tagset='bogus'",
             lambda: loaders.load_nltk_brown(tagset="bogus", fileids=["ca01"]), ("tagset",)),
        Case(area, "load_conll_ner_crowd missing path",
             lambda: loaders.load_conll_ner_crowd(path=tmp / "absent"), ("absent", "path")),
        Case(area, "load_pico missing path", lambda: loaders.load_pico(path=tmp / "absent"),
             ("absent", "path")),
        Case(area, "read_idx of a missing file", lambda: loaders.read_idx(tmp / "absent.idx"),
             ("absent.idx", "path")),
        Case(area, "read_idx of a text file", lambda: loaders.read_idx(tmp / "text.idx"),
             ("text.idx", "path", "idx")),
    ]


# ====================================================================== CLI cases
def cli_cases() -> list[Case]:
    tmp = Path(tempfile.mkdtemp(prefix="survey-cli-"))
    files = {
        "answers.csv": ANSWERS.to_csv(index=False),
        "one_class.csv": with_col(ANSWERS, "label", "x").to_csv(index=False),
        "nan_label.csv": set_cell(ANSWERS, 3, "label", None).to_csv(index=False),
        "no_label.csv": ANSWERS.drop(columns="label").to_csv(index=False),
        "empty.csv": "",
        "header_only.csv": "task,worker,label\n",
        "points.csv": pd.DataFrame(X.numpy(), columns=["a", "b"]).to_csv(index=False),
        "indexed.csv": pd.DataFrame(X.numpy(), columns=["a", "b"]).to_csv(),
        "text_points.csv": "a,b\n1.0,x\n2.0,y\n3.0,z\n4.0,w\n",
        "edges_one_col.csv": "source\nt1\nt2\n",
        "tagged_no_position.csv": TAGGED.drop(columns="position").to_csv(index=False),
        "gold_unknown.csv": "task,label\nzz,x\n",
    }
    for name, text in files.items():
        (tmp / name).write_text(text)
    unwritable = unwritable_folder(tmp)
    f = lambda name: str(tmp / name)  # noqa: E731
    out = lambda name: ["--out", str(tmp / "reports" / name)]  # noqa: E731
    ds = ["fit", "dawid-skene", "--method", "em", "--max-iter", "50", "--no-progress"]
    gm = ["fit", "gaussian-mixture", "--method", "em", "--max-iter", "50", "--no-progress"]
    area = "CLI"

    def cli(name, argv, names, check=None, expect="exit 2 and one line naming it"):
        return Case(area, name, None, names, check, expect, argv)

    wrote_report = lambda name: (lambda proc: None if (tmp / "reports" / name).is_dir()  # noqa: E731
                                 else "no report folder written")
    return [
        cli("no command", [], ("COMMAND", "command")),
        cli("unknown command", ["frobnicate"], ("frobnicate", "command")),
        cli("fit an unknown model", ["fit", "no-such-model", "--method", "em"],
            ("no-such-model", "model")),
        cli("fit without --method", ["fit", "dawid-skene"], ("--method", "method")),
        cli("--method bogus", ["fit", "dawid-skene", "--method", "bogus"], ("bogus", "method")),
        cli("--data missing file", [*ds, "--data", f("absent.csv"), *out("a")],
            ("absent.csv", "--data")),
        cli("--data a folder", [*ds, "--data", str(tmp), *out("b")], (str(tmp), "--data")),
        cli("--data empty file", [*ds, "--data", f("empty.csv"), *out("c")],
            ("empty.csv", "--data", "empty")),
        cli("--data header only", [*ds, "--data", f("header_only.csv"), *out("d")],
            ("header_only.csv", "rows", "empty")),
        cli("crowd CSV without label column", [*ds, "--data", f("no_label.csv"), *out("e")],
            ("label", "--label-col")),
        cli("--label-col not in the file", [*ds, "--data", f("answers.csv"), "--label-col",
                                            "answer", *out("f")], ("answer", "--label-col")),
        cli("one-class CSV", [*ds, "--data", f("one_class.csv"), *out("g")],
            ("class", "classes", "label"), wrote_report("g"),
            "a report (every task 'x') or exit 2 naming the classes"),
        cli("NaN label in CSV", [*ds, "--data", f("nan_label.csv"), *out("h")], ("label",)),
        cli("--device tpu", [*ds, "--data", f("answers.csv"), "--device", "tpu", *out("i")],
            ("device", "tpu")),
        cli("--device cuda:7", [*ds, "--data", f("answers.csv"), "--device", "cuda:7",
                                *out("j")], ("device", "cuda", "cuda:7"),
            None if torch.cuda.is_available() else
            (lambda proc: None if "cuda" in proc.stderr.lower() else "no word about the device"),
            "exit 2 naming the device, or (without CUDA) the documented CPU fallback with a "
            "warning"),
        cli("--out a read-only folder" if not ROOT else "--out below a file",
            [*ds, "--data", f("answers.csv"), "--out", str(unwritable / "sub")],
            ("--out", str(unwritable))),
        cli("--out an existing file", [*ds, "--data", f("answers.csv"), "--out",
                                       f("answers.csv")], ("--out", f("answers.csv"))),
        cli("--num-samples 0 (gibbs)", ["fit", "dawid-skene", "--method", "gibbs",
                                        "--num-samples", "0", "--data", f("answers.csv"),
                                        *out("k")], ("--num-samples",)),
        cli("--num-samples abc", ["fit", "dawid-skene", "--method", "gibbs", "--num-samples",
                                  "abc"], ("--num-samples",)),
        cli("--lr -1 (svi)", ["fit", "gaussian-mixture", "--method", "svi", "--lr", "-1"],
            ("--lr",)),
        cli("--seed -1", [*ds, "--data", f("answers.csv"), "--seed", "-1", *out("l")],
            ("--seed",)),
        cli("--max-iter with gibbs", ["fit", "dawid-skene", "--method", "gibbs", "--max-iter",
                                      "5"], ("--max-iter",)),
        cli("--edges on dawid-skene", [*ds, "--edges", f("answers.csv")], ("--edges",)),
        cli("networked: missing edges file", ["fit", "networked-dawid-skene", "--method", "em",
                                              "--data", f("answers.csv"), "--edges",
                                              f("absent_edges.csv"), *out("m")],
            ("--edges", "absent_edges.csv")),
        cli("networked: edges CSV of one column",
            ["fit", "networked-dawid-skene", "--method", "em", "--max-iter", "5",
             "--no-progress", "--data", f("answers.csv"), "--edges", f("edges_one_col.csv"),
             *out("n")], ("--edges", "edges_one_col.csv", "column", "columns")),
        cli("sequential: no position column",
            ["fit", "sequential-dawid-skene", "--method", "em", "--max-iter", "5",
             "--no-progress", "--data", f("tagged_no_position.csv"), *out("o")],
            ("position", "--position-col")),
        cli("mixture: a text column", [*gm, "--data", f("text_points.csv"), *out("p")],
            ("text_points.csv", "b", "numeric", "column")),
        cli("mixture: a saved index column", [*gm, "--data", f("indexed.csv"), *out("q")],
            ("index", "indexed.csv")),
        cli("mixture: --num-components 0", [*gm, "--data", f("points.csv"),
                                            "--num-components", "0"], ("--num-components",)),
        cli("--dataset bogus", [*ds, "--dataset", "bogus", *out("r")], ("bogus", "--dataset")),
        cli("--gold with unknown tasks", [*ds, "--data", f("answers.csv"), "--gold",
                                          f("gold_unknown.csv"), *out("s")],
            ("gold", "--gold", "zz", "task"), wrote_report("s"),
            "exit 2 naming the gold tasks, or a report that says no gold task matched"),
        cli("report of a missing folder", ["report", str(tmp / "absent-report")],
            ("absent-report", "report")),
    ]


# ====================================================================== driver
API_GROUPS = (annotation_cases, sequence_graph_cases, ds_cases, sequential_networked_cases,
              mixture_cases, engine_cases, posterior_cases, loader_cases)


def collect(with_cli: bool) -> list[Case]:
    cases = []
    for group in API_GROUPS + ((cli_cases,) if with_cli else ()):
        try:
            cases.extend(group())
        except Exception as err:  # noqa: BLE001 - a group that cannot be built is reported
            cases.append(Case("survey", f"building {group.__name__}",
                              lambda err=err: (_ for _ in ()).throw(err)))
    return cases


def run_case(case: Case, timeout: float) -> tuple[str, str]:
    try:
        if case.run is None:
            return run_cli_case(case, timeout)
        return run_api_case(case, timeout)
    except Exception:  # noqa: BLE001 - the survey itself must not stop
        return "unclear", "the survey could not run it: " + traceback.format_exc(limit=1)[-200:]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="run the cases whose area or name holds this text")
    parser.add_argument("--no-cli", action="store_true", help="skip the command-line cases")
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per case")
    parser.add_argument("--jobs", type=int, default=2, help="command-line cases run at once")
    parser.add_argument("--json", type=Path, help="also write every result to this file")
    args = parser.parse_args(argv)

    cases = collect(not args.no_cli)
    if args.only:
        cases = [c for c in cases if args.only.lower() in f"{c.area} {c.name}".lower()]
    start = time.perf_counter()
    outcomes: dict[int, tuple[str, str]] = {}

    def record(n: int, outcome: tuple[str, str]) -> None:
        outcomes[n] = outcome
        case = cases[n]
        print(f"[{len(outcomes):3d}/{len(cases)}] {outcome[0]:11s} {case.area}: {case.name}",
              flush=True)

    for n, case in enumerate(cases):
        if case.run is not None:  # API cases fork one after another
            record(n, run_case(case, args.timeout))
    cli = [n for n, case in enumerate(cases) if case.run is None]
    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:  # CLI cases: subprocesses
        futures = {pool.submit(run_case, cases[n], args.timeout): n for n in cli}
        for future in as_completed(futures):
            record(futures[future], future.result())
    results = [{"area": c.area, "name": c.name, "kind": outcomes[n][0],
                "detail": outcomes[n][1], "expect": c.expect} for n, c in enumerate(cases)]

    areas = sorted({r["area"] for r in results}, key=lambda a: [r["area"] for r in results]
                   .index(a))
    counts = Counter((r["area"], r["kind"]) for r in results)
    width = max(len(a) for a in areas + ["area"]) if areas else 4
    print(f"\n{len(results)} cases in {time.perf_counter() - start:.0f} s\n")
    print(f"{'area':{width}s} " + " ".join(f"{k:>11s}" for k in KINDS) + "  total")
    for area in areas + ["all"]:
        row = [sum(counts[(a, k)] for a in (areas if area == "all" else [area])) for k in KINDS]
        print(f"{area:{width}s} " + " ".join(f"{c:11d}" for c in row) + f"  {sum(row):5d}")
    flagged = [r for r in results if r["kind"] in ("silent", "unclear")]
    if flagged:
        print("\nNot clear (silent or unclear):")
        for r in flagged:
            print(f"- [{r['kind']}] {r['area']}: {r['name']} -> {r['detail']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
