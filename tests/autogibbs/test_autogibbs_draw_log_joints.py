"""A chain's kept draws are scored after its last sweep, in batched traces where the program
keeps its plates counted from the right, else one recorded trace per draw; either way each
``lp`` is the program's log joint at that draw."""

import pyro
import pytest
import torch

from pyromodels.autogibbs import draw_log_joints as module
from pyromodels.autogibbs import fit_gibbs
from pyromodels.autogibbs.draw_log_joints import draws_batching, draws_log_joints
from pyromodels.autogibbs.trace import latent_sites, log_joint, trace_model

from .models import branching_mixture, eight_schools, f64, grid, length_scaled, mixture

X = f64([-2.0, 0.4, 2.5, 2.9, -1.1])
Y = f64([[0.0, 3.0, 1.0], [4.0, 0.0, 2.0]])
SCHOOLS = (f64([28.0, 8.0, -3.0, 7.0]), f64([15.0, 10.0, 16.0, 11.0]))


def fresh(model):
    """A new program object for ``model``: its layout is chosen anew."""
    return lambda *args, **kwargs: model(*args, **kwargs)


def prior_draws(model, args, m, seed=0):
    """``{site: (m, ...)}``: ``m`` draws of every latent site from the prior."""
    pyro.set_rng_seed(seed)
    traces = [latent_sites(trace_model(model, args, {})) for _ in range(m)]
    return {name: torch.stack([t[name]["value"] for t in traces]) for name in traces[0]}


def per_draw(model, args, draws):
    m = next(iter(draws.values())).shape[0]
    return torch.tensor([float(log_joint(model, args, {}, {k: v[i] for k, v in draws.items()}))
                         for i in range(m)], dtype=torch.float64)


@pytest.mark.parametrize("model,args", [(grid, (Y,)), (eight_schools, SCHOOLS)],
                         ids=["grid", "eight schools"])
def test_a_program_with_plates_from_the_right_is_scored_in_one_batched_trace(model, args):
    program = fresh(model)
    draws = prior_draws(program, args, 9)
    got = draws_log_joints(program, args, {}, draws)
    assert draws_batching(program, args, {}, draws).endswith("draws per batched trace (dim -3)"
                                                             if model is grid else "(dim -2)")
    torch.testing.assert_close(got, per_draw(program, args, draws), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model,args,why", [
    (mixture, (X,), "locs[z] indexes the draws' dimension"),
    (length_scaled, (X,), "len() of a latent site counts the draws"),
    (branching_mixture, (X,), "a Python branch on a latent value"),
], ids=["left index", "len", "branch"])
def test_a_program_that_is_not_vectorisable_is_scored_one_draw_at_a_time(model, args, why):
    program = fresh(model)
    draws = prior_draws(program, args, 6, seed=1)
    got = draws_log_joints(program, args, {}, draws)
    assert draws_batching(program, args, {}, draws) == "one recorded trace per draw", why
    torch.testing.assert_close(got, per_draw(program, args, draws), rtol=0, atol=0)


def test_draws_beyond_one_run_are_scored_in_chunks_and_a_last_single_draw_alone(monkeypatch):
    monkeypatch.setattr(module, "RUN_BUDGET", 1)  # two draws per trace
    program = fresh(grid)
    draws = prior_draws(program, (Y,), 5, seed=2)
    got = draws_log_joints(program, (Y,), {}, draws)
    assert draws_batching(program, (Y,), {}, draws).startswith("2 draws per batched trace")
    torch.testing.assert_close(got, per_draw(program, (Y,), draws), rtol=1e-12, atol=1e-12)


def test_a_fit_records_the_programs_log_joint_at_each_kept_draw():
    program = fresh(grid)
    post = fit_gibbs(program, Y, num_samples=12, warmup=3, num_chains=2, seed=3, progress=False,
                     diagnostic_warnings=False)
    draws = {k: v[0] for k, v in post.samples.items()}
    assert draws_batching(program, (Y,), {}, draws).endswith("(dim -3)")
    for c in range(2):
        want = per_draw(program, (Y,), {k: v[c] for k, v in post.samples.items()})
        torch.testing.assert_close(post.sample_stats["lp"][c], want, rtol=1e-12, atol=1e-12)
