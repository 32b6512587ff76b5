"""The Pyro MCMC kernel adapter and ``posterior_from_mcmc`` take plain Pyro programs and their
arguments as the engines do: ``GibbsKernel(program, blocks)`` run by ``MCMC.run(x, y=y)``
samples the exact posterior, and both it and Pyro's own ``NUTS(program)`` convert to the full
InferenceData (log-likelihood, observed and constant data) from the program's trace."""

import math

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import MCMC, NUTS

from pyromodels.core import GibbsBlock, GibbsKernel, posterior_from_mcmc

NOISE = 0.5
X = torch.linspace(-1.0, 1.0, 20, dtype=torch.float64)
Y = 0.7 * X + NOISE * torch.randn(20, generator=torch.Generator().manual_seed(1),
                                  dtype=torch.float64)
# slope ~ N(0, 1), y_i ~ N(slope x_i, NOISE^2): the posterior is Normal with
PRECISION = 1.0 + float((X * X).sum()) / NOISE**2
MEAN = float((X * Y).sum()) / NOISE**2 / PRECISION


def regression(x, y=None):
    slope = pyro.sample("slope", dist.Normal(torch.tensor(0.0, dtype=x.dtype), 1.0))
    with pyro.plate("points", x.shape[0]):
        return pyro.sample("y", dist.Normal(slope * x, NOISE), obs=y)


def slope_block(state, data, generator):
    (x,), y = data.args, data.kwargs["y"]
    draw = torch.randn((), generator=generator, dtype=x.dtype)
    return {"slope": MEAN + draw / math.sqrt(PRECISION) + 0.0 * (x * y).sum()}


def test_gibbs_kernel_runs_a_plain_program_with_its_arguments_from_mcmc_run():
    kernel = GibbsKernel(regression, [GibbsBlock("slope", ("slope",), slope_block)], seed=0)
    mcmc = MCMC(kernel, num_samples=400, warmup_steps=5, disable_progbar=True)
    mcmc.run(X, y=Y)
    post = posterior_from_mcmc(mcmc)
    # 400 independent draws: the mean is within 4 standard errors of the exact one
    assert abs(float(post.mean("slope")) - MEAN) < 4 / math.sqrt(PRECISION * 400)
    assert torch.equal(post.model_args[0], X) and list(post.model_kwargs) == ["y"]
    assert torch.equal(post.model_kwargs["y"], Y)
    idata = post.to_inference_data()
    assert {"posterior", "log_likelihood", "observed_data", "constant_data"} <= set(idata.groups())
    assert idata.log_likelihood["y"].shape == (1, 400, 20)
    # the pointwise log-likelihood is the program's, at each draw
    slope = float(post["slope"][0, 3])
    expected = dist.Normal(slope * X, NOISE).log_prob(Y)
    assert torch.allclose(torch.as_tensor(idata.log_likelihood["y"].values[0, 3]), expected)


def test_posterior_from_mcmc_binds_pyros_own_nuts_on_a_plain_program():
    pyro.set_rng_seed(0)
    mcmc = MCMC(NUTS(regression), num_samples=20, warmup_steps=20, disable_progbar=True)
    mcmc.run(X, y=Y)
    post = posterior_from_mcmc(mcmc)
    assert post.model_fn is regression and torch.equal(post.model_kwargs["y"], Y)
    idata = post.to_inference_data()
    assert idata.log_likelihood["y"].shape == (1, 20, 20)
    assert idata.observed_data["y"].shape == (20,)


def test_gibbs_kernel_on_a_plain_program_needs_its_blocks():
    with pytest.raises(TypeError, match=r"GibbsKernel\(model, blocks\): a plain callable needs"):
        GibbsKernel(regression, seed=0)
    with pytest.raises(TypeError, match="blocks must be a GibbsSweep or a list of GibbsBlock"):
        GibbsKernel(regression, slope_block, seed=0)


@pytest.mark.parametrize("num_threads, want", [(None, 1), (2, 2)])
def test_gibbs_kernel_sweeps_on_the_engines_thread_count_and_restores_the_callers(num_threads, want):
    """Each sweep under ``MCMC`` runs on the rule's count (one thread for these 20 points) or
    the count asked for, and the caller's count is back after every sweep."""
    seen = []

    def block(state, data, generator):
        seen.append(torch.get_num_threads())
        return slope_block(state, data, generator)

    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        kernel = GibbsKernel(regression, [GibbsBlock("slope", ("slope",), block)], seed=0,
                             num_threads=num_threads)
        MCMC(kernel, num_samples=3, warmup_steps=1, disable_progbar=True,
             hook_fn=lambda *a: seen.append(("between", torch.get_num_threads()))).run(X, y=Y)
        assert set(x for x in seen if not isinstance(x, tuple)) == {want}
        assert {x for x in seen if isinstance(x, tuple)} == {("between", 3)}
    finally:
        torch.set_num_threads(before)


def test_gibbs_kernel_num_threads_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="num_threads"):
        GibbsKernel(regression, [GibbsBlock("slope", ("slope",), slope_block)], num_threads=0)
