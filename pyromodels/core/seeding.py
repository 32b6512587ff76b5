"""Randomness is resolved once per fit from ``seed``; chains and restarts derive their own seeds.

Library code never reads or sets the global RNG except inside :func:`seeded`, which engines use
around code that can only draw from the global RNG (Pyro's own samplers), and restores the
global state afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
from typing import TYPE_CHECKING

import numpy as np

from ..checks import check_int

if TYPE_CHECKING:
    import torch

__all__ = ["resolve_seed", "derive_seed", "make_generator", "seeded"]

_MAX_SEED = 2**63 - 1


def resolve_seed(seed: int | None) -> int:
    """Return ``seed`` as an int; ``None`` draws a fresh seed from the operating system."""
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> 1)
    return check_int(seed, "seed", minimum=0, maximum=_MAX_SEED)


def derive_seed(seed: int, *keys) -> int:
    """A child seed for ``keys`` (for example ``("chain", 2)``), stable across runs and platforms.

    Distinct keys give independent-looking seeds; the same ``(seed, keys)`` gives the same seed.
    """
    text = repr((int(seed),) + tuple(keys)).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "little") >> 1


def make_generator(seed: int, device: torch.device | str | None = None) -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded with ``seed``."""
    import torch

    gen = torch.Generator(device=torch.device(device) if device is not None else "cpu")
    gen.manual_seed(int(seed) % (2**63))
    return gen


@contextlib.contextmanager
def seeded(seed: int, devices: tuple = ()):
    """Seed Python, NumPy, torch (and CUDA on ``devices``) and Pyro; restore the old states after."""
    import pyro
    import torch

    py_state = random.getstate()
    np_state = np.random.get_state()
    with torch.random.fork_rng(devices=list(devices)):
        pyro.set_rng_seed(int(seed) % (2**32))
        try:
            yield
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)
