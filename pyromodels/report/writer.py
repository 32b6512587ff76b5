"""Write a report directory: ``index.html``, ``metrics.json`` and one NetCDF file per engine.

Layout of ``out_dir`` after :func:`write_report`::

    index.html            the self-contained page (figures embedded as PNG)
    metrics.json          {result name: metrics}, strict JSON (``null`` for NaN), and under
                          the key "_report" the run id, each other file's SHA-256 digest and
                          the digest of the metrics themselves
    <result>/<engine>.nc  each result's arviz.InferenceData, one file per engine

The report is built in a new directory beside ``out_dir`` and swapped into place whole, so
``out_dir`` always holds the whole old report or the whole new one. Entries already in
``out_dir`` under other names are kept; a result directory is replaced whole.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from ..checks import check_name
from .atomic import check_target, staged_directory
from .contents import (
    INDEX_NAME,
    METRICS_NAME,
    RUN_ID_ATTR,
    RUN_KEY,
    file_digest,
    new_run_id,
    read_report,
)
from .html import render_page
from .result import DemoResult, check_metrics, metrics_digest

__all__ = ["write_report", "read_metrics", "library_versions", "INDEX_NAME", "METRICS_NAME"]

logger = logging.getLogger(__name__)

_VERSIONED = ("pyromodels", "torch", "pyro-ppl", "numpy", "scipy", "pandas", "arviz", "matplotlib")


def library_versions() -> dict[str, str]:
    """Python's version and those of the libraries a report depends on."""
    versions = {"python": sys.version.split()[0]}
    for package in _VERSIONED:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def _check_results(results) -> list[DemoResult]:
    if not isinstance(results, Sequence) or isinstance(results, str):
        raise TypeError(f"results must be a list of DemoResult, got {type(results).__name__}")
    if not results:
        raise ValueError("results must hold at least one DemoResult, got an empty list")
    seen = set()
    for i, result in enumerate(results):
        if not isinstance(result, DemoResult):
            raise TypeError(f"results[{i}] must be a DemoResult, got {type(result).__name__}")
        if result.name in seen:
            raise ValueError(f"results must have distinct names; {result.name!r} appears twice")
        seen.add(result.name)
    return list(results)


def _close_figures(results: list[DemoResult]) -> None:
    import matplotlib.pyplot as plt

    for result in results:
        for figure in result.figures.values():
            plt.close(figure)


def _check_files(files, results: list[DemoResult]) -> dict:
    """``files`` (name -> pandas DataFrame, written as CSV beside ``index.html``), checked."""
    if files is None:
        return {}
    if not isinstance(files, dict):
        raise TypeError(f"files must be a dict of name -> DataFrame, got {type(files).__name__}")
    import pandas as pd

    taken = {INDEX_NAME, METRICS_NAME} | {r.name for r in results}
    for file_name, frame in files.items():
        check_name(file_name, "files key")
        if file_name in taken:
            raise ValueError(f"files key {file_name!r} clashes with a file or result of the report")
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(
                f"files[{file_name!r}] must be a pandas DataFrame, got {type(frame).__name__}"
            )
    return files


def _write_netcdf(idata, path: Path, run_id: str) -> None:
    """Write ``idata`` to ``path`` with ``run_id`` among its root attributes; the caller's
    object is left as it was."""
    attrs = dict(idata.attrs)
    idata.attrs = {**attrs, RUN_ID_ATTR: run_id}
    try:
        idata.to_netcdf(str(path))
    finally:
        idata.attrs = attrs


def write_report(results: list[DemoResult], out_dir, title: str, files: dict | None = None) -> Path:
    """Write the report of ``results`` into ``out_dir`` and return the path of its ``index.html``.

    The page holds, for each result in order, its summary, figures (base64 PNG with
    captions), tables (as HTML, long notes written once per table), its metrics as one
    collapsed table per top-level entry, and links to its NetCDF files. Every figure in ``results`` is
    closed once drawn, so a long run of demos does not accumulate open figures.

    The report is written into a new directory beside ``out_dir`` and moved into place whole
    once complete, so an interrupted or failed write leaves ``out_dir`` as it was (see
    :mod:`.atomic`); each file records the report's run id, and
    :func:`~pyromodels.report.read_report` checks that a directory holds one whole report.

    Args:
        results: non-empty list of :class:`~pyromodels.report.DemoResult` with distinct names.
        out_dir: the report directory (created with its parents if missing). It must not be
            the current directory or one holding it; entries of an existing ``out_dir`` that
            the report does not write are kept.
        title: the page title.
        files: optional name -> ``pandas.DataFrame``, each written as CSV (without the index)
            beside ``index.html``.

    Returns:
        The absolute path of ``out_dir/index.html``.

    Example:
        >>> from pyromodels.report import DemoResult
        >>> toy = DemoResult("toy", "A toy.", {"em": {"ll": -3.2}})
        >>> path = write_report([toy], "/tmp/r", "Toy")
        >>> path.name
        'index.html'
    """
    results = _check_results(results)
    try:
        if not isinstance(title, str):
            raise TypeError(f"title must be a string, got {type(title).__name__}")
        out = check_target(out_dir, "out_dir")
        extra = _check_files(files, results)
        metrics = {r.name: check_metrics(r.metrics, f"{r.name} metrics") for r in results}
        run_id = new_run_id()
        with staged_directory(out) as stage:
            links: dict[str, dict[str, str]] = {}
            for result in results:
                links[result.name] = {}
                for engine, idata in result.inference_data.items():
                    relative = f"{result.name}/{engine}.nc"
                    (stage / result.name).mkdir(exist_ok=True)
                    _write_netcdf(idata, stage / relative, run_id)
                    links[result.name][engine] = relative
            for file_name, frame in extra.items():
                frame.to_csv(stage / file_name, index=False)
            generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            page = render_page(results, title, generated, library_versions(), links, run_id)
            (stage / INDEX_NAME).write_text(page, encoding="utf-8")
            written = [INDEX_NAME, *extra, *(p for r in links.values() for p in r.values())]
            record = {"run_id": run_id, "files": {p: file_digest(stage / p) for p in written},
                      "metrics": metrics_digest(metrics)}
            # strict JSON: no NaN, Infinity
            text = json.dumps({**metrics, RUN_KEY: record}, indent=2, allow_nan=False)
            (stage / METRICS_NAME).write_text(text + "\n", encoding="utf-8")
    finally:
        _close_figures(results)
    index = out / INDEX_NAME
    logger.info("wrote report %s (%d results, run %s)", index, len(results), run_id)
    return index


def read_metrics(report_dir) -> tuple[Path, dict]:
    """The path of an existing report's ``index.html`` and its metrics (result name -> metrics),
    once :func:`~pyromodels.report.read_report` has checked that it is one whole report.

    Raises:
        FileNotFoundError: ``report_dir`` holds no ``index.html`` or no ``metrics.json``.
        IncompleteReportError: the report is partial or mixed (a ``ValueError``).
    """
    index, metrics, _ = read_report(report_dir)
    return index, metrics
