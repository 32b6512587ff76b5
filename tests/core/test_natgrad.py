"""The natural-gradient engine on conjugate toys: the natural gradient against autograd in mean
parameters (with and without the eq. 17 correction), one full step against the CAVI update,
checkpoint and resume, and the errors of bad input.

The mixture's local step (:mod:`pyromodels.mixture.variational`) is the conjugate toy: a
Dirichlet over the weights and a Normal-Wishart per component, with responsibilities either
fixed or optimal given the globals.
"""

import math

import pytest
import torch

from pyromodels.conjugate import (
    BetaBernoulli,
    DirichletCategorical,
    GaussianNatural,
    GaussianStats,
    NormalWishart,
)
from pyromodels.core import LocalStep, RobbinsMonro, run_natgrad
from pyromodels.core.conjugate_factors import fields_of
from pyromodels.mixture.variational import (
    expected_log_density,
    local_step,
    responsibilities_and_stats,
)

F64 = torch.float64


def mixture_data(n=60, d=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[-3.0, 0.0, 1.0], [3.0, 1.0, -1.0], [0.0, -4.0, 0.0]], dtype=F64)[:, :d]
    z = torch.arange(n) % 3
    return centres[z] + torch.randn(n, d, generator=g, dtype=F64)


def mixture_factors(d=2, K=3):
    prior = {"weights": DirichletCategorical(torch.full((K,), 0.5, dtype=F64)),
             "components": NormalWishart(torch.zeros(K, d, dtype=F64), 0.1, d + 1.0,
                                         0.5 * torch.eye(d, dtype=F64))}
    g = torch.Generator().manual_seed(5)
    init = {"weights": DirichletCategorical(1 + torch.rand(K, generator=g, dtype=F64)),
            "components": NormalWishart(3 * torch.randn(K, d, generator=g, dtype=F64), 1.0,
                                        d + 2.0, 0.3 * torch.eye(d, dtype=F64))}
    return prior, init


def flat(factors: dict, mean: bool = False) -> torch.Tensor:
    parts = [fields_of(f.expected_stats() if mean else f.natural_params()) for f in factors.values()]
    return torch.cat([t.reshape(-1) for p in parts for t in p])


def unflat(vec: torch.Tensor, template: dict) -> dict:
    out, i = {}, 0
    for name, f in template.items():
        eta = f.natural_params()
        tensors = []
        for t in fields_of(eta):
            tensors.append(vec[i:i + t.numel()].reshape(t.shape))
            i += t.numel()
        out[name] = type(f).from_natural(tensors[0] if isinstance(eta, torch.Tensor)
                                         else type(eta)(*tensors))
    return out


def natural_gradient_by_autograd(elbo, factors: dict) -> torch.Tensor:
    """``grad_mu ELBO``: the gradient in natural coordinates mapped through the Jacobian of the
    mean map, ``(d mu / d eta)^{-T} grad_eta``."""
    eta = flat(factors).clone().requires_grad_(True)
    (grad_eta,) = torch.autograd.grad(elbo(unflat(eta, factors)), eta)
    jac = torch.autograd.functional.jacobian(lambda v: flat(unflat(v, factors), mean=True),
                                             flat(factors))
    return torch.linalg.solve(jac.mT, grad_eta)


def elbo_with(local_objective, priors):
    def elbo(factors):
        return local_objective(factors) - sum(factors[k].kl(priors[k]).sum() for k in factors)
    return elbo


def one_step(step, x, priors, init, rho, **kwargs):
    post = run_natgrad(step, x, priors=priors, init=init, num_epochs=1, step_size=rho, seed=0,
                       progress=False, num_samples=0, **kwargs)
    return post


def test_natural_gradient_equals_the_gradient_in_mean_parameters():
    # Fixed responsibilities, one-dimensional components (a minimal parametrisation, so the
    # Jacobian of the mean map is invertible): (eta_new - eta) / rho is grad_mu ELBO.
    x = mixture_data(d=1)
    priors, init = mixture_factors(d=1, K=3)
    r = torch.softmax(torch.randn(len(x), 3, generator=torch.Generator().manual_seed(2),
                                  dtype=F64), -1)

    def local_objective(factors):
        logits = factors["weights"].expected_stats() + expected_log_density(x, factors["components"])
        return (r * (logits - torch.log(r))).sum()

    def fixed(globals_, batch, generator):
        logits = globals_["weights"].expected_stats() + expected_log_density(batch.data,
                                                                              globals_["components"])
        _, stats, _ = responsibilities_and_stats(batch.data, torch.log(r), 1.0, globals_["components"])
        return LocalStep(stats=stats, objective=(r * (logits - torch.log(r))).sum())

    expected = natural_gradient_by_autograd(elbo_with(local_objective, priors), init)
    post = one_step(fixed, x, priors, init, rho=0.25)
    got = (flat(post.params["factors"]) - flat(init)) / 0.25
    torch.testing.assert_close(got, expected, rtol=1e-7, atol=1e-8)
    assert expected.abs().max() > 1.0  # the check is not between two zeros


def surrogate_step(temperature):
    """Responsibilities from a tempered surrogate (the optimum of another objective); the
    objective is the true local ELBO at those responsibilities."""
    def step(globals_, batch, generator):
        x, comps = batch.data, globals_["components"]
        logits = globals_["weights"].expected_stats() + expected_log_density(x, comps)
        r = torch.softmax(globals_["weights"].expected_stats()
                          + temperature * expected_log_density(x, comps), -1)
        _, stats, _ = responsibilities_and_stats(x, torch.log(r), batch.scale, comps)
        objective = batch.scale * (r * (logits - torch.log(r))).sum()
        return LocalStep(stats=stats, objective=objective)
    return step


def test_correction_gives_the_natural_gradient_through_the_local_optimum():
    x = mixture_data(d=1)
    priors, init = mixture_factors(d=1, K=3)
    step = surrogate_step(0.5)

    def local_objective(factors):  # the objective at the surrogate's responsibilities
        logits = factors["weights"].expected_stats() + expected_log_density(x, factors["components"])
        r = torch.softmax(factors["weights"].expected_stats()
                          + 0.5 * expected_log_density(x, factors["components"]), -1)
        return (r * (logits - torch.log(r))).sum()

    expected = natural_gradient_by_autograd(elbo_with(local_objective, priors), init)
    corrected = one_step(step, x, priors, init, rho=0.25, correction=True)
    got = (flat(corrected.params["factors"]) - flat(init)) / 0.25
    torch.testing.assert_close(got, expected, rtol=1e-7, atol=1e-8)
    plain = one_step(step, x, priors, init, rho=0.25)
    missing = (flat(plain.params["factors"]) - flat(init)) / 0.25 - expected
    assert missing.abs().max() > 1e-2 * expected.abs().max()  # the correction matters here
    norms = corrected.diagnostics["correction_norms"][0]
    assert set(norms) == {"weights", "components"} and min(norms.values()) > 1e-3


def test_correction_vanishes_at_the_exact_local_optimum():
    # Envelope theorem: the objective is stationary in the responsibilities at their optimum.
    x = mixture_data()
    priors, init = mixture_factors()
    corrected = one_step(local_step, x, priors, init, rho=0.5, correction=True)
    plain = one_step(local_step, x, priors, init, rho=0.5)
    torch.testing.assert_close(flat(corrected.params["factors"]), flat(plain.params["factors"]))
    norms = corrected.diagnostics["correction_norms"][0]
    assert max(norms.values()) < 1e-9 * flat(init).abs().max()


def cavi_update(x, priors, factors):
    """One coordinate-ascent update written with the families' posterior() and Bishop's
    (10.64)-(10.66) expectations in standard parameters."""
    comps, alpha = factors["components"], factors["weights"].concentration
    d = x.shape[1]
    diff = x[:, None, :] - comps.loc
    maha = torch.einsum("nki,kij,nkj->nk", diff, comps.scale, diff)
    e_log_det = sum(torch.digamma((comps.nu - i) / 2) for i in range(d)) + d * math.log(2) \
        + torch.logdet(comps.scale)
    log_rho = (torch.digamma(alpha) - torch.digamma(alpha.sum()) + 0.5 * e_log_det
               - 0.5 * d * math.log(2 * math.pi) - 0.5 * (d / comps.kappa + comps.nu * maha))
    r = torch.softmax(log_rho, -1)
    return {"weights": priors["weights"].posterior(r.sum(0)),
            "components": priors["components"].posterior(r.sum(0), r.T @ x,
                                                         torch.einsum("nk,ni,nj->kij", r, x, x))}


def test_one_full_batch_step_of_size_one_is_the_cavi_update():
    x = mixture_data()
    priors, init = mixture_factors()
    post = one_step(local_step, x, priors, init, rho=1.0)
    want = cavi_update(x, priors, init)
    got = post.params["factors"]
    torch.testing.assert_close(got["weights"].concentration, want["weights"].concentration)
    for field in ("loc", "kappa", "nu", "scale"):
        torch.testing.assert_close(getattr(got["components"], field),
                                   getattr(want["components"], field))
    # the recorded objective is the ELBO at the starting globals, which the update raises
    after = one_step(local_step, x, priors, got, rho=1.0)
    assert -after.losses[0] > -post.losses[0]


def test_beta_bernoulli_minibatch_scales_are_unbiased():
    # A per-global scale: one coin's statistics counted at N / |B|, the other's at twice that.
    x = (torch.arange(40) % 4 == 0).to(F64)
    prior = BetaBernoulli(torch.tensor(1.0, dtype=F64), 1.0)

    def coin(globals_, batch, generator):
        heads = batch.data.sum()
        stats = torch.stack([heads, len(batch.data) - heads])
        return LocalStep(stats={"a": stats, "b": stats}, scales={"b": 2 * batch.scale})

    post = run_natgrad(coin, x, priors={"a": prior, "b": prior}, init={"a": prior, "b": prior},
                       num_epochs=1, batch_size=8, step_size=1.0, seed=3, progress=False,
                       num_samples=10)
    a, b = post.params["factors"]["a"], post.params["factors"]["b"]
    last = post.diagnostics["num_steps"]
    assert last == 5 and post.samples["a"].shape == (1, 10)
    # rho = 1: the last batch alone, scaled up to N = 40 items
    heads = float(a.alpha) - 1
    assert heads in {0.0, 5.0, 10.0, 15.0} and float(a.alpha + a.beta) == 42.0
    assert float(b.alpha + b.beta) == 82.0


def test_robbins_monro_schedule_and_its_checks():
    rm = RobbinsMonro(tau=0.0, kappa=1.0)
    assert rm(1) == 1.0 and rm(4) == 0.25
    with pytest.raises(ValueError, match=r"kappa must lie in \(0.5, 1\]"):
        RobbinsMonro(kappa=0.4)
    with pytest.raises(ValueError, match="tau must be >= 0"):
        RobbinsMonro(tau=-1.0)


def test_checkpoint_and_resume_equal_the_uninterrupted_run(tmp_path):
    x = mixture_data(n=90)
    priors, init = mixture_factors()

    def shifted(shift):
        def step(globals_, batch, generator):
            out = local_step(globals_, type(batch)(batch.data - shift, batch.indices, batch.scale,
                                                   batch.epoch, batch.step), generator)
            return out
        return step

    def fit(num_epochs, batch_size=20, **kwargs):
        shift = torch.zeros(2, dtype=F64, requires_grad=True)
        opt = torch.optim.Adam([shift], lr=0.05)
        post = run_natgrad(shifted(shift), x, priors=priors, init=init, num_epochs=num_epochs,
                           batch_size=batch_size, step_size=RobbinsMonro(1.0, 0.7), optimizer=opt,
                           seed=11, progress=False, num_samples=5, **kwargs)
        return post, shift.detach()

    whole, shift_whole = fit(6)
    path = tmp_path / "natgrad.ckpt"
    fit(3, checkpoint=path)
    resumed, shift_resumed = fit(6, resume=path)
    assert torch.equal(flat(resumed.params["factors"]), flat(whole.params["factors"]))
    assert torch.equal(shift_resumed, shift_whole) and shift_whole.abs().max() > 0
    assert torch.equal(resumed.losses, whole.losses) and len(whole.losses) == 6 * 5
    assert torch.equal(resumed.samples["components.mean"], whole.samples["components.mean"])
    with pytest.raises(ValueError, match="resume: the checkpoint's run has batch_size=20"):
        fit(6, batch_size=10, resume=path)
    with pytest.raises(ValueError, match="resume: the checkpoint is of model .*shifted"):
        run_natgrad(local_step, x, priors=priors, init=init, num_epochs=6, batch_size=20,
                    resume=path, progress=False)


def test_bad_input_is_refused_with_the_argument_named():
    x = mixture_data()
    priors, init = mixture_factors()
    with pytest.raises(TypeError, match=r"priors\['weights'\] must be a conjugate factor"):
        run_natgrad(local_step, x, priors={**priors, "weights": 1.0}, init=init)
    with pytest.raises(ValueError, match="init must name the globals of priors"):
        run_natgrad(local_step, x, priors=priors, init={"weights": init["weights"]})
    with pytest.raises(TypeError, match=r"init\['weights'\] must be a DirichletCategorical"):
        run_natgrad(local_step, x, priors=priors,
                    init={**init, "weights": BetaBernoulli(torch.tensor(1.0), 1.0)})
    with pytest.raises(ValueError, match=r"step_size must give values in \(0, 1\]"):
        run_natgrad(local_step, x, priors=priors, init=init, step_size=1.5)
    with pytest.raises(ValueError, match="must share their first axis"):
        run_natgrad(local_step, {"x": x, "w": x[:-1]}, priors=priors, init=init)
    with pytest.raises(TypeError, match="local_step must return a LocalStep, got dict"):
        run_natgrad(lambda g, b, r: {}, x, priors=priors, init=init, progress=False)
    with pytest.raises(ValueError, match=r"statistics or scales for \['pi'\]"):
        run_natgrad(lambda g, b, r: LocalStep({"pi": b.data}), x, priors=priors, init=init,
                    progress=False)
    with pytest.raises(ValueError, match="correction=True needs the local step's objective"):
        run_natgrad(lambda g, b, r: LocalStep({"weights": torch.ones(3, dtype=F64)}), x,
                    priors=priors, init=init, correction=True, progress=False)
    with pytest.raises(ValueError, match="tol > 0 needs the local step's objective"):
        run_natgrad(lambda g, b, r: LocalStep({"weights": torch.ones(3, dtype=F64)}), x,
                    priors=priors, init=init, tol=1e-6, progress=False)


def test_a_gaussian_global_in_natural_parameters_gets_its_exact_posterior():
    # theta ~ N(0, I), x_n ~ N(theta, I): log p(x | theta) = <x, theta> + <-I / 2, theta theta^T>
    # + const, so the statistics are (sum x, -n I / 2) and the posterior is
    # N(sum x / (n + 1), I / (n + 1)); one full step of size one reaches it.
    x = mixture_data(n=12, d=3)
    prior = GaussianNatural.from_moments(torch.zeros(3, dtype=F64), torch.eye(3, dtype=F64))

    def step(globals_, batch, generator):
        eye = torch.eye(3, dtype=F64)
        return LocalStep({"theta": GaussianStats(batch.data.sum(0), -0.5 * len(batch.data) * eye)})

    post = run_natgrad(step, x, priors={"theta": prior}, init={"theta": prior}, num_epochs=1,
                       seed=0, progress=False, num_samples=4)
    q = post.params["factors"]["theta"]
    torch.testing.assert_close(q.mean(), x.sum(0) / 13)
    torch.testing.assert_close(q.covariance(), torch.eye(3, dtype=F64) / 13)
    assert post.samples["theta"].shape == (1, 4, 3)
    assert set(post.params) == {"factors", "eta.theta.linear", "eta.theta.quadratic"}


def test_a_callback_stops_the_run_and_sees_each_step():
    x = mixture_data()
    priors, init = mixture_factors()
    seen = []

    def stop_at_three(step, info):
        seen.append((step, info["epoch"], info["step_size"], sorted(info["globals"])))
        return step == 3

    post = run_natgrad(local_step, x, priors=priors, init=init, num_epochs=10, batch_size=20,
                       step_size=0.5, seed=0, progress=False, callbacks=stop_at_three)
    assert post.diagnostics["num_steps"] == 3 and len(post.losses) == 3
    assert seen == [(t, 0, 0.5, ["components", "weights"]) for t in (1, 2, 3)]
    assert bool(torch.isfinite(post.losses).all())


def test_statistics_of_the_wrong_shape_or_an_objective_blind_to_a_global_are_refused():
    x = mixture_data()
    priors, init = mixture_factors()
    with pytest.raises(ValueError, match=r"statistics for 'weights' \(field 0\) have shape \(1, 3\)"):
        run_natgrad(lambda g, b, r: LocalStep({"weights": torch.ones(1, 3, dtype=F64)}), x,
                    priors=priors, init=init, progress=False)

    def blind(globals_, batch, generator):  # the objective forgets the components
        out = local_step(globals_, batch, generator)
        weights = globals_["weights"].expected_stats()
        return LocalStep(out.stats, objective=out.objective.detach() + weights.sum())

    with pytest.raises(ValueError, match="correction=True: .* of global 'components'"):
        run_natgrad(blind, x, priors=priors, init=init, correction=True, progress=False)


def test_every_conjugate_family_satisfies_the_protocol():
    from pyromodels.conjugate import NormalGamma
    from pyromodels.core import ConjugateFactor

    eye = torch.eye(2, dtype=F64)
    families = [DirichletCategorical(torch.ones(3, dtype=F64)),
                BetaBernoulli(torch.tensor(1.0, dtype=F64), 2.0),
                NormalGamma(torch.zeros(2, dtype=F64), 1.0, 2.0, 1.0),
                NormalWishart(torch.zeros(2, dtype=F64), 1.0, 3.0, eye),
                GaussianNatural(torch.zeros(2, dtype=F64), -0.5 * eye)]
    assert all(isinstance(f, ConjugateFactor) for f in families)
    assert not isinstance(torch.distributions.Beta(1.0, 1.0), ConjugateFactor)


def test_correction_keeps_a_symmetric_natural_parameter_symmetric():
    # <A, E[theta theta^T]> with A not symmetric equals <sym(A), E[theta theta^T]>: the
    # statistics are sym(A), autograd gives A, and only the symmetric part may move J.
    prior = GaussianNatural.from_moments(torch.zeros(2, dtype=F64), torch.eye(2, dtype=F64))
    a = torch.tensor([[-1.0, 0.6], [0.0, -1.0]], dtype=F64)
    b = torch.tensor([0.5, -0.2], dtype=F64)

    def step(globals_, batch, generator):
        e = globals_["theta"].expected_stats()
        objective = (b * e.linear).sum() + (a * e.quadratic).sum()
        return LocalStep({"theta": GaussianStats(b, 0.5 * (a + a.T))}, scales={"theta": 1.0},
                         objective=objective)

    post = run_natgrad(step, torch.zeros(1, 1, dtype=F64), priors={"theta": prior},
                       init={"theta": prior}, num_epochs=1, correction=True, seed=0,
                       progress=False, num_samples=0)
    q = post.params["factors"]["theta"]
    torch.testing.assert_close(q.J, prior.J + 0.5 * (a + a.T))
    torch.testing.assert_close(q.h, prior.h + b)
    assert post.diagnostics["correction_norms"][0]["theta"] < 1e-12


def test_correction_and_a_network_step_share_one_backward_pass():
    # The surrogate's temperature is a network parameter: one step moves it by SGD on
    # -objective / N and the globals by the corrected natural gradient, both from one graph.
    x = mixture_data(d=1)
    priors, init = mixture_factors(d=1, K=3)
    w = torch.tensor(0.5, dtype=F64, requires_grad=True)

    def tempered(factors, x, temperature):
        logits = factors["weights"].expected_stats() + expected_log_density(x, factors["components"])
        r = torch.softmax(factors["weights"].expected_stats()
                          + temperature * expected_log_density(x, factors["components"]), -1)
        return r, (r * (logits - torch.log(r))).sum()

    def step(globals_, batch, generator):
        r, objective = tempered(globals_, batch.data, w)
        _, stats, _ = responsibilities_and_stats(batch.data, torch.log(r), 1.0,
                                                 globals_["components"])
        return LocalStep(stats=stats, objective=batch.scale * objective)

    temperature = w.detach().clone().requires_grad_(True)
    (dj_dw,) = torch.autograd.grad(tempered(init, x, temperature)[1], temperature)
    expected = natural_gradient_by_autograd(
        elbo_with(lambda f: tempered(f, x, 0.5)[1], priors), init)
    post = one_step(step, x, priors, init, rho=0.25, correction=True,
                    optimizer=torch.optim.SGD([w], lr=1.0))
    torch.testing.assert_close(w.detach(), 0.5 + dj_dw / len(x))
    torch.testing.assert_close((flat(post.params["factors"]) - flat(init)) / 0.25, expected,
                               rtol=1e-7, atol=1e-8)
    assert abs(float(dj_dw)) > 1e-3


def test_a_step_size_from_the_local_step_replaces_the_schedule_for_its_global():
    """Two coins stepped by 0.1; at step 2 the local step asks for step size 1 on ``"p"``
    only: ``"p"`` then holds exactly its prior plus that step's statistics (a CAVI restart),
    ``"q"`` takes the schedule's step, and a step size outside (0, 1] is refused."""
    x = torch.tensor([1.0, 0.0, 1.0, 1.0], dtype=torch.float64)

    def coins(globals_, batch, generator):
        heads = batch.data.sum()
        stats = torch.stack([heads, len(batch.data) - heads])
        return LocalStep({"p": stats, "q": stats}, step_sizes={"p": 1.0} if batch.step == 2 else {})

    prior = BetaBernoulli(torch.tensor(1.0, dtype=torch.float64), 1.0)
    post = run_natgrad(coins, x, priors={"p": prior, "q": prior}, init={"p": prior, "q": prior},
                       num_epochs=2, step_size=0.1, num_samples=0, seed=0, progress=False)
    got = post.params["factors"]
    torch.testing.assert_close(got["p"].alpha, torch.tensor(4.0, dtype=torch.float64))
    # q: 1 -> 0.9 + 0.1 * 4 = 1.3 -> 0.9 * 1.3 + 0.1 * 4 = 1.57
    torch.testing.assert_close(got["q"].alpha, torch.tensor(1.57, dtype=torch.float64))

    def bad(globals_, batch, generator):
        return LocalStep({"p": torch.ones(2, dtype=torch.float64)}, step_sizes={"p": 1.5})

    with pytest.raises(ValueError, match="step_sizes"):
        run_natgrad(bad, x, priors={"p": prior}, init={"p": prior}, num_epochs=1,
                    num_samples=0, seed=0, progress=False)

    def unknown(globals_, batch, generator):
        return LocalStep({"p": torch.ones(2, dtype=torch.float64)}, step_sizes={"r": 1.0})

    with pytest.raises(ValueError, match=r"step_sizes names \['r'\]"):
        run_natgrad(unknown, x, priors={"p": prior}, init={"p": prior}, num_epochs=1,
                    num_samples=0, seed=0, progress=False)
