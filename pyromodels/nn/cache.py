"""A disk cache of trained network weights, keyed by the data and every training setting.

A record (a dict of tensors, numbers, strings and lists: a state dict and what describes it)
is stored as ``<directory>/<key>.pt``. The key is a SHA-256 over the data's bytes, shape and
dtype, the training settings, the torch version and the file format, so any change to one of
them is a miss. Files are written atomically (a temporary file in the same directory, then
``os.replace``), and :meth:`WeightCache.load_or_create` holds a file lock around "load, else
train and write", so two processes asking for the same key train once: the second waits and
loads what the first wrote. A file that cannot be read back is reported with a
:class:`CacheWarning` and replaced, never crashed on.

Where the files go (:func:`resolve_cache_dir`): an explicit directory if one is given, else
``$PYROMODELS_CACHE/<kind>`` if that variable is set, else
``platformdirs.user_cache_dir("pyromodels")/<kind>``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import filelock
import platformdirs
import torch

from ..core.checkpoint import write_checkpoint
from ..core.fingerprint import data_fingerprint as fingerprint

__all__ = ["CacheWarning", "WeightCache", "cache_key", "cache_root", "data_fingerprint",
           "resolve_cache_dir", "ENV_VAR"]

logger = logging.getLogger("pyromodels")

ENV_VAR = "PYROMODELS_CACHE"
FORMAT = 1


class CacheWarning(UserWarning):
    """A cache file could not be read (it is retrained and replaced) or written."""


def cache_root() -> Path:
    """``$PYROMODELS_CACHE`` if set (and not empty), else the user's cache directory for
    pyromodels (``platformdirs.user_cache_dir("pyromodels")``)."""
    env = os.environ.get(ENV_VAR, "")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("pyromodels"))


def resolve_cache_dir(cache, kind: str) -> Path | None:
    """Where a cache of ``kind`` lives: ``None`` for no cache.

    Args:
        cache: ``True`` (``cache_root() / kind``), ``False`` or ``None`` (no cache), or a path
            (``str`` or ``os.PathLike``): the directory itself.
        kind: the sub-directory of the cache root, e.g. ``"autoencoders"``.

    Example:
        >>> resolve_cache_dir("/tmp/weights", "autoencoders").as_posix()
        '/tmp/weights'
        >>> resolve_cache_dir(False, "autoencoders") is None
        True
    """
    if cache is True:
        return cache_root() / kind
    if cache is False or cache is None:
        return None
    if isinstance(cache, str | os.PathLike):
        if str(cache) == "":
            raise ValueError("cache must be True, False or a directory path, got an empty path")
        return Path(cache).expanduser()
    raise TypeError(f"cache must be True, False or a directory path, got {type(cache).__name__} {cache!r}")


def data_fingerprint(x: torch.Tensor) -> str:
    """SHA-256 (hex) of a tensor's dtype, shape and bytes (in C order, from the CPU): the
    fingerprint checkpoints keep (:func:`pyromodels.core.fingerprint.data_fingerprint`).

    Example:
        >>> a = data_fingerprint(torch.zeros(2, 3))
        >>> a == data_fingerprint(torch.zeros(3, 2)), a == data_fingerprint(torch.zeros(2, 3))
        (False, True)
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    return fingerprint(x, "x")


def cache_key(fingerprint: str, settings: Mapping) -> str:
    """The cache key: SHA-256 (hex) of the data fingerprint, the settings (as sorted JSON),
    the torch version and the file format.

    The torch version is its public part (``2.13.0`` of ``2.13.0+cu121``), so CPU and CUDA
    builds of one release share entries: weights trained on a GPU load on a CPU-only machine.

    Args:
        fingerprint: :func:`data_fingerprint` of the training data.
        settings: the training settings: JSON-serialisable values only.

    Example:
        >>> cache_key("abc", {"lr": 0.001}) == cache_key("abc", {"lr": 0.002})
        False
    """
    if not isinstance(settings, Mapping):
        raise TypeError(f"settings must be a mapping, got {type(settings).__name__}")
    try:
        text = json.dumps({"data": fingerprint, "settings": dict(settings),
                           "torch": torch.__version__.split("+")[0], "format": FORMAT},
                          sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"settings must hold JSON-serialisable, finite values: {exc}") from exc
    return hashlib.sha256(text.encode()).hexdigest()


class WeightCache:
    """Records of trained weights in one directory, one file per key.

    Args:
        directory: where the files go (created when first written).
        lock_timeout: seconds to wait for another process training the same key; ``-1``
            (default) waits as long as it takes.

    Example:
        >>> import tempfile
        >>> cache = WeightCache(tempfile.mkdtemp())
        >>> record, hit = cache.load_or_create("k", lambda: {"w": torch.ones(2)})
        >>> hit, cache.load_or_create("k", lambda: {"w": torch.zeros(2)})[1]
        (False, True)
    """

    def __init__(self, directory: str | os.PathLike, lock_timeout: float = -1):
        if not isinstance(directory, str | os.PathLike):
            raise TypeError(f"directory must be a path, got {type(directory).__name__}")
        self.directory = Path(directory)
        self.lock_timeout = float(lock_timeout)

    def path(self, key: str) -> Path:
        """The file of ``key``."""
        if not isinstance(key, str) or not key or not all(c.isalnum() or c in "-_" for c in key):
            raise ValueError(f"key must be a non-empty string of letters, digits, '-' and '_', got {key!r}")
        return self.directory / f"{key}.pt"

    def load(self, key: str, check: Callable[[dict], None] | None = None) -> dict | None:
        """The record of ``key``, or ``None`` if there is none or it cannot be used.

        A file that exists but cannot be read, belongs to another key or format, or fails
        ``check`` (a callable that raises on a record it cannot use) gives a
        :class:`CacheWarning` and ``None``.
        """
        path = self.path(key)
        if not path.exists():
            return None
        try:
            record = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("key") != key:
                raise ValueError("not a pyromodels weight record of this key and format")
            if check is not None:
                check(record)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is retrained, not fatal
            reason = (str(exc).strip().splitlines() or [""])[0][:200]
            warnings.warn(f"ignoring the unreadable cache file {path} ({type(exc).__name__}: {reason}); "
                          "the weights are trained again and the file replaced", CacheWarning, stacklevel=3)
            return None
        return record

    def save(self, key: str, record: Mapping) -> Path:
        """Write ``record`` for ``key`` atomically (temporary file, then ``os.replace``)."""
        path = self.path(key)
        self.directory.mkdir(parents=True, exist_ok=True)
        payload = dict(record, format=FORMAT, key=key)
        write_checkpoint(path, payload)  # a temporary file, then os.replace
        return path

    def load_or_create(self, key: str, create: Callable[[], Mapping],
                       check: Callable[[dict], None] | None = None) -> tuple[dict, bool]:
        """The record of ``key`` and ``True`` if it was cached; else ``create()``'s record,
        written to the cache, and ``False``.

        The whole call holds a lock file (``<key>.pt.lock``), so a second process asking for
        the same key waits for the first and then loads its record. If the directory cannot
        be written, ``create()`` runs without the cache (a :class:`CacheWarning` says so).
        """
        path = self.path(key)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            lock = filelock.FileLock(str(path) + ".lock", timeout=self.lock_timeout)
            lock.acquire()
        except OSError as exc:
            warnings.warn(f"the weight cache {self.directory} cannot be used ({exc}); training without it",
                          CacheWarning, stacklevel=2)
            return dict(create()), False
        try:
            record = self.load(key, check)
            if record is not None:
                logger.info("loaded cached weights %s", path)
                return record, True
            record = dict(create())
            try:
                self.save(key, record)
                logger.info("cached trained weights in %s", path)
            except OSError as exc:
                warnings.warn(f"could not write the cache file {path} ({exc})", CacheWarning, stacklevel=2)
            return record, False
        finally:
            lock.release()
