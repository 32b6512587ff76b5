"""The joint Normal-Wishart block: found for a mean whose prior precision scales a Wishart
site, the same draws as the Gaussian mixture family's hand-written components block (the whole
sweep's chain: test_autogibbs_families.py), and left out (with the reason) where the joint is
not a Normal-Wishart."""

import pickle

import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.autogibbs import fit_gibbs, plan
from pyromodels.core.bound import ModelArgs
from pyromodels.core.seeding import make_generator
from pyromodels.mixture import GaussianMixtureModel
from pyromodels.mixture import gibbs as mixture_gibbs

from .models import f64
from .sbc_models import WISHART_SCALE, normal_wishart

CLOSE = dict(rtol=1e-10, atol=1e-10)
X2 = f64([[0.3, -1.2], [2.0, 0.5], [-0.7, 0.1], [1.1, 1.4], [0.2, -0.3]])


@pytest.fixture
def mixture_case():
    gen = torch.Generator().manual_seed(0)
    centres = f64([[-4.0, 0.0], [0.0, 3.0], [4.0, -1.0]])
    x = centres[torch.randint(0, 3, (80,), generator=gen)] + 0.7 * torch.randn(80, 2, generator=gen,
                                                                               dtype=torch.float64)
    model = GaussianMixtureModel(3, weight_concentration=1.5)
    data = model.prepare(x)
    return model, data, plan(model.model, data), model.init_state(data, make_generator(1))


def test_the_mixture_family_program_gets_one_joint_block_for_its_components(mixture_case):
    _, _, p, _ = mixture_case
    assert p["precisions"].block is p["locs"].block
    assert p["precisions"].block.sites == ("precisions", "locs")
    assert p["locs"].update == "conjugate" and "Normal-Wishart of 'precisions' and 'locs'" in p["locs"].reason
    assert [line.split()[0] for line in str(p).splitlines()] == ["weights", "precisions..locs", "z"]


def test_the_joint_block_draws_what_the_hand_written_components_block_draws(mixture_case):
    _, data, p, state = mixture_case
    for seed in range(3):
        auto = p["locs"].block(state, ModelArgs((data,), {}), make_generator(seed))
        hand = mixture_gibbs.components_block(state, data, make_generator(seed))
        for site in ("locs", "precisions"):
            torch.testing.assert_close(auto[site], hand[site], **CLOSE)


def test_the_suites_normal_wishart_pair_is_drawn_jointly_and_the_block_pickles():
    p = plan(normal_wishart, X2)
    block = p["mu"].block
    assert block is p["lam"].block and block.sites == ("lam", "mu")
    state = {"lam": f64([[2.0, 0.1], [0.1, 1.0]]), "mu": f64([0.5, -0.5])}
    copy = pickle.loads(pickle.dumps(block))
    a = block(state, ModelArgs((X2,), {}), make_generator(3))
    b = copy(state, ModelArgs((X2,), {}), make_generator(3))
    assert all(torch.equal(a[s], b[s]) for s in ("lam", "mu"))
    post = fit_gibbs(normal_wishart, X2, num_samples=4, warmup=2, num_chains=1, seed=0,
                     progress=False, diagnostic_warnings=False)
    assert post.samples["lam"].shape == (1, 4, 2, 2)


def known_noise_too(x):
    """The Normal-Wishart pair plus one more observation of the mean with a known precision:
    each site is conjugate given the other, but the mean's conditional precision
    ``(0.5 + n) lam + I`` is no multiple of ``lam``, so their joint is no Normal-Wishart."""
    lam = pyro.sample("lam", dist.Wishart(f64(4.0), covariance_matrix=WISHART_SCALE))
    mu = pyro.sample("mu", dist.MultivariateNormal(torch.zeros(2, dtype=torch.float64),
                                                   precision_matrix=0.5 * lam))
    with pyro.plate("data", x.shape[0]):
        pyro.sample("x", dist.MultivariateNormal(mu, precision_matrix=lam), obs=x)
    pyro.sample("y", dist.MultivariateNormal(mu, precision_matrix=torch.eye(2, dtype=torch.float64)),
                obs=f64([1.0, -1.0]))


def separate_prior(x):
    """The mean's prior does not read ``lam``: no pair is looked for."""
    lam = pyro.sample("lam", dist.Wishart(f64(4.0), covariance_matrix=WISHART_SCALE))
    mu = pyro.sample("mu", dist.MultivariateNormal(torch.zeros(2, dtype=torch.float64),
                                                   precision_matrix=torch.eye(2, dtype=torch.float64)))
    with pyro.plate("data", x.shape[0]):
        pyro.sample("x", dist.MultivariateNormal(mu, precision_matrix=lam), obs=x)


def test_a_mean_whose_prior_precision_is_not_a_multiple_keeps_its_own_update_with_the_reason():
    p = plan(known_noise_too, X2)
    assert p["lam"].block is not p["mu"].block
    assert [(s.site, s.update) for s in p.sites] == [("lam", "conjugate"), ("mu", "conjugate")]
    assert p["mu"].reason.endswith("not drawn jointly with 'lam': their joint Normal-Wishart failed "
                                   "condition-and-score")


def test_a_mean_whose_prior_does_not_read_the_precision_is_not_paired():
    p = plan(separate_prior, X2)
    assert p["lam"].block is not p["mu"].block
    assert "Normal-Wishart" not in str(p) and "jointly" not in str(p)
