"""The model's log density terms at a given state, read from Pyro traces.

Every automatic update is computed from these terms only, so it is a second reading of the
program itself: nothing about the model is written twice.

**Batched evaluation.** An update needs the terms at several values of one site (``K`` support
values, or the points of a conjugate fit) and at the current state. When the program is
written with its plates counted from the right (as Pyro's parallel enumeration asks), all of
them come from one trace: the site gets the values stacked along a new dimension left of every
plate, at ``-(nesting + 1)`` where ``nesting`` is the deepest batch of the program, and each
term is read back along that dimension. A program that is not vectorisable (``.item()``, Python
branches on values or shapes, ``len()`` of a latent tensor, indexing a latent site from the
left) fails there or gives other numbers; the first evaluation of each site compares the
batched terms with one trace per value, and the choice is kept for the site (per program and
argument shapes) and shown by :func:`batching_reason`.
"""

from __future__ import annotations

import weakref

import pyro
import torch
from pyro import poutine
from pyro.distributions.util import is_validation_enabled, scale_and_mask
from pyro.poutine.util import site_is_subsample

from ..core.bound import quiet_prior_draws
from .compiled import RECORD_AFTER, UPDATE_RECORD_AFTER, compiled_call, signature

__all__ = ["trace_model", "latent_sites", "compiled_update", "log_terms", "log_joint",
           "recorded_log_joint", "reduce_to_site", "element_log_density",
           "element_logits", "element_index", "tolerance", "values_terms", "log_joints",
           "batching_reason", "RUN_BUDGET", "log_joints_and_gradients", "site_choice", "plate_map",
           "batched_rows",
           "site_plates"]


def trace_model(model, args: tuple, kwargs: dict, state: dict | None = None):
    """One trace of ``model(*args, **kwargs)`` with the latent sites in ``state`` fixed (a prior
    draw for the others), its ``log_prob`` tensors computed. The param store and the caller's
    handlers are left alone; torch's spurious Wishart notice is not shown
    (:func:`~pyromodels.core.bound.quiet_prior_draws`)."""
    fn = model if not state else poutine.condition(model, data=state)
    with pyro.get_param_store().scope(), poutine.block(), torch.no_grad(), quiet_prior_draws():
        trace = poutine.trace(fn).get_trace(*args, **kwargs)
    trace.compute_log_prob()
    return trace


def latent_sites(trace) -> dict:
    """The latent sample sites of a trace, in program order: ``{name: site}``."""
    return {name: site for name, site in trace.nodes.items()
            if site["type"] == "sample" and not site["is_observed"]
            and not site_is_subsample(site)}


def _scores(model, args: tuple, kwargs: dict, state: dict, skip=frozenset(), grad: bool = False) -> dict:
    """``{site: log_prob}`` as :func:`log_terms`, leaner: the sites in ``skip`` are not scored
    and nothing else (sums, validation) is computed. With ``grad``, autograd records the run.
    Repeated runs at the same shapes and data replay a verified trace (:mod:`.compiled`)."""
    return _state_call(model, args, kwargs, state, ("scores", frozenset(skip), grad),
                       lambda s: _plain_scores(model, args, kwargs, s, skip, grad))


def _state_call(model, args, kwargs, state: dict, what: tuple, body, faster_only: bool = False,
                record_after: int = RECORD_AFTER):
    """``body(state)`` through :func:`~.compiled.compiled_call`, the state's tensors as the
    inputs (in name order: one key whatever order the state was built in), keyed by ``what``,
    their shapes and dtypes, and the validation flag."""
    names = tuple(sorted(state))
    values = tuple(state[n] for n in names)
    key = what + (names, tuple((tuple(v.shape), v.dtype, v.requires_grad) for v in values),
                  is_validation_enabled())

    def run(*vals):
        return body(dict(zip(names, vals)))
    return compiled_call(model, (signature(tuple(args)), signature(kwargs)), key, run, values,
                         keep=(args, kwargs), faster_only=faster_only, record_after=record_after)


def compiled_update(model, args: tuple, kwargs: dict, state: dict, what: tuple, body):
    """A whole update's arithmetic, ``body(state)`` (a tuple or dict of tensors, the same
    function of the state's tensors at every call of the key ``what``), from one recorded
    trace once it is verified (see :mod:`.compiled`; recorded after
    :data:`~.compiled.UPDATE_RECORD_AFTER` plain calls) and only while it runs faster than the
    plain call: every Python step between the program's runs (building the values, reading
    the terms back, the solve) is replayed as recorded. ``body`` must make no decision on
    values: the trace would freeze it."""
    return _state_call(model, args, kwargs, state, ("update",) + what, body, faster_only=True,
                       record_after=UPDATE_RECORD_AFTER)


def _plain_scores(model, args, kwargs, state, skip, grad) -> dict:
    fn = poutine.condition(model, data=state)
    recording = torch.enable_grad() if grad else torch.no_grad()
    with pyro.get_param_store().scope(), poutine.block(), recording:
        trace = poutine.trace(fn).get_trace(*args, **kwargs)
        return {name: scale_and_mask(site["fn"].log_prob(site["value"], *site["args"], **site["kwargs"]),
                                     site["scale"], site["mask"])
                for name, site in _sample_sites(trace).items() if name not in skip}


def _sample_sites(trace) -> dict:
    return {name: site for name, site in trace.nodes.items()
            if site["type"] == "sample" and not site_is_subsample(site)}


def log_terms(model, args: tuple, kwargs: dict, state: dict) -> dict:
    """``{site: log_prob tensor}`` of every sample site at ``state`` (not summed over plates)."""
    trace = trace_model(model, args, kwargs, state)
    return {name: site["log_prob"] for name, site in _sample_sites(trace).items()}


def log_joint(model, args: tuple, kwargs: dict, state: dict) -> torch.Tensor:
    """The model's log joint at ``state`` (a scalar), from one plain trace: the oracle every
    update is checked against."""
    return _summed(log_terms(model, args, kwargs, state))


def recorded_log_joint(model, args: tuple, kwargs: dict, state: dict) -> torch.Tensor:
    """:func:`log_joint` at a ``state`` that fixes every latent site, replayed from a verified
    recorded trace after the first runs of its shapes (see :mod:`.compiled`): what a chain
    records at each kept draw."""
    return _state_call(model, args, kwargs, state, ("log_joint",),
                       lambda s: (_summed(_plain_scores(model, args, kwargs, s, frozenset(), False)),))[0]


def _summed(terms: dict) -> torch.Tensor:
    """The sum of every term, site after site in program order (as Pyro's ``log_prob_sum``)."""
    total = 0.0
    for t in terms.values():
        total = total + t.sum()
    return total


# ------------------------------------------------------------------ batched evaluation
class _Choice:
    """How one site of one program is evaluated at several values.

    Attributes:
        batched: in one trace (else one trace per value).
        reason: why, in words.
        nesting: the program's deepest batch (see :func:`_nesting`).
        pad: size-one dimensions between the values' dimension and the site's batch shape.
    """

    def __init__(self, batched: bool, reason: str, nesting: int = 0, pad: int = 0):
        self.batched, self.reason, self.nesting, self.pad = batched, reason, nesting, pad
        self.inseparable: set = set()  # batch shapes whose elements were found coupled
        self.constant: frozenset = frozenset()  # sites whose terms do not change with this one
        self.chunk = 2  # values per batched run (set from the first evaluation's sizes)
        self.note = ""  # how a conjugate site's coefficients are read (see exponential.py)
        self.gradient_failed = ""  # why reading them from gradients was given up, if it was


#: the most log-density entries (over all sites) of one batched run: longer lists of values
#: are scored in several runs, so memory stays bounded
RUN_BUDGET = 2 ** 18
#: how many values the choosing evaluation compares (one trace each, then batched)
_CHOOSING_VALUES = 16

#: program -> {(site, argument shapes): _Choice}; forgotten with the program
_CHOICES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _key(site, args, kwargs):
    # what the choice may depend on: the arguments' shapes and plain values, not their identity
    return (site, signature(tuple(args), identity=False),
            tuple(sorted((k, signature(v, identity=False)) for k, v in kwargs.items())))


def _known(model, site, args, kwargs) -> _Choice | None:
    try:
        return _CHOICES.get(model, {}).get(_key(site, args, kwargs))
    except TypeError:  # a program that cannot be weakly referenced: nothing is kept
        return None


def _remember(model, site, args, kwargs, choice: _Choice) -> None:
    try:
        _CHOICES.setdefault(model, {})[_key(site, args, kwargs)] = choice
    except TypeError:
        pass


def _weakly_referable(model) -> bool:
    try:
        weakref.ref(model)
    except TypeError:
        return False
    return True


def batching_reason(model, site: str, args: tuple, kwargs: dict) -> str:
    """How ``site`` is evaluated at several values, in words: ``""`` before its first
    evaluation (and always for a program that cannot be weakly referenced, which is evaluated
    one trace per value)."""
    choice = _known(model, site, args, kwargs)
    if choice is None:
        return ""
    return f"{choice.reason}; {choice.note}" if choice.note else choice.reason


def site_choice(model, site: str, args: tuple, kwargs: dict):
    """The kept evaluation choice of ``site`` (``None`` before its first evaluation): its
    ``note`` and ``gradient_failed`` are for the conjugate updates to fill."""
    return _known(model, site, args, kwargs)


def _nesting(trace) -> int:
    """The deepest batch of the program: its plates and every sample site's batch shape."""
    deepest = 0
    for site in _sample_sites(trace).values():
        deepest = max(deepest, len(site["fn"].batch_shape))
        for frame in site["cond_indep_stack"]:
            if frame.vectorized and frame.dim is not None:
                deepest = max(deepest, -frame.dim)
    return deepest


def _strip(t: torch.Tensor) -> torch.Tensor:
    """``(m, *rest)`` with the leading size-one dimensions of ``rest`` dropped."""
    keep = 1
    while keep < t.dim() and t.shape[keep] == 1:
        keep += 1
    return t.reshape((t.shape[0],) + tuple(t.shape[keep:]))


def _per_value_terms(model, args, kwargs, state, site, values: list):
    """``({name: (m, ...)}, first trace)``: each sample site's terms at each full value, one
    trace per value."""
    traces = [trace_model(model, args, kwargs, {**state, site: v}) for v in values]
    per = [_sample_sites(t) for t in traces]
    return {name: _strip(torch.stack([p[name]["log_prob"] for p in per])) for name in per[0]}, traces[0]


def _per_value_scores(model, args, kwargs, state, site, values: list, skip=frozenset()) -> dict:
    """The terms of :func:`_per_value_terms` (less the sites in ``skip``), one run per value."""
    per = [_scores(model, args, kwargs, {**state, site: v}, skip) for v in values]
    return {name: _strip(torch.stack([p[name] for p in per])) for name in per[0]}


def _batched_terms(model, args, kwargs, state, site, values: list, choice: _Choice,
                   skip=frozenset(), constant: set | None = None, grad: bool = False) -> dict:
    """The terms of :func:`_per_value_terms` from one trace, the values stacked left of the
    program's batch (raises where the program does not keep to that layout); the sites in
    ``skip`` are left out, those whose terms have no dimension for the values are added to
    ``constant``."""
    m = len(values)
    stacked = torch.stack(values).reshape((m,) + (1,) * choice.pad + tuple(values[0].shape))
    out = {}
    for name, lp in _scores(model, args, kwargs, {**state, site: stacked}, skip, grad).items():
        rows = batched_rows(name, lp, m, choice.nesting)
        if rows is None:
            out[name] = _strip(lp.expand((m,) + tuple(lp.shape)))
            if constant is not None:
                constant.add(name)
            continue
        out[name] = _strip(rows)
    return out


def batched_rows(name: str, lp: torch.Tensor, m: int, nesting: int) -> torch.Tensor | None:
    """Term ``name``'s log density ``lp`` from a trace of ``m`` values (or draws) stacked left of
    the program's ``nesting`` batch dimensions, with that dimension first: ``(m, ...)``; ``None``
    where the term has no such dimension (it does not change with them). Raises where it has
    one of another size, or dimensions left of it."""
    where = lp.dim() - nesting - 1  # the values' dimension, counted from the left
    if where < 0 or lp.shape[where] == 1:
        return None
    if lp.shape[where] != m or any(s != 1 for s in lp.shape[:where]):
        raise ValueError(f"the log density of {name!r} has shape {tuple(lp.shape)}, not "
                         f"{m} values left of {nesting} batch dimensions")
    return lp.reshape(lp.shape[where:])


def _agree(batched: dict, exact: dict) -> bool:
    if batched.keys() != exact.keys():
        return False
    for name, y in exact.items():
        x = batched[name]
        if x.shape != y.shape:
            return False
        x, y = x.to(torch.float64), y.to(torch.float64)
        tol = 1e-3 * tolerance(exact[name].dtype) * (1.0 + y.abs())
        if not bool(((x == y) | ((x - y).abs() <= tol)).all()):  # equal infinities agree
            return False
    return True


def _first_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def _decide(model, args, kwargs, state, site, values: list) -> tuple[dict, _Choice]:
    """Evaluate one trace per value and, from the same values, the batched trace; the choice
    is batched when that trace runs and gives the same terms (with ``m`` and ``m + 1``
    values)."""
    exact, first = _per_value_terms(model, args, kwargs, state, site, values)
    _keep_plates(model, args, kwargs, first)
    nesting = _nesting(first)
    pad = max(0, nesting - len(first.nodes[site]["fn"].batch_shape))
    trial = _Choice(True, "", nesting, pad)
    try:  # twice, with m and m + 1 values: a program that reads len() of the site cannot match both
        constant: set = set()
        batched = _batched_terms(model, args, kwargs, state, site, values, trial, constant=constant)
        longer = _batched_terms(model, args, kwargs, state, site, values + values[:1], trial)
    except Exception as err:  # noqa: BLE001 - any failure of the program means "not vectorisable"
        return exact, _Choice(False, f"one trace per value (batched trace failed: {_first_line(err)})")
    again = {name: torch.cat([t, t[:1]]) for name, t in exact.items()}
    if not (_agree(batched, exact) and _agree(longer, again)):
        return exact, _Choice(False, "one trace per value (the batched trace gave other log densities)")
    choice = _Choice(True, f"all values in one batched trace (dim {-nesting - 1})", nesting, pad)
    choice.constant = frozenset(constant)
    return exact, choice


def values_terms(model, args: tuple, kwargs: dict, state: dict, site: str, values: list,
                 changing_only: bool = False) -> dict:
    """``{name: (len(values), ...)}``: every sample site's ``log_prob`` at each full value of
    ``site`` (the rest of ``state`` fixed), leading size-one dimensions dropped; from one trace
    where the program allows it (see the module docs; in runs of at most :data:`RUN_BUDGET`
    log-density entries), else one trace per value. With ``changing_only``, the sites whose
    terms were found not to change with ``site`` (their ``log_prob`` has no dimension for the
    values) may be left out."""
    values = list(values)
    choice = _known(model, site, args, kwargs)
    if choice is None and not _weakly_referable(model):
        return _per_value_terms(model, args, kwargs, state, site, values)[0]
    if choice is None:
        head = values[:_CHOOSING_VALUES]
        exact, choice = _decide(model, args, kwargs, state, site, head)
        choice.chunk = max(2, RUN_BUDGET // max(1, sum(t[0].numel() for t in exact.values())))
        _remember(model, site, args, kwargs, choice)
        if len(head) == len(values):
            return exact
        rest = values_terms(model, args, kwargs, state, site, values[len(head):], changing_only)
        return {name: torch.cat([exact[name], t]) for name, t in rest.items()}
    if choice.batched:
        try:
            with pyro.validation_enabled(False):  # the choosing evaluation ran with it
                skip = choice.constant if changing_only else frozenset()
                parts = [_batched_terms(model, args, kwargs, state, site, values[i:i + choice.chunk],
                                        choice, skip) for i in range(0, len(values), choice.chunk)]
            return parts[0] if len(parts) == 1 else {
                name: torch.cat([part[name] for part in parts]) for name in parts[0]}
        except Exception as err:  # noqa: BLE001 - a state the choosing evaluation did not meet
            choice.batched = False
            choice.reason = f"one trace per value (a later batched trace failed: {_first_line(err)})"
    return _per_value_scores(model, args, kwargs, state, site, values)


def log_joints(model, args: tuple, kwargs: dict, state: dict, site: str, values: list) -> torch.Tensor:
    """The model's log joint at each full value of ``site`` in ``values`` (the rest of
    ``state`` fixed): ``(len(values),)`` float64, from one trace where the program allows it."""
    terms = values_terms(model, args, kwargs, state, site, list(values))
    return sum(t.to(torch.float64).reshape(t.shape[0], -1).sum(-1) for t in terms.values())


def log_joints_and_gradients(model, args: tuple, kwargs: dict, state: dict, site: str, values: list):
    """The model's log joint at each full value of ``site`` in ``values`` (up to one constant,
    the terms that do not change with ``site`` may be left out) and its gradient with respect
    to the site there: ``((m,) float64, (m, *shape))``, from one batched trace where the site's
    kept choice is batched, else one trace per value. A gradient that autograd cannot give
    (the site does not reach the log density through differentiable operations) is ``None``;
    what the program raises is raised."""
    leaves = [v.detach().clone().requires_grad_(True) for v in values]
    choice = _known(model, site, args, kwargs)
    totals = None
    if choice is not None and choice.batched and len(leaves) <= choice.chunk:
        try:
            with pyro.validation_enabled(False):
                terms = _batched_terms(model, args, kwargs, state, site, leaves, choice, choice.constant,
                                       grad=True)
            totals = sum(t.to(torch.float64).reshape(t.shape[0], -1).sum(-1) for t in terms.values())
        except Exception:  # noqa: BLE001 - scored one trace per value below
            totals = None
    if totals is None:
        totals = torch.stack([sum(t.to(torch.float64).sum() for t in
                                  _scores(model, args, kwargs, {**state, site: v}, grad=True).values())
                              for v in leaves])
    if not totals.requires_grad:
        return totals.detach(), None
    grads = torch.autograd.grad(totals.sum(), leaves, allow_unused=True)
    if any(g is None for g in grads):
        return totals.detach(), None
    return totals.detach(), torch.stack(grads)


# ------------------------------------------------------------------------ plates
def plate_map(site) -> dict:
    """``{dim: plate name}`` of a trace site's vectorised plates, each ``dim`` counted from
    the right of the site's batch shape (negative), as its ``log_prob`` is laid out."""
    return {frame.dim: frame.name for frame in site["cond_indep_stack"]
            if frame.vectorized and frame.dim is not None}


#: program -> {argument shapes: ({site: plate map}, {site: batch rank})}; forgotten with the program
_PLATES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _keep_plates(model, args, kwargs, trace) -> tuple[dict, dict]:
    sites = _sample_sites(trace)
    found = ({name: plate_map(s) for name, s in sites.items()},
             {name: len(s["fn"].batch_shape) for name, s in sites.items()})
    try:
        _PLATES.setdefault(model, {})[_key(None, args, kwargs)] = found
    except TypeError:  # a program that cannot be weakly referenced: nothing is kept
        pass
    return found


def _plates(model, args, kwargs, state) -> tuple[dict, dict]:
    try:
        found = _PLATES.get(model, {}).get(_key(None, args, kwargs))
    except TypeError:
        found = None
    return found if found is not None else _keep_plates(model, args, kwargs,
                                                        trace_model(model, args, kwargs, state))


def site_plates(model, args: tuple, kwargs: dict, state: dict) -> dict:
    """``{site: plate map}`` (see :func:`plate_map`) of every sample site of the program: read
    from one trace at ``state`` and kept per program and argument shapes (plates do not change
    with the values)."""
    return _plates(model, args, kwargs, state)[0]


def _shifted_plates(model, args, kwargs, state, site: str, shape: torch.Size) -> tuple[dict, dict]:
    """``({name: plate map}, the site's plate map laid out on shape)``: ``shape`` may end in the
    site's ``to_event`` dimensions (its base distribution's batch shape), which carry no plate."""
    maps, ranks = _plates(model, args, kwargs, state)
    extra = len(shape) - ranks[site]
    return maps, {dim - extra: name for dim, name in maps[site].items()}


# ---------------------------------------------------------------------- reductions
def _reduce_rows(lp: torch.Tensor, shape: torch.Size, term_plates: dict | None = None,
                 site_plates: dict | None = None) -> torch.Tensor | None:
    """:func:`reduce_to_site` of each row of ``lp`` ``(m, ...)``: ``(m, *shape)`` or ``None``."""
    m, rest = lp.shape[0], tuple(lp.shape[1:])
    n = max(len(shape), len(rest))
    target = (1,) * (n - len(shape)) + tuple(shape)
    lp = lp.reshape((m,) + (1,) * (n - len(rest)) + rest)
    by_plate = term_plates is not None and site_plates is not None
    for d in range(n):
        if target[d] == 1 and lp.shape[d + 1] > 1:
            lp = lp.sum(d + 1, keepdim=True)
        elif target[d] > 1 and lp.shape[d + 1] != target[d]:
            return None
        elif target[d] > 1 and by_plate and term_plates.get(d - n) != site_plates.get(d - n):
            return None  # as many entries, but along another plate: each reads several elements
    return lp.reshape((m,) + tuple(shape))


def reduce_to_site(lp: torch.Tensor, shape: torch.Size, term_plates: dict | None = None,
                   site_plates: dict | None = None) -> torch.Tensor | None:
    """Sum a log density tensor down to a site's batch ``shape``; ``None`` when one of its
    entries involves several elements of the site (a term not indexed by the site's plates).

    Args:
        lp: the term, laid out as its site's ``log_prob`` (or with more dimensions on the left).
        shape: the site's batch shape.
        term_plates, site_plates: the term's and the site's plate maps (:func:`plate_map`,
            dimensions counted from the right). With both, a dimension of the site's is matched
            only by the same plate's dimension of the term: a term along another plate of the
            same size (or along no plate where the site has one, or the reverse) gives
            ``None``. Without them, dimensions are matched by size and position alone.
    """
    out = _reduce_rows(lp.unsqueeze(0), shape, term_plates, site_plates)
    return None if out is None else out[0]


def element_log_density(model, args, kwargs, state: dict, site: str, values: list,
                        batch_shape: torch.Size, skip_unchanged: bool = True) -> torch.Tensor | None:
    """Each element's log density terms at each full value of ``site`` in ``values``:
    ``(len(values), *batch_shape)`` float64, up to a constant per element. Only the terms that
    change across ``values`` and the current value enter (a mixed value too: a term of a sum
    of the elements can tie on equal values); ``None`` when one of them is not indexed by the
    site's plates (the elements are then not conditionally independent given the rest). The
    values and the current state come from one trace where the program allows it. Without
    ``skip_unchanged`` a term equal at every value (a constant per element, which cancels)
    is added all the same, so no decision depends on the values (for a recorded update)."""
    known = _known(model, site, args, kwargs)
    if known is not None and tuple(batch_shape) in known.inseparable:
        return None  # coupled elements stay coupled: the caller goes element by element
    m = len(values)
    terms = values_terms(model, args, kwargs, state, site, list(values) + [state[site]],
                         changing_only=True)
    maps, own = _shifted_plates(model, args, kwargs, state, site, batch_shape)
    out = torch.zeros((m,) + tuple(batch_shape), dtype=torch.float64, device=values[0].device)
    for name, lp in terms.items():
        if skip_unchanged and bool((lp[:m] == lp[m:]).all()):
            continue  # does not change with the site: cancels in the conditional
        reduced = _reduce_rows(lp[:m].to(torch.float64), batch_shape, maps.get(name, {}), own)
        if reduced is None:
            choice = _known(model, site, args, kwargs)
            if choice is not None:
                choice.inseparable.add(tuple(batch_shape))
            return None
        out += reduced
    return out


def element_logits(model, args, kwargs, state: dict, site: str, support: torch.Tensor,
                   skip_unchanged: bool = True):
    """Each element's log conditional at each support value, ``(*shape, K)``, with every
    element set to each value in turn; ``None`` when the elements are not conditionally
    independent. ``support`` is ``(K, *event)``: the site's values are ``(*shape, *event)``
    (a one-hot site has one event dimension); ``skip_unchanged`` as in
    :func:`element_log_density`."""
    value = state[site]
    shape = value.shape[:value.dim() - (support.dim() - 1)]
    values = [v.to(value.dtype).expand(value.shape).clone() for v in support]
    out = element_log_density(model, args, kwargs, state, site, values, shape, skip_unchanged)
    return None if out is None else out.movedim(0, -1)


def element_index(flat: int, shape: torch.Size) -> tuple:
    """The index of element number ``flat`` (row-major) of a tensor of ``shape``."""
    index = []
    for size in reversed(tuple(shape)):
        flat, i = divmod(flat, size)
        index.append(i)
    return tuple(reversed(index))


def tolerance(dtype: torch.dtype) -> float:
    """The relative tolerance of the checks for a model computed in ``dtype``: log densities
    are compared to this times ``1 + |log joint|`` (float64: 1e-7; lower precisions: 1e-3)."""
    return 1e-7 if dtype == torch.float64 else 1e-3
