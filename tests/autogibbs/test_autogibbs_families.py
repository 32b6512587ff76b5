"""The automatic plan of the families' own Pyro programs chooses the updates of their
hand-written Gibbs blocks, and where an update and its random-number use coincide, one step of
each from the same state and generator gives the same draw.

Both draw categoricals by the Gumbel-max trick on ``(N, K)`` logits (the automatic logits are
unnormalised, the hand-written ones log-softmaxed: the argmax is the same) and Dirichlets with
:func:`~pyromodels.conjugate.sample_dirichlet` of the same shape; the automatic concentrations
come from a linear solve, so Dirichlet draws agree to rounding (1e-10), categorical draws
exactly. One exception: the Gamma sampler switches to its boost below a concentration of 1,
and a solved concentration of exactly 1 (a prior pseudo-count of 1 with no counts) can land
1e-14 below it; the draw is then another, equally valid one. The draw-by-draw comparisons
therefore use priors with pseudo-counts of 2, and the default prior is compared by the
conditional's density instead.
"""

import pytest
import torch
from torch.distributions import Dirichlet

from pyromodels.autogibbs import plan, posterior_params
from pyromodels.autogibbs.trace import trace_model
from pyromodels.conjugate import sample_dirichlet
from pyromodels.conjugate.suffstats import one_hot
from pyromodels.core import GibbsSweep
from pyromodels.core.bound import ModelArgs
from pyromodels.core.seeding import make_generator
from pyromodels.crowd.ds import gibbs as ds_gibbs
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import simulate_annotations
from pyromodels.mixture import GaussianMixtureModel
from pyromodels.mixture import gibbs as mixture_gibbs
from pyromodels.mixture.em import component_posteriors

CLOSE = dict(rtol=1e-10, atol=1e-10)


@pytest.fixture
def mixture_case():
    gen = torch.Generator().manual_seed(0)
    centres = torch.tensor([-4.0, 0.0, 4.0], dtype=torch.float64)
    x = (centres[torch.randint(0, 3, (60,), generator=gen)]
         + 0.7 * torch.randn(60, generator=gen, dtype=torch.float64))[:, None]
    model = GaussianMixtureModel(3, weight_concentration=1.5)
    data = model.prepare(x)
    return model, data, plan(model.model, data), model.init_state(data, make_generator(1))


@pytest.fixture
def ds_case():
    table, _ = simulate_annotations(40, 4, 3, seed=0)
    model = DawidSkene(prior_concentration=2.0, confusion_concentration=2.0).for_engine("gibbs")
    data = model.prepare(table)
    return model, data, plan(model.model, data), model.init_state(data, make_generator(1))


def test_mixture_plan_matches_the_hand_written_blocks(mixture_case):
    _, _, p, _ = mixture_case
    assert p["z"].update == "discrete" and "all elements at once over plate shape (60,)" in p["z"].reason
    assert p["weights"].update == "conjugate" and "Dirichlet" in p["weights"].reason
    assert p["locs"].update == "conjugate" and "MultivariateNormal" in p["locs"].reason
    for site in ("z", "weights", "locs"):
        assert "all values in one batched trace" in p[site].reason


def test_mixture_means_have_the_normal_wishart_conditional_given_the_precisions(mixture_case):
    """The plan's joint Normal-Wishart block reads the means' conditional given the
    precisions, which must be the hand-written joint conditional's Normal part:
    N(m_k, (kappa_k precisions_k)^-1)."""
    model, data, _, state = mixture_case
    fn = trace_model(model.model, (data,), {}).nodes["locs"]["fn"]
    got = posterior_params(model.model, (data,), {}, state, "locs", fn)
    post = component_posteriors(data, one_hot(state["z"], 3, data.x.dtype))
    torch.testing.assert_close(got["loc"], post.loc, **CLOSE)
    torch.testing.assert_close(got["precision_matrix"], post.kappa[:, None, None] * state["precisions"],
                               **CLOSE)


def test_mixture_precisions_have_the_normal_wishart_conditional_given_the_means(mixture_case):
    """The plan's joint block also reads the precisions' conditional given the means, which
    must be that prior's conditional: Wishart with ``nu + N_k + 1`` degrees of freedom and
    inverse scale ``W^-1 + S_k + kappa (m_k - m0)(m_k - m0)^T``."""
    model, data, p, state = mixture_case
    assert p["precisions"].update == "conjugate" and "Wishart prior" in p["precisions"].reason
    fn = trace_model(model.model, (data,), {}).nodes["precisions"]["fn"]
    got = posterior_params(model.model, (data,), {}, state, "precisions", fn)
    prior, z, locs = data.prior, state["z"], state["locs"]
    w_inv = torch.cholesky_inverse(prior.wishart_scale_tril)
    for k in range(3):
        r, dm = data.x[z == k] - locs[k], locs[k] - prior.mean_prior
        inverse_scale = w_inv + r.T @ r + prior.mean_precision * torch.outer(dm, dm)
        torch.testing.assert_close(got["df"][k], prior.degrees_of_freedom + (z == k).sum() + 1.0, **CLOSE)
        scale = got["scale_tril"][k] @ got["scale_tril"][k].T
        torch.testing.assert_close(scale, torch.linalg.inv(inverse_scale), **CLOSE)


def test_ds_plan_matches_the_hand_written_blocks(ds_case):
    _, _, p, _ = ds_case
    assert [(s.site, s.update) for s in p.sites] == [
        ("prior", "conjugate"), ("confusion", "conjugate"), ("z", "discrete")]
    assert "Dirichlet" in p["prior"].reason and "Dirichlet" in p["confusion"].reason
    assert "all elements at once over plate shape (40,)" in p["z"].reason
    for site in ("prior", "confusion", "z"):
        assert "all values in one batched trace" in p[site].reason


def test_ds_with_a_fixed_prior_has_no_prior_update():
    table, _ = simulate_annotations(20, 3, 2, seed=1)
    model = DawidSkene(update_prior=False).for_engine("gibbs")
    p = plan(model.model, model.prepare(table))
    assert [(s.site, s.update) for s in p.sites] == [("confusion", "conjugate"), ("z", "discrete")]


def _one_step(block, state, data, seed):
    return block(state, data, make_generator(seed))


def _assert_same_draws(case, site, hand):
    """The plan's block and the hand-written one, from the same state and generator, draw the
    same assignments exactly and the same continuous values to ``CLOSE``."""
    _, data, p, state = case
    for seed in range(3):
        auto = _one_step(p[site].block, state, ModelArgs((data,), {}), seed)[site]
        want = hand(state, data, make_generator(seed))[site]
        if site == "z":
            assert torch.equal(auto, want)
        else:
            torch.testing.assert_close(auto, want, **CLOSE)


@pytest.mark.parametrize("site, hand", [("z", mixture_gibbs.assignments_block),
                                        ("weights", mixture_gibbs.weights_block)])
def test_mixture_updates_draw_what_the_hand_written_blocks_draw(mixture_case, site, hand):
    _assert_same_draws(mixture_case, site, hand)


@pytest.mark.parametrize("site, hand", [("z", ds_gibbs.classes_block), ("prior", ds_gibbs.prior_block),
                                        ("confusion", ds_gibbs.confusion_block)])
def test_ds_updates_draw_what_the_hand_written_blocks_draw(ds_case, site, hand):
    _assert_same_draws(ds_case, site, hand)


def _assert_same_chain(case, order, continuous, sweeps):
    """The plan's blocks, run in the hand-written sweep's order (``order``: a site of each
    block), give its chain from the same seed: the same assignments, the ``continuous``
    sites to ``CLOSE``."""
    model, data, p, state = case
    auto_sweep = GibbsSweep([p[s].block for s in order])
    hand_sweep = model.gibbs_sweep(data)
    auto, hand = dict(state), dict(state)
    g_auto, g_hand = make_generator(11), make_generator(11)
    for _ in range(sweeps):
        auto = auto_sweep(auto, ModelArgs((data,), {}), g_auto)
        hand = hand_sweep(hand, data, g_hand)
        assert torch.equal(auto["z"], hand["z"])
        for site in continuous:
            torch.testing.assert_close(auto[site], hand[site], **CLOSE)


def test_ds_sweep_in_the_hand_written_order_gives_the_same_chain(ds_case):
    """The plan runs its blocks in program order; in the hand-written order (classes, prior,
    confusion) the two sweeps give the same chain from the same seed."""
    _assert_same_chain(ds_case, ("z", "prior", "confusion"), ("prior", "confusion"), 3)


def test_mixture_sweep_in_the_hand_written_order_gives_the_same_chain(mixture_case):
    """In the hand-written order (assignments, weights, the components' Normal-Wishart block)
    the plan's sweep gives the hand-written chain."""
    _assert_same_chain(mixture_case, ("z", "weights", "locs"), ("weights", "locs", "precisions"), 4)


def test_ds_default_prior_conditionals_match_the_hand_written_ones():
    """With the default prior (pseudo-counts of 1) the confusion and class-prior conditionals
    have the hand-written blocks' densities at the same points."""
    table, _ = simulate_annotations(40, 4, 3, seed=0)
    model = DawidSkene().for_engine("gibbs")
    data = model.prepare(table)
    state = model.init_state(data, make_generator(1))
    nodes = trace_model(model.model, (data,), {}).nodes
    for site, density in (("confusion", ds_gibbs.confusion_log_density),
                          ("prior", ds_gibbs.prior_log_density)):
        fn = nodes[site]["fn"]
        prior = fn.base_dist if site == "confusion" else fn    # confusion rows: to_event(2)
        params = posterior_params(model.model, (data,), {}, state, site, prior)
        for seed in range(2):
            x = sample_dirichlet(params["concentration"], make_generator(seed))
            auto = Dirichlet(params["concentration"]).log_prob(x).sum()
            torch.testing.assert_close(auto, density({site: x}, state, data), **CLOSE)
