"""Stored units of a reproduction: each finished unit (one fit) is kept as JSON, keyed by
its settings, so that an interrupted reproduction run again skips what it finished."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["cache_folder", "cached_unit"]


def cache_folder(name: str) -> Path:
    """Where the units of ``name`` are kept: ``$PYROMODELS_CACHE/<name>`` if that variable
    is set, else ``~/.cache/pyromodels/<name>``."""
    root = os.environ.get("PYROMODELS_CACHE") or Path.home() / ".cache" / "pyromodels"
    return Path(root) / name


def cached_unit(folder: Path, key: dict, compute: Callable[[], object]):
    """``compute()``, or its stored result when a unit with the same ``key`` (a JSON-able
    dict) finished in ``folder``; a new result is written atomically next to the others."""
    text = json.dumps(key, sort_keys=True, default=list)
    path = Path(folder) / (hashlib.sha256(text.encode()).hexdigest()[:24] + ".json")
    if path.is_file():
        return json.loads(path.read_text())["result"]
    result = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": json.loads(text), "result": result}))
    os.replace(tmp, path)
    return result
