"""Replace a directory whole: build the new one beside it, then swap it into place.

:func:`staged_directory` hands out a new, empty sibling of the target (same parent, so the
same file system); once the caller's block has filled it without error, the entries of the
old target that the new directory lacks are moved into it, the old target is renamed aside,
the new one renamed into place and the old one deleted. The swap runs with SIGINT and SIGTERM
held back (where the platform allows), and any failure in it moves everything back, so the
target is at every moment the whole old directory or the whole new one. A failure or an
interrupt while the block runs deletes the new directory and leaves the target untouched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

__all__ = ["staged_directory", "check_target"]

_HELD_SIGNALS = {signal.SIGINT} | ({signal.SIGTERM} if hasattr(signal, "SIGTERM") else set())


def _sibling(target: Path, kind: str) -> Path:
    return target.parent / f".{target.name}.{kind}-{uuid.uuid4().hex[:12]}"


def check_target(target, name: str = "out_dir") -> Path:
    """``target`` as an absolute path, once it is known that :func:`staged_directory` can
    replace it; a ``ValueError`` naming ``name`` otherwise.

    The target must not be a file, nor the current directory or one holding it (replacing it
    would leave this process, and a shell sitting there, in a deleted directory); its nearest
    existing ancestor must be a directory that can be written.
    """
    if not isinstance(target, str | Path):
        raise TypeError(f"{name} must be a path (str or Path), got {type(target).__name__}")
    out = Path(target).resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"{name} must be a directory, but {out} is a file")
    cwd = Path.cwd().resolve()
    if out == cwd or out in cwd.parents:
        raise ValueError(
            f"{name} must not be the current directory or one holding it, got {out}: a report "
            "replaces its directory whole; name a directory of its own"
        )
    existing = out.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{name} cannot be created: {existing} is a file, not a directory")
    probe = _sibling(existing / "probe", "probe")
    try:
        probe.mkdir()
    except OSError as exc:
        raise ValueError(
            f"{name} cannot be written: no directory can be made in {existing} "
            f"({exc.strerror or exc})"
        ) from None
    probe.rmdir()
    return out


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold back SIGINT and SIGTERM while the block runs; they are delivered after it."""
    if not hasattr(signal, "pthread_sigmask") or (
        threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _swap(stage: Path, target: Path) -> None:
    """Move ``stage`` into place at ``target``, keeping the old target's other entries."""
    if not os.path.lexists(target):
        os.rename(stage, target)
        return
    os.chmod(stage, stat.S_IMODE(target.stat().st_mode))
    old = _sibling(target, "old")
    with _signals_held():
        moved: list[str] = []
        try:
            for entry in sorted(os.listdir(target)):
                if not os.path.lexists(stage / entry):
                    os.rename(target / entry, stage / entry)
                    moved.append(entry)
            os.rename(target, old)
            try:
                os.rename(stage, target)
            except BaseException:
                os.rename(old, target)
                raise
        except BaseException:
            for entry in reversed(moved):
                os.rename(stage / entry, target / entry)
            raise
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def staged_directory(target: Path) -> Iterator[Path]:
    """Yield a new empty directory beside ``target``; on leaving the block without error it
    replaces ``target`` whole (entries of the old ``target`` it lacks are kept), on an error
    or interrupt it is deleted and ``target`` is left as it was.

    Example:
        >>> from pathlib import Path
        >>> with staged_directory(Path("/tmp/staged-example")) as stage:
        ...     _ = (stage / "a.txt").write_text("new")
        >>> (Path("/tmp/staged-example") / "a.txt").read_text()
        'new'
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    stage = _sibling(target, "new")
    stage.mkdir()
    try:
        yield stage
        _swap(stage, target)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
