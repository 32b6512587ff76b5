"""Stored units of a reproduction: each finished unit (one fit) is kept as JSON, keyed by
its settings, so that an interrupted reproduction run again skips what it finished."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["cache_folder", "cached_unit", "is_stored"]


def cache_folder(name: str) -> Path:
    """Where the units of ``name`` are kept: ``$PYROMODELS_CACHE/<name>`` if that variable
    is set, else ``~/.cache/pyromodels/<name>``."""
    root = os.environ.get("PYROMODELS_CACHE") or Path.home() / ".cache" / "pyromodels"
    return Path(root) / name


def cached_unit(folder: Path, key: dict, compute: Callable[[], object]):
    """``compute()``, or its stored result when a unit with the same ``key`` (a JSON-able
    dict) finished in ``folder``; a new result is written atomically next to the others,
    with when it finished, its wall time in seconds and the package version that computed it
    (read by no one but the person comparing stored units)."""
    text, path = _unit_path(folder, key)
    if path.is_file():
        return json.loads(path.read_text())["result"]
    start = time.perf_counter()
    result = compute()
    record = {"key": json.loads(text), "result": result,
              "finished": datetime.now(UTC).isoformat(timespec="seconds"),
              "wall_s": round(time.perf_counter() - start, 1), "version": _version()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)
    return result


def is_stored(folder: Path, key: dict) -> bool:
    """Whether a unit with this ``key`` finished in ``folder``."""
    return _unit_path(folder, key)[1].is_file()


def _unit_path(folder: Path, key: dict) -> tuple[str, Path]:
    text = json.dumps(key, sort_keys=True, default=list)
    return text, Path(folder) / (hashlib.sha256(text.encode()).hexdigest()[:24] + ".json")


def _version() -> str:
    from .. import __version__
    return __version__
