"""The bookkeeping of the RBHMC protocols around any sampler: seeds, runs, scores, summaries.

A sampler is any callable ``sampler(request: ChainRequest) -> ChainOutput``: it runs one chain
of BHMC (``request.C is None``) or RBHMC on ``request.data`` and returns the selected tree as
per-datum paths, with its CDL / RCDL traces. This module knows no model: it derives a seed per
run, calls the sampler, scores the trees (:func:`score_tree`: AID, AOD, per-level F-measure)
and tabulates them as the paper's figures do.

* :func:`run_sensitivity` / :func:`summarise_sensitivity`: Figs. 4 and 8 (AID and AOD of the
  last tree over repeats per ``(C, eps_0)``; single-path trees are dropped and counted).
* :func:`run_f_measure`: Figs. 6 and 10 (F-measure by level, one row per chain and level).
* :func:`run_convergence`: Figs. 3 and 7 (CDL and RCDL per iteration).

Example:
    >>> import torch
    >>> from .data import planted_hierarchy
    >>> from .paper_numbers import HYPERPARAMETERS
    >>> from .settings import protocol_settings
    >>> data = planted_hierarchy(n_per_leaf=3)
    >>> truth = lambda request: ChainOutput(data.true_paths)
    >>> run = protocol_settings("planted", "f_measure", "smoke")
    >>> frame = run_f_measure(data, HYPERPARAMETERS["animals"], truth, run, seed=0)
    >>> bhmc = frame.query("method == 'BHMC'").groupby("level")[["f_measure", "f_true"]].mean()
    >>> bhmc.to_numpy().tolist()   # levels 1 and 2: [f_measure, f_true]
    [[0.5, 1.0], [1.0, 1.0]]

The planted set's ``labels`` are its 6 leaves, so level 1 (two top clusters) scores 0.5 against
them and 1 against the true level-1 clusters (``f_true``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ...checks import check_int
from ...metrics import HierarchyMetricWarning, aid, aod, f_measure, f_measure_by_level
from .data import HierarchyData
from .paper_numbers import Hyperparameters
from .settings import ProtocolRun

__all__ = ["ChainRequest", "ChainOutput", "Sampler", "run_seed", "score_tree",
           "run_sensitivity", "summarise_sensitivity", "run_f_measure", "run_convergence"]


@dataclass(frozen=True)
class ChainRequest:
    """One chain to run.

    Attributes:
        data: the data set (its ``x`` is what the model sees).
        hyper: the model's hyperparameters.
        C: regularisation constant, or ``None`` for the BHMC baseline.
        eps0: margin ``eps_0`` (ignored by BHMC).
        burn_in: iterations before the kept draws.
        draws: iterations kept after burn-in.
        selection: ``"best"`` (highest RCDL, BHMC: CDL, among the kept draws) or ``"last"``.
        seed: the chain's seed (for its ``torch.Generator``).
    """

    data: HierarchyData
    hyper: Hyperparameters
    C: float | None
    eps0: float
    burn_in: int
    draws: int
    selection: str
    seed: int


@dataclass(frozen=True)
class ChainOutput:
    """What a sampler returns for one chain.

    Attributes:
        paths: ``(N, L + 1)`` int64 paths of the selected tree.
        cdl: ``(burn_in + draws,)`` CDL trace, or ``None``.
        rcdl: ``(burn_in + draws,)`` RCDL trace (BHMC: ``None``).
    """

    paths: torch.Tensor
    cdl: torch.Tensor | None = None
    rcdl: torch.Tensor | None = None


Sampler = Callable[[ChainRequest], ChainOutput]


def run_seed(seed: int, *key: int) -> int:
    """A 63-bit seed for the run indexed by ``key`` (setting, repeat, chain), derived from
    ``seed`` by ``numpy.random.SeedSequence`` so that runs never share a stream.

    Example:
        >>> run_seed(0, 1, 2) == run_seed(0, 1, 2) != run_seed(0, 2, 1)
        True
    """
    seed = check_int(seed, "seed", minimum=0)
    state = np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key)).generate_state(2)
    return int((int(state[0]) << 31) ^ int(state[1])) & (2**63 - 1)


def _true_level_scores(data: HierarchyData, paths: torch.Tensor) -> list[float]:
    """F-measure of the tree's level ``l`` against the true level-``l`` clusters, for the
    levels both trees have (``nan`` beyond the true depth; none without a true tree)."""
    if data.true_paths is None:
        return []
    true_depth = data.true_paths.shape[1] - 1
    return [f_measure(data.true_paths[:, lv], paths[:, lv]) if lv <= true_depth else math.nan
            for lv in range(1, paths.shape[1])]


def score_tree(data: HierarchyData, paths) -> dict:
    """AID, AOD (collapsed tree, pairs once), per-level F-measure and shape of one tree.

    Undefined scores are ``nan`` without a warning (the caller counts them): AOD of a single
    path, AID when no node holds two data. ``f_level_l`` scores level ``l`` against
    ``data.labels`` (the paper's use); where the data have a true tree, ``f_true_l`` scores it
    against the true level-``l`` clusters.

    Returns:
        ``{"aid", "aod", "single_path", "leaves", "f_level_1", ..., "f_level_L"}`` and, with a
        true tree, ``"f_true_1", ..., "f_true_L"``.
    """
    paths = torch.as_tensor(paths)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HierarchyMetricWarning)
        out = {"aid": aid(data.x, paths), "aod": aod(data.x, paths)}
    out["single_path"] = bool(len(torch.unique(paths[:, -1])) == 1)
    out["leaves"] = int(len(torch.unique(paths[:, -1])))
    for level, f in enumerate(f_measure_by_level(data.labels, paths).tolist(), start=1):
        out[f"f_level_{level}"] = f
    for level, f in enumerate(_true_level_scores(data, paths), start=1):
        out[f"f_true_{level}"] = f
    return out


def _methods(run: ProtocolRun):
    """``(setting index, method, C, eps0)``: BHMC first (index 0), then each RBHMC setting."""
    yield 0, "BHMC", None, math.nan
    for i, (c, e) in enumerate(run.settings, start=1):
        yield i, "RBHMC", c, e


def _request(data, hyper, run, c, e, seed) -> ChainRequest:
    return ChainRequest(data, hyper, c, e, run.burn_in, run.draws, run.selection, seed)


def _call(sampler: Sampler, request: ChainRequest) -> ChainOutput:
    out = sampler(request)
    if not isinstance(out, ChainOutput):
        raise TypeError(f"sampler must return a ChainOutput, got {type(out).__name__}")
    return out


def run_sensitivity(data: HierarchyData, hyper: Hyperparameters, sampler: Sampler,
                    run: ProtocolRun, seed: int = 0) -> pd.DataFrame:
    """AID and AOD of the selected tree of ``run.repeats`` runs per setting, and of BHMC.

    Returns:
        One row per run: ``method``, ``C``, ``eps0``, ``repeat``, ``seed`` and the
        :func:`score_tree` columns.
    """
    rows = []
    for index, method, c, e in _methods(run):
        for r in range(run.repeats):
            s = run_seed(seed, index, r)
            out = _call(sampler, _request(data, hyper, run, c, e, s))
            rows.append({"method": method, "C": c, "eps0": e, "repeat": r, "seed": s,
                         **score_tree(data, out.paths)})
    return pd.DataFrame(rows)


def summarise_sensitivity(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean AID and AOD per setting over the runs whose tree is not a single path.

    Returns:
        One row per ``(method, C, eps0)``: ``aid``, ``aod``, ``runs`` (kept), ``dropped``
        (single-path runs), and ``better_than_bhmc``: lower AID **and** higher AOD than the
        BHMC row (the paper's criterion of improvement).
    """
    kept = frame[~frame.single_path]
    keys = ["method", "C", "eps0"]
    summary = kept.groupby(keys, dropna=False, sort=False).agg(
        aid=("aid", "mean"), aod=("aod", "mean"), runs=("aid", "size")).reset_index()
    dropped = frame[frame.single_path].groupby(keys, dropna=False, sort=False).size()
    summary["dropped"] = [int(dropped.get(tuple(k), 0)) for k in summary[keys].itertuples(
        index=False)]
    base = summary[summary.method == "BHMC"]
    if len(base):
        b = base.iloc[0]
        summary["better_than_bhmc"] = (summary.aid < b.aid) & (summary.aod > b.aod)
    return summary


def run_f_measure(data: HierarchyData, hyper: Hyperparameters, sampler: Sampler,
                  run: ProtocolRun, seed: int = 0) -> pd.DataFrame:
    """F-measure by level of each chain's selected tree, BHMC and every RBHMC setting.

    Returns:
        One row per chain and level: ``method``, ``C``, ``eps0``, ``chain``, ``level``,
        ``f_measure`` (against ``data.labels``) and ``f_true`` (against the true tree's
        clusters at that level; ``nan`` without one).
    """
    rows = []
    for index, method, c, e in _methods(run):
        for chain in range(run.chains):
            out = _call(sampler, _request(data, hyper, run, c, e, run_seed(seed, index, chain)))
            paths = torch.as_tensor(out.paths)
            scores = f_measure_by_level(data.labels, paths).tolist()
            truth = _true_level_scores(data, paths) or [math.nan] * len(scores)
            rows += [{"method": method, "C": c, "eps0": e, "chain": chain, "level": level,
                      "f_measure": f, "f_true": t}
                     for level, (f, t) in enumerate(zip(scores, truth), start=1)]
    return pd.DataFrame(rows)


def run_convergence(data: HierarchyData, hyper: Hyperparameters, sampler: Sampler,
                    run: ProtocolRun, seed: int = 0) -> pd.DataFrame:
    """CDL and RCDL traces of every chain (RBHMC settings only, as in Figs. 3 and 7).

    Returns:
        One row per chain and iteration: ``C``, ``eps0``, ``chain``, ``iteration``, ``cdl``,
        ``rcdl``.
    """
    rows = []
    for index, method, c, e in _methods(run):
        if method == "BHMC":
            continue
        for chain in range(run.chains):
            out = _call(sampler, _request(data, hyper, run, c, e, run_seed(seed, index, chain)))
            if out.cdl is None or out.rcdl is None:
                raise ValueError("sampler must return cdl and rcdl traces for the convergence "
                                 "protocol")
            cdl, rcdl = torch.as_tensor(out.cdl).tolist(), torch.as_tensor(out.rcdl).tolist()
            if len(cdl) != len(rcdl):
                raise ValueError(f"sampler returned traces of lengths {len(cdl)} (cdl) and "
                                 f"{len(rcdl)} (rcdl); they must match")
            rows += [{"C": c, "eps0": e, "chain": chain, "iteration": i, "cdl": a, "rcdl": b}
                     for i, (a, b) in enumerate(zip(cdl, rcdl))]
    return pd.DataFrame(rows)
