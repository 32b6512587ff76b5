"""Recorded traces of the program stand in for its runs only where they give its numbers bit
for bit: a program that branches on values, draws inside, or whose data changed in place is run
itself; the chains are the same with and without the traces."""

import contextlib
import itertools
import warnings

import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.autogibbs import compiled, fit_gibbs, plan
from pyromodels.autogibbs.compiled import (
    DATA_SLOTS,
    RECORD_AFTER,
    UPDATE_RECORD_AFTER,
    VERIFIED_CALLS,
    compiled_state,
    plain_runs,
    signature,
)
from pyromodels.autogibbs.trace import _scores, log_joint, log_joints_and_gradients
from pyromodels.core.bound import ModelArgs
from pyromodels.core.seeding import make_generator

from .models import eight_schools, f64, mixture, mixture_vectorised

X = f64([-2.1, -1.7, 0.2, 2.4, 2.9])
#: calls of one key that record its trace and check it, plus one run from the trace
ENOUGH = RECORD_AFTER + VERIFIED_CALLS + 2
STATE = {"w": f64([0.4, 0.6]), "locs": f64([-2.0, 2.5]), "z": torch.tensor([0, 0, 1, 1, 1])}


class Counted:
    def __init__(self, model):
        self.model, self.runs = model, 0

    def __call__(self, *args, **kwargs):
        self.runs += 1
        return self.model(*args, **kwargs)


def _same(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)


def test_a_traceable_program_is_replayed_once_verified_and_gives_its_numbers():
    model = Counted(mixture)
    states = [{**STATE, "locs": f64([-2.0 + 0.1 * i, 2.5 - 0.2 * i])} for i in range(ENOUGH)]
    with plain_runs():
        want = [_scores(model, (X,), {}, s) for s in states]
    model.runs = 0
    got = [_scores(model, (X,), {}, s) for s in states]
    assert all(_same(g, w) for g, w in zip(got, want))
    # the first RECORD_AFTER calls run the program, the next records the trace (a run), and the
    # VERIFIED_CALLS calls from that one on also run it beside the trace; then only the trace
    assert model.runs == RECORD_AFTER + 1 + VERIFIED_CALLS
    assert list(compiled_state(model).values()) == ["compiled"]


def test_a_program_that_branches_on_a_value_keeps_running_itself():
    def branching(x):
        m = pyro.sample("m", dist.Normal(f64(0.0), f64(1.0)))
        scale = f64(1.0) if float(m) > 0 else f64(2.0)   # frozen in a trace
        with pyro.plate("data", len(x)):
            pyro.sample("x", dist.Normal(m, scale), obs=x)

    model = Counted(branching)
    states = [{"m": f64(v)} for v in (0.5, 0.7, -0.3, 0.9, -1.0) * RECORD_AFTER]
    with plain_runs():
        want = [_scores(model, (X,), {}, s) for s in states]
    got = [_scores(model, (X,), {}, s) for s in states]
    assert all(_same(g, w) for g, w in zip(got, want))
    assert list(compiled_state(model).values()) == ["the trace gave other numbers than the program"]


def test_a_program_that_draws_inside_keeps_running_itself():
    def noisy(x):
        m = pyro.sample("m", dist.Normal(f64(0.0), f64(1.0)))
        pyro.factor("noise", torch.randn((), dtype=torch.float64))   # a draw: not a function of m
        with pyro.plate("data", len(x)):
            pyro.sample("x", dist.Normal(m, f64(1.0)), obs=x)

    for v in range(ENOUGH):
        _scores(noisy, (X,), {}, {"m": f64(v)})
    assert list(compiled_state(noisy).values()) == ["the trace gave other numbers than the program"]


def test_data_changed_in_place_is_new_data():
    def model(x):
        m = pyro.sample("m", dist.Normal(f64(0.0), f64(1.0)))
        with pyro.plate("data", len(x)):
            pyro.sample("x", dist.Normal(m, f64(1.0)), obs=x)

    x = X.clone()
    for v in range(ENOUGH):
        _scores(model, (x,), {}, {"m": f64(0.1 * v)})
    assert list(compiled_state(model).values()) == ["compiled"]
    x.mul_(2.0)   # the trace holds the old values as constants; its key has the old version
    got = _scores(model, (x,), {}, {"m": f64(0.5)})
    with plain_runs():
        want = _scores(model, (x,), {}, {"m": f64(0.5)})
    assert _same(got, want)


def test_gradients_through_a_trace_equal_the_programs():
    values = [f64([-1.0, 2.0]), f64([0.5, 0.5]), f64([1.5, -0.5])]
    with plain_runs():
        want = log_joints_and_gradients(mixture, (X,), {}, STATE, "locs", values)
    for _ in range(ENOUGH):
        got = log_joints_and_gradients(mixture, (X,), {}, STATE, "locs", values)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def _fit(model, *args):
    return fit_gibbs(model, *args, num_samples=15, warmup=10, num_chains=1, seed=4, progress=False,
                     diagnostic_warnings=False)


def test_chains_are_the_same_with_and_without_traces():
    """A discrete, a conjugate and a joint NUTS block, run on traces after their first calls."""
    y, sigma = f64([28.0, 8.0, -3.0, 7.0]), f64([15.0, 10.0, 16.0, 11.0])
    for model, args in ((mixture, (X,)), (eight_schools, (y, sigma))):
        traced = _fit(model, *args)
        assert "compiled" in compiled_state(model).values()
        with plain_runs():
            plain = _fit(model, *args)
        for site, draws in plain.samples.items():
            assert torch.equal(traced.samples[site], draws), site


def test_traces_are_kept_for_the_most_recent_data_only():
    """A program fitted to many data sets does not keep them all alive through its traces."""
    def model(x):
        m = pyro.sample("m", dist.Normal(f64(0.0), f64(1.0)))
        with pyro.plate("data", len(x)):
            pyro.sample("x", dist.Normal(m, f64(1.0)), obs=x)

    sets = [X + i for i in range(DATA_SLOTS + 2)]
    for x in sets:
        for v in range(ENOUGH):
            _scores(model, (x,), {}, {"m": f64(0.1 * v)})
    kept = {data for data, _ in compiled_state(model)}
    assert len(kept) == DATA_SLOTS
    assert kept == {(signature((x,)), signature({})) for x in sets[-DATA_SLOTS:]}


def test_a_key_met_a_few_times_is_never_recorded():
    """New data every few calls (a Geweke test, a stream): each data's key stays plain, so no
    trace is paid for and none is kept."""
    def model(x):
        m = pyro.sample("m", dist.Normal(f64(0.0), f64(1.0)))
        with pyro.plate("data", len(x)):
            pyro.sample("x", dist.Normal(m, f64(1.0)), obs=x)

    for i in range(3):
        x = X + i
        for v in range(RECORD_AFTER):
            _scores(model, (x,), {}, {"m": f64(0.1 * v)})
    assert set(compiled_state(model).values()) == {"not recorded"}


def test_whole_updates_are_recorded_and_give_the_plain_chain():
    """The weights' conjugate update (elements by plate), the means' (read from gradients,
    whose backward pass the tracer records on the CPU) and the assignments' discrete update
    are replayed as whole recorded updates; the chain equals the one without any trace (both
    without statistics tables, which would take these updates off the program)."""
    x = f64([-2.1, -1.7, 0.2, 2.4, 2.9, 3.1, -2.5])
    sweeps = dict(num_samples=UPDATE_RECORD_AFTER + VERIFIED_CALLS + 5, warmup=5)
    post = fit_gibbs(mixture_vectorised, x, **sweeps, num_chains=1, seed=2, progress=False,
                     tables=False, diagnostic_warnings=False)
    updates = {key[2]: state for (_, key), state in compiled_state(mixture_vectorised).items()
               if key[0] == "update"}
    # verified bit for bit; kept or not by speed alone, which does not change the draws
    assert set(updates) == {"w", "locs", "z"}
    assert set(updates.values()) <= {"compiled", "the trace ran slower than the plain call"}
    with plain_runs():
        plain = fit_gibbs(mixture_vectorised, x, **sweeps, num_chains=1, seed=2, progress=False,
                          tables=False, diagnostic_warnings=False)
    for site, draws in plain.samples.items():
        assert torch.equal(post.samples[site], draws), site


def test_a_trace_slower_than_the_plain_call_is_dropped_where_only_speed_counts(monkeypatch):
    """With ``faster_only`` a verified trace that ran slower than the plain call beside it is
    not kept (the numbers are the same, so the draws are too); without, it is."""
    def fn(a):
        return (a * 2.0 + 1.0,)

    for faster_only, want in ((True, "the trace ran slower than the plain call"), (False, "compiled")):
        owner = Counted(fn)   # a fresh owner: its own table
        clock = itertools.count()
        # each checking call reads the clock three times: plain 1 tick, trace 5 ticks
        ticks = iter(t for i in clock for t in (10 * i, 10 * i + 1, 10 * i + 6))
        monkeypatch.setattr(compiled, "perf_counter", lambda ticks=ticks: next(ticks))
        for i in range(ENOUGH):
            out = compiled.compiled_call(owner, "data", "key", fn, (f64([float(i)]),),
                                         faster_only=faster_only)
            assert torch.equal(out[0], f64([2.0 * i + 1.0]))
        assert list(compiled_state(owner).values()) == [want]


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::torch.jit.TracerWarning")
def test_the_key_of_a_tensor_is_the_same_inside_a_trace_being_recorded():
    """Under ``torch.jit.trace`` a tensor's sizes are traced tensors; the key reads them as
    ints, so the choices kept per shape are found from inside a recorded update."""
    seen = []
    kept = {signature((X,), identity=False): "found"}

    def fn(a):
        seen.append(kept.get(signature((X,), identity=False)))   # the data, a constant
        return a * 2.0

    torch.jit.trace(fn, (X.clone(),), check_trace=False)
    assert seen == ["found"]


def test_a_recorded_update_that_is_not_ok_takes_the_plain_path(monkeypatch):
    """Non-finite gradients or an improper posterior (``ok`` false) make that call take the
    plain path, which falls back or raises as before."""
    from pyromodels.autogibbs import exponential

    x = f64([-2.1, -1.7, 0.2, 2.4, 2.9])
    update = plan(mixture_vectorised, x, tables=False)["locs"].block.update
    data = ModelArgs((x,), {})
    state = {"w": f64([0.4, 0.6]), "locs": f64([-2.0, 2.5]), "z": torch.tensor([0, 0, 1, 1, 1])}
    gen = make_generator(0)
    update(state, data, gen)   # the first call checks
    calls = []
    real = exponential.posterior_params

    def spy(*args, **kwargs):
        calls.append(kwargs.get("checked", args[6] if len(args) > 6 else True))
        return real(*args, **kwargs)

    monkeypatch.setattr(exponential, "posterior_params", spy)
    update(state, data, gen)
    assert calls == []          # the recorded way applies
    monkeypatch.setattr(exponential, "recorded_params",
                        lambda *a, **k: {**real(*a, checked=False), "ok": torch.tensor(False)})
    update(state, data, gen)
    assert calls == [False]     # ok false: the plain path


def test_a_short_fit_records_no_whole_update():
    """Fewer sweeps than UPDATE_RECORD_AFTER: every update runs plainly, none is recorded
    (recording one costs more than such a fit would win back)."""
    x = f64([-2.1, -1.7, 0.2, 2.4, 2.9, 3.1, -2.5, 0.4])
    fit_gibbs(mixture_vectorised, x, num_samples=UPDATE_RECORD_AFTER - 10, warmup=5, num_chains=1,
              seed=3, progress=False, tables=False, diagnostic_warnings=False)
    here = (signature((x,)), signature({}))
    states = {key[2]: state for (data, key), state in compiled_state(mixture_vectorised).items()
              if key[0] == "update" and data == here}
    assert set(states) == {"w", "locs", "z"} and set(states.values()) == {"not recorded"}


def _assert_replayed_bit_for_bit(model, args, states, dtype=None):
    """``_scores`` at each state (torch's default dtype set to ``dtype`` meanwhile) equals the
    program's own numbers, and the key ends compiled; its table entry."""
    with _default_dtype(dtype or torch.get_default_dtype()):
        got = [_scores(model, args, {}, s) for s in states]
        with plain_runs():
            want = [_scores(model, args, {}, s) for s in states]
    assert all(_same(g, w) for g, w in zip(got, want))
    assert list(compiled_state(model).values()) == ["compiled"]
    (entry,) = (e for table in compiled._TABLE[model].values() for e in table.values())
    return entry


def test_a_trace_has_its_constant_operations_folded_and_keeps_the_programs_numbers():
    """The recorded graph drops its bookkeeping (operations on constants alone, repeats) and
    still gives the program's numbers bit for bit."""
    states = [{**STATE, "locs": f64([-2.0 + 0.1 * i, 2.5 - 0.2 * i])} for i in range(ENOUGH)]
    entry = _assert_replayed_bit_for_bit(Counted(mixture), (X,), states)
    with warnings.catch_warnings():  # the tracer's remarks on the program's checks
        warnings.simplefilter("ignore")
        raw = torch.jit.trace(lambda *v: _scores(mixture, (X,), {}, dict(zip(sorted(STATE), v))),
                              tuple(STATE[k] for k in sorted(STATE)), check_trace=False, strict=False)

    def operations(graph):
        return [n.kind() for n in graph.nodes() if n.kind() != "prim::Constant"]
    assert entry.simplify
    assert "aten::lgamma" in operations(raw.graph)  # the Dirichlet prior's normaliser
    assert "aten::lgamma" not in operations(entry.fn.graph)
    assert len(operations(entry.fn.graph)) < len(operations(raw.graph))


def test_a_graph_the_passes_refuse_stays_as_recorded(monkeypatch):
    def refuse(graph):
        raise RuntimeError("refused")

    monkeypatch.setattr(torch._C, "_jit_pass_cse", refuse)
    traced = torch.jit.trace(lambda a: (a * 2.0,), (f64([1.0]),))
    assert compiled._simplified(traced) is traced


def _checked_calls(owner, fn, monkeypatch, simplified):
    """Enough calls of ``fn`` through one key to record and check its trace, with
    :func:`compiled._simplified` replaced by ``simplified``; each must give ``fn``'s numbers."""
    monkeypatch.setattr(compiled, "_simplified", simplified)
    for i in range(ENOUGH + VERIFIED_CALLS + 2):
        a = f64([0.5 + i, -1.5]).requires_grad_(True)
        out = compiled.compiled_call(owner, "data", "key", fn, (a,))
        want = fn(a)
        assert torch.equal(out[0], want[0])
        assert torch.equal(compiled._grads(out, (a,))[0], compiled._grads(want, (a,))[0])
    (entry,) = (e for table in compiled._TABLE[owner].values() for e in table.values())
    return entry


def _doubled(a):
    return (a * 2.0,)


def test_a_simplified_trace_whose_gradients_differ_is_recorded_again_as_is(monkeypatch):
    """A simplified graph can sum a gradient's parts in another order: when its values agree
    and its gradients do not, the key is recorded once more without simplifying, and kept."""
    def other_gradient(traced):  # the same values, a gradient off by 1e-3
        return torch.jit.trace(lambda a: (a * 2.0 + (a - a.detach()) * 1e-3,), (f64([1.0, 2.0]),))

    owner = Counted(_doubled)
    entry = _checked_calls(owner, _doubled, monkeypatch, other_gradient)
    assert list(compiled_state(owner).values()) == ["compiled"]
    assert not entry.simplify


def test_a_simplified_trace_whose_values_differ_is_not_recorded_again(monkeypatch):
    def other_values(traced):
        return torch.jit.trace(lambda a: (a * 2.0 + 1e-12,), (f64([1.0, 2.0]),))

    owner = Counted(_doubled)
    entry = _checked_calls(owner, _doubled, monkeypatch, other_values)
    assert list(compiled_state(owner).values()) == ["the trace gave other numbers than the program"]
    assert entry.simplify


def test_a_chain_records_its_log_joint_from_a_trace_with_the_programs_value():
    """Each kept draw's ``lp`` is the program's log joint at that draw, read from a recorded
    trace once its key is verified."""
    sweeps = dict(num_samples=RECORD_AFTER + VERIFIED_CALLS + 5, warmup=3)
    post = fit_gibbs(mixture_vectorised, X, **sweeps, num_chains=1, seed=1, progress=False,
                     diagnostic_warnings=False)
    states = {key[0]: state for (_, key), state in compiled_state(mixture_vectorised).items()}
    assert states["log_joint"] == "compiled"
    for d in range(sweeps["num_samples"]):
        draw = {site: v[0, d] for site, v in post.samples.items()}
        want = log_joint(mixture_vectorised, (X,), {}, draw)
        assert float(post.sample_stats["lp"][0, d]) == float(want)


@contextlib.contextmanager
def _default_dtype(dtype):
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def test_a_multivariate_normal_program_of_float64_inputs_is_recorded_under_a_float32_default():
    """``MultivariateNormal.log_prob`` multiplies a size by a Python float, which the tracer
    records as a tensor of the default dtype: with float64 inputs the trace is recorded with a
    float64 default, so under the caller's float32 default it still gives the program's
    numbers bit for bit and is kept."""
    x = f64([[0.3, -1.2], [1.1, 0.4], [-0.7, 2.0]])

    def model(x):
        m = pyro.sample("m", dist.MultivariateNormal(torch.zeros(2, dtype=torch.float64),
                                                     torch.eye(2, dtype=torch.float64)))
        with pyro.plate("data", x.shape[0]):
            pyro.sample("x", dist.MultivariateNormal(m, torch.eye(2, dtype=torch.float64)), obs=x)

    states = [{"m": f64([0.1 * i, -0.2 * i])} for i in range(ENOUGH + VERIFIED_CALLS + 2)]
    _assert_replayed_bit_for_bit(model, (x,), states, dtype=torch.float32)


def test_a_program_of_float32_inputs_building_default_dtype_tensors_is_recorded():
    def model(x):
        m = pyro.sample("m", dist.Normal(torch.tensor(0.0), torch.tensor(1.0)))
        with pyro.plate("data", x.shape[0]):
            pyro.sample("x", dist.Normal(m, torch.tensor(1.5)), obs=x)

    x = torch.tensor([0.3, -1.2, 2.2], dtype=torch.float32)
    states = [{"m": torch.tensor(0.1 * i, dtype=torch.float32)} for i in range(ENOUGH)]
    _assert_replayed_bit_for_bit(model, (x,), states, dtype=torch.float32)


def test_the_normal_and_wishart_parameters_read_their_sizes_as_ints_when_traced():
    """A recorded conjugate update turns coefficients into parameters inside the trace, where
    sizes are traced tensors: the MultivariateNormal and Wishart readings still work there and
    give the plain numbers."""
    from pyromodels.autogibbs.families import _mvn_params, _wishart_params

    mvn = f64([[0.5, -1.0, -1.0, 0.2, -0.8]])        # c_x (2), c_xx upper (3)
    wishart = f64([[3.0, -1.0, 0.2, -0.8]])           # c_logdet, c_xx upper (3)
    for params, c in ((_mvn_params, mvn), (_wishart_params, wishart)):
        plain = params(c)
        traced = torch.jit.trace(lambda c, params=params: tuple(params(c).values()), (c,), check_trace=False)
        for got, want in zip(traced(c * 1.0), plain.values()):
            assert torch.equal(got, want)
