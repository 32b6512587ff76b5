"""Simulation-based calibration and Geweke tests of automatic Gibbs.

The routine first (a correct sampler passes, a wrong one is rejected, bad arguments are
errors), then one SBC run per program of the suite in ``sbc_models.py``: a program with a site
that automatic Gibbs cannot update yet is skipped, naming the site, so it runs by itself once
the plan supports it. Default runs are small (``R = 20`` replicates of ``L = 3`` draws in 4
bins, a few seconds each); the ``slow`` runs use ``R = 100``, ``L = 9``, 5 bins. Every run
rejects at the family-wise level ``1e-3`` (Bonferroni over the quantities).
"""

import itertools
import math

import numpy as np
import pyro
import pyro.distributions as dist
import pytest
import torch
from scipy.stats import chi2

from pyromodels.autogibbs import fit_gibbs, plan, posterior_params
from pyromodels.core import GibbsBlock
from pyromodels.core.bound import CallableModel, ModelArgs
from pyromodels.core.gibbs import GibbsSweep
from pyromodels.core.seeding import make_generator
from pyromodels.testing import assert_mc_mean, geweke_test, rank_statistic, sbc_test

from .sbc_models import CASES, beta_binomial_groups, f64, gaussian_mixture

# -- the routine -----------------------------------------------------------------------------

NOISE = 3.0  # one observation, noisier than the prior: the posterior leans on the prior


def normal_mean(y):
    mu = pyro.sample("mu", dist.Normal(f64(0.0), f64(1.0)))
    pyro.sample("y", dist.Normal(mu, f64(NOISE)), obs=y)


def exact_sampler(prior_scale, num_draws):
    """Independent draws of the conjugate posterior of ``mu`` under a prior of ``prior_scale``
    (``1.0`` is the program's prior, anything else a wrong posterior)."""
    def sampler(args, seed):
        (y,) = args
        prec = prior_scale ** -2 + NOISE ** -2
        mean = y / NOISE ** 2 / prec
        noise = torch.randn(num_draws, dtype=torch.float64, generator=make_generator(seed))
        return {"mu": mean + noise / math.sqrt(prec)}
    return sampler


def _normal_sbc(sampler, **settings):
    return sbc_test(normal_mean, f64(0.0), sampler=sampler, observed=lambda v: (v["y"],),
                    quantities=lambda v: v["mu"][None], names=["mu"], **settings)


def test_exact_posterior_passes_sbc():
    result = _normal_sbc(exact_sampler(1.0, 9), num_replicates=400, num_draws=9, num_bins=10, seed=0)
    assert result.passed, result
    assert result.ranks.shape == (400, 1) and result.counts.sum() == 400
    assert result.ranks.min() >= 0 and result.ranks.max() <= 9


def test_sbc_rejects_a_posterior_with_the_prior_scale_doubled():
    result = _normal_sbc(exact_sampler(2.0, 9), num_replicates=400, num_draws=9, num_bins=10, seed=0)
    assert not result.passed, result
    # too wide a posterior puts the truth in the middle ranks
    middle, ends = result.counts[0, 3:7].sum(), result.counts[0, [0, 1, 8, 9]].sum()
    assert middle > ends


def test_sbc_is_reproducible_from_its_seed():
    runs = [_normal_sbc(exact_sampler(1.0, 5), num_replicates=10, num_draws=5, num_bins=2, seed=3)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].ranks, runs[1].ranks)


def test_tied_ranks_are_spread_uniformly():
    """A quantity equal to every draw (a discrete one at its only value) gets a uniform rank."""
    rng = np.random.default_rng(0)
    ranks = np.concatenate([rank_statistic([1.0, 1.0], np.ones((4, 2)), rng) for _ in range(1000)])
    counts = np.bincount(ranks, minlength=5)
    stat = ((counts - 400) ** 2 / 400).sum()
    assert stat < chi2.isf(1e-3, 4), counts
    np.testing.assert_array_equal(rank_statistic([0.5], np.array([[0.1], [0.9], [0.2]]), rng), [2])


@pytest.mark.parametrize(
    "change, error, match",
    [
        (dict(num_draws=10, num_bins=5), ValueError, "num_draws \\+ 1 must be a multiple of num_bins"),
        (dict(num_replicates=20, num_bins=5), ValueError, "num_replicates must be at least 5 \\* num_bins"),
        (dict(num_bins=1), ValueError, "num_bins"),
        (dict(alpha=0.0), ValueError, "alpha must be in \\(0, 1\\)"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(progress="yes"), TypeError, "progress"),
        (dict(sampler="fit"), TypeError, "sampler must be callable"),
        (dict(quantities=lambda v: v["mu"]), ValueError, "quantities\\(truth\\) must return a non-empty 1-D"),
        (dict(observed=lambda v: v["y"]), TypeError, "observed must return .* tuple"),
        (dict(names=["a", "b"]), ValueError, "one name per quantity"),
        (dict(sampler=lambda a, s: {"mu": torch.zeros(3)}), ValueError, "expected num_draws=9"),
        (dict(sampler=lambda a, s: [0.0]), TypeError, "Posterior or a dict"),
    ],
)
def test_bad_sbc_arguments_are_errors(change, error, match):
    settings = dict(sampler=exact_sampler(1.0, 9), observed=lambda v: (v["y"],),
                    quantities=lambda v: v["mu"][None], num_replicates=50, num_draws=9, num_bins=5)
    settings.update(change)
    with pytest.raises(error, match=match):
        sbc_test(normal_mean, f64(0.0), **settings)


def test_sbc_of_a_program_without_latent_sites_is_an_error():
    def constant(y):
        pyro.sample("y", dist.Normal(f64(0.0), f64(1.0)), obs=y)
    with pytest.raises(ValueError, match="no latent sample sites"):
        sbc_test(constant, f64(0.0), sampler=exact_sampler(1.0, 9), observed=lambda v: (v["y"],),
                 quantities=lambda v: v["y"][None], num_replicates=50, num_draws=9, num_bins=5)


# -- the suite -------------------------------------------------------------------------------

DEFAULT = dict(num_replicates=20, num_draws=3, num_bins=4)
LARGE = dict(num_replicates=100, num_draws=9, num_bins=5)


def _autogibbs_sbc(case, settings, seed=0):
    chosen = plan(case.model, *case.args)
    if chosen.unsupported:
        why = "; ".join(s.reason if repr(s.site) in s.reason else f"{s.site!r}: {s.reason}"
                        for s in chosen.sites if s.update == "unsupported")
        raise AssertionError(f"every suite model must be planned; no update for {why}")

    def sampler(args, fit_seed):
        return fit_gibbs(case.model, *args, num_samples=settings["num_draws"], warmup=case.warmup,
                         thin=case.thin, num_chains=1, seed=fit_seed, progress=False,
                         diagnostic_warnings=False)

    return sbc_test(case.model, *case.args, sampler=sampler, observed=case.observed,
                    quantities=case.quantities, names=case.names, seed=seed, **settings)


#: suite programs whose every sweep is one joint NUTS transition (tens of seconds even at the
#: default size): their default SBC runs with the slow tests, beside their larger SBC
_JOINT_NUTS = ("eight_schools", "beta_binomial_hierarchy")


@pytest.mark.parametrize("case", [
    pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.name in _JOINT_NUTS else [])
    for c in CASES])
def test_autogibbs_passes_sbc(case):
    result = _autogibbs_sbc(case, DEFAULT)
    assert result.passed, result


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_autogibbs_passes_larger_sbc(case):
    result = _autogibbs_sbc(case, LARGE, seed=1)
    assert result.passed, result


# -- exact enumeration on a tiny mixture -----------------------------------------------------

WEIGHTS, LOCS, SCALE = f64([0.35, 0.65]), f64([-1.0, 1.5]), 1.2


def fixed_mixture(x):
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Categorical(WEIGHTS))
        pyro.sample("x", dist.Normal(LOCS[z], f64(SCALE)), obs=x)


def fixed_one_hot_mixture(x):
    """:func:`fixed_mixture` with one-hot assignments (an event dimension of 2)."""
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.OneHotCategorical(WEIGHTS))
        pyro.sample("x", dist.Normal((z * LOCS).sum(-1), f64(SCALE)), obs=x)


@pytest.mark.parametrize("model", [fixed_mixture, fixed_one_hot_mixture])
def test_assignment_frequencies_match_exact_enumeration(model):
    """Every assignment of 3 points to 2 fixed components: the chain's frequencies against the
    normalised joint (chi-square, 7 degrees of freedom). One block draws all assignments from
    their exact conditional, so the draws are independent and the chi-square test applies."""
    x = f64([-0.8, 0.3, 2.0])
    num = 1600
    reason = plan(model, x)["z"].reason
    assert reason.startswith("enumerate 2 values, all elements at once over plate shape (3,)")
    post = fit_gibbs(model, x, num_samples=num, warmup=0, num_chains=1, seed=0,
                     progress=False, diagnostic_warnings=False)
    paths = list(itertools.product(range(2), repeat=3))
    joint = torch.stack([dist.Categorical(WEIGHTS).log_prob(torch.tensor(z)).sum()
                         + dist.Normal(LOCS[list(z)], SCALE).log_prob(x).sum() for z in paths])
    exact = torch.softmax(joint, 0).numpy()
    z = post.samples["z"][0]
    if model is fixed_one_hot_mixture:
        assert z.shape == (num, 3, 2) and bool(((z == 0) | (z == 1)).all()) and bool((z.sum(-1) == 1).all())
        z = z.argmax(-1)
    counts = np.bincount(z.numpy() @ np.array([4, 2, 1]), minlength=8)
    stat = ((counts - num * exact) ** 2 / (num * exact)).sum()
    assert stat < chi2.isf(1e-3, 7), (counts, num * exact)


# -- Geweke ----------------------------------------------------------------------------------

def _geweke(model, args, stats, observed, **settings):
    bound = ModelArgs(args, {})
    sweep = plan(model, *args).sweep()
    return geweke_test(CallableModel(model, bound), bound, stats, observed=observed, sweep=sweep,
                       **settings)


def test_geweke_beta_binomial_groups():
    n = f64([4.0, 6.0, 2.0])
    result = _geweke(beta_binomial_groups, (f64([0.0, 0.0, 0.0]), n),
                     lambda v: torch.cat([v["p"], v["p"] ** 2, v["k"]]),
                     lambda data, v: ModelArgs((v["k"], n), {}),
                     num_marginal=1000, num_successive=2000, num_burn=20, seed=0)
    assert result.passed, result


def test_geweke_gaussian_mixture():
    def stats(v):
        return torch.stack([v["w"][0], v["locs"].sum(), (v["locs"] ** 2).sum(),
                            v["z"].to(torch.float64).mean(), v["x"].mean()])

    result = _geweke(gaussian_mixture, (torch.zeros(3, dtype=torch.float64),), stats,
                     lambda data, v: ModelArgs((v["x"],), {}),
                     num_marginal=1000, num_successive=1200, num_burn=20, seed=0)
    assert result.passed, result


def test_geweke_catches_a_sweep_that_skips_the_means():
    """The test can fail: a sweep that never updates the component means leaves them at their
    start, which the marginal-conditional simulator does not."""
    args = (torch.zeros(3, dtype=torch.float64),)
    sweep = plan(gaussian_mixture, *args).sweep()
    broken = GibbsSweep([b for b in sweep.blocks if b.sites != ("locs",)]
                        + [GibbsBlock("keep locs", ("locs",), lambda s, d, g: {"locs": s["locs"]})])
    bound = ModelArgs(args, {})
    result = geweke_test(CallableModel(gaussian_mixture, bound), bound,
                         lambda v: torch.stack([v["locs"].sum(), (v["locs"] ** 2).sum()]),
                         observed=lambda data, v: ModelArgs((v["x"],), {}), sweep=broken,
                         num_marginal=400, num_successive=400, num_burn=0, seed=0)
    assert not result.passed, result


# -- a plate read off by shape alone ---------------------------------------------------------

def test_component_means_with_as_many_points_as_components():
    """With as many points as components, the data plate has the components plate's size: each
    mean's posterior still reads only the points assigned to it."""
    x, z = f64([-2.0, 2.5]), torch.tensor([0, 0])
    state = {"w": f64([0.5, 0.5]), "locs": f64([0.0, 1.0]), "z": z}
    got = posterior_params(gaussian_mixture, (x,), {}, state, "locs",
                           dist.Normal(f64(0.0), f64(2.0)).expand([2]))
    prec = 0.25 + torch.stack([(z == k).sum() for k in range(2)]).double()
    mean = torch.stack([x[z == k].sum() for k in range(2)]) / prec
    torch.testing.assert_close(got["loc"], mean)
    torch.testing.assert_close(got["scale"], prec.rsqrt())


def test_sbc_of_the_suite_rejects_a_block_that_counts_the_data_four_times():
    """The suite's pipeline can fail: automatic Gibbs with the rate block replaced by one that
    counts every observation four times (too narrow a posterior) is rejected."""
    from pyromodels.conjugate import sample_beta

    case = next(c for c in CASES if c.name == "beta_binomial_groups")

    def four_times(state, data, generator):
        k, n = data.args
        return {"p": sample_beta(2.0 + 4 * k, 2.0 + 4 * (n - k), generator)}

    def sampler(args, seed):
        return fit_gibbs(case.model, *args, overrides={"p": GibbsBlock("p", ("p",), four_times)},
                         num_samples=9, warmup=0, num_chains=1, seed=seed, progress=False,
                         diagnostic_warnings=False)

    result = sbc_test(case.model, *case.args, sampler=sampler, observed=case.observed,
                      quantities=case.quantities, names=case.names, seed=0, **LARGE)
    assert not result.passed, result


def test_change_point_switch_matches_exact_enumeration():
    """The switch time's posterior, with both rates integrated out in closed form (a Gamma
    prior and Poisson counts), against the chain's frequencies. Successive sweeps are
    correlated: the frequencies are compared as means of batches of 50 draws."""
    from .sbc_models import change_point

    y = f64([0.0, 1.0, 0.0, 4.0, 5.0, 3.0])
    shape, rate = 3.0, 1.0

    def log_marginal(seg):
        total, n = float(seg.sum()), len(seg)
        return (shape * math.log(rate) - math.lgamma(shape) + math.lgamma(shape + total)
                - (shape + total) * math.log(rate + n) - float(torch.lgamma(seg + 1).sum()))

    logp = torch.tensor([log_marginal(y[:s]) + log_marginal(y[s:]) for s in range(len(y))])
    exact = torch.softmax(logp, 0).numpy()
    post = fit_gibbs(change_point, y, num_samples=1200, warmup=20, num_chains=1, seed=0,
                     progress=False, diagnostic_warnings=False)
    switch = post.samples["switch"][0].numpy()
    hits = (switch[:, None] == np.arange(len(y))).astype(np.float64)
    assert_mc_mean(hits.reshape(24, 50, len(y)).mean(1), exact, n_se=4)
