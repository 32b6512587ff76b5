"""Write a report directory: ``index.html``, ``metrics.json`` and one NetCDF file per engine.

Layout of ``out_dir`` after :func:`write_report`::

    index.html            the self-contained page (figures embedded as PNG)
    metrics.json          {result name: metrics}, strict JSON (``null`` for NaN)
    <result>/<engine>.nc  each result's arviz.InferenceData, one file per engine

Files already in ``out_dir`` under other names are left alone; the three kinds above are
overwritten.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from .html import render_page
from .result import DemoResult, check_metrics

__all__ = ["write_report", "read_metrics", "library_versions", "INDEX_NAME", "METRICS_NAME"]

logger = logging.getLogger(__name__)

INDEX_NAME = "index.html"
METRICS_NAME = "metrics.json"

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


def write_report(results: list[DemoResult], out_dir, title: str) -> Path:
    """Write the report of ``results`` into ``out_dir`` and return the path of its ``index.html``.

    The page holds, for each result in order, its summary, figures (base64 PNG with
    captions), tables (as HTML, long notes written once per table), its metrics as one
    collapsed table per top-level entry, and links to its NetCDF files. Every figure in ``results`` is
    closed once drawn, so a long run of demos does not accumulate open figures.

    Args:
        results: non-empty list of :class:`~pyromodels.report.DemoResult` with distinct names.
        out_dir: the report directory (created with its parents if missing).
        title: the page title.

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
        if not isinstance(out_dir, str | Path):
            raise TypeError(f"out_dir must be a path (str or Path), got {type(out_dir).__name__}")
        out = Path(out_dir).resolve()
        if out.exists() and not out.is_dir():
            raise ValueError(f"out_dir must be a directory, but {out} is a file")
        out.mkdir(parents=True, exist_ok=True)

        metrics = {r.name: check_metrics(r.metrics, f"{r.name} metrics") for r in results}
        links: dict[str, dict[str, str]] = {}
        for result in results:
            links[result.name] = {}
            for engine, idata in result.inference_data.items():
                relative = f"{result.name}/{engine}.nc"
                (out / result.name).mkdir(exist_ok=True)
                idata.to_netcdf(str(out / relative))
                links[result.name][engine] = relative
        text = json.dumps(metrics, indent=2, allow_nan=False)  # strict JSON: no NaN, Infinity
        (out / METRICS_NAME).write_text(text + "\n", encoding="utf-8")

        generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        page = render_page(results, title, generated, library_versions(), links)
        index = out / INDEX_NAME
        index.write_text(page, encoding="utf-8")
    finally:
        _close_figures(results)
    logger.info("wrote report %s (%d results)", index, len(results))
    return index


def read_metrics(report_dir) -> tuple[Path, dict]:
    """The path of an existing report's ``index.html`` and its parsed ``metrics.json``.

    Raises:
        FileNotFoundError: ``report_dir`` holds no ``index.html`` or no ``metrics.json``.
    """
    out = Path(report_dir).resolve()
    index, metrics_path = out / INDEX_NAME, out / METRICS_NAME
    for path in (index, metrics_path):
        if not path.is_file():
            raise FileNotFoundError(f"no report in {out}: {path.name} not found")
    with metrics_path.open(encoding="utf-8") as fh:
        return index, json.load(fh)
