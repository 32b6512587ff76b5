"""How many CPU threads torch uses during a fit: a count chosen for the problem's size.

torch runs each operation on ``torch.get_num_threads()`` threads, the number of cores by
default. A fit on a small problem (a Gibbs sweep over a few hundred points, an EM step on a
few thousand labels) runs thousands of operations on small tensors; handing each one to a
pool of threads costs more than the arithmetic, and on a machine shared with other processes
the extra threads wait for cores. The README's quick start ran its Gibbs sweeps about four
times slower with torch's default threads than with one on a busy two-core machine.

**The rule.** Every engine (:func:`~pyromodels.core.run_em`, :func:`~pyromodels.core.run_gibbs`,
:func:`~pyromodels.core.run_svi`, :func:`~pyromodels.core.run_nuts`, and the family fits that
run a loop of their own: :func:`~pyromodels.ddpm.gibbs.fit_gibbs` and
:func:`~pyromodels.ddpm.mcem.fit_mcem`) runs its body inside :func:`fit_threads`, which sets

.. math::
    \\text{threads} = \\min\\bigl(\\text{the caller's count},\\;
    \\max(1, \\lfloor \\text{size} / 2^{16} \\rfloor)\\bigr),

where ``size`` is the number of elements of the arrays in the data (:func:`data_size`): one
thread per :data:`ELEMENTS_PER_THREAD` data elements. The rule only ever lowers the count: a
large problem keeps the caller's setting (``torch.set_num_threads`` or ``OMP_NUM_THREADS``).
The caller's count is restored when the fit returns, raises or is interrupted.

**Choosing yourself.** Every engine takes ``num_threads``: ``None`` (default) applies the rule,
an integer ``>= 1`` runs the fit on exactly that many threads (more than the caller's count
too). The environment variable :data:`THREADS_ENV` (``PYROMODELS_NUM_THREADS``) sets that
integer for every fit of a process that passes no ``num_threads`` of its own.

Example:
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with fit_threads(torch.zeros(200, 2)):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import os

import numpy as np

from ..checks import check_int

__all__ = ["ELEMENTS_PER_THREAD", "THREADS_ENV", "data_size", "choose_threads", "fit_threads",
           "using_threads", "with_fit_threads", "ThreadRule"]

#: data elements per thread of the rule (see the module doc)
ELEMENTS_PER_THREAD = 2 ** 16
#: the environment variable that fixes every fit's thread count
THREADS_ENV = "PYROMODELS_NUM_THREADS"

_DEPTH = 4  # how deep data_size looks into nested containers


def data_size(data, _depth: int = 0) -> int:
    """The number of elements of the arrays in ``data``: a tensor's ``numel()``, a NumPy
    array's or pandas object's ``size``, summed over the fields of a dataclass and the
    entries of a dict, list or tuple (four levels deep). Anything else counts 0."""
    if _depth > _DEPTH or data is None:
        return 0
    numel = getattr(data, "numel", None)
    if callable(numel) and hasattr(data, "device"):  # a torch tensor, without importing torch
        return int(numel())
    if isinstance(data, np.ndarray) or type(data).__module__.startswith("pandas"):
        return int(getattr(data, "size", 0))
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        parts = [getattr(data, f.name, None) for f in dataclasses.fields(data)]
    elif isinstance(data, dict):
        parts = list(data.values())
    elif isinstance(data, (list, tuple)):
        parts = list(data)
    else:
        return 0
    return sum(data_size(part, _depth + 1) for part in parts)


def _requested(num_threads) -> int | None:
    if num_threads is None:
        env = os.environ.get(THREADS_ENV, "").strip()
        if not env:
            return None
        try:
            return check_int(int(env), THREADS_ENV, minimum=1)
        except ValueError as exc:
            raise ValueError(
                f"the environment variable {THREADS_ENV} must be an integer >= 1, got {env!r}"
            ) from exc
    return check_int(num_threads, "num_threads", minimum=1)


def choose_threads(data, num_threads: int | None = None, current: int | None = None) -> int:
    """The thread count of a fit on ``data`` (see the module doc for the rule).

    Args:
        data: the fit's data (anything :func:`data_size` reads).
        num_threads: ``None`` for the rule (or :data:`THREADS_ENV` when set), else exactly
            this many threads (an integer ``>= 1``).
        current: the caller's count (default ``torch.get_num_threads()``).
    """
    if current is None:
        import torch

        current = torch.get_num_threads()
    return ThreadRule.of(data, num_threads)(current)


@dataclasses.dataclass(frozen=True)
class ThreadRule:
    """:func:`choose_threads` with the data read once: ``rule(current)`` is the count for a
    caller on ``current`` threads (for a loop that applies it at every step).

    Attributes:
        requested: the count asked for (``num_threads`` or :data:`THREADS_ENV`), else ``None``.
        cap: the rule's count for the data's size.
    """

    requested: int | None
    cap: int

    @classmethod
    def of(cls, data, num_threads: int | None = None) -> ThreadRule:
        requested = _requested(num_threads)
        cap = 1 if requested is not None else max(1, data_size(data) // ELEMENTS_PER_THREAD)
        return cls(requested, cap)

    def __call__(self, current: int) -> int:
        return self.requested if self.requested is not None else min(current, self.cap)


@contextlib.contextmanager
def fit_threads(data, num_threads: int | None = None):
    """Run the body on :func:`choose_threads` threads; restore the caller's count after, also
    when the body raises or is interrupted. Yields the count."""
    import torch

    with using_threads(choose_threads(data, num_threads, torch.get_num_threads())) as chosen:
        yield chosen


@contextlib.contextmanager
def using_threads(count: int):
    """Run the body on ``count`` threads; restore the caller's count after, also when the body
    raises or is interrupted (for a loop that is not an engine of its own, such as one step
    of a kernel that ``pyro.infer.MCMC`` drives). Yields the count."""
    import torch

    old = torch.get_num_threads()
    if count != old:
        torch.set_num_threads(count)
    try:
        yield count
    finally:
        if torch.get_num_threads() != old:
            torch.set_num_threads(old)


def with_fit_threads(engine=None, *, data: str = "data"):
    """Decorate an engine ``engine(..., <data>, ..., num_threads=None, ...)`` so that it runs
    inside :func:`fit_threads` of its ``data`` argument (named ``data``, or as given) and its
    ``num_threads``. Used bare (``@with_fit_threads``) or with the argument's name
    (``@with_fit_threads(data="x")``) by the family fits that run a loop of their own."""
    if engine is None:
        return functools.partial(with_fit_threads, data=data)
    signature = inspect.signature(engine)
    if data not in signature.parameters or "num_threads" not in signature.parameters:
        raise TypeError(f"{engine.__name__} must take {data} and num_threads arguments")

    @functools.wraps(engine)
    def run(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        with fit_threads(bound.arguments.get(data), bound.arguments.get("num_threads")):
            return engine(*args, **kwargs)

    return run
