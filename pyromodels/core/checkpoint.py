"""Checkpoints of a running fit: write the state of a chain or optimiser, and resume from it.

A checkpoint is one file, written to a temporary file beside the target and moved into place
with ``os.replace``, so a reader never sees half a file. Its first line names the format and
holds the SHA-256 of the rest, a ``torch.save`` record; a file whose record does not match its
checksum (a damaged copy, an edited byte) is refused before it is unpickled. The record holds:

* a header: the file format, the engine, the model's class, the fit's seed, the run's
  settings (``config``) and the fingerprint of the data it was fitted to (see
  :func:`~pyromodels.core.fingerprint.data_fingerprint`), all checked when the file is read
  back, so a run resumes only on the data it started with;
* the engine's state after its last complete step: the chain's position and kept draws, the
  optimiser and parameter state, the adaptation state of a kernel, and the states of the
  random number generators that the engine draws from (Python's ``random``, NumPy's global
  generator, torch's global generator and the engine's own ``torch.Generator``).

The runners take ``checkpoint=`` (a file path, checked before the run starts),
``checkpoint_every=`` (steps between writes; the final state is always written) and
``resume=`` (a path written by the same engine). A
``KeyboardInterrupt`` during a run with ``checkpoint=`` writes the last complete state first,
then propagates. Checkpoints are pickles: read only files you trust.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import os
import random
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

from ..checks import check_int
from .fingerprint import data_fingerprint
from .seeding import resolve_seed

__all__ = ["FORMAT", "Checkpointer", "rng_states", "set_rng_states", "write_checkpoint",
           "load_checkpoint", "read_checkpoint", "check_path", "check_shapes", "clone_tree",
           "chain_checkpoints"]

#: the ``format`` entry of every checkpoint file, also the start of its first line
FORMAT = "pyromodels.Checkpoint/2"


def check_path(path, name: str) -> Path | None:
    """``path`` as a :class:`~pathlib.Path` (``None`` stays ``None``); a ``TypeError`` naming
    ``name`` for anything but a string or path."""
    if path is None:
        return None
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"{name} must be a file path (str or os.PathLike), got {type(path).__name__}")
    return Path(path)


def rng_states(generator: torch.Generator | None = None) -> dict:
    """The states of Python's, NumPy's and torch's global generators (and of ``generator``)."""
    states = {"python": random.getstate(), "numpy": np.random.get_state(),
              "torch": torch.get_rng_state()}
    if generator is not None:
        states["generator"] = generator.get_state()
    return states


def set_rng_states(states: dict, generator: torch.Generator | None = None) -> None:
    """Restore the generators saved by :func:`rng_states`."""
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if generator is not None:
        generator.set_state(states["generator"])


def write_checkpoint(path: Path, payload: dict) -> None:
    """Write ``payload`` with ``torch.save`` to ``path`` atomically (a temporary file, then
    ``os.replace``)."""
    _write_atomically(path, lambda fh: torch.save(payload, fh))


def _write_atomically(path: Path, write: Callable) -> None:
    """Call ``write`` on a temporary file beside ``path``, then move it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_sealed(path: Path, payload: dict) -> None:
    """Write ``payload`` to ``path`` atomically: the line ``FORMAT sha256=<hex>``, then the
    ``torch.save`` record whose SHA-256 it gives."""
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    record = buffer.getvalue()
    seal = f"{FORMAT} sha256={hashlib.sha256(record).hexdigest()}\n".encode()

    def write(fh) -> None:
        fh.write(seal)
        fh.write(record)

    _write_atomically(path, write)


def load_checkpoint(path, name: str = "path") -> dict:
    """The record of the checkpoint file at ``path`` (header and ``state``) once its checksum
    is verified, without checking it against a run (:func:`read_checkpoint` does that).

    Raises:
        ValueError: ``path`` is not one whole checkpoint of this format (the message starts
            with ``name``).
    """
    path = check_path(path, name)
    if path is None:
        raise TypeError(f"{name} must be a file path (str or os.PathLike), got None")
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{name}: {str(path)!r} cannot be read ({exc})") from exc
    first, _, record = content.partition(b"\n")
    prefix = f"{FORMAT} sha256=".encode()
    if not first.startswith(prefix):
        older = (" (it is a torch file: checkpoints of the formats before, which kept no "
                 "checksum and no data fingerprint, cannot be resumed)"
                 if content.startswith(b"PK\x03\x04") else "")
        raise ValueError(f"{name}: {str(path)!r} is not a pyromodels checkpoint of format "
                         f"{FORMAT!r}{older}")
    if hashlib.sha256(record).hexdigest().encode() != first[len(prefix):]:
        raise ValueError(f"{name}: {str(path)!r} is damaged: its contents do not match the "
                         "checksum written with them")
    try:
        payload = torch.load(io.BytesIO(record), map_location="cpu", weights_only=False)
    except Exception as exc:  # noqa: BLE001 - any unreadable record is the same user error
        raise ValueError(f"{name}: {str(path)!r} is not a readable checkpoint ({exc})") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{name}: {str(path)!r} is not a pyromodels checkpoint of format {FORMAT!r}")
    return payload


def _model_name(model) -> str:
    return f"{type(model).__module__}.{type(model).__qualname__}"


def read_checkpoint(path, *, engine: str, model, seed: int | None, config: dict, data,
                    extendable: tuple[str, ...] = ()) -> tuple[int, dict]:
    """Read the checkpoint at ``path`` and check it against this run; return ``(seed, state)``.

    The file must be a whole checkpoint (its checksum verified) of ``engine`` for a model of
    the same class, with the same ``seed`` (``None`` takes the checkpoint's), the same
    ``config`` and data of the same fingerprint as ``data`` (the run's prepared data), except
    that the entries of ``config`` named in ``extendable`` (run lengths) may be larger than the
    checkpoint's. Anything else is a ``ValueError`` naming ``resume``.
    """
    path = check_path(path, "resume")
    if not path.is_file():
        raise ValueError(f"resume must be an existing checkpoint file, got {str(path)!r}")
    payload = load_checkpoint(path, "resume")
    if payload["engine"] != engine:
        raise ValueError(f"resume: the checkpoint is of engine {payload['engine']!r}, not {engine!r}")
    if payload["model"] != _model_name(model):
        raise ValueError(f"resume: the checkpoint is of model {payload['model']}, "
                         f"not {_model_name(model)}")
    if seed is not None and seed != payload["seed"]:
        raise ValueError(f"resume: the checkpoint was written with seed {payload['seed']}, "
                         f"not {seed}")
    saved = payload["config"]
    for key in sorted(set(saved) | set(config)):
        old, new = saved.get(key), config.get(key)
        if key in extendable and old is not None and new is not None and new >= old:
            continue
        if old != new:
            more = " or more" if key in extendable else ""
            raise ValueError(f"resume: the checkpoint's run has {key}={old!r}{more}, "
                             f"this run {key}={new!r}")
    fingerprint = data_fingerprint(data)
    if payload["data"] != fingerprint:
        raise ValueError(
            f"resume: the checkpoint was written for other data: the fingerprint of the "
            f"prepared data (with what the model derives from them, such as resolved priors) "
            f"is {payload['data'][:16]} in the checkpoint, {fingerprint[:16]} for this run; "
            "resume with the data and model the run started with"
        )
    return payload["seed"], payload["state"]


def _check_target(path: Path) -> Path:
    """``path`` once it is known that a checkpoint file can be written there."""
    if path.is_dir():
        raise ValueError(f"checkpoint must be a file path, got the directory {str(path)!r}")
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"checkpoint cannot be written to {str(path)!r}: {str(existing)!r} "
                         "is not a directory")
    return path


def check_shapes(saved: dict, expected: dict, what: str) -> None:
    """Raise a ``ValueError`` naming ``resume`` unless the tensors ``saved`` have the names,
    shapes and dtypes of ``expected`` (the same ``what`` built for this run's data)."""
    if set(saved) != set(expected):
        raise ValueError(f"resume: the checkpoint's {what} are {sorted(saved)}, "
                         f"this run's {sorted(expected)}")
    for name, value in expected.items():
        old = saved[name]
        if not isinstance(old, torch.Tensor):
            raise ValueError(f"resume: the checkpoint has no tensor {what} {name!r}")
        if tuple(old.shape) != tuple(value.shape) or old.dtype != value.dtype:
            raise ValueError(
                f"resume: {what} {name!r} has shape {tuple(old.shape)} ({old.dtype}) in the "
                f"checkpoint, {tuple(value.shape)} ({value.dtype}) for this run's data"
            )


class Checkpointer:
    """Keeps the last complete state of a run and writes it every ``every`` steps, at the
    end, and on ``KeyboardInterrupt``.

    Args:
        path: the checkpoint file, or ``None`` (then every method does nothing).
        every: steps between writes, or ``None`` (only the end and an interrupt).
        header: ``engine``, ``model``, ``seed`` and ``config`` of the run, and its ``data``
            (prepared), of which the checkpoint keeps the fingerprint.
        build: turns a snapshot given to :meth:`commit` into the state to save; snapshots
            are cheap references, ``build`` copies what it needs.
    """

    def __init__(self, path, every, *, engine: str, model, seed: int, config: dict, data,
                 build: Callable[[object], dict]):
        self.path = check_path(path, "checkpoint")
        if every is not None:
            every = check_int(every, "checkpoint_every", minimum=1)
            if self.path is None:
                raise ValueError("checkpoint_every needs checkpoint (the file to write)")
        self.every = every
        self.header = None
        if self.path is not None:  # the fingerprint reads all the data: only when it is kept
            _check_target(self.path)
            self.header = {"format": FORMAT, "engine": engine, "model": _model_name(model),
                           "seed": int(seed), "config": dict(config),
                           "data": data_fingerprint(data)}
        self.build = build
        self._last = None
        self._written = None

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def commit(self, step: int, snapshot) -> None:
        """Record ``snapshot`` as the state after ``step`` complete steps (1, 2, ...)."""
        if self.path is None:
            return
        self._last = snapshot
        if self.every is not None and step > 0 and step % self.every == 0:
            self.write()

    def write(self) -> None:
        """Write the last committed state, unless it is already on disk."""
        if self.path is None or self._last is None or self._written is self._last:
            return
        _write_sealed(self.path, {**self.header, "state": self.build(self._last)})
        self._written = self._last

    @contextlib.contextmanager
    def guard(self) -> Iterator[None]:
        """On ``KeyboardInterrupt`` inside, write the last complete state, then re-raise."""
        try:
            yield
        except KeyboardInterrupt:
            self.write()
            raise


def clone_tree(value):
    """A deep copy of tensors, lists, tuples and dicts, with tensors detached."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: clone_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(clone_tree(v) for v in value)
    return copy.deepcopy(value)


def chain_checkpoints(checkpoint, checkpoint_every, resume, *, engine: str, model,
                      seed: int | None, config: dict, data, build: Callable):
    """The chain runners' (Gibbs, NUTS) set-up: ``(seed, saved, checkpointer)``.

    ``saved`` is the state read from ``resume`` (``None`` without it), whose seed wins over
    a ``None`` ``seed``; ``num_samples`` may grow on resume only while the checkpoint's first
    chain is unfinished (the chains that are done keep their length).
    """
    saved = None
    if resume is not None:
        seed, saved = read_checkpoint(resume, engine=engine, model=model, seed=seed,
                                      config=config, data=data, extendable=("num_samples",))
        if saved["chains"] and saved["num_samples"] != config["num_samples"]:
            raise ValueError("resume: num_samples can grow only while the checkpoint's first "
                             "chain is unfinished")
    seed = resolve_seed(seed)
    return seed, saved, Checkpointer(checkpoint, checkpoint_every, engine=engine, model=model,
                                     seed=seed, config=config, data=data, build=build)
