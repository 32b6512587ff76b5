"""What a report directory holds, and the check that it holds one whole report.

Every report gets a run id, written into each of its files: ``metrics.json`` keeps it under
the reserved key :data:`RUN_KEY` together with the SHA-256 digest of every other file of the
report and that of the metrics themselves, ``index.html`` in a
``<meta name="pyromodels-run-id">`` tag and each NetCDF file in its root attribute
:data:`RUN_ID_ATTR`. :func:`read_report` uses them to tell a whole report from a partial one (a
file missing, truncated or altered, or a metric edited) or a mixed one (files of different
runs).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path

from .result import metrics_digest

__all__ = [
    "INDEX_NAME",
    "METRICS_NAME",
    "RUN_KEY",
    "RUN_ID_ATTR",
    "RUN_ID_META",
    "IncompleteReportError",
    "new_run_id",
    "file_digest",
    "read_report",
]

INDEX_NAME = "index.html"
METRICS_NAME = "metrics.json"
#: the key of ``metrics.json`` holding ``{"run_id": ..., "files": {relative path: sha256}}``;
#: result names start with a letter or digit, so it never clashes with one
RUN_KEY = "_report"
#: the root attribute of each NetCDF file of a report that holds its run id
RUN_ID_ATTR = "pyromodels_run_id"
#: the ``name`` of the ``<meta>`` tag of ``index.html`` that holds its run id
RUN_ID_META = "pyromodels-run-id"

_META_PATTERN = re.compile(rf'<meta name="{RUN_ID_META}" content="([^"<>]*)">')


class IncompleteReportError(ValueError):
    """A report directory that does not hold one whole report: a file is missing, unreadable or
    altered, or its files come from different runs."""


def new_run_id() -> str:
    """A new run id: the UTC time of the run and a random suffix, e.g. ``20250101T120000Z-3f2a``."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:12]}"


def file_digest(path: Path) -> str:
    """The SHA-256 digest of the file at ``path``, as hexadecimal."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run_record(metrics: dict, where: Path) -> tuple[str, dict[str, str]]:
    record = metrics.pop(RUN_KEY, None)
    if (
        not isinstance(record, dict)
        or not isinstance(record.get("run_id"), str)
        or not isinstance(record.get("files"), dict)
        or not isinstance(record.get("metrics"), str)
    ):
        raise IncompleteReportError(
            f"report in {where} cannot be checked: {METRICS_NAME} holds no run id (written by an "
            "older pyromodels, or edited); write the report again"
        )
    if metrics_digest(metrics) != record["metrics"]:
        raise IncompleteReportError(
            f"report in {where} is partial: {METRICS_NAME} holds metrics that differ from those "
            f"run {record['run_id']} wrote (edited)"
        )
    return record["run_id"], record["files"]


def _netcdf_run_id(path: Path) -> str | None:
    import xarray as xr

    with xr.open_dataset(path, engine="h5netcdf") as root:
        return root.attrs.get(RUN_ID_ATTR)


def _file_run_id(path: Path) -> str | None:
    """The run id written into ``path`` (``index.html`` or a NetCDF file); ``None`` for other
    files and for a file that holds none."""
    if path.name == INDEX_NAME:
        match = _META_PATTERN.search(path.read_text(encoding="utf-8"))
        return match.group(1) if match else None
    if path.suffix == ".nc":
        return _netcdf_run_id(path)
    return None


def _check_file(out: Path, relative: str, digest: str, run_id: str) -> None:
    path = out / relative
    if not path.is_file():
        raise IncompleteReportError(f"report in {out} is partial: {relative} is missing")
    try:
        found = _file_run_id(path)
    except (OSError, ValueError) as exc:
        raise IncompleteReportError(
            f"report in {out} is partial: {relative} cannot be read ({exc})"
        ) from None
    if path.name == INDEX_NAME or path.suffix == ".nc":
        if found != run_id:
            raise IncompleteReportError(
                f"report in {out} is mixed: {relative} belongs to run {found or 'unknown'}, "
                f"{METRICS_NAME} to run {run_id}"
            )
    if file_digest(path) != digest:
        raise IncompleteReportError(
            f"report in {out} is partial: {relative} differs from the file run {run_id} wrote"
        )


def read_report(report_dir) -> tuple[Path, dict, str]:
    """Check that ``report_dir`` holds one whole report; return the path of its ``index.html``,
    its metrics (result name -> metrics) and its run id.

    Raises:
        FileNotFoundError: ``report_dir`` holds no ``index.html`` or no ``metrics.json``.
        IncompleteReportError: a file of the report is missing, unreadable or altered, or the
            files come from different runs (a ``ValueError``; the message says which file).
    """
    out = Path(report_dir).resolve()
    index, metrics_path = out / INDEX_NAME, out / METRICS_NAME
    for path in (index, metrics_path):
        if not path.is_file():
            raise FileNotFoundError(f"no report in {out}: {path.name} not found")
    try:
        metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IncompleteReportError(
            f"report in {out} is partial: {METRICS_NAME} cannot be read ({exc})"
        ) from None
    if not isinstance(metrics, dict):
        raise IncompleteReportError(f"report in {out} is damaged: {METRICS_NAME} is not an object")
    run_id, files = _run_record(metrics, out)
    if INDEX_NAME not in files:
        raise IncompleteReportError(f"report in {out} is damaged: {METRICS_NAME} lists no page")
    for relative, digest in files.items():
        _check_file(out, relative, digest, run_id)
    return index, metrics, run_id
