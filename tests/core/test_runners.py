"""The engines on a model with a closed-form posterior (a Beta-Bernoulli coin), and run_em's
stopping rule of the model's own on a toy EM."""

import math
import pickle
import warnings

import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.conjugate import BetaBernoulli, sample_beta
from pyromodels.core import (
    ConvergenceWarning,
    GibbsBlock,
    GibbsKernel,
    GibbsSweep,
    Model,
    Posterior,
    run_em,
    run_gibbs,
    run_nuts,
    run_svi,
)

A, B = 2.0, 3.0
FLIPS = torch.tensor([1.0, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1])
HEADS, TAILS = float(FLIPS.sum()), float((1 - FLIPS).sum())
POST_MEAN = (A + HEADS) / (A + B + len(FLIPS))
POST_SD = math.sqrt(POST_MEAN * (1 - POST_MEAN) / (A + B + len(FLIPS) + 1))


def _beta_block(state, data, generator):
    heads = data.sum()
    return {"p": sample_beta(torch.tensor(A) + heads, torch.tensor(B) + len(data) - heads, generator)}


class Coin(Model):
    engines = ("svi", "nuts", "gibbs")

    def model(self, data):
        p = pyro.sample("p", dist.Beta(torch.tensor(A), torch.tensor(B)))
        with pyro.plate("flips", len(data)):
            pyro.sample("y", dist.Bernoulli(p), obs=data)

    def init_state(self, data, generator):
        return {"p": torch.tensor(0.5)}

    def gibbs_sweep(self, data):
        return GibbsSweep([GibbsBlock("p", ("p",), _beta_block)])


def test_closed_form_reference():
    post = BetaBernoulli(A, B).posterior(HEADS, TAILS)
    assert float(post.mean()) == pytest.approx(POST_MEAN)


def test_gibbs_mean_within_monte_carlo_error_and_seed_reproducible():
    post = run_gibbs(Coin(), FLIPS, num_samples=2000, num_warmup=10, num_chains=2, seed=3, progress=False)
    assert isinstance(post, Posterior) and post.samples["p"].shape == (2, 2000)
    # independent exact draws: standard error POST_SD / sqrt(4000); allow 5 of them
    assert abs(float(post.mean("p")) - POST_MEAN) < 5 * POST_SD / math.sqrt(4000)
    again = run_gibbs(Coin(), FLIPS, num_samples=2000, num_warmup=10, num_chains=2, seed=3, progress=False)
    assert torch.equal(post.samples["p"], again.samples["p"])
    other = run_gibbs(Coin(), FLIPS, num_samples=50, num_warmup=10, num_chains=2, seed=4, progress=False)
    assert not torch.equal(post.samples["p"][:, :50], other.samples["p"])
    assert not torch.equal(post.samples["p"][0], post.samples["p"][1])  # chains get their own seeds
    lp = post.sample_stats["lp"]
    exact = dist.Beta(A, B).log_prob(post.samples["p"]) + HEADS * post.samples["p"].log() + TAILS * (
        1 - post.samples["p"]
    ).log()
    assert torch.allclose(lp, exact, atol=1e-10)


def test_gibbs_records_the_sweeps_own_log_joint_where_it_gives_one():
    """A sweep with ``log_joint`` supplies each kept draw's lp (its faster way to the model's
    value); a scan order set at the call keeps it."""
    calls = []

    def own(data, state):
        calls.append(float(state["p"]))
        return torch.tensor(-7.0, dtype=torch.float64)

    sweep = GibbsSweep([GibbsBlock("p", ("p",), _beta_block)], log_joint=own)
    for scan in (None, "random"):
        calls.clear()
        post = run_gibbs(Coin(), FLIPS, sweep=sweep, scan=scan, num_samples=6, num_warmup=2,
                         num_chains=1, seed=0, progress=False, diagnostic_warnings=False)
        assert torch.equal(post.sample_stats["lp"], torch.full((1, 6), -7.0, dtype=torch.float64))
        assert calls == [float(v) for v in post.samples["p"][0]]


def test_nuts_mean_and_sd():
    post = run_nuts(Coin(), FLIPS, num_samples=600, num_warmup=300, num_chains=1, seed=0, progress=False)
    draws = post.samples["p"]
    assert draws.shape == (1, 600) and post.sample_stats["diverging"].dtype == torch.bool
    # NUTS draws are autocorrelated; with an effective sample size of at least 150 the
    # standard error of the mean is below POST_SD / sqrt(150); allow 4 of them.
    assert abs(float(draws.mean()) - POST_MEAN) < 4 * POST_SD / math.sqrt(150)
    assert float(draws.std()) == pytest.approx(POST_SD, rel=0.2)
    assert torch.isfinite(post.sample_stats["lp"]).all()


def test_svi_runs_in_its_own_param_store_scope():
    pyro.get_param_store().clear()
    pyro.param("outside", torch.tensor(1.0))
    post = run_svi(Coin(), FLIPS, num_steps=1500, lr=0.02, num_samples=2000, seed=0, progress=False)
    assert list(pyro.get_param_store().keys()) == ["outside"]
    assert any("loc" in k for k in post.params)
    assert post.losses.shape == (1500,) and post.samples["p"].shape == (1, 2000)
    # AutoNormal on logit(p): a Gaussian approximation of a Beta(11, 6) posterior whose mean
    # is within 0.02 of the exact mean (Laplace-type bias of order 1/n).
    assert abs(float(post.mean("p")) - POST_MEAN) < 0.02
    again = run_svi(Coin(), FLIPS, num_steps=1500, lr=0.02, num_samples=2000, seed=0, progress=False)
    assert torch.equal(post.samples["p"], again.samples["p"])


def test_callbacks_stop_svi_and_gibbs_early():
    post = run_svi(Coin(), FLIPS, num_steps=500, seed=0, progress=False, num_samples=5,
                   callbacks=[lambda step, info: step >= 9])
    assert post.losses.shape == (10,)
    post = run_gibbs(Coin(), FLIPS, num_samples=100, num_warmup=0, num_chains=1, seed=0, progress=False,
                     callbacks=[lambda step, info: step >= 19])
    assert post.samples["p"].shape == (1, 20)


def test_gibbs_kernel_pickles_after_setup():
    kernel = GibbsKernel(Coin(), seed=0)
    kernel.setup(0, FLIPS)
    clone = pickle.loads(pickle.dumps(kernel))
    a = kernel.sample(kernel.initial_params)
    b = clone.sample(clone.initial_params)
    assert torch.equal(a["p"], b["p"])
    assert kernel.diagnostics()["divergences"] == [] and kernel.transforms == {}


def test_gibbs_kernel_copies_in_worker_processes_get_distinct_chains():
    # pyro.infer.MCMC gives each worker process its own copy of the kernel and a global seed
    # of (initial seed + chain id); the copies must not replay the same chain.
    kernel = GibbsKernel(Coin(), seed=0)
    draws = []
    for chain_id in range(2):
        copy = pickle.loads(pickle.dumps(kernel))
        torch.manual_seed(100 + chain_id)
        copy.setup(0, FLIPS)
        draws.append(copy.sample(copy.initial_params)["p"])
    assert not torch.equal(draws[0], draws[1])


def test_sweep_validation():
    blk = GibbsBlock("p", ("p",), _beta_block)
    with pytest.raises(ValueError, match="site 'p' is updated by both 'p' and 'p'"):
        GibbsSweep([blk, blk])
    with pytest.raises(TypeError, match="blocks\\[0\\] must be a GibbsBlock"):
        GibbsSweep([_beta_block])
    with pytest.raises(ValueError, match="blocks must hold at least one GibbsBlock"):
        GibbsSweep([])
    with pytest.raises(TypeError, match=r"^log_joint must be callable log_joint\(data, state\), got float"):
        GibbsSweep([blk], log_joint=1.5)
    with pytest.raises(ValueError, match=r"missing \['q'\]"):
        GibbsSweep([blk]).check_covers(["p", "q"])
    bad = GibbsBlock("p", ("p",), lambda s, d, g: {"q": s["p"]})
    with pytest.raises(RuntimeError, match="must return exactly"):
        GibbsSweep([bad])({"p": torch.tensor(0.5)}, FLIPS, torch.Generator())


class Plateau(Model):
    """An EM whose objective is flat from the start while a counter ``k`` climbs to 3; its rule
    ``em_converged`` holds once ``k`` stops moving. It records every ``(old k, new k)`` seen."""

    engines = ("em",)
    em_sites = ("x",)
    em_monotone = False

    def __init__(self):
        self.seen = []

    def em_init(self, data, generator):
        return {"x": torch.zeros(()), "k": 0}

    def em_step(self, data, params):
        return {"x": params["x"], "k": min(params["k"] + 1, 3)}

    def em_objective(self, data, params):
        return -1.0

    def em_converged(self, data, old, new):
        self.seen.append((old["k"], new["k"]))
        return old["k"] == new["k"]


class FusedPlateau(Plateau):
    def em_step_with_objective(self, data, params):
        return self.em_step(data, params), self.em_objective(data, params)


@pytest.mark.parametrize("cls", [Plateau, FusedPlateau])
def test_run_em_stops_only_once_the_model_s_rule_holds(cls):
    model = cls()
    post = run_em(model, FLIPS, max_iter=20, seed=0, progress=False)
    assert post.diagnostics["converged"] and post.diagnostics["n_iter"] == 4
    assert post.params["k"] == 3 and post.losses.tolist() == [-1.0] * 5
    # the rule sees each step's start and end, in order
    assert model.seen == [(0, 1), (1, 2), (2, 3), (3, 3)]


def test_without_the_rule_the_flat_objective_stops_run_em_at_once():
    model = Plateau()
    model.em_converged = None  # no rule of its own
    post = run_em(model, FLIPS, max_iter=20, seed=0, progress=False)
    assert post.diagnostics["converged"] and post.diagnostics["n_iter"] == 1


def test_run_em_names_the_unmet_rule_and_checks_its_verdict():
    with pytest.warns(ConvergenceWarning, match=r"stopping rule \(Plateau.em_converged\) did not"):
        post = run_em(Plateau(), FLIPS, max_iter=2, seed=0, progress=False)
    assert not post.diagnostics["converged"] and post.params["k"] == 2
    model = Plateau()
    model.em_converged = lambda data, old, new: torch.tensor(True)
    with pytest.raises(TypeError, match="em_converged must return a bool, got Tensor"):
        run_em(model, FLIPS, max_iter=2, seed=0, progress=False)


def test_run_gibbs_warns_about_its_diagnostics_unless_told_not_to():
    from pyromodels.core import SamplingWarning

    settings = dict(num_warmup=0, num_chains=2, seed=0, progress=False)
    # independent draws (the block samples the exact posterior): 2 x 15 have an ESS near 30,
    # below 100 per chain; 2 x 1000 have an ESS near 2000 and R-hat within 0.003 of 1
    with pytest.warns(SamplingWarning, match="effective sample size"):
        run_gibbs(Coin(), FLIPS, num_samples=15, **settings)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingWarning)
        run_gibbs(Coin(), FLIPS, num_samples=15, diagnostic_warnings=False, **settings)
        Coin().fit(FLIPS, method="gibbs", num_samples=15, diagnostic_warnings=False, **settings)
        run_gibbs(Coin(), FLIPS, num_samples=1000, **settings)


def test_a_sampling_warning_names_the_users_line_not_the_librarys():
    """Through an engine or through ``Model.fit``, the warning points at the line that asked
    for the fit (warnings filters by module and the printed source line depend on it)."""
    from pyromodels.core import SamplingWarning

    settings = dict(num_warmup=0, num_chains=2, num_samples=15, seed=0, progress=False)
    for fit in (lambda: run_gibbs(Coin(), FLIPS, **settings),
                lambda: Coin().fit(FLIPS, method="gibbs", **settings)):
        with pytest.warns(SamplingWarning) as record:
            fit()
        assert record[0].filename == __file__
