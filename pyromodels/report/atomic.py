"""Replace a directory whole: build the new one beside it, then swap it into place.

:func:`staged_directory` hands out a new, empty sibling of the target (same parent, so the
same file system); once the caller's block has filled it without error, the entries of the
old target that the new directory lacks are moved into it, the old target is renamed aside,
the new one renamed into place and the old one deleted. The swap runs with SIGINT and SIGTERM
held back (where the platform allows), and any failure in it moves everything back, so the
target is at every moment the whole old directory or the whole new one. A failure or an
interrupt while the block runs deletes the new directory and leaves the target untouched.

A write killed outright (``SIGKILL``, a power cut) cannot clean up after itself, so each write
first clears what earlier writes to the same target left: a writer holds an exclusive lock
(``flock``) on its new directory until it is done, and a new directory that nobody holds is
stale. It is deleted, unless the write died between the two renames of its swap (the target
missing, the old one renamed aside): then it is complete and is moved into place. Directories
set aside by a swap that did not get to delete them go once the target exists. Where locks are
not available (Windows), nothing is cleared.
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

try:
    import fcntl
except ImportError:  # Windows: no flock, so no way to tell a stale directory from a live one
    fcntl = None

__all__ = ["staged_directory", "check_target"]

_HELD_SIGNALS = {signal.SIGINT} | ({signal.SIGTERM} if hasattr(signal, "SIGTERM") else set())


def _sibling(target: Path, kind: str, token: str | None = None) -> Path:
    """``.<target name>.<kind>-<token>`` beside ``target`` (a new random token by default)."""
    return target.parent / f".{target.name}.{kind}-{token or uuid.uuid4().hex[:12]}"


def _lock(path: Path) -> int | None:
    """An open descriptor of the directory ``path`` holding its exclusive ``flock``; ``None``
    when another process holds it, the directory is gone or locks are not available."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _stale(target: Path, kind: str) -> list[tuple[str, Path]]:
    """``(token, path)`` of the directories ``_sibling(target, kind, token)`` that exist."""
    prefix = f".{target.name}.{kind}-"
    try:
        names = sorted(os.listdir(target.parent))
    except OSError:
        return []
    return [(name[len(prefix):], target.parent / name) for name in names
            if name.startswith(prefix) and (target.parent / name).is_dir()]


def _clear_stale(target: Path) -> None:
    """Remove what killed writes to ``target`` left beside it (see the module notes)."""
    for token, stage in _stale(target, "new"):
        fd = _lock(stage)
        if fd is None:  # a live writer's, or no way to tell
            continue
        try:
            if not os.path.lexists(target) and _sibling(target, "old", token).is_dir():
                os.rename(stage, target)  # died mid-swap: the new directory is complete
            else:
                shutil.rmtree(stage, ignore_errors=True)
        finally:
            os.close(fd)
    for token, old in _stale(target, "old"):
        if os.path.lexists(target) and not os.path.lexists(_sibling(target, "new", token)):
            shutil.rmtree(old, ignore_errors=True)


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
    """Move ``stage`` into place at ``target``, keeping the old target's other entries; the
    old target is set aside under the token of ``stage`` while it is deleted."""
    if not os.path.lexists(target):
        os.rename(stage, target)
        return
    os.chmod(stage, stat.S_IMODE(target.stat().st_mode))
    old = _sibling(target, "old", stage.name.rsplit("-", 1)[1])
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
    _clear_stale(target)
    token = uuid.uuid4().hex[:12]
    # made under another name and locked before it is renamed: a stage is never seen unheld
    stage, making = _sibling(target, "new", token), _sibling(target, "making", token)
    making.mkdir()
    lock = _lock(making)
    try:
        os.rename(making, stage)
    except BaseException:
        shutil.rmtree(making, ignore_errors=True)
        raise
    try:
        yield stage
        _swap(stage, target)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    finally:
        if lock is not None:
            os.close(lock)
