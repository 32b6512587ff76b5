"""The log joint at many states at once: a chain's kept draws, scored after its last sweep.

A chain records the program's log joint at every kept draw (``lp``). One trace per draw costs
a run of the program each, more than a sweep of table-driven updates. A program written with
its plates counted from the right (the layout that batched evaluation of one site relies on,
see :mod:`.trace`) can take every latent site at once with a new dimension of draws left of
its batch, at ``-(nesting + 1)``: one trace then scores ``m`` draws. A program that does not
keep to that layout (indexing a latent site from the left, ``locs[z]``; reading ``len()`` of a
site; Python branches on values) fails there or gives other numbers. So the first call for a
program and argument shapes compares the batched log joints of two and of three draws with one
trace per draw, and keeps the choice; where the batched trace fails or differs, every draw is
scored from the recorded trace of :func:`~.trace.recorded_log_joint`, as at each kept draw
before. The batched values are the program's up to floating-point rounding (the terms are
summed per draw rather than over one draw's tensor).
"""

from __future__ import annotations

import weakref

import pyro
import torch

from .compiled import signature
from .trace import (
    RUN_BUDGET,
    _nesting,
    _scores,
    batched_rows,
    log_joint,
    recorded_log_joint,
    tolerance,
    trace_model,
)

__all__ = ["draws_log_joints", "draws_batching"]

#: program -> {argument shapes: _Layout or None (one trace per draw)}; forgotten with the program
_LAYOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Layout:
    """How the draws of every site are laid out in one batched trace: ``pads`` (size-one
    dimensions between the draws' dimension and each site's batch shape), the program's
    ``nesting``, and ``chunk``, the draws per trace."""

    def __init__(self, pads: dict, nesting: int, chunk: int):
        self.pads, self.nesting, self.chunk = pads, nesting, chunk


def _key(args, kwargs, draws: dict):
    return (signature(tuple(args), identity=False),
            tuple(sorted((k, signature(v, identity=False)) for k, v in kwargs.items())),
            tuple(sorted((k, tuple(v.shape[1:]), v.dtype) for k, v in draws.items())))


def _one(draws: dict, i: int) -> dict:
    return {k: v[i] for k, v in draws.items()}


def _batched(model, args, kwargs, draws: dict, layout: _Layout) -> torch.Tensor:
    """``(m,)`` float64: the log joints of ``m >= 2`` draws from one trace (raises where a
    term does not keep the draws' dimension)."""
    m = next(iter(draws.values())).shape[0]
    state = {k: v.reshape((m,) + (1,) * layout.pads[k] + tuple(v.shape[1:])) for k, v in draws.items()}
    with pyro.validation_enabled(False):
        terms = _scores(model, args, kwargs, state)
    total = 0.0
    for name, lp in terms.items():  # in program order, as log_joint sums them
        rows = batched_rows(name, lp, m, layout.nesting)
        # a term that reads no latent site is the same for every draw
        total = total + (lp.sum().expand(m) if rows is None else rows.reshape(m, -1).sum(-1))
    return total.to(torch.float64)


def _choose(model, args, kwargs, draws: dict):
    """The layout of a batched trace where it gives the per-draw log joints of the first two
    and three draws (with two counts, a program reading ``len()`` of a site cannot match
    both), else ``None``."""
    first = trace_model(model, args, kwargs, _one(draws, 0))
    nesting = _nesting(first)
    pads = {k: max(0, nesting - len(first.nodes[k]["fn"].batch_shape)) for k in draws}
    entries = sum(site["log_prob"].numel() for site in first.nodes.values()
                  if site["type"] == "sample" and "log_prob" in site)
    layout = _Layout(pads, nesting, max(2, RUN_BUDGET // max(1, entries)))
    exact = torch.tensor([float(log_joint(model, args, kwargs, _one(draws, i))) for i in range(3)],
                         dtype=torch.float64)
    dtypes = [site["log_prob"].dtype for site in first.nodes.values()
              if site["type"] == "sample" and "log_prob" in site]
    tol = 1e-2 * max(tolerance(d) for d in dtypes) * (1.0 + exact.abs())
    try:
        two = _batched(model, args, kwargs, {k: v[:2] for k, v in draws.items()}, layout)
        three = _batched(model, args, kwargs, {k: v[:3] for k, v in draws.items()}, layout)
    except Exception:  # noqa: BLE001 - any failure of the program means "one trace per draw"
        return None
    agree = all(bool(((x - exact[:len(x)]).abs() <= tol[:len(x)]).all()) for x in (two, three))
    return layout if agree else None


def draws_log_joints(model, args: tuple, kwargs: dict, draws: dict) -> torch.Tensor:
    """The program's log joint at each draw: ``(m,)`` float64 from ``draws`` (``{site: (m,
    ...)}``, every latent site), in batched traces of up to :data:`~.trace.RUN_BUDGET`
    log-density entries where the program allows it (see the module docs), else one recorded
    trace per draw."""
    m = next(iter(draws.values())).shape[0] if draws else 0
    if m == 0:
        return torch.zeros(0, dtype=torch.float64)
    try:
        table = _LAYOUTS.setdefault(model, {})
    except TypeError:  # a program that cannot be weakly referenced: nothing is kept
        table = {}
    key = _key(args, kwargs, draws)
    if m >= 3 and key not in table:
        table[key] = _choose(model, args, kwargs, draws)
    layout = table.get(key)
    if layout is not None:
        try:
            parts = [_batched(model, args, kwargs, {k: v[i:i + layout.chunk] for k, v in draws.items()},
                              layout) if min(layout.chunk, m - i) >= 2 else
                     recorded_log_joint(model, args, kwargs, _one(draws, i)).to(torch.float64).reshape(1)
                     for i in range(0, m, layout.chunk)]
            return torch.cat(parts)
        except Exception:  # noqa: BLE001 - draws the choosing evaluation did not meet
            table[key] = None
    return torch.tensor([float(recorded_log_joint(model, args, kwargs, _one(draws, i))) for i in range(m)],
                        dtype=torch.float64)


def draws_batching(model, args: tuple, kwargs: dict, draws: dict) -> str:
    """How the log joints of ``draws`` are scored, in words (``""`` before the first call)."""
    try:
        table = _LAYOUTS.get(model, {})
    except TypeError:
        return ""
    key = _key(args, kwargs, draws)
    if key not in table:
        return ""
    layout = table[key]
    return ("one recorded trace per draw" if layout is None else
            f"{layout.chunk} draws per batched trace (dim {-layout.nesting - 1})")
