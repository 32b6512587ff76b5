"""The NUTS block of the continuous sites with no conjugate update: the plan, the potential,
warm-up adaptation, reproducibility, and chains against posteriors computed by quadrature."""

import math
import pickle
import warnings

import arviz as az
import numpy as np
import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import MCMC

from pyromodels.autogibbs import AutoGibbs, fit_gibbs, plan
from pyromodels.autogibbs.trace import log_joint
from pyromodels.core import SweepInfo
from pyromodels.core.bound import ModelArgs
from pyromodels.core.seeding import make_generator

from .models import (
    bounded_by_scale,
    eight_schools,
    f64,
    gamma_bounds_uniform,
    lognormal_rate,
    noisy_factor,
    with_lognormal,
)

Y8 = f64([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
S8 = f64([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
C = f64([1.0, 4.0, 2.0])


def assert_mean_within_mcse(draws, exact, n_se=4.5):
    """|mean - exact| within ``n_se`` Monte Carlo standard errors, the MCSE from ArviZ's ESS
    of the (correlated) chain."""
    x = np.asarray(draws, dtype=np.float64)
    ess = float(az.ess(x[None], method="mean"))
    se = x.std(ddof=1) / math.sqrt(ess)
    assert abs(x.mean() - exact) <= n_se * se, (x.mean(), exact, se, ess)


def _log_grid(lo, hi, n):
    u = torch.linspace(lo, hi, n, dtype=torch.float64)
    return u, u.exp()


def with_lognormal_exact():
    """Posterior means of ``lam`` and ``s`` by quadrature on a 2-d grid in (log lam, log s)."""
    u, lam = _log_grid(-8.0, 6.0, 1401)
    v, s = _log_grid(-8.0, 6.0, 1401)
    lam, s = lam[:, None], s[None, :]
    lp = (dist.Gamma(f64(2.0), f64(0.5)).log_prob(lam) + u[:, None]
          + dist.LogNormal(f64(0.0), f64(1.0)).log_prob(s) + v[None, :]
          + dist.Poisson((lam * s)[..., None]).log_prob(C).sum(-1))
    w = torch.softmax(lp.reshape(-1), 0).reshape(lp.shape)
    assert float(w[[0, -1]].sum() + w[:, [0, -1]].sum()) < 1e-10  # the grid holds the mass
    return float((w * lam).sum()), float((w * s).sum())


def lognormal_rate_exact():
    """Posterior mean of ``s`` by quadrature on a grid in log s."""
    u, s = _log_grid(-10.0, 5.0, 3001)
    lp = dist.LogNormal(f64(0.0), f64(1.0)).log_prob(s) + u + dist.Poisson(s[:, None]).log_prob(C).sum(-1)
    w = torch.softmax(lp, 0)
    return float((w * s).sum())


def eight_schools_exact():
    """Posterior means of ``mu`` and ``tau``: given tau, y_j ~ N(mu, s_j^2 + tau^2) with mu
    Gaussian, so mu integrates out in closed form and tau by quadrature on a log grid."""
    u, tau = _log_grid(-10.0, 9.0, 20001)
    var = S8**2 + tau[:, None] ** 2
    cov = torch.diag_embed(var) + 25.0
    lp = (dist.HalfCauchy(f64(5.0)).log_prob(tau) + u
          + dist.MultivariateNormal(torch.zeros(8, dtype=torch.float64), cov).log_prob(Y8))
    w = torch.softmax(lp, 0)
    precision = 1 / 25.0 + (1 / var).sum(-1)
    mu_given_tau = (Y8 / var).sum(-1) / precision
    return float((w * mu_given_tau).sum()), float((w * tau).sum())


def test_eight_schools_plan_moves_every_site_by_nuts_by_default():
    """A program without discrete sites: the conjugate normals join tau's NUTS block."""
    p = plan(eight_schools, Y8, S8)
    assert [(s.site, s.update) for s in p.sites] == [
        ("mu", "nuts"), ("tau", "nuts"), ("theta_tilde", "nuts")]
    assert p["mu"].block is p["tau"].block is p["theta_tilde"].block
    assert p["mu"].reason.startswith("'mu' is conjugate given the rest; NUTS on sites mu, tau, theta_tilde")
    assert "the conjugate sites mu, theta_tilde move jointly with tau" in p["tau"].reason
    assert [b.name for b in p.sweep().blocks] == ["nuts:mu,tau,theta_tilde"]


def test_eight_schools_plan_without_joint_nuts_gives_tau_to_nuts_and_keeps_the_normals_conjugate():
    p = plan(eight_schools, Y8, S8, joint_nuts=False)
    assert [(s.site, s.update) for s in p.sites] == [
        ("mu", "conjugate"), ("tau", "nuts"), ("theta_tilde", "conjugate")]
    assert p["tau"].reason == ("HalfCauchy site with no discrete or conjugate update; "
                               "NUTS on sites tau (unconstrained)")
    assert [b.name for b in p.sweep().blocks] == ["conjugate:mu", "nuts:tau", "conjugate:theta_tilde"]


def test_conjugate_sites_join_nuts_only_without_discrete_sites_unless_asked():
    """With a discrete site the conjugate updates stay (``joint_nuts=None``); ``True`` moves
    them into the NUTS block anyway; a fully conjugate program has no NUTS block to join."""
    def mixed(x):
        p = pyro.sample("p", dist.Beta(f64(2.0), f64(2.0)))
        s = pyro.sample("s", dist.HalfCauchy(f64(1.0)))
        m = pyro.sample("m", dist.Normal(f64(0.0), f64(3.0)))
        with pyro.plate("data", len(x)):
            z = pyro.sample("z", dist.Bernoulli(p))
            pyro.sample("x", dist.Normal(m * z, s), obs=x)

    x = f64([0.3, -1.2, 2.0, 2.5])
    assert [s.update for s in plan(mixed, x).sites] == ["conjugate", "nuts", "conjugate", "discrete"]
    forced = plan(mixed, x, joint_nuts=True)
    assert [s.update for s in forced.sites] == ["nuts", "nuts", "nuts", "discrete"]
    assert forced["p"].block is forced["s"].block is forced["m"].block
    assert [s.update for s in plan(with_lognormal, C).sites] == ["nuts", "nuts"]
    assert [s.update for s in plan(with_lognormal, C, joint_nuts=False).sites] == ["conjugate", "nuts"]
    with pytest.raises(TypeError, match="joint_nuts"):
        plan(with_lognormal, C, joint_nuts="yes")


def test_non_conjugate_sites_share_one_nuts_block():
    def two_scales(x):
        a = pyro.sample("a", dist.HalfCauchy(f64(1.0)))
        b = pyro.sample("b", dist.LogNormal(f64(0.0), f64(1.0)))
        with pyro.plate("data", len(x)):
            pyro.sample("x", dist.Normal(f64(0.0), a + b), obs=x)

    p = plan(two_scales, f64([0.3, -1.2, 2.0]))
    assert [s.update for s in p.sites] == ["nuts", "nuts"]
    assert p["a"].block is p["b"].block
    assert "NUTS on sites a, b (unconstrained)" in p["a"].reason
    assert [b.name for b in p.sweep().blocks] == ["nuts:a,b"]
    assert str(p).split()[:2] == ["a..b", "nuts"]  # adjacent in program order: a range


def scales_around_a_mean(x):
    """Two NUTS scales with a conjugate mean between them in program order."""
    tau = pyro.sample("tau", dist.HalfCauchy(f64(1.0)))
    m = pyro.sample("m", dist.Normal(f64(0.0), f64(2.0)))
    sigma = pyro.sample("sigma", dist.LogNormal(f64(0.0), f64(1.0)))
    with pyro.plate("data", len(x)):
        pyro.sample("x", dist.Normal(m, tau + sigma), obs=x)


def test_the_printed_plan_lists_nuts_sites_that_are_not_adjacent():
    x = f64([0.3, -1.2, 2.0])
    p = plan(scales_around_a_mean, x, joint_nuts=False)
    assert [s.update for s in p.sites] == ["nuts", "conjugate", "nuts"]
    assert [line.split()[:2] for line in str(p).splitlines()] == [["tau,sigma", "nuts"],
                                                                  ["m", "conjugate"]]


def test_potential_is_minus_log_joint_minus_the_jacobian():
    """For s = exp(z) the Jacobian term is log |ds/dz| = z."""
    update = plan(with_lognormal, C, joint_nuts=False)["s"].block.update
    state = {"lam": f64(2.5), "s": f64(0.7)}
    z = update.potential.bind(state, (C,), {})
    torch.testing.assert_close(z["s"], f64(math.log(0.7)), rtol=1e-12, atol=1e-12)
    got = update.potential(z)
    want = -(log_joint(with_lognormal, (C,), {}, state) + math.log(0.7))
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert update.check(state, (C,), {}, make_generator(0))


def test_a_support_that_moves_with_another_nuts_site_follows_it():
    """u ~ Uniform(0, b): at unconstrained z the value of u is b * sigmoid(z_u) with the b of
    the same run, not the b at which the block was bound."""
    p = plan(bounded_by_scale, f64(1.0))
    assert p["b"].block is p["u"].block
    potential = p["u"].block.update.potential
    z = potential.bind({"b": f64(1.0), "u": f64(0.5)}, (f64(1.0),), {})
    torch.testing.assert_close(z["u"], f64(0.0), rtol=0, atol=1e-12)
    x = potential.constrained({"b": f64(math.log(2.0)), "u": z["u"]})
    torch.testing.assert_close(x["u"], f64(1.0), rtol=1e-12, atol=1e-12)
    post = fit_gibbs(bounded_by_scale, f64(1.0), num_samples=40, warmup=20, num_chains=1, seed=0,
                     progress=False, diagnostic_warnings=False)
    assert bool((post.samples["u"] < post.samples["b"]).all())


def test_a_gamma_site_that_bounds_another_site_goes_to_nuts_not_a_crash():
    """Reading b's conditional sets b to 0.5, 1, 2 and 3, below the traced u (about 4.2 at
    seed 0), which the program rejects: b's conditional is not a Gamma, so NUTS draws it."""
    p = plan(gamma_bounds_uniform, f64(1.0), seed=0)
    assert p["b"].update == "nuts" and "rejects the values of Gamma" in p["b"].reason
    assert p["b"].block is p["u"].block


def test_verify_mode_leaves_a_program_that_is_not_a_density_unsupported():
    with pytest.warns(RuntimeWarning, match=r"sites \['s'\]: the NUTS potential energy differs"):
        p = plan(noisy_factor, C)
    assert p["s"].update == "unsupported" and "potential energy differs" in p["s"].reason


def test_nuts_steps_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="nuts_steps"):
        plan(with_lognormal, C, nuts_steps=0)
    with pytest.raises(TypeError, match="nuts_steps"):
        plan(with_lognormal, C, nuts_steps=1.5)


def test_step_size_and_mass_adapt_in_warmup_and_freeze_after():
    p = plan(lognormal_rate, C)
    sweep, update = p.sweep(), p["s"].block.update
    data, gen = ModelArgs((C,), {}), make_generator(3)
    state, warmup = {"s": f64(1.0)}, 60
    steps, masses = [], []
    for it in range(warmup + 15):
        state = sweep(state, data, gen, SweepInfo(it, warmup))
        steps.append(update.step_size)
        masses.append(update.kernel.inverse_mass_matrix[("s",)].clone())
    assert len(set(steps[:warmup])) > 10                   # dual averaging moves it
    assert len(set(steps[warmup - 1:])) == 1               # frozen from the last warm-up sweep on
    assert not torch.equal(masses[0], masses[warmup - 1])  # the diagonal mass was adapted
    assert all(torch.equal(m, masses[warmup - 1]) for m in masses[warmup:])
    assert update.kernel._t == warmup + 15


def test_without_sweep_information_nothing_adapts():
    p = plan(lognormal_rate, C)
    block = p["s"].block
    data, gen, state = ModelArgs((C,), {}), make_generator(1), {"s": f64(1.0)}
    state.update(block(state, data, gen))
    first = block.update.step_size
    for _ in range(5):
        state.update(block(state, data, gen))
    assert block.update.step_size == first


def test_same_seed_same_draws_and_the_global_rng_is_left_alone():
    opts = dict(num_samples=8, warmup=6, num_chains=2, progress=False, diagnostic_warnings=False)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    runs = [fit_gibbs(with_lognormal, C, seed=s, **opts) for s in (4, 4, 5)]
    assert torch.equal(torch.get_rng_state(), before)
    for site in ("lam", "s"):
        assert torch.equal(runs[0].samples[site], runs[1].samples[site])
        assert not torch.equal(runs[0].samples[site], runs[2].samples[site])
    assert not torch.equal(runs[0].samples["s"][0], runs[0].samples["s"][1])


def test_the_block_pickles_without_its_kernel():
    p = plan(lognormal_rate, C)
    update = p["s"].block.update
    update(dict(s=f64(1.0)), ModelArgs((C,), {}), make_generator(0), SweepInfo(0, 5))
    assert update.kernel is not None
    copy = pickle.loads(pickle.dumps(update))
    assert copy.kernel is None and copy.sites == ("s",)


def test_a_run_of_n_resumed_for_n_more_equals_a_run_of_2n(tmp_path):
    ck = tmp_path / "ck.pt"
    opts = dict(warmup=4, num_chains=1, seed=2, progress=False, diagnostic_warnings=False)
    fit_gibbs(lognormal_rate, C, num_samples=3, checkpoint=ck, **opts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the adaptation state is in the checkpoint
        longer = fit_gibbs(lognormal_rate, C, num_samples=6, resume=ck, **opts)
    assert torch.equal(longer.samples["s"], fit_gibbs(lognormal_rate, C, num_samples=6, **opts).samples["s"])


def test_lognormal_rate_through_pyro_mcmc_matches_quadrature():
    c_kernel = AutoGibbs(lognormal_rate, C, seed=0)
    assert str(c_kernel.plan).startswith("s  nuts")
    pyro.set_rng_seed(0)
    mcmc = MCMC(c_kernel, num_samples=300, warmup_steps=100, disable_progbar=True)
    mcmc.run(C)
    update = c_kernel.plan["s"].block.update
    assert update.kernel._t == 400 and update.kernel._warmup_steps == 100
    assert_mean_within_mcse(mcmc.get_samples()["s"].numpy(), lognormal_rate_exact())


@pytest.mark.slow
def test_conjugate_and_lognormal_sites_match_quadrature():
    post = fit_gibbs(with_lognormal, C, num_samples=600, warmup=100, num_chains=1, seed=1,
                     progress=False, diagnostic_warnings=False)
    lam, s = with_lognormal_exact()
    assert_mean_within_mcse(post.samples["lam"][0].numpy(), lam)
    assert_mean_within_mcse(post.samples["s"][0].numpy(), s)


def bounded_by_scale_exact():
    """Posterior means of ``b`` and ``u = b t`` by quadrature on a grid in (log b, t)."""
    v, b = _log_grid(-4.0, 3.0, 1401)
    t = (torch.arange(1000, dtype=torch.float64) + 0.5) / 1000
    b, u = b[:, None], b[:, None] * t[None, :]
    lp = (dist.LogNormal(f64(0.0), f64(0.5)).log_prob(b) + v[:, None]
          + dist.Normal(u, f64(0.5)).log_prob(f64(1.0)))
    w = torch.softmax(lp.reshape(-1), 0).reshape(lp.shape)
    return float((w * b).sum()), float((w * u).sum())


@pytest.mark.slow
def test_moving_support_chain_matches_quadrature():
    post = fit_gibbs(bounded_by_scale, f64(1.0), num_samples=1500, warmup=200, num_chains=1,
                     seed=3, progress=False, diagnostic_warnings=False)
    b, u = bounded_by_scale_exact()
    assert_mean_within_mcse(post.samples["b"][0].numpy(), b)
    assert_mean_within_mcse(post.samples["u"][0].numpy(), u)


@pytest.mark.slow
def test_eight_schools_chain_matches_quadrature():
    post = fit_gibbs(eight_schools, Y8, S8, num_samples=2000, warmup=300, num_chains=1, seed=0,
                     progress=False, diagnostic_warnings=False)
    mu, tau = eight_schools_exact()
    assert_mean_within_mcse(post.samples["mu"][0].numpy(), mu)
    assert_mean_within_mcse(post.samples["tau"][0].numpy(), tau)


@pytest.mark.slow
def test_chains_in_worker_processes_equal_chains_in_sequence():
    opts = dict(num_samples=5, warmup=5, num_chains=2, seed=7, progress=False,
                diagnostic_warnings=False)
    here = fit_gibbs(lognormal_rate, C, **opts)
    there = fit_gibbs(lognormal_rate, C, n_jobs=2, **opts)
    assert torch.equal(here.samples["s"], there.samples["s"])
