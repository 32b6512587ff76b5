"""The plan: which update each latent site gets, and the errors around it."""

import re

import pyro.distributions as dist
import pytest
import torch

from pyromodels.autogibbs import AutoGibbs, fit_gibbs, plan
from pyromodels.autogibbs.exponential import ConjugateUpdate
from pyromodels.core import GibbsBlock
from pyromodels.core.bound import ModelArgs
from pyromodels.core.seeding import make_generator

from .models import (
    beta_binomial,
    coupled,
    coupled_means,
    dirichlet_categorical,
    f64,
    mixture,
    no_latents,
    on_sphere,
    shifted,
    squared_rate,
    uneven_binomial,
)


def test_beta_binomial_plan_is_conjugate():
    p = plan(beta_binomial, f64([3.0, 5.0]), f64([5.0, 6.0]))
    assert [(s.site, s.update) for s in p.sites] == [("p", "conjugate")]
    assert "Beta" in p["p"].reason
    assert str(p).startswith("p  conjugate    Beta prior")


def test_mixture_plan_vectorises_the_assignments():
    x = f64([-2.0, -1.5, 2.0, 2.5, 0.3])
    p = plan(mixture, x)
    assert [(s.site, s.update) for s in p.sites] == [
        ("w", "conjugate"), ("locs", "conjugate"), ("z", "discrete")]
    assert "all elements at once over plate shape (5,)" in p["z"].reason
    assert "Dirichlet" in p["w"].reason and "Normal" in p["locs"].reason
    assert len(str(p).splitlines()) == 3


def test_dirichlet_categorical_plan():
    p = plan(dirichlet_categorical, torch.tensor([0, 2, 2, 1]))
    assert [(s.site, s.update) for s in p.sites] == [("theta", "conjugate")]


def test_coupled_elements_are_updated_one_by_one():
    p = plan(coupled, f64([0.2, 1.1, -0.3]))
    assert p["z"].update == "discrete"
    assert "element by element" in p["z"].reason


def test_verify_mode_catches_a_plate_shaped_but_coupled_site():
    with pytest.warns(RuntimeWarning, match="site 'z'.*brute-force"):
        p = plan(shifted, f64([0.1, 2.9, 3.2, -0.4]))
    assert "element by element (vectorised check failed)" in p["z"].reason


def test_model_without_latent_sites_is_an_error():
    with pytest.raises(ValueError, match="no latent sample sites"):
        plan(no_latents, f64(0.3))


def test_unsupported_site_names_itself_and_the_way_out():
    y = f64(0.4)
    p = plan(on_sphere, y)
    assert p["u"].update == "unsupported" and "ProjectedNormal" in p["u"].reason
    assert "no bijection from unconstrained space onto its support" in p["u"].reason
    with pytest.raises(ValueError, match=r"'u': ProjectedNormal.*overrides=\{site: GibbsBlock"):
        fit_gibbs(on_sphere, y, num_samples=2, warmup=0, num_chains=1, seed=0, progress=False)
    with pytest.raises(ValueError, match="'u'"):
        AutoGibbs(on_sphere, y, seed=0)


def test_override_fills_an_unsupported_site():
    def keep_u(state, data, generator):
        return {"u": state["u"]}

    block = GibbsBlock("keep u", ("u",), keep_u)
    post = fit_gibbs(on_sphere, f64(0.4), overrides={"u": block}, num_samples=3,
                     warmup=1, num_chains=1, seed=0, progress=False, diagnostic_warnings=False)
    assert post.samples["u"].shape == (1, 3, 2)
    assert re.search(r"^u\s+override\s+the user's own block$", post.attrs["plan"], re.M)


def test_bad_overrides_are_errors():
    block = GibbsBlock("b", ("nope",), lambda s, d, g: {})
    with pytest.raises(ValueError, match="overrides names 'nope'"):
        plan(beta_binomial, f64([1.0]), f64([2.0]), overrides={"nope": block})
    with pytest.raises(TypeError, match=r"overrides\['p'\] must be a GibbsBlock"):
        plan(beta_binomial, f64([1.0]), f64([2.0]), overrides={"p": "block"})
    with pytest.raises(TypeError, match="model must be a Pyro program"):
        plan(3)


def test_non_linear_conditional_goes_to_nuts_with_the_reason():
    p = plan(squared_rate, f64([1.0, 4.0]))
    assert p["lam"].update == "nuts"
    assert "not linear in the sufficient statistics of a Gamma prior" in p["lam"].reason


def test_verify_mode_refuses_a_conjugate_update_of_coupled_elements():
    with pytest.warns(RuntimeWarning, match="site 'm'.*condition-and-score"):
        p = plan(coupled_means, f64(1.3))
    assert p["m"].update == "nuts" and "failed the check" in p["m"].reason


def test_a_conjugate_update_that_fails_at_its_first_sweep_stops_the_run():
    update = ConjugateUpdate(coupled_means, "m", dist.Normal(f64(0.0), f64(1.0)).expand([2]))
    with pytest.raises(RuntimeError, match="site 'm'.*first sweep"):
        update({"m": f64([0.3, -0.2])}, ModelArgs((f64(1.3),), {}), make_generator(0))


def test_discrete_site_with_uneven_support_is_unsupported():
    p = plan(uneven_binomial, f64([1.0, 4.0]))
    assert p["k"].update == "unsupported" and "support differs between elements" in p["k"].reason
