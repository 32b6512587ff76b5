"""Scoring a site at many values in one batched trace gives the numbers of one trace per
value, and a program that is not vectorisable falls back with the reason in the plan."""

import warnings

import pyro.distributions as dist
import pytest
import torch

from pyromodels.autogibbs import plan, posterior_params
from pyromodels.autogibbs import trace as trace_module
from pyromodels.autogibbs.compiled import plain_runs
from pyromodels.autogibbs.discrete import brute_force_logits
from pyromodels.autogibbs.trace import (
    batching_reason,
    element_log_density,
    element_logits,
    log_joint,
    log_joints,
)

from .models import (
    beta_binomial,
    branching_mixture,
    coupled,
    f64,
    gamma_poisson,
    grid,
    item_rate,
    length_scaled,
    mixture,
    mixture_vectorised,
    structural_zero,
)

EXACT = dict(rtol=1e-12, atol=1e-12)


@pytest.fixture(autouse=True)
def _program_runs():
    """These tests count the program's runs: no recorded trace stands in for one (the traces
    are tested in test_autogibbs_compiled.py)."""
    with plain_runs():
        yield


def fresh(model):
    """A new program object for ``model``: its batching choice is made anew."""
    return lambda *args, **kwargs: model(*args, **kwargs)


X = f64([-2.0, 0.4, 2.5, 2.9, -1.1])
MIX_STATE = {"w": f64([0.3, 0.7]), "locs": f64([-1.0, 2.0]), "z": torch.tensor([1, 0, 1, 1, 0])}
Y = f64([[0.0, 3.0, 1.0], [4.0, 0.0, 2.0]])
GRID_STATE = {"rate": f64([[0.8], [1.7]]), "z": f64([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])}

CASES = {  # (model, args, state, site, values to score)
    "mixture z": (mixture_vectorised, (X,), MIX_STATE, "z",
                  [torch.full((5,), v) for v in range(2)]),
    "mixture w": (mixture_vectorised, (X,), MIX_STATE, "w", [f64([0.5, 0.5]), f64([0.9, 0.1]),
                                                             f64([0.2, 0.8])]),
    "mixture locs": (mixture_vectorised, (X,), MIX_STATE, "locs", [f64([0.0, 1.0]), f64([-3.0, 0.5])]),
    "beta binomial": (beta_binomial, (f64([3.0, 5.0]), f64([5.0, 6.0])), {"p": f64(0.4)}, "p",
                      [f64(0.2), f64(0.5), f64(0.7)]),
    "gamma poisson": (gamma_poisson, (f64([3.0, 0.0, 7.0]),), {"lam": f64(1.0)}, "lam",
                      [f64(0.5), f64(2.0), f64(3.0)]),
    "grid z": (grid, (Y,), GRID_STATE, "z", [torch.zeros(2, 3, dtype=torch.float64),
                                             torch.ones(2, 3, dtype=torch.float64)]),
    "grid rate": (grid, (Y,), GRID_STATE, "rate", [f64([[0.5], [0.5]]), f64([[2.0], [3.0]])]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_log_joints_equal_one_trace_per_value(case):
    model, args, state, site, values = CASES[case]
    model = fresh(model)
    one_by_one = torch.stack([log_joint(model, args, {}, {**state, site: v}).to(torch.float64)
                              for v in values])
    first = log_joints(model, args, {}, state, site, values)     # chooses, one trace per value
    assert "one batched trace" in batching_reason(model, site, args, {})
    batched = log_joints(model, args, {}, state, site, values)   # one trace
    torch.testing.assert_close(first, one_by_one, **EXACT)
    torch.testing.assert_close(batched, one_by_one, **EXACT)


@pytest.mark.parametrize("case", ["mixture z", "mixture w", "beta binomial", "grid z", "grid rate"])
def test_batched_element_log_density_equals_one_trace_per_value(case):
    model, args, state, site, values = CASES[case]
    model = fresh(model)
    shape = state[site].shape if site in ("z", "p", "lam") else state[site].shape[:-1]
    if site == "rate":
        shape = state[site].shape
    per_value = element_log_density(model, args, {}, state, site, values, shape)
    batched = element_log_density(model, args, {}, state, site, values, shape)
    assert per_value is not None and per_value.shape == (len(values),) + tuple(shape)
    torch.testing.assert_close(batched, per_value, **EXACT)


def test_a_vectorised_discrete_site_costs_one_run_of_the_program():
    runs = []

    def model(*args):
        runs.append(1)
        return mixture_vectorised(*args)

    p = plan(model, X)
    assert "all values in one batched trace" in p["z"].reason
    assert "all values in one batched trace" in p["w"].reason
    runs.clear()
    logits = element_logits(model, (X,), {}, MIX_STATE, "z", torch.arange(2))
    assert len(runs) == 1
    for i in range(5):  # still the conditional of the joint
        exact = brute_force_logits(model, (X,), {}, MIX_STATE, "z", (i,), torch.arange(2))
        torch.testing.assert_close(torch.log_softmax(logits[i], -1), torch.log_softmax(exact, -1), **EXACT)


def test_indexing_a_latent_from_the_left_falls_back_with_the_reason():
    p = plan(fresh(mixture), X)          # locs[z] indexes the batch of locs values, not the components
    assert p["locs"].update == "conjugate"
    assert "one trace per value (batched trace failed" in p["locs"].reason
    assert "all values in one batched trace" in p["z"].reason


@pytest.mark.parametrize("model, args, site, value, why", [
    (item_rate, (f64([1.0, 4.0, 2.0]),), "lam", f64(1.5), "batched trace failed: RuntimeError"),
    (branching_mixture, (f64([0.3, 1.2, 0.8]),), "w", f64(0.6), "batched trace failed: RuntimeError"),
    (length_scaled, (f64([0.3, 1.2, -0.8]),), "z", f64([1.0, 0.0, 1.0]),
     "the batched trace gave other log densities"),
    (coupled, (f64([0.2, 1.1, -0.3]),), "z", f64([1.0, 0.0, 1.0]),
     "the batched trace gave other log densities"),
])
def test_a_model_that_is_not_vectorisable_falls_back_with_the_reason(model, args, site, value, why):
    model = fresh(model)
    p = plan(model, *args)
    assert f"one trace per value ({why}" in batching_reason(model, site, args, {})
    if p[site].update in ("conjugate", "discrete"):  # (a site that is not conjugate goes to NUTS)
        assert why in p[site].reason
    values = [torch.zeros_like(value) + 0.25 * (value.dim() == 0), torch.ones_like(value)]
    got = log_joints(model, args, {}, {site: value}, site, values)
    want = torch.stack([log_joint(model, args, {}, {site: v}).to(torch.float64) for v in values])
    torch.testing.assert_close(got, want, **EXACT)


def test_fallback_updates_match_the_vectorisable_twin():
    """The same Gamma-Poisson posterior whether the rate is read with ``.item()`` or not."""
    c = f64([1.0, 4.0, 2.0])
    prior = dist.Gamma(f64(2.0), f64(0.5))
    a = posterior_params(fresh(item_rate), (c,), {}, {"lam": f64(1.3)}, "lam", prior)
    b = posterior_params(fresh(gamma_poisson), (c,), {}, {"lam": f64(1.3)}, "lam", prior)
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=1e-10, atol=1e-10)


def test_a_batched_trace_that_fails_later_switches_to_one_trace_per_value():
    """A state the choosing evaluation did not meet (here an extra batch of means, which the
    stacked values cannot join) makes the batched trace fail later: the site goes on one trace
    per value, saying so, with the same numbers."""
    model = fresh(mixture_vectorised)
    state = {"w": f64([0.3, 0.7]), "locs": f64([-1.0, 2.0]), "z": torch.tensor([1, 0, 1, 1, 0])}
    values = [f64([0.5, 0.5]), f64([0.9, 0.1])]
    log_joints(model, (X,), {}, state, "w", values)
    assert "one batched trace" in batching_reason(model, "w", (X,), {})
    bad = {**state, "locs": f64([[-1.0, 2.0], [0.0, 1.0], [3.0, 3.0]])}  # a batch the values cannot join
    got = log_joints(model, (X,), {}, bad, "w", values)
    assert "a later batched trace failed" in batching_reason(model, "w", (X,), {})
    want = torch.stack([log_joint(model, (X,), {}, {**bad, "w": v}).to(torch.float64) for v in values])
    torch.testing.assert_close(got, want, **EXACT)


def test_long_lists_of_values_are_scored_in_runs_of_bounded_size(monkeypatch):
    runs = []

    def model(*args):
        runs.append(1)
        return mixture_vectorised(*args)

    # per value: w (1 entry) + locs (2) + z (5) + x (5) = 13 log-density entries: 4 per run
    monkeypatch.setattr(trace_module, "RUN_BUDGET", 52)
    values = [f64([0.1 * i, -0.2 * i]) for i in range(20)]
    first = log_joints(model, (X,), {}, MIX_STATE, "locs", values)  # 16 chosen one by one, 4 batched
    runs.clear()
    batched = log_joints(model, (X,), {}, MIX_STATE, "locs", values)
    assert len(runs) == 5
    want = torch.stack([log_joint(model, (X,), {}, {**MIX_STATE, "locs": v}).to(torch.float64)
                        for v in values])
    torch.testing.assert_close(first, want, **EXACT)
    torch.testing.assert_close(batched, want, **EXACT)


class _Program:
    """A program object that cannot be weakly referenced (no ``__weakref__`` slot)."""

    __slots__ = ()
    runs: list = []

    def __call__(self, *args):
        self.runs.append(1)
        return mixture_vectorised(*args)


def test_a_program_that_cannot_be_weakly_referenced_is_scored_one_trace_per_value():
    model = _Program()
    values = [f64([0.5, 0.5]), f64([0.9, 0.1])]
    model.runs.clear()
    got = log_joints(model, (X,), {}, MIX_STATE, "w", values)
    assert len(model.runs) == 2  # no batched trials whose choice could not be kept
    assert batching_reason(model, "w", (X,), {}) == ""
    want = torch.stack([log_joint(model, (X,), {}, {**MIX_STATE, "w": v}).to(torch.float64) for v in values])
    torch.testing.assert_close(got, want, **EXACT)


def test_the_choice_is_kept_per_argument_shapes():
    model = fresh(mixture_vectorised)
    values = [f64([0.5, 0.5]), f64([0.9, 0.1])]
    log_joints(model, (X,), {}, MIX_STATE, "w", values)
    longer = f64([-2.0, 0.4, 2.5, 2.9, -1.1, 0.0, 1.0])
    assert "one batched trace" in batching_reason(model, "w", (X,), {})
    assert "one batched trace" in batching_reason(model, "w", (X.clone(),), {})  # same shapes
    assert batching_reason(model, "w", (longer,), {}) == ""                     # not chosen yet


def test_impossible_values_do_not_stop_the_batched_trace():
    """-inf log densities (a value the prior rules out) are the same in both readings, and
    the vectorised conditional passes its check against brute-force enumeration."""
    model = fresh(structural_zero)
    y = f64([0.1, 2.2, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = plan(model, y)
    assert p["z"].update == "discrete" and "all elements at once" in p["z"].reason
    assert "all values in one batched trace" in p["z"].reason
    logits = element_logits(model, (y,), {}, {"z": torch.tensor([0, 2, 0])}, "z", torch.arange(3))
    assert bool((logits[:, 1] == float("-inf")).all())
