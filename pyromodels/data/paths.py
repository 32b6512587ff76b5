"""Where data files are looked for, and the error raised when one is missing.

Vendored files live in ``pyromodels/data/files/``. Everything else is read from where its
users keep it, in this order: an explicit ``path`` argument, then the folder named by the
``PYROMODELS_DATA`` environment variable (laid out as ``<dataset>/<file>``), then, for some
data sets, further places (``NLTK_DATA``, a Debian package's folder). Nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV_VAR", "files_dir", "vendored", "env_roots", "locate"]

ENV_VAR = "PYROMODELS_DATA"


def files_dir() -> Path:
    """The folder of vendored data files inside the package."""
    return Path(__file__).resolve().parent / "files"


def vendored(*parts: str) -> Path:
    """Path of a vendored file; raises ``FileNotFoundError`` if the package lacks it."""
    p = files_dir().joinpath(*parts)
    if not p.is_file():
        raise FileNotFoundError(
            f"vendored data file {p} is missing: the pyromodels installation is incomplete; "
            "reinstall the package (its data files ship inside it)"
        )
    return p


def env_roots(var: str) -> list[Path]:
    """Folders listed in environment variable ``var`` (``os.pathsep``-separated)."""
    value = os.environ.get(var, "")
    return [Path(v).expanduser() for v in value.split(os.pathsep) if v]


def locate(
    names: list[str],
    *,
    path=None,
    subdir: str,
    what: str,
    how_to_get: str,
    extra: list[tuple[str, list[Path]]] = (),
) -> Path:
    """Find the first existing file or folder among candidate locations.

    Args:
        names: accepted names relative to a data set folder (e.g. ``["x.npz"]``, or a zip and
            its unpacked folder); the first that exists wins.
        path: user path: the data set folder itself, or directly one of the files.
        subdir: the data set's folder under ``$PYROMODELS_DATA``.
        what: human name of the data set, for the error message.
        how_to_get: sentence telling how to obtain the files.
        extra: further ``(label, folders)`` to search after ``$PYROMODELS_DATA``.

    Raises:
        FileNotFoundError: nothing found; the message lists every place searched.
    """
    if path is not None:
        root = Path(path).expanduser()
        if root.is_file() and root.name in {Path(n).name for n in names}:
            return root
        folders = [("path", [root])]
    else:
        folders = [(f"${ENV_VAR}/{subdir}", [r / subdir for r in env_roots(ENV_VAR)])]
        folders += list(extra)
    tried = []
    for label, roots in folders:
        if not roots:
            tried.append(f"{label} (not set)")
        for root in roots:
            for name in names:
                candidate = root / name
                if candidate.exists():
                    return candidate
            tried.append(f"{label}: {root}")
    raise FileNotFoundError(
        f"{what} not found: looked for {' or '.join(names)} in " + "; ".join(tried) + ". "
        + how_to_get
    )
