"""A conjugate site whose elements do not separate by plate (parameters gathered by a discrete
index) has all its elements' coefficients read at once from the log joint's gradients; they
equal the element-by-element fit, coupled elements fall back to it (the joint check catches
them), and an update runs the program fewer times."""

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.poutine.messenger import Messenger

from pyromodels.autogibbs import exponential, plan, posterior_params
from pyromodels.autogibbs.compiled import plain_runs
from pyromodels.autogibbs.trace import batching_reason, trace_model
from pyromodels.core.bound import ModelArgs
from pyromodels.core.seeding import make_generator
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import simulate_annotations

from . import conjugate_models as cm
from .models import coupled_means, f64, mixture

CLOSE = dict(rtol=1e-10, atol=1e-10)
GROUP = torch.tensor([0, 1, 2, 0, 1, 2])


class _Evaluations(Messenger):
    """Counts, in each run, how many values of a latent site were stacked (the largest ratio
    of a sample site's value to its distribution's shape)."""

    def __init__(self, record):
        super().__init__()
        self.record = record

    def _postprocess_message(self, msg):
        fn = msg["fn"]
        if msg["type"] == "sample" and hasattr(fn, "batch_shape"):
            size = max(1, (fn.batch_shape + fn.event_shape).numel())
            self.record[-1] = max(self.record[-1], msg["value"].numel() // size)


class Counted:
    """A program that counts its runs and the values each run scores."""

    def __init__(self, model):
        self.model, self.evaluations = model, []

    def __call__(self, *args, **kwargs):
        self.evaluations.append(1)
        with _Evaluations(self.evaluations):
            return self.model(*args, **kwargs)


def _mixture_data(n=30):
    gen = torch.Generator().manual_seed(0)
    centres = f64([-3.0, 0.5, 4.0])
    return centres[torch.randint(0, 3, (n,), generator=gen)] + 0.7 * torch.randn(n, generator=gen,
                                                                                  dtype=torch.float64)


def _mixture3(x):
    return mixture(x, 3)


def _mvn_data(n=30):
    gen = torch.Generator().manual_seed(1)
    return torch.randn(n, 2, generator=gen, dtype=torch.float64) * 2.0


def _ds_case():
    table, _ = simulate_annotations(40, 4, 3, seed=0)
    model = DawidSkene(prior_concentration=2.0, confusion_concentration=2.0).for_engine("gibbs")
    data = model.prepare(table)
    return model.model, (data,), model.init_state(data, make_generator(1)), "confusion"


def _traced_case(model, args, site):
    tr = trace_model(model, args, {})
    state = {name: s["value"] for name, s in tr.nodes.items()
             if s["type"] == "sample" and not s["is_observed"]}
    return model, args, state, site


CASES = {
    "dawid-skene confusion rows": _ds_case,
    "mixture means locs[z]": lambda: _traced_case(_mixture3, (_mixture_data(),), "locs"),
    "mvn mixture means locs[z]": lambda: _traced_case(cm.mvn_mixture, (_mvn_data(),), "locs"),
    "dirichlet rows by group": lambda: _traced_case(
        cm.gathered_dirichlet, (torch.tensor([0, 2, 1, 0, 0, 2]), torch.tensor([0, 1, 0, 1, 0, 1])),
        "theta"),
    "gamma rates by group": lambda: _traced_case(cm.gathered_rates, (f64([1.0, 4.0, 0.0, 2.0, 2.0, 5.0]),
                                                                     GROUP), "lam"),
    "beta probabilities by group": lambda: _traced_case(
        cm.gathered_beta, (f64([1.0, 1.0, 0.0, 1.0, 0.0, 0.0]), GROUP), "p"),
}


def _prior(model, args, site):
    return trace_model(model, args, {}).nodes[site]["fn"]


def _one_by_one(model, args, state, site, fn):
    """The element-by-element fit: each element moved alone through the family's points."""
    family = exponential.family_of(fn)
    base = exponential.unwrap(fn)
    points = family.points(base.event_shape, state[site])
    y = exponential._one_by_one_values(model, args, {}, state, site, list(points), base.batch_shape)
    coef = exponential._solve(family, points, y, site, state[site].dtype)
    return family.params(coef.reshape(tuple(base.batch_shape) + (coef.shape[-1],)))


@pytest.mark.parametrize("case", list(CASES))
def test_gradient_coefficients_equal_the_element_by_element_fit(case):
    model, args, state, site = CASES[case]()
    fn = _prior(model, args, site)
    got = posterior_params(model, args, {}, state, site, fn)
    assert "from gradients" in batching_reason(model, site, args, {})
    want = _one_by_one(model, args, state, site, fn)
    assert got.keys() == want.keys()
    for name in want:
        torch.testing.assert_close(got[name], want[name], **CLOSE)


def test_coupled_means_fall_back_to_the_element_by_element_fit():
    """``coupled_means`` sees its two means only through their sum: the gradients at points
    where both move together fit a wrong quadratic, which the joint check refuses."""
    y = f64(1.3)
    fn = dist.Normal(f64(0.0), f64(1.0)).expand([2])
    family = exponential.family_of(fn)
    state = {"m": f64([0.3, -0.2])}
    points = family.points(fn.event_shape, state["m"])
    coef, why = exponential._gradient_coefficients(coupled_means, (y,), {}, state, "m", family, points,
                                                   fn.batch_shape, fn.event_shape)
    assert coef is None and "joint check failed" in why
    # each mean's own conditional: precision 1 + 4, linear coefficient 4 (y - other)
    got = posterior_params(coupled_means, (y,), {}, state, "m", fn)
    torch.testing.assert_close(got["scale"], torch.full((2,), 5.0 ** -0.5, dtype=torch.float64), **CLOSE)
    torch.testing.assert_close(got["loc"], 4.0 * (y - state["m"].flip(0)) / 5.0, **CLOSE)
    assert "element by element (not from gradients: the joint check failed" in batching_reason(
        coupled_means, "m", (y,), {})


def test_coupled_means_keep_their_plan():
    with pytest.warns(RuntimeWarning, match="site 'm'.*condition-and-score"):
        p = plan(coupled_means, f64(0.4))
    assert p["m"].update == "nuts" and "failed the check" in p["m"].reason


def test_correlated_coordinates_fall_back():
    y = _mvn_data(8)
    p = plan(cm.correlated_means, y, verify=False)
    assert "not from gradients: the joint check failed" in p["mu"].reason


def detached_rates(c, group, num_groups=3):
    """The rates reach the likelihood through ``detach``: autograd sees only the prior."""
    with pyro.plate("groups", num_groups):
        lam = pyro.sample("lam", dist.Gamma(f64(2.0), f64(0.5)))
    with pyro.plate("obs", len(c)):
        pyro.sample("c", dist.Poisson(lam.detach()[..., group]), obs=c)


def numpy_rates(c, group, num_groups=3):
    """The rates pass through NumPy, which refuses a tensor that autograd records."""
    with pyro.plate("groups", num_groups):
        lam = pyro.sample("lam", dist.Gamma(f64(2.0), f64(0.5)))
    with pyro.plate("obs", len(c)):
        pyro.sample("c", dist.Poisson(torch.from_numpy(lam.numpy())[..., group]), obs=c)


@pytest.mark.parametrize("model, why", [
    (detached_rates, "the joint check failed"),     # the Poisson terms move, the gradient misses them
    (numpy_rates, "autograd failed (RuntimeError)")])
def test_a_site_autograd_cannot_follow_falls_back_with_the_reason(model, why):
    model, args, state, site = _traced_case(model, (f64([1.0, 4.0, 0.0, 2.0, 2.0, 5.0]), GROUP), "lam")
    fn = _prior(model, args, site)
    got = posterior_params(model, args, {}, state, site, fn)
    want = _one_by_one(model, args, state, site, fn)
    for name in want:
        torch.testing.assert_close(got[name], want[name], **CLOSE)
    assert f"element by element (not from gradients: {why}" in batching_reason(model, site, args, {})


def _update_evaluations(model, args, state, site):
    """``(runs, values scored)`` of one conjugate update of ``site`` after the first."""
    counted = Counted(model)
    fn = _prior(model, args, site)
    update = exponential.ConjugateUpdate(counted, site, fn, verify=False)
    with plain_runs():  # the program's own runs, not a recorded trace's
        update(state, ModelArgs(args, {}), make_generator(0))
        counted.evaluations.clear()
        update(state, ModelArgs(args, {}), make_generator(1))
    return len(counted.evaluations), sum(counted.evaluations)


def test_dawid_skene_confusion_update_scores_two_values():
    """After the first sweep: two gradient points (the Dirichlet's tangent derivatives) in one
    batched run, instead of 30 rows x 5 points (the joint check point is scored at planning
    and at the first sweep only)."""
    model, args, state, site = _ds_case()
    assert _update_evaluations(model, args, state, site) == (1, 2)


def test_mixture_means_update_runs_the_program_twice():
    """``locs[z]`` is not vectorisable (one run per value): two gradient points after the
    first sweep, instead of 3 means x 4 points."""
    model, args, state, site = _traced_case(_mixture3, (_mixture_data(),), "locs")
    assert _update_evaluations(model, args, state, site) == (2, 2)


@pytest.mark.parametrize("model, y, site", [
    (cm.variance_as_scale, f64([0.4, 1.3, 2.2]), "v"),
    (cm.wishart_as_covariance, f64([[0.5, -1.0], [1.5, 0.2]]), "lam")])
def test_the_linearity_check_is_what_refuses_a_site(model, y, site):
    """Unchecked, the coefficients of a site that is not conjugate are read all the same: the
    check (at planning and at an update's first sweep) is what refuses it."""
    fn = _prior(model, (y,), site)
    state = {site: trace_model(model, (y,), {}).nodes[site]["value"]}
    with pytest.raises(exponential.NotConjugate):
        posterior_params(model, (y,), {}, state, site, fn)
    try:
        posterior_params(model, (y,), {}, state, site, fn, checked=False)
    except exponential.NotConjugate as err:  # an improper posterior may still be refused
        assert "proper posterior" in str(err)
