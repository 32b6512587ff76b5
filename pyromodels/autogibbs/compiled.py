"""Compiled runs of the program: the same log density, without Pyro's per-run bookkeeping.

Every update scores the program many times per sweep at the same shapes (the same values'
batch, the same data): each run walks Pyro's handler stack and builds its distributions again,
which costs more than the arithmetic on small and medium programs. :func:`compiled_call` records
one run as a TorchScript trace (``torch.jit.trace``, the latent values as its inputs, the data
as constants) and replays that trace afterwards, run without graph optimisations, so each
operation is the very kernel the program runs, forwards and backwards.

A trace keeps one path through the program: Python branches on values, ``.item()``, random
draws inside the program or data changed in place would all be frozen in it; and the tracer
records a tensor's size as a tensor, so a size times a Python float becomes a number of
torch's default dtype in the trace (``MultivariateNormal.log_prob`` does this): under a
float32 default its log densities differ from the program's in the eighth digit. So a trace
is trusted only after it gave exactly the program's own numbers (bit for bit, every output)
at :data:`VERIFIED_CALLS` calls with new values; until then each call also runs the program.
A trace of float64 inputs is recorded with float64 as the default, which makes such numbers
the program's own (:func:`_recorded`). Before its checks, a trace's operations on constants
alone are folded to constants and its unused and repeated operations dropped
(:func:`_simplified`); where that changes only the gradients (their parts summed in another
order), the key is recorded once more as is. Any other difference, or a program the tracer
cannot follow, sends that key back to the plain run for good. The key holds the program, the
sites' shapes, the arguments' shapes, identities and in-place versions (data changed in place
is new data; tensors are looked for three levels deep in the arguments, inside tuples, lists,
dicts and objects' attributes; deeper, only the container's identity counts), and what is
scored.

A key is recorded only after :data:`RECORD_AFTER` plain runs. Whole updates (see
:func:`~.trace.compiled_update`) go through the same table after
:data:`UPDATE_RECORD_AFTER` plain calls, with ``faster_only``: a verified trace is kept only
if it ran faster than the plain call beside it. Calls made while a trace
is being recorded run plainly, so their operations go into it; keys read a tensor's sizes as
ints, since under the tracer they are traced tensors.

A trace holds the data it was recorded on. The traces of a program are kept for its
:data:`DATA_SLOTS` most recent data (its arguments); a fit on new data lets the oldest go, so a
program fitted to many data sets in one process does not keep them all alive.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections import OrderedDict
from contextlib import contextmanager
from time import perf_counter

import torch

__all__ = ["compiled_call", "signature", "RECORD_AFTER", "UPDATE_RECORD_AFTER", "VERIFIED_CALLS",
           "DATA_SLOTS", "compiled_state", "plain_runs"]

#: plain runs of a key before its trace is recorded: recording costs about four runs and its
#: checks two more, so a key met only a few times (a Geweke test's or a stream's new data every
#: sweep) is never recorded, and a fit's thousands of calls lose eight at most
RECORD_AFTER = 8

#: the same for a whole update (:func:`~.trace.compiled_update`): recording one, with the
#: program's runs and backward pass inside, cost 12-53 ms against 0.7-2 ms per plain call on
#: the benchmark programs, about 15-50 calls, so a short fit (a test's, an SBC replicate's)
#: never records its updates and a long one loses 32 sweeps of the speed-up
UPDATE_RECORD_AFTER = 32

#: calls at which a new trace must agree with the plain run, bit for bit, before it is trusted
VERIFIED_CALLS = 2

#: the data (arguments) per program whose traces are kept, the most recently used
DATA_SLOTS = 2

#: program -> OrderedDict(data key -> {key: _Entry}); forgotten with the program
_TABLE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCAL = threading.local()


@contextmanager
def plain_runs():
    """Inside this block every evaluation runs the program itself (no trace is recorded or
    replayed): for counting a program's runs, or to rule the traces out while debugging."""
    before = getattr(_LOCAL, "plain", False)
    _LOCAL.plain = True
    try:
        yield
    finally:
        _LOCAL.plain = before


class _Entry:
    __slots__ = ("fn", "calls", "agreed", "failed", "keep", "simplify")

    def __init__(self, keep):
        self.fn = None          # the trace
        self.calls = 0          # plain runs before recording
        self.agreed = 0         # verified calls so far
        self.failed = ""        # why the trace is not used
        self.keep = keep        # the arguments, kept alive so their identities stay theirs
        self.simplify = True    # record a simplified trace (see _recorded)


def signature(value, depth: int = 3, identity: bool = True):
    """The key of the program's arguments: the shapes, dtypes and devices of their tensors (also
    inside tuples, lists, dicts and the attributes of prepared-data objects, a few levels deep)
    and the plain values; with ``identity``, also each tensor's (and each unread object's)
    identity and each tensor's in-place version, so other or changed data is another key."""
    def mark(obj):
        return (id(obj),) if identity else ()

    if isinstance(value, torch.Tensor):
        own = (id(value), value._version) if identity else ()
        # plain ints: under a trace being recorded a tensor's sizes are traced tensors,
        # which hash apart from the ints of the same key
        return ("tensor", tuple(int(n) for n in value.shape), str(value.dtype), str(value.device)) + own
    if isinstance(value, (int, float, str, bool, type(None))):
        return value
    if depth == 0:
        return (type(value).__name__,) + mark(value)
    if isinstance(value, (tuple, list)):
        return tuple(signature(v, depth - 1, identity) for v in value)
    if isinstance(value, dict):
        return tuple((str(k), signature(v, depth - 1, identity)) for k, v in value.items())
    attributes = getattr(value, "__dict__", None)
    if attributes is not None:
        return (type(value).__name__,) + tuple((k, signature(v, depth - 1, identity))
                                               for k, v in attributes.items())
    return (type(value).__name__,) + mark(value)


def _values(out) -> tuple:
    return tuple(out.values()) if isinstance(out, dict) else tuple(out)


def _identical(a, b) -> bool:
    if isinstance(a, dict) and (not isinstance(b, dict) or list(a) != list(b)):
        return False
    a, b = _values(a), _values(b)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype or x.requires_grad != y.requires_grad:
            return False
        if not torch.equal(x.detach(), y.detach()):
            nan = torch.isnan(x.detach()) & torch.isnan(y.detach())
            if not bool(((x.detach() == y.detach()) | nan).all()):
                return False
    return True


def _grads(outputs, inputs):
    """The gradients of the outputs' sum with respect to the inputs that require them (for the
    check of a trace's backward pass), or ``()``."""
    leaves = [x for x in inputs if x.requires_grad]
    total = sum(o.sum() for o in _values(outputs) if o.requires_grad)
    if not leaves or not isinstance(total, torch.Tensor):
        return ()
    grads = torch.autograd.grad(total, leaves, retain_graph=True, allow_unused=True)
    return tuple(torch.zeros_like(x) if g is None else g for g, x in zip(grads, leaves))


def _plain(fn, inputs):
    return fn(*inputs)


def _recorded(fn, inputs, simplify: bool):
    """The trace of ``fn`` at ``inputs``, :func:`_simplified` or as recorded.

    The tracer records a size as a tensor, so ``size * 1.5`` is a tensor of torch's default
    dtype in the trace where the program computes a Python float (a double). So when every
    floating input is float64 the trace is recorded with float64 as the default, and such a
    number is the program's own (``MultivariateNormal.log_prob``'s ``d * log(2 pi)``), folded
    into a constant by :func:`_simplified` (a trace as recorded computes it as it runs, under
    the default dtype of that moment); a program that builds tensors of the default dtype
    then gets them in float64 too, and where that changes its numbers the checks refuse the
    trace. A simplified graph can sum a gradient's parts in another order (autograd follows
    the graph), so a simplified trace whose values agree and gradients do not is recorded once
    more as is."""
    floating = [x.dtype for x in inputs if x.is_floating_point()]
    dtype = torch.float64 if floating and all(d == torch.float64 for d in floating) \
        else torch.get_default_dtype()
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:  # constant propagation computes under the default dtype too
        traced = torch.jit.trace(fn, inputs, check_trace=False, strict=False)
        return _simplified(traced) if simplify else traced
    finally:
        torch.set_default_dtype(before)


def _simplified(traced):
    """The trace with its bookkeeping folded away: the sizes it read (fixed for its key) become
    constants, and so does every operation on constants alone (constant tensors built by the
    program, their conversions, a size times a float), computed now under the recording's
    default dtype; repeated and unused operations go (TorchScript's constant propagation,
    peephole, common-subexpression and dead-code passes). None of them touches the arithmetic
    on the inputs' values, though autograd may then sum a gradient's parts in another order
    (see :func:`_recorded`). About half of a recorded update's operations are such
    bookkeeping, and it then runs 20-45% faster. A graph the passes refuse stays as
    recorded."""
    graph = traced.graph.copy()
    try:
        torch._C._jit_pass_inline(graph)
        torch._C._jit_pass_constant_propagation(graph)
        torch._C._jit_pass_peephole(graph, False)  # with the shapes: sizes read become constants
        torch._C._jit_pass_constant_propagation(graph)
        torch._C._jit_pass_cse(graph)
        torch._C._jit_pass_dce(graph)
        return torch._C._create_function_from_graph(traced.name, graph)
    except (AttributeError, RuntimeError):  # a torch without these passes, or a graph they refuse
        return traced


def compiled_call(owner, data, key, fn, inputs: tuple, keep=None, faster_only: bool = False,
                  record_after: int = RECORD_AFTER):
    """``fn(*inputs)`` (a tuple or a dict of tensors), from a verified trace where one is kept
    for ``key``.

    Args:
        owner: the program (the table is kept per program, weakly).
        data: the key of its data (hashable; the arguments' :func:`signature`).
        key: what else the trace depends on (hashable): shapes, what is scored, ...
        fn: a function of tensors returning a tuple or a dict of tensors; the same for the same
            key.
        inputs: its tensors, which change from call to call.
        keep: objects to keep alive with the trace (the arguments whose identities are in
            ``data``).
        faster_only: keep the trace only if its last checking call ran faster than the plain
            call beside it (the two give the same numbers, so either choice gives the same
            draws); otherwise the key runs plainly for good.
        record_after: plain calls of the key before it is recorded.

    The first ``record_after`` calls of a key run ``fn`` (a key met a few times costs no
    tracing); the next records the trace; from there :data:`VERIFIED_CALLS` calls run both and
    compare (values, and the gradients of the outputs with respect to inputs that require them).
    """
    if getattr(_LOCAL, "plain", False) or torch.jit.is_tracing():
        return _plain(fn, inputs)  # inside a trace being recorded: its operations go in it
    try:
        slots = _TABLE.setdefault(owner, OrderedDict())
    except TypeError:  # a program that cannot be weakly referenced: nothing is kept
        return _plain(fn, inputs)
    table = slots.get(data)
    if table is None:
        table = slots[data] = {}
        while len(slots) > DATA_SLOTS:
            slots.popitem(last=False)
    slots.move_to_end(data)
    entry = table.get(key)
    if entry is None:
        entry = table[key] = _Entry(keep)
    if entry.failed or entry.calls < record_after:
        entry.calls += 1
        return _plain(fn, inputs)
    if entry.fn is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                entry.fn = _recorded(fn, inputs, entry.simplify)
        except Exception as err:  # noqa: BLE001 - any failure of the tracer means "run it plainly"
            entry.failed = f"not traceable ({type(err).__name__})"
            return _plain(fn, inputs)
    if entry.agreed >= VERIFIED_CALLS:
        with torch.jit.optimized_execution(False):
            return entry.fn(*inputs)
    start = perf_counter()
    plain = _plain(fn, inputs)
    middle = perf_counter()
    try:
        with torch.jit.optimized_execution(False):
            traced = entry.fn(*inputs)
        end = perf_counter()
        values = _identical(plain, traced)
        same = values and _identical(_grads(plain, inputs), _grads(traced, inputs))
    except Exception as err:  # noqa: BLE001 - a trace that fails where the program runs
        values = same = False
        entry.failed = f"the trace failed ({type(err).__name__})"
    if same:
        entry.agreed += 1
        if faster_only and entry.agreed >= VERIFIED_CALLS and end - middle >= middle - start:
            entry.failed = "the trace ran slower than the plain call"
    elif values and entry.simplify:  # only the gradients differ: their parts summed in
        entry.simplify, entry.agreed = False, 0  # another order; record it again as is
    elif not entry.failed:
        entry.failed = "the trace gave other numbers than the program"
    if not same or entry.failed:
        entry.fn = None
    return plain


def compiled_state(owner) -> dict:
    """``{key: "compiled" | "checking" | "not recorded" | why not}`` of a program's traces (for
    tests and the curious)."""
    try:
        slots = _TABLE.get(owner, {})
    except TypeError:
        return {}
    def state(e):
        if e.failed:
            return e.failed
        if e.fn is None:
            return "not recorded"
        return "compiled" if e.agreed >= VERIFIED_CALLS else "checking"

    return {(data, key): state(e) for data, table in slots.items() for key, e in table.items()}
