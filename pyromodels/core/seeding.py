"""Randomness is resolved once per fit from ``seed``; chains and restarts derive their own seeds.

Library code never reads or sets the global RNG except inside :func:`seeded`, which engines use
around code that can only draw from the global RNG (Pyro's own samplers), and restores the
global state afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import numbers
import random

import numpy as np
import pyro
import torch

from ..checks import check_int

__all__ = ["resolve_seed", "derive_seed", "make_generator", "seeded", "seed_from_random_state"]

_MAX_SEED = 2**63 - 1


def resolve_seed(seed: int | None) -> int:
    """Return ``seed`` as an int; ``None`` draws a fresh seed from the operating system."""
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> 1)
    return check_int(seed, "seed", minimum=0, maximum=_MAX_SEED)


def seed_from_random_state(random_state) -> int | None:
    """The seed that scikit-learn's ``random_state`` names, or ``None`` for ``None``.

    Args:
        random_state: ``None``, an int ``>= 0``, a ``numpy.random.RandomState`` or a
            ``numpy.random.Generator`` (one draw of it is the seed).

    Raises:
        TypeError: any other type. ValueError: a negative int.

    Example:
        >>> seed_from_random_state(7), seed_from_random_state(None)
        (7, None)
        >>> import numpy as np
        >>> a, b = np.random.RandomState(0), np.random.RandomState(0)
        >>> seed_from_random_state(a) == seed_from_random_state(b)
        True
    """
    if random_state is None:
        return None
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31 - 1))
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(
            "random_state must be None, an int, a numpy RandomState or a numpy Generator, got "
            f"{type(random_state).__name__} {random_state!r}"
        )
    return check_int(random_state, "random_state", minimum=0)


def derive_seed(seed: int, *keys) -> int:
    """A child seed for ``keys`` (for example ``("chain", 2)``), stable across runs and platforms.

    Distinct keys give independent-looking seeds; the same ``(seed, keys)`` gives the same seed.
    """
    text = repr((int(seed),) + tuple(keys)).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "little") >> 1


def make_generator(seed: int, device: torch.device | str | None = None) -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded with ``seed``."""
    gen = torch.Generator(device=torch.device(device) if device is not None else "cpu")
    gen.manual_seed(int(seed) % (2**63))
    return gen


@contextlib.contextmanager
def seeded(seed: int, devices: tuple = ()):
    """Seed Python, NumPy, torch (and CUDA on ``devices``) and Pyro; restore the old states after."""
    py_state = random.getstate()
    np_state = np.random.get_state()
    with torch.random.fork_rng(devices=list(devices)):
        pyro.set_rng_seed(int(seed) % (2**32))
        try:
            yield
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)
