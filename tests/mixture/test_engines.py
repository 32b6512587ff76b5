"""The reference mixture served by EM, Gibbs, SVI and NUTS from one program."""

import arviz as az
import pytest
import torch
from pyro.infer import MCMC

from pyromodels.core import (
    DeviceFallbackWarning,
    GibbsBlock,
    GibbsKernel,
    GibbsSweep,
    posterior_from_mcmc,
)
from pyromodels.diagnostics import coclustering, coclustering_from_probs, relabel
from pyromodels.mixture import GaussianMixtureModel, MixtureData
from pyromodels.mixture import gibbs as gibbs_kernels
from pyromodels.testing import assert_engines_agree, assert_monotone, geweke_test


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_em_log_posterior_never_decreases(make_blobs, seed):
    x, _ = make_blobs(30, 20, seed=seed, sep=1.0)  # overlapping blobs: many EM iterations
    post = GaussianMixtureModel(3).fit(x, method="em", seed=seed, progress=False, max_iter=300)
    assert len(post.losses) > 5
    assert_monotone(post.losses, rtol=1e-12)


def test_em_restarts_keep_the_best_and_record_all(blobs):
    x, _ = blobs
    post = GaussianMixtureModel(4).fit(x, method="em", seed=0, n_init=4, progress=False)
    finals = post.diagnostics["restart_objectives"]
    assert len(finals) == 4 and post.losses[-1] == max(finals)
    assert post.samples["weights"].shape == (1, 1, 4)


def _stats(v):
    return torch.stack(
        [
            v["weights"][0],
            v["weights"][0] ** 2,
            v["locs"][0, 0],
            v["locs"][0, 0] ** 2,
            v["precisions"][0, 0, 0].log(),
            v["x"].mean(),
            v["x"].pow(2).mean(),
            (v["z"] == 0).double().mean(),
            # couples the weights with the labels: sensitive to z-updates that ignore weights
            v["weights"][0] * (v["z"] == 0).double().mean(),
        ]
    )


def _geweke_setup():
    model = GaussianMixtureModel(2, mean_prior=[0.0], covariance_prior=[[1.0]], degrees_of_freedom=3.0)
    data = model.prepare(torch.zeros(5, 1))
    return model, data, (lambda d, v: MixtureData(v["x"], d.prior))


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_gibbs_sweep_passes_geweke():
    model, data, observed = _geweke_setup()
    result = geweke_test(model, data, _stats, observed=observed, num_marginal=2000, num_successive=4000)
    assert result.passed, result


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_geweke_detects_an_assignment_block_that_ignores_the_weights():
    model, data, observed = _geweke_setup()
    good = model.gibbs_sweep(data).blocks

    def uniform_z(state, d, gen):
        flat = {**state, "weights": torch.full_like(state["weights"], 0.5)}
        return gibbs_kernels.assignments_block(flat, d, gen)

    broken = GibbsSweep([GibbsBlock("assignments", ("z",), uniform_z), good[1], good[2]])
    result = geweke_test(
        model, data, _stats, observed=observed, sweep=broken, num_marginal=2000, num_successive=4000
    )
    assert not result.passed, result


@pytest.fixture(scope="module")
def four_engines():
    torch.set_default_dtype(torch.float64)
    g = torch.Generator().manual_seed(11)
    x = torch.cat([torch.randn(36, 2, generator=g) - 2.5, torch.randn(24, 2, generator=g) + 2.5])
    model = GaussianMixtureModel(2)
    fits = {
        "em": model.fit(x, method="em", seed=0, n_init=3, progress=False),
        "gibbs": model.fit(x, method="gibbs", seed=0, num_chains=2, num_warmup=200, num_samples=400,
                           progress=False, lp_every=10),
        "svi": model.fit(x, method="svi", seed=0, num_steps=1500, lr=0.02, num_samples=400, progress=False),
        "nuts": model.fit(x, method="nuts", seed=0, num_chains=1, num_warmup=150, num_samples=150,
                          progress=False, lp=False),
    }
    return model, x, fits


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_engines_agree_on_weights_and_coclustering(four_engines):
    model, x, fits = four_engines
    ref = fits["em"].params["labels"]
    weights, cocl = {}, {}
    for name, post in fits.items():
        if name == "em":
            weights[name] = post.params["weights"]
            cocl[name] = coclustering_from_probs(post.params["responsibilities"])
            continue
        aligned = relabel(post, site="z", component_sites=model.component_sites, reference=ref)
        weights[name] = aligned.mean("weights")
        cocl[name] = coclustering(aligned.samples["z"])
    # Tolerance for weights: MAP vs posterior mean differ by at most 1/N ~ 0.017 at alpha = 1;
    # the posterior sd of a weight is sqrt(w(1-w)/N) ~ 0.063, so its Monte Carlo error with
    # >= 150 effective draws is <= 0.006; allow 0.03 in all.
    assert_engines_agree(weights, tol=0.03, reference="em")
    # Well separated blobs: every engine puts each pair together (or apart) with
    # probability within 0.05 of EM's responsibilities-based co-clustering.
    assert_engines_agree(cocl, tol=0.05, reference="em")


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_gibbs_and_nuts_have_integer_labels_and_lp(four_engines):
    _, x, fits = four_engines
    for name in ("gibbs", "svi", "nuts"):
        z = fits[name].samples["z"]
        assert z.dtype == torch.long and z.shape[-1] == x.shape[0]
    lp = fits["gibbs"].sample_stats["lp"]
    assert lp.shape == (2, 400) and torch.isfinite(lp[:, ::10]).all()


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_summary_reports_rhat_and_ess(four_engines):
    _, _, fits = four_engines
    table = fits["gibbs"].summary(var_names=["weights"])
    assert {"r_hat", "ess_bulk"} <= set(table.columns)
    idata = fits["nuts"].to_inference_data()
    assert "log_likelihood" in idata.groups() and idata.log_likelihood["x"].shape == (1, 150, 60)
    assert idata.sample_stats["energy"].shape == (1, 150)
    # A well-adapted NUTS run on this easy posterior has BFMI near 1 (< 0.3 signals trouble).
    assert float(az.bfmi(idata)[0]) > 0.3


def test_pyro_mcmc_with_the_gibbs_kernel_and_arviz_from_pyro(blobs):
    x, _ = blobs
    model = GaussianMixtureModel(2)
    kernel = GibbsKernel(model, seed=0)
    mcmc = MCMC(kernel, num_samples=60, warmup_steps=20, num_chains=2, disable_progbar=True,
                mp_context="spawn")
    mcmc.run(x)
    post = posterior_from_mcmc(mcmc)
    assert post.samples["z"].dtype == torch.long and post.samples["z"].shape == (2, 60, 60)
    assert post.samples["weights"].shape == (2, 60, 2)
    assert "log_likelihood" in post.to_inference_data().groups()  # the kernel's data is kept
    assert not torch.equal(post.samples["weights"][0], post.samples["weights"][1])
    idata = az.from_pyro(mcmc)
    assert idata.posterior.sizes["chain"] == 2 and idata.posterior.sizes["draw"] == 60
    table = az.summary(idata, var_names=["weights"])
    assert "r_hat" in table.columns


@pytest.mark.skipif(torch.cuda.is_available(), reason="the fallback is for machines without CUDA")
def test_cuda_request_falls_back_to_cpu(blobs):
    x, _ = blobs
    with pytest.warns(DeviceFallbackWarning, match="CUDA is not available"):
        post = GaussianMixtureModel(2).fit(x, method="em", seed=0, device="cuda", progress=False)
    assert post.samples["locs"].device.type == "cpu" and post.attrs["device"] == "cpu"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("method", ["em", "gibbs", "svi", "nuts"])
def test_every_engine_runs_on_cuda(blobs, method):
    x, _ = blobs
    kwargs = {
        "em": {},
        "gibbs": {"num_samples": 30, "num_warmup": 10, "num_chains": 1},
        "svi": {"num_steps": 50, "num_samples": 20},
        "nuts": {"num_samples": 10, "num_warmup": 10, "num_chains": 1},
    }[method]
    post = GaussianMixtureModel(2).fit(x.cuda(), method=method, seed=0, progress=False, **kwargs)
    assert post.samples["locs"].device.type == "cuda"
    assert torch.isfinite(post.samples["locs"]).all()
