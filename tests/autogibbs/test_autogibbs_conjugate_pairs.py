"""Each conjugate pair: the plan chooses the conjugate update, and the posterior read off the
program equals the hand-derived one; and the clear errors for what the plan cannot handle."""

import re

import pyro.distributions as dist
import pytest
import torch

from pyromodels.autogibbs import fit_gibbs, plan, posterior_params
from pyromodels.autogibbs.discrete import element_logits
from pyromodels.autogibbs.exponential import FAMILIES
from pyromodels.autogibbs.families import family_of
from pyromodels.autogibbs.trace import trace_model
from pyromodels.core import GibbsBlock
from pyromodels.core.seeding import make_generator
from pyromodels.mixture.wishart import BartlettWishart
from pyromodels.testing import assert_mc_mean

from . import conjugate_models as cm
from .models import beta_bernoulli, beta_binomial, f64, gamma_poisson, mixture, no_latents

TOL = dict(rtol=1e-10, atol=1e-10)


def read_posterior(model, args, state, site):
    """The posterior of ``site`` read off ``model`` at ``state``, its prior taken from a trace."""
    fn = trace_model(model, args, {}, state).nodes[site]["fn"]
    return posterior_params(model, args, {}, state, site, fn)


def assert_posterior(got, want):
    assert set(got) == set(want)
    for name, value in want.items():
        torch.testing.assert_close(got[name], torch.as_tensor(value, dtype=torch.float64), **TOL)


def beta(a, b):
    return {"concentration1": a, "concentration0": b}


def gamma(a, b):
    return {"concentration": a, "rate": b}


def normal(precision, weighted):
    """Normal posterior from its precision and precision-weighted mean."""
    precision = torch.as_tensor(precision, dtype=torch.float64)
    return {"loc": weighted / precision, "scale": precision.rsqrt()}


def mvn(precision, weighted):
    return {"loc": torch.linalg.solve(precision, weighted), "precision_matrix": precision}


def inv(m):
    return torch.linalg.inv(m)


def wishart(df, inverse_scale):
    """Wishart posterior from its degrees of freedom and the inverse of its scale matrix."""
    return {"df": df, "scale_tril": torch.linalg.cholesky(inv(inverse_scale))}


def scatter(y, loc):
    r = y - loc
    return r.T @ r


Y = f64([0.4, 1.3, 2.2, -0.5])
SQ = ((Y - 0.3) ** 2).sum() / 2
GROUP = torch.tensor([0, 0, 1, 2, 2, 2])
Y2 = f64([[0.5, -1.0], [1.5, 0.2], [-0.3, -0.8]])
A, B = f64([0.5, -1.0, 2.0, 0.0]), f64([1.0, 2.5, -0.7, 0.3])
X = f64([[1.0, 0.2], [1.0, -1.3], [1.0, 0.7], [1.0, 2.1]])


def _single(model, site, state_value, args, want):
    return pytest.param(model, args, {site: state_value}, site, want, id=model.__name__)


PAIRS = [
    _single(beta_bernoulli, "p", f64(0.5), (f64([1.0, 0.0, 1.0, 1.0, 0.0]),), beta(0.5 + 3, 1.5 + 2)),
    _single(beta_binomial, "p", f64(0.5), (f64([3.0, 5.0]), f64([5.0, 6.0])), beta(2.0 + 8, 3.0 + 3)),
    _single(cm.beta_geometric, "p", f64(0.5), (f64([0.0, 3.0, 1.0, 5.0]),), beta(2.0 + 4, 3.0 + 9)),
    _single(cm.dirichlet_multinomial, "theta", f64([0.2, 0.3, 0.5]),
            (f64([[1.0, 2.0, 2.0], [0.0, 0.0, 5.0], [3.0, 1.0, 1.0]]),),
            {"concentration": f64([1.0 + 4, 2.0 + 3, 0.5 + 8])}),
    _single(gamma_poisson, "lam", f64(1.0), (f64([3.0, 0.0, 7.0]),), gamma(2.0 + 10, 0.5 + 3)),
    _single(cm.gamma_exponential, "rate", f64(1.0), (Y.abs(),), gamma(2.0 + 4, 0.5 + Y.abs().sum())),
    _single(cm.exponential_poisson, "lam", f64(1.0), (f64([3.0, 0.0, 7.0]),), gamma(1.0 + 10, 0.5 + 3)),
    _single(cm.gamma_gamma, "rate", f64(1.0), (Y.abs(),), gamma(2.0 + 1.7 * 4, 0.5 + Y.abs().sum())),
    _single(cm.normal_precision, "tau", f64(1.0), (Y,), gamma(2.0 + 4 / 2, 0.5 + SQ)),
    _single(cm.normal_variance, "v", f64(1.0), (Y,),
            {"concentration": 3.0 + 4 / 2, "rate": 2.0 + SQ}),
    _single(cm.normal_mean, "mu", f64(0.0), (Y,), normal(1 / 9 + 4 / 0.49, 1 / 9 + Y.sum() / 0.49)),
    _single(cm.mvn_mean, "mu", f64([0.0, 0.0]), (Y2,),
            mvn(inv(cm.PRIOR_COV) + 3 * inv(cm.COV),
                inv(cm.PRIOR_COV) @ cm.PRIOR_LOC + inv(cm.COV) @ Y2.sum(0))),
    _single(cm.independent_means, "mu", f64([0.0, 0.0]), (Y2,),
            normal(1 / 9 + 3 / 0.49 + f64([0, 0]), 1 / 9 + Y2.sum(0) / 0.49)),
    _single(cm.independent_precisions, "tau", f64([1.0, 1.0]), (Y2,),
            gamma(2.0 + 3 / 2 + f64([0, 0]), 0.5 + ((Y2 - 0.3) ** 2).sum(0) / 2)),
    _single(cm.gathered_beta, "p", f64([0.5, 0.5, 0.5]), (f64([1.0, 1.0, 0.0, 1.0, 0.0, 0.0]), GROUP),
            beta(2.0 + f64([2, 0, 1]), 3.0 + f64([0, 1, 2]))),
    _single(cm.gathered_rates, "lam", f64([1.0, 1.0, 1.0]), (f64([1.0, 4.0, 0.0, 2.0, 2.0, 5.0]), GROUP),
            gamma(2.0 + f64([5, 0, 9]), 0.5 + f64([2, 1, 3]))),
    _single(cm.gathered_dirichlet, "theta", f64([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]),
            (torch.tensor([0, 2, 2, 1, 0]), torch.tensor([0, 0, 1, 1, 1])),
            {"concentration": f64([[1.0 + 1, 2.0, 0.5 + 1], [1.0 + 1, 2.0 + 1, 0.5 + 1]])}),
    _single(cm.plated_binomial, "p", f64([0.5, 0.5]), (f64([[1.0, 4.0], [3.0, 0.0], [2.0, 2.0]]), f64(4.0)),
            beta(2.0 + f64([6, 6]), 3.0 + f64([6, 6]))),
    _single(cm.plated_precision, "tau", f64([1.0, 1.0]), (Y2,),
            gamma(2.0 + 3 / 2 + f64([0, 0]), 0.5 + ((Y2 - 0.3) ** 2).sum(0) / 2)),
    _single(cm.affine_mean, "theta", f64(0.0), (Y, A, B),
            normal(1 / 9 + (B * B).sum() / 0.49, 1 / 9 + (B * (Y - A)).sum() / 0.49)),
    _single(cm.regression, "beta", f64([0.0, 0.0]), (Y, X),
            mvn(inv(cm.PRIOR_COV) + X.T @ X / 0.49, inv(cm.PRIOR_COV) @ cm.PRIOR_LOC + X.T @ Y / 0.49)),
    _single(cm.wishart_precision, "lam", torch.eye(2, dtype=torch.float64), (Y2,),
            wishart(4.0 + 3, inv(cm.PRIOR_COV) + scatter(Y2, cm.PRIOR_LOC))),
    _single(cm.wishart_scaled_tril, "lam", torch.eye(2, dtype=torch.float64), (Y2,),
            wishart(3.5 + 3, inv(cm.PRIOR_COV) + 2.0 * scatter(Y2, cm.PRIOR_LOC))),
    _single(cm.gathered_wishart, "lam", torch.eye(2, dtype=torch.float64).expand(2, 2, 2).clone(),
            (Y2, torch.tensor([0, 1, 1])),
            wishart(4.0 + f64([1, 2]), inv(cm.PRIOR_COV) + torch.stack(
                [scatter(Y2[:1], cm.PRIOR_LOC), scatter(Y2[1:], cm.PRIOR_LOC)]))),
]


@pytest.mark.parametrize("model, args, state, site, want", PAIRS)
def test_pair_is_planned_conjugate_with_the_exact_posterior(model, args, state, site, want):
    chosen = plan(model, *args)
    assert chosen[site].update == "conjugate"
    assert_posterior(read_posterior(model, args, state, site), want)


@pytest.mark.parametrize("model, args, site, family", [
    (cm.variance_as_scale, (Y,), "v", "InverseGamma"),
    (cm.logistic_regression, (f64([1.0, 0.0, 0.0, 1.0]), X), "beta", "MultivariateNormal"),
    (cm.wishart_as_covariance, (Y2,), "lam", "Wishart"),
])
def test_new_families_refuse_a_non_conjugate_site(model, args, site, family):
    chosen = plan(model, *args)
    assert chosen[site].update == "nuts"  # not conjugate: NUTS draws it
    assert f"not linear in the sufficient statistics of a {family} prior" in chosen[site].reason


def test_correlated_to_event_means_are_refused_by_the_check():
    with pytest.warns(RuntimeWarning, match="site 'mu'.*condition-and-score"):
        chosen = plan(cm.correlated_means, Y2)
    assert chosen["mu"].update == "nuts" and "failed the check" in chosen["mu"].reason


def test_mvn_means_gathered_by_assignment_are_exact():
    x = f64([[0.5, -1.0], [1.5, 0.2], [-0.3, -0.8], [2.0, 1.0], [0.1, 0.1]])
    z = torch.tensor([0, 2, 0, 2, 2])  # component 1 has no data: its posterior is the prior
    chosen = plan(cm.mvn_mixture, x)
    assert [(s.site, s.update) for s in chosen.sites] == [
        ("w", "conjugate"), ("locs", "conjugate"), ("z", "discrete")]
    state = {"w": f64([0.3, 0.3, 0.4]), "locs": torch.zeros(3, 2, dtype=torch.float64), "z": z}
    got = read_posterior(cm.mvn_mixture, (x,), state, "locs")
    p0, pc = inv(cm.PRIOR_COV), inv(cm.COV)
    precision = torch.stack([p0 + (z == k).sum() * pc for k in range(3)])
    weighted = torch.stack([p0 @ cm.PRIOR_LOC + pc @ x[z == k].sum(0) for k in range(3)])
    assert_posterior(got, mvn(precision, weighted))


def test_means_and_precisions_gathered_by_assignment_are_exact():
    x = f64([-2.0, -1.5, 2.0, 2.5, 0.3])
    z = torch.tensor([0, 0, 1, 1, 0])
    chosen = plan(cm.normal_gamma_mixture, x)
    assert [(s.site, s.update) for s in chosen.sites] == [
        ("w", "conjugate"), ("locs", "conjugate"), ("taus", "conjugate"), ("z", "discrete")]
    locs, taus = f64([-1.0, 2.0]), f64([0.5, 3.0])
    state = {"w": f64([0.5, 0.5]), "locs": locs, "taus": taus, "z": z}
    n = torch.stack([(z == k).sum() for k in range(2)]).double()
    sums = torch.stack([x[z == k].sum() for k in range(2)])
    squares = torch.stack([((x[z == k] - locs[k]) ** 2).sum() for k in range(2)])
    assert_posterior(read_posterior(cm.normal_gamma_mixture, (x,), state, "locs"),
                     normal(1 / 9 + n * taus, 1 / 9 + taus * sums))
    assert_posterior(read_posterior(cm.normal_gamma_mixture, (x,), state, "taus"),
                     gamma(2.0 + n / 2, 0.5 + squares / 2))


def test_hierarchical_normal_sites_are_each_conjugate_and_exact():
    y, a, b = f64([0.3, 1.1, -0.4, 2.0, 1.6, 0.9]), f64([0.0, 0.5, 0.0, -1.0, 0.2, 0.0]), \
        f64([1.0, 2.0, -1.5, 1.0, 0.5, 3.0])
    args = (y, GROUP, a, b)
    chosen = plan(cm.hierarchical, *args)
    assert [(s.site, s.update) for s in chosen.sites] == [
        ("mu", "conjugate"), ("tau", "conjugate"), ("theta", "conjugate")]
    mu, tau, theta = f64(0.4), f64(1.7), f64([0.2, -0.5, 1.1])
    state = {"mu": mu, "tau": tau, "theta": theta}
    assert_posterior(read_posterior(cm.hierarchical, args, state, "mu"),
                     normal(1 / 25 + 3 * tau, tau * theta.sum()))
    assert_posterior(read_posterior(cm.hierarchical, args, state, "tau"),
                     gamma(2.0 + 3 / 2, 1.0 + ((theta - mu) ** 2).sum() / 2))
    precision = torch.stack([tau + (b[GROUP == j] ** 2).sum() / 0.64 for j in range(3)])
    weighted = torch.stack([tau * mu + (b * (y - a))[GROUP == j].sum() / 0.64 for j in range(3)])
    assert_posterior(read_posterior(cm.hierarchical, args, state, "theta"), normal(precision, weighted))


def test_mixture_means_stay_exact_with_a_plan():
    """The univariate gathered case through the plan as well (the posterior is tested in the
    update tests)."""
    assert plan(mixture, f64([-2.0, 0.1, 2.5]))["locs"].update == "conjugate"


@pytest.mark.parametrize("family, params, mean", [
    ("InverseGamma", {"concentration": f64(4.0), "rate": f64(3.0)}, 1.0),
    ("MultivariateNormal", {"loc": cm.PRIOR_LOC, "precision_matrix": inv(cm.PRIOR_COV)}, None),
])
def test_new_samplers_draw_from_their_posterior(family, params, mean):
    """Draws of the new families' samplers against their exact moments (Monte Carlo error)."""
    fam = next(f for f in FAMILIES.values() if f.name == family)
    n = 4000
    event = params["loc"].shape if "loc" in params else ()
    batch = {k: v.expand((n,) + tuple(v.shape)) for k, v in params.items()}
    draws = fam.sample(batch, make_generator(0))
    assert draws.shape == (n,) + tuple(event)
    if mean is not None:
        assert_mc_mean(draws.numpy(), mean, n_se=4)
        return
    tril = torch.linalg.cholesky(params["precision_matrix"])
    white = (draws - params["loc"]) @ tril  # L^T (x - loc): identity covariance
    products = (white[:, :, None] * white[:, None, :]).reshape(n, -1)
    assert_mc_mean(white.numpy(), [0.0, 0.0], n_se=4)
    assert_mc_mean(products.numpy(), torch.eye(2).reshape(-1).tolist(), n_se=4)


def test_a_subclass_is_read_only_when_it_keeps_the_density_and_support():
    """A Wishart with another sampler is a Wishart; a Normal with its own ``log_prob`` (a
    truncation, say) is not a Normal to the conjugate updates."""
    class TruncatedAtZero(dist.Normal):
        def log_prob(self, value):
            return torch.where(value > 0, super().log_prob(value), -torch.inf)

    wishart_family = family_of(BartlettWishart(f64(4.0), scale_tril=torch.eye(2, dtype=torch.float64)))
    assert wishart_family is FAMILIES[dist.Wishart]
    assert family_of(TruncatedAtZero(f64(0.0), f64(1.0))) is None
    assert family_of(dist.Normal(f64(0.0), f64(1.0))) is FAMILIES[dist.Normal]


def test_wishart_sampler_draws_from_its_posterior():
    """The Wishart family's draws against their exact mean ``df W`` (Monte Carlo error)."""
    fam = next(f for f in FAMILIES.values() if f.name == "Wishart")
    n, tril = 4000, torch.linalg.cholesky(cm.PRIOR_COV)
    draws = fam.sample({"df": f64(5.0).expand(n), "scale_tril": tril.expand(n, 2, 2)}, make_generator(0))
    assert draws.shape == (n, 2, 2)
    assert_mc_mean(draws.reshape(n, -1).numpy(), (5.0 * cm.PRIOR_COV).reshape(-1).tolist(), n_se=4)


def test_mvn_mixture_runs():
    x = f64([[0.5, -1.0], [1.5, 0.2], [-0.3, -0.8], [2.0, 1.0]])
    post = fit_gibbs(cm.mvn_mixture, x, num_samples=3, warmup=1, num_chains=1, seed=0,
                     progress=False, diagnostic_warnings=False)
    assert post.samples["locs"].shape == (1, 3, 3, 2)
    assert post.samples["locs"].dtype == torch.float64


# ---- clear errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("model, family", [(cm.poisson_latent, "Poisson"),
                                           (cm.geometric_latent, "Geometric")])
def test_unbounded_discrete_site_is_refused_by_name(model, family):
    chosen = plan(model, f64(2.0))
    assert chosen["n"].update == "unsupported"
    assert "unbounded support" in chosen["n"].reason
    with pytest.raises(ValueError, match=rf"'n': {family} site is discrete and has unbounded support.*"
                                         r"overrides=\{site: GibbsBlock"):
        fit_gibbs(model, f64(2.0), num_samples=2, warmup=0, num_chains=1, seed=0, progress=False)


def test_an_override_fills_an_unbounded_discrete_site():
    block = GibbsBlock("keep n", ("n",), lambda state, data, generator: {"n": state["n"]})
    chosen = plan(cm.poisson_latent, f64(2.0), overrides={"n": block})
    assert chosen["n"].update == "override"
    chosen.sweep()


@pytest.mark.parametrize("model, family", [(cm.bernoulli_to_event, r"Bernoulli \(to_event\)")])
def test_discrete_site_with_an_event_dimension_is_refused_by_name(model, family):
    chosen = plan(model, f64(0.5))
    assert chosen["z"].update == "unsupported"
    assert re.match(rf"{family} site is discrete and has an event dimension \(3,\)", chosen["z"].reason)


def test_a_one_hot_site_is_enumerated_over_its_rows():
    """A OneHotCategorical's event dimension holds one value: its support is the identity's
    rows, and its conditional is the joint at each row."""
    chosen = plan(cm.one_hot_latent, f64(0.5))
    assert chosen["z"].update == "discrete"
    assert chosen["z"].reason.startswith("enumerate 3 values, all elements at once (one element)")
    state = {"z": f64([1.0, 0.0, 0.0])}
    logits = element_logits(cm.one_hot_latent, (f64(0.5),), {}, state, "z", torch.eye(3, dtype=torch.float64))
    want = torch.log(f64([0.2, 0.3, 0.5])) + dist.Normal(f64([-1.0, 0.0, 1.0]), 1.0).log_prob(f64(0.5))
    torch.testing.assert_close(torch.log_softmax(logits, -1), torch.log_softmax(want, -1), **TOL)


def test_a_site_without_a_declared_support_is_unsupported_not_a_crash():
    chosen = plan(cm.no_support_latent, f64(0.5), verify=False)
    assert chosen["mu"].update == "unsupported" and "NoSupport" in chosen["mu"].reason


def test_no_latent_sites_message_names_the_observed_sites():
    with pytest.raises(ValueError, match=r"no latent sample sites: every pyro.sample site \('y'\) is "
                                         r"observed"):
        plan(no_latents, f64(0.3))
    with pytest.raises(ValueError, match=r"no latent sample sites \(it calls no pyro.sample\)"):
        plan(cm.no_sample_sites)


def test_a_latent_site_that_changes_shape_is_refused_with_both_shapes():
    with pytest.raises(ValueError, match=r"latent site 'locs' has shape \(\d+,\) in one trace of the model "
                                         r"and \(\d+,\) in another"):
        plan(cm.random_size, f64(1.0))


def test_a_latent_site_only_some_runs_reach_is_refused_by_name():
    with pytest.raises(ValueError, match="latent site 'extra' is in one trace of the model and not in "
                                         "another"):
        plan(cm.EveryOtherRun(), f64(1.0))
