"""The checks every experiment's entry points share.

A registered experiment exposes ``demo(*, smoke, progress, seed)`` and
``reproduce(*, scale, progress, seed)`` (see :class:`~pyromodels.registry.ModelEntry`); both
pick one of the experiment's settings and call its ``run(settings, name, *, progress, seed)``.
The functions here check those arguments once, with errors that name them.

Example:
    >>> demo_arguments(False, True, 3, size="small")
    ('small', {'progress': True, 'seed': 3})
    >>> reproduction_arguments("medium", False, 0, scales=("small", "medium"))
    ('medium', {'progress': False, 'seed': 0})
"""

from __future__ import annotations

from collections.abc import Sequence

from ..checks import check_bool, check_in, check_int

__all__ = ["demo_arguments", "reproduction_arguments"]


def _run_options(progress, seed) -> dict:
    return {"progress": check_bool(progress, "progress"),
            "seed": check_int(seed, "seed", minimum=0)}


def demo_arguments(smoke, progress, seed, *, size: str) -> tuple[str, dict]:
    """Check a demo's arguments.

    Args:
        smoke: a bool; true picks the ``"smoke"`` settings (seconds, for tests).
        progress: a bool, whether to show progress bars.
        seed: an integer ``>= 0``.
        size: the settings a full demo runs, for example ``"small"``.

    Returns:
        ``(key, options)``: the settings key, ``"smoke"`` or ``size``, and the keyword
        arguments ``{"progress": bool, "seed": int}`` of the experiment's ``run``.
    """
    key = "smoke" if check_bool(smoke, "smoke") else size
    return key, _run_options(progress, seed)


def reproduction_arguments(scale, progress, seed, *, scales: Sequence[str]) -> tuple[str, dict]:
    """Check a reproduction's arguments.

    Args:
        scale: one of ``scales``.
        progress: a bool, whether to show progress bars.
        seed: an integer ``>= 0``.
        scales: the scales the experiment runs at, for example ``("small", "medium")``.

    Returns:
        ``(scale, options)``: the checked scale and the keyword arguments
        ``{"progress": bool, "seed": int}`` of the experiment's ``run``.
    """
    check_in(scale, "scale", scales)
    return scale, _run_options(progress, seed)
