"""``--n-jobs`` and ``--scheduler``: where the independent runs of a command go.

Both set the joblib configuration that every fit's ``n_jobs=None`` reads (see
:mod:`pyromodels.core.parallel`): ``--n-jobs N`` runs ``N`` chains, starts or units at once
in local worker processes; ``--scheduler ADDRESS`` (or the environment variable
:data:`SCHEDULER_ENV`) connects a ``dask.distributed.Client`` to that scheduler and sends the
runs to its workers, ``--n-jobs`` of them at once (default: as many as the cluster has).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator

from .common import UsageError

__all__ = ["SCHEDULER_ENV", "CONNECT_TIMEOUT_S", "add_parallel_options", "parallel_runs"]

#: the environment variable read when ``--scheduler`` is not given
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
#: seconds to wait for the scheduler before giving up
CONNECT_TIMEOUT_S = 3


def _n_jobs(text: str) -> int:
    """argparse type: a nonzero integer (joblib's n_jobs)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value == 0:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of workers or a negative count from all cores "
            f"(-1: all cores), got {text!r}")
    return value


def add_parallel_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--n-jobs`` and ``--scheduler`` to ``parser``."""
    parser.add_argument(
        "--n-jobs", type=_n_jobs, default=None, metavar="N",
        help="independent runs (chains, restarts, units) at once: N workers, -1 all cores "
             "(default: the reproduction's own choice)")
    parser.add_argument(
        "--scheduler", default=None, metavar="ADDRESS",
        help=f"a Dask scheduler (tcp://host:8786) to send the runs to (default: the "
             f"environment variable {SCHEDULER_ENV}, if set)")


@contextlib.contextmanager
def parallel_runs(n_jobs: int | None, scheduler: str | None) -> Iterator[None]:
    """The joblib configuration of ``--n-jobs`` and ``--scheduler`` (or :data:`SCHEDULER_ENV`)
    around a command; the Dask client is closed afterwards.

    Raises:
        UsageError: the scheduler is not reachable within :data:`CONNECT_TIMEOUT_S` seconds,
            or its address is malformed.
    """
    import joblib

    scheduler = scheduler or os.environ.get(SCHEDULER_ENV, "").strip() or None
    if scheduler is None:
        config = joblib.parallel_config(n_jobs=n_jobs) if n_jobs is not None else None
        with config if config is not None else contextlib.nullcontext():
            yield
        return
    from distributed import Client

    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
    except (OSError, ValueError, TimeoutError) as exc:
        raise UsageError(f"--scheduler: cannot connect to the Dask scheduler at {scheduler!r} "
                         f"within {CONNECT_TIMEOUT_S} s ({exc})") from None
    with client, joblib.parallel_config(backend="dask", n_jobs=-1 if n_jobs is None else n_jobs):
        yield
