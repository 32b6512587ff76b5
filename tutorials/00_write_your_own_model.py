# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Write your own model with pyromodels
#
# pyromodels rests on one idea: a model is **one Pyro program**, its generative story, and every
# inference engine (EM, Gibbs, SVI, NUTS) is a second description of that program which the
# tests check against it. In this tutorial you will
#
# 0. write a mixture as a plain Pyro function and fit it, as it is, with the library's
#    engines (`run_nuts`, `run_svi`, and `run_gibbs` with conditionals you write), then by
#    hand with Pyro's own tools: `SVI` with `TraceEnum_ELBO`, `MCMC(NUTS(...))` with a
#    starting point, `infer_discrete` and `Predictive`; then see what the library's `Model`
#    class adds on top (EM, Gibbs hooks and fast paths checked against the program);
# 1. turn the same mixture into a `Model` of your own, give it a Gibbs sweep of pure blocks
#    and check every block against the program;
# 2. fit the library's reference `GaussianMixtureModel` three ways (EM, Gibbs and SVI, with
#    a short NUTS run), read the fits with ArviZ, and look label switching in the eye;
# 3. drive a Gibbs sweep with `pyro.infer.MCMC` and convert the run with `arviz.from_pyro`.
#
# **Prerequisites.** `pyro.sample` and `pyro.plate`, and the idea of a posterior distribution.
#
# **Running it.** As a script, `python tutorials/00_write_your_own_model.py`, or as a notebook
# after `python -m jupytext --to ipynb tutorials/00_write_your_own_model.py`. With
# `SMOKE_TEST=1` in the environment every iteration count shrinks and the whole file runs in
# well under a minute; the numbers it prints are then rough.

# %%
# Figures show in the notebook whatever MPLBACKEND says (a comment when run as a script).
# %matplotlib inline
import os
import warnings

import arviz as az
import matplotlib.pyplot as plt
import pyro
import pyro.distributions as dist
import torch
from pyro import poutine
from pyro.infer import MCMC, NUTS, SVI, Predictive, TraceEnum_ELBO, infer_discrete
from pyro.infer.autoguide import AutoNormal
from pyro.infer.autoguide.initialization import init_to_value
from pyro.ops.indexing import Vindex

from pyromodels import diagnostics, metrics, testing
from pyromodels.checks import as_float_tensor, check_int, check_positive
from pyromodels.conjugate import sample_categorical, sample_dirichlet, sample_normal
from pyromodels.core import (
    GibbsBlock,
    GibbsKernel,
    GibbsSweep,
    Model,
    first_available_dim,
    make_generator,
    posterior_from_mcmc,
    run_gibbs,
    run_nuts,
    run_svi,
)
from pyromodels.data import simulate_gaussian_mixture
from pyromodels.mixture import GaussianMixtureModel
from pyromodels.notebook import show, sizes, start_session

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
size = sizes(SMOKE_TEST)  # size(full, smoke): full normally, smoke when SMOKE_TEST


# Every tensor in this tutorial is float64, so that the checks below compare the program
# with the hand-written blocks to rounding error.
torch.set_default_dtype(torch.float64)
# The tensors here are tiny: one thread avoids the cost of spreading each operation out.
torch.set_num_threads(1)
# torch's Wishart sampler warns about near-singular draws from the prior; the engines draw
# from the prior only to read the shapes of the sites.
warnings.filterwarnings("ignore", message="Singular sample detected")
start_session()  # readable pandas tables, and the versions this ran with

# %% [markdown]
# ## Part 0: a plain Pyro function first
#
# A mixture of two normal components on the real line, written as an ordinary Pyro function.
# The component label `z` of each point is discrete, so gradient-based inference cannot move
# it; `config_enumerate` marks it to be **summed out exactly** instead. No class, no
# registration: this function is all the library's engines need.

# %%
@pyro.infer.config_enumerate
def plain_mixture(x, K=2, sigma=1.0):
    w = pyro.sample("w", dist.Dirichlet(torch.ones(K)))
    mu = pyro.sample("mu", dist.Normal(torch.zeros(K), 5.0).to_event(1))
    with pyro.plate("data", x.shape[0]):
        z = pyro.sample("z", dist.Categorical(w))
        pyro.sample("x", dist.Normal(Vindex(mu)[..., z], sigma), obs=x)


gen0 = torch.Generator().manual_seed(1)
z0 = (torch.rand(size(200, 60), generator=gen0) < 0.4).long()
x0 = torch.tensor([-2.0, 2.0])[z0] + torch.randn(len(z0), generator=gen0)

# %% [markdown]
# **The library's engines take the function as it is**, with its arguments passed the way
# Pyro's `MCMC.run(*args, **kwargs)` and `SVI.step(*args, **kwargs)` take them. An engine's
# settings are keyword-only names (`num_samples`, `seed`, ...); every other keyword argument,
# here `K=2`, goes to your function. `run_nuts` sums `z` out and draws it back after
# sampling; `run_svi` takes the guide after the program, as `SVI(model, guide, ...)` does
# (`None`: `AutoNormal` over the continuous sites). Every site comes back shaped
# `(chain, draw) + its shape`, from every engine.

# %%
nuts_plain = run_nuts(plain_mixture, x0, K=2, num_samples=size(300, 20),
                      num_warmup=size(200, 20), num_chains=1, seed=0, progress=False)
svi_plain = run_svi(plain_mixture, None, x0, K=2, num_steps=size(800, 100), lr=0.05, seed=0,
                    progress=False)
for name, post in (("run_nuts", nuts_plain), ("run_svi", svi_plain)):
    print(f"{name}:", {k: tuple(v.shape) for k, v in post.samples.items()})
print("guide:", svi_plain.attrs["guide"])

# %% [markdown]
# **Gibbs** needs what Pyro cannot derive from the function: the full conditionals.
# `run_gibbs` takes them after the program, as `SVI` takes its guide. A block is a pure
# function `(state, data, generator) -> {site: new value}` that draws through the generator it
# is given; `data` holds your function's arguments (`data.args`, `data.kwargs`). The chains
# start from a draw of the prior. (Part 1 derives these three conditionals.)

# %%
def plain_z(state, data, generator):
    x = data.args[0]
    logits = state["w"].log() + dist.Normal(state["mu"], 1.0).log_prob(x.unsqueeze(-1))
    return {"z": sample_categorical(torch.log_softmax(logits, -1), generator)}


def plain_w(state, data, generator):
    counts = torch.bincount(state["z"], minlength=data.kwargs["K"])
    return {"w": sample_dirichlet(1.0 + counts.to(torch.float64), generator)}


def plain_mu(state, data, generator):
    x = data.args[0]
    onehot = torch.nn.functional.one_hot(state["z"], data.kwargs["K"]).to(x.dtype)
    var = 1.0 / (1.0 / 5.0**2 + onehot.sum(0))  # prior sd 5, sigma 1
    return {"mu": sample_normal(var * (onehot.T @ x), var.sqrt(), generator)}


plain_blocks = [GibbsBlock("z", ("z",), plain_z), GibbsBlock("w", ("w",), plain_w),
                GibbsBlock("mu", ("mu",), plain_mu)]
gibbs_plain = run_gibbs(plain_mixture, plain_blocks, x0, K=2, num_samples=size(500, 30),
                        num_warmup=size(100, 10), num_chains=1, seed=0, progress=False)
for name, post in (("run_nuts", nuts_plain), ("run_svi", svi_plain), ("run_gibbs", gibbs_plain)):
    centres = post["mu"].sort(-1).values.mean((0, 1))  # sorted: the names of components are arbitrary
    print(f"{name:>9}: sorted centres {centres.numpy().round(2)}")

# %% [markdown]
# ### The same function with Pyro's own tools
#
# Nothing above hides Pyro: the same function runs under Pyro's own inference.
#
# **SVI by hand.** The guide covers the continuous sites only; `TraceEnum_ELBO` sums `z` out of
# the model (it needs to know how many plates nest, here one).

# %%
pyro.clear_param_store()
pyro.set_rng_seed(0)
guide0 = AutoNormal(poutine.block(plain_mixture, hide=["z"]))
svi0 = SVI(plain_mixture, guide0, pyro.optim.Adam({"lr": 0.05}),
           TraceEnum_ELBO(max_plate_nesting=1))
elbo0 = [svi0.step(x0) for _ in range(size(800, 100))]
print("guide medians:", {k: v.detach().numpy().round(2) for k, v in guide0.median().items()})

fig, ax = plt.subplots(figsize=(5, 2.5))
ax.plot(elbo0)
ax.set_xlabel("step")
ax.set_ylabel("negative ELBO")
ax.set_title("SVI written by hand")
show(fig)

# %% [markdown]
# **NUTS by hand.** NUTS also sums `z` out. Started from a draw of the prior, it can spend a
# long warm-up moving the centres into place; start it near the answer with
# `init_to_value` (here: centres at the data's quartiles).

# %%
start0 = {"w": torch.tensor([0.5, 0.5]), "mu": torch.quantile(x0, torch.tensor([0.25, 0.75]))}
pyro.set_rng_seed(0)
nuts0 = MCMC(NUTS(plain_mixture, init_strategy=init_to_value(values=start0), max_plate_nesting=1),
             num_samples=size(300, 20), warmup_steps=size(200, 20), disable_progbar=True)
nuts0.run(x0)
draws0 = nuts0.get_samples()
print("posterior mean of mu:", draws0["mu"].mean(0).numpy().round(2))

# %% [markdown]
# `posterior_from_mcmc` turns your own `MCMC` run into the library's `Posterior`, binding the
# function to the arguments given to `mcmc.run`, so `to_inference_data()` builds the full
# `InferenceData` from the program: the pointwise log-likelihood with `z` summed out,
# the observed data, and on request the predictive groups.

# %%
print(posterior_from_mcmc(nuts0).to_inference_data().groups())

# %% [markdown]
# **`infer_discrete`** puts `z` back: condition the model on one posterior draw of the
# continuous sites and draw `z` from its conditional posterior (`temperature=0` would take
# its mode).

# %%
one_draw = {k: v[-1] for k, v in draws0.items()}
sampler0 = infer_discrete(poutine.condition(plain_mixture, data=one_draw),
                          first_available_dim=-2, temperature=1)
z_draw = poutine.trace(sampler0).get_trace(x0).nodes["z"]["value"]
agree = max(float((z_draw == z0).double().mean()), float((z_draw != z0).double().mean()))
print(f"z agrees with the truth on {agree:.0%} of the points (up to naming the components)")

# %% [markdown]
# **`Predictive`** simulates replicated data from the posterior draws: a posterior predictive
# check. Observed sites keep their data unless you release them with `poutine.uncondition`.

# %%
predictive0 = Predictive(poutine.uncondition(plain_mixture), posterior_samples=draws0,
                         return_sites=["x"], parallel=False)
x_rep = predictive0(x0)["x"]
fig, ax = plt.subplots(figsize=(5, 2.5))
ax.hist(x0.numpy(), bins=30, density=True, alpha=0.6, label="data")
ax.hist(x_rep.reshape(-1).numpy(), bins=60, density=True, histtype="step", label="replicates")
ax.set_xlabel("x")
ax.set_ylabel("density")
ax.legend(loc="upper right", frameon=False)
show(fig)

# %% [markdown]
# That is all a mixture needs. What does `pyromodels.Model` add? The same program becomes a
# class that carries its hooks: `fit(data, method=...)` then runs **Gibbs** with the model's
# own sweep and starting point, **EM** where the model defines its steps, and SVI and NUTS
# from the model's starting values; the model can declare facts the engines use (which sites
# switch labels, how to score each point for ArviZ); and every hook is a second description
# of the program that the tests check against it. Parts 1 and 2 build exactly that.

# %% [markdown]
# ## Part 1: the same mixture as a model of your own
#
# Part 0's function becomes a class: the same story, plus the hooks that let the library run
# a Gibbs sampler on it and check that sampler against the program.
#
# ### The story
#
# A mixture of $K$ normal components on the real line with a known spread $\sigma$:
#
# $$
# \begin{aligned}
# w &\sim \mathrm{Dirichlet}(\alpha, \dots, \alpha) && \text{mixing proportions} \\
# \mu_k &\sim \mathcal N(0, s_0^2), \quad k = 1..K && \text{component centres} \\
# z_n \mid w &\sim \mathrm{Categorical}(w), \quad n = 1..N && \text{component of point } n \\
# x_n \mid z_n, \mu &\sim \mathcal N(\mu_{z_n}, \sigma^2) && \text{the data}
# \end{aligned}
# $$
#
# ```
#   alpha --> w             s0 --> mu_k   [k = 1..K]
#             |                     |
#        +----|---------------------|----+
#        |    v                     v    |
#        |   z_n ----------------> x_n   |   [n = 1..N]
#        +-------------------------------+
# ```
#
# | site      | support             | shape  | meaning                         |
# |-----------|---------------------|--------|---------------------------------|
# | `weights` | simplex             | `(K,)` | mixing proportions $w$          |
# | `locs`    | real                | `(K,)` | component centres $\mu$         |
# | `z`       | $\{0..K-1\}$, enumerated | `(N,)` | component of each point    |
# | `x`       | real, observed      | `(N,)` | the data                        |
#
# Two details of the Pyro program matter later:
#
# * The global sites carry their component axis as an **event** dimension (`.to_event(1)`),
#   not a plate. The program then runs unchanged when a batch of posterior draws is stacked on
#   the left, which is how `sample_discrete` restores $z$ for a thousand draws in one pass.
# * `z` is marked `infer={"enumerate": "parallel"}` and listed in `discrete_sites`, so SVI and
#   NUTS sum it out exactly. `Vindex(locs)[..., z]` picks each point's centre in a way that
#   still works when enumeration puts all $K$ values of `z` in a new tensor dimension.
#
# ### The full conditionals
#
# Gibbs sampling updates one block of variables at a time from its distribution given
# everything else. Here all three conditionals have closed forms (the priors are conjugate):
#
# * **assignments**: $p(z_n = k \mid w, \mu, x_n) \propto w_k\, \mathcal N(x_n \mid \mu_k,
#   \sigma^2)$, independently over $n$;
# * **weights**: $w \mid z \sim \mathrm{Dirichlet}(\alpha + n_1, \dots, \alpha + n_K)$ with
#   $n_k = \#\{n : z_n = k\}$;
# * **centres**: $\mu_k \mid z, x \sim \mathcal N(m_k, v_k)$ with
#   $v_k = (1/s_0^2 + n_k/\sigma^2)^{-1}$ and $m_k = v_k S_k / \sigma^2$, where
#   $S_k = \sum_{n : z_n = k} x_n$.
#
# Each conditional's *parameters* are computed by one method of the class below
# (`weights_conditional`, `locs_conditional`, `assignment_logits`). A block's sampler and its
# log density both call that method, so the two cannot drift apart.
#
# ### The model class
#
# A model subclasses `pyromodels.core.Model`. The constructor stores **model arguments only**
# (sizes and priors); the data arrive in `fit`. The class then supplies what each engine asks
# for:
#
# | engine  | hooks                                                                  |
# |---------|------------------------------------------------------------------------|
# | `svi`   | `model`; optionally `guide` and `init_values(data, generator)`          |
# | `nuts`  | `model` with the discrete sites enumerated; optionally `init_values`    |
# | `gibbs` | `init_state(data, generator)` and `gibbs_sweep(data)`                   |
# | `em`    | `em_init`, `em_step`, `em_objective` (see the reference mixture)        |
#
# `prepare(data)` validates the data once per fit and `log_likelihood_pointwise` gives ArviZ
# the marginal log-likelihood of each point. A Gibbs block is a **pure function**
# `update(state, data, generator) -> {site: new value}` that draws through the generator it is
# given (the samplers in `pyromodels.conjugate` take one; `torch.distributions` samplers do
# not), plus `log_density(values, state, data)`, the log density of the conditional it
# samples, which the checks below compare with the program.

# %%
class Mixture1D(Model):
    """A K-component Gaussian mixture on the real line with known spread ``sigma``.

    Args: ``num_components`` (K >= 2), ``sigma``, ``prior_scale`` (s0) and ``concentration``
    (alpha), as in the story above.
    """

    discrete_sites = ("z",)
    max_plate_nesting = 1
    engines = ("gibbs", "svi", "nuts")
    # the components can swap names between chains: no R-hat alarm on these sites
    label_switched_sites = ("weights", "locs", "z")

    def __init__(self, num_components=2, sigma=1.0, prior_scale=5.0, concentration=1.0):
        self.num_components = check_int(num_components, "num_components", minimum=2)
        self.sigma = check_positive(sigma, "sigma")
        self.prior_scale = check_positive(prior_scale, "prior_scale")
        self.concentration = check_positive(concentration, "concentration")

    def prepare(self, data, device=None):
        """The data as a finite 1-D float tensor (a clear error otherwise)."""
        return as_float_tensor(data, "data", ndim=1, device=device)

    # ---------------------------------------------------------------- the program
    def model(self, x):
        K = self.num_components
        weights = pyro.sample("weights", dist.Dirichlet(x.new_full((K,), self.concentration)))
        locs = pyro.sample("locs", dist.Normal(x.new_zeros(K), self.prior_scale).to_event(1))
        with pyro.plate("data", x.shape[0], dim=-1):
            z = pyro.sample("z", dist.Categorical(weights), infer={"enumerate": "parallel"})
            pyro.sample("x", dist.Normal(Vindex(locs)[..., z], self.sigma), obs=x)

    # ------------------------------------------------------------- starting points
    def init_state(self, x, generator):
        """K distinct data points as centres, nearest-centre labels, equal weights."""
        K = self.num_components
        locs = x[torch.randperm(x.shape[0], generator=generator)[:K]]
        z = (x.unsqueeze(-1) - locs).abs().argmin(-1)
        return {"weights": x.new_full((K,), 1.0 / K), "locs": locs, "z": z}

    def init_values(self, x, generator):
        """Starting values of the continuous sites for SVI and NUTS."""
        state = self.init_state(x, generator)
        return {"weights": state["weights"], "locs": state["locs"]}

    # ------------------------------------------- parameters of the full conditionals
    def assignment_logits(self, state, x):
        """Normalised ``log p(z_n = k | w, mu, x_n)``, shape ``(N, K)``."""
        log_lik = dist.Normal(state["locs"], self.sigma).log_prob(x.unsqueeze(-1))
        return torch.log_softmax(state["weights"].log() + log_lik, dim=-1)

    def weights_conditional(self, state, x):
        """Dirichlet concentration ``alpha + n_k`` of ``w | z``, shape ``(K,)``."""
        counts = torch.bincount(state["z"], minlength=self.num_components)
        return self.concentration + counts.to(x.dtype)

    def locs_conditional(self, state, x):
        """Mean ``m_k`` and standard deviation ``sqrt(v_k)`` of ``mu_k | z, x``."""
        onehot = torch.nn.functional.one_hot(state["z"], self.num_components).to(x.dtype)
        counts, sums = onehot.sum(0), onehot.T @ x
        var = 1.0 / (1.0 / self.prior_scale**2 + counts / self.sigma**2)
        return var * sums / self.sigma**2, var.sqrt()

    # ------------------------------------------------------------- the Gibbs sweep
    def gibbs_sweep(self, x):
        return GibbsSweep([
            GibbsBlock("assignments", ("z",), self.update_z, self.log_density_z),
            GibbsBlock("weights", ("weights",), self.update_weights, self.log_density_weights),
            GibbsBlock("locs", ("locs",), self.update_locs, self.log_density_locs),
        ])

    def update_z(self, state, x, generator):
        return {"z": sample_categorical(self.assignment_logits(state, x), generator)}

    def log_density_z(self, values, state, x):
        logits = self.assignment_logits(state, x)
        return logits.gather(-1, values["z"].unsqueeze(-1)).sum()

    def update_weights(self, state, x, generator):
        return {"weights": sample_dirichlet(self.weights_conditional(state, x), generator)}

    def log_density_weights(self, values, state, x):
        return dist.Dirichlet(self.weights_conditional(state, x)).log_prob(values["weights"])

    def update_locs(self, state, x, generator):
        return {"locs": sample_normal(*self.locs_conditional(state, x), generator)}

    def log_density_locs(self, values, state, x):
        return dist.Normal(*self.locs_conditional(state, x)).log_prob(values["locs"]).sum()

    # ------------------------------------------------------------------ for ArviZ
    def log_likelihood_pointwise(self, x, samples):
        """Marginal ``log p(x_n | w, mu)`` with ``z`` summed out: ``{"x": (chain, draw, N)}``."""
        locs, weights = samples["locs"].unsqueeze(-2), samples["weights"].unsqueeze(-2)
        log_lik = dist.Normal(locs, self.sigma).log_prob(x.unsqueeze(-1))
        return {"x": torch.logsumexp(weights.log() + log_lik, dim=-1)}

    def observed_data(self, x):
        return {"x": x.detach().cpu().numpy()}


# %% [markdown]
# Some data: 300 points (60 in a smoke run) from two components at $-2$ and $+2$ with
# weights 0.65 and 0.35. The generator makes them the same on every run.

# %%
gen = torch.Generator().manual_seed(0)
n_points = size(300, 60)
true_z1 = (torch.rand(n_points, generator=gen) < 0.35).long()
x1 = torch.tensor([-2.0, 2.0])[true_z1] + torch.randn(n_points, generator=gen)

model1 = Mixture1D(num_components=2)
data1 = model1.prepare(x1)

fig, ax = plt.subplots(figsize=(6, 2.5))
ax.hist(x1.numpy(), bins=30)
ax.set_xlabel("x")
ax.set_ylabel("points")
ax.set_title("simulated data")
show(fig)

# %% [markdown]
# Before anything else, look at the shapes Pyro sees. Under enumeration `z` takes all $K$
# values at once in a new dimension left of the plates: with one plate
# (`max_plate_nesting = 1`) the first free dimension is
# `first_available_dim(1) = -2`.

# %%
enumerated = poutine.enum(model1.model, first_available_dim=first_available_dim(1))
trace = poutine.trace(enumerated).get_trace(data1)
trace.compute_log_prob()
print(trace.format_shapes())

# %% [markdown]
# ### Checking the blocks: condition and score
#
# If a block samples $q(\theta_B)$ and the program's joint is $p(\theta_B, \theta_{-B}, x)$,
# then $q$ is the right conditional exactly when
#
# $$ \log q(\theta_B) - \log p(\theta_B, \theta_{-B}, x) $$
#
# does not depend on $\theta_B$ (it equals $-\log p(\theta_{-B}, x)$). `check_conditional`
# draws a few values from the block, scores each with the block's `log_density` and with the
# program (`model.log_joint`), and returns the spread of the differences: zero up to rounding
# for a correct block. For a discrete site, `check_discrete_conditional` goes through every
# value of one element and compares the two normalised distributions.

# %%
state = model1.init_state(data1, make_generator(0))
blocks = {b.name: b for b in model1.gibbs_sweep(data1).blocks}
for name in ("weights", "locs"):
    spread = testing.check_conditional(model1, data1, blocks[name], state, num_values=5, seed=1)
    print(f"{name:>8}: spread of log q - log p over 5 draws = {spread:.1e}")
    assert spread < 1e-8

for n in x1.abs().argsort()[:3].tolist():  # the three most ambiguous points, near 0
    block_p, joint_p = testing.check_discrete_conditional(
        model1, data1, blocks["assignments"], state, "z", n, range(model1.num_components)
    )
    print(f"z[{n}]: block {block_p.numpy().round(4)}  program {joint_p.numpy().round(4)}")
    assert torch.allclose(block_p, joint_p, atol=1e-10)

# %% [markdown]
# What a mistake looks like: a centres block that forgets the prior (it samples
# $\mathcal N(S_k / n_k, \sigma^2 / n_k)$, the likelihood alone) is off by a term that depends
# on $\mu$, and the check says so.

# %%
def forgetful_conditional(state, x):  # N(S_k / n_k, sigma^2 / n_k) with sigma = 1
    onehot = torch.nn.functional.one_hot(state["z"], 2).to(x.dtype)
    return onehot.T @ x / onehot.sum(0), onehot.sum(0).rsqrt()


forgetful = GibbsBlock(
    "forgetful locs", ("locs",),
    lambda s, x, g: {"locs": sample_normal(*forgetful_conditional(s, x), g)},
    lambda v, s, x: dist.Normal(*forgetful_conditional(s, x)).log_prob(v["locs"]).sum(),
)
spread = testing.check_conditional(model1, data1, forgetful, state, num_values=5, seed=1)
print(f"forgetful block: spread = {spread:.2e}")
assert spread > 1e-4

# %% [markdown]
# ### Checking the whole sweep: Geweke's test
#
# Condition-and-score checks each block on its own. Geweke's "getting it right" test checks
# the sweep as a whole: alternate *simulate new data given the parameters* (the program) with
# *one Gibbs sweep given the data*. If every block is right this chain has the prior joint
# $p(\theta, x)$ as its stationary distribution, so the means of any test functions must match
# those of independent draws from the program, within Monte Carlo error (batch means for the
# autocorrelated chain; a Bonferroni threshold over the statistics).
#
# The chain moves through the prior only as fast as the posterior given one data set is wide,
# so the test uses a handful of points and a prior on the centres not much wider than the
# likelihood; the data passed in only fix the sizes.

# %%
def test_functions(values):
    w, mu, x = values["weights"], values["locs"], values["x"]
    spread = (x.unsqueeze(-1) - mu).pow(2).mean()
    return torch.stack([w[0], mu.sum(), mu.pow(2).sum(), x.mean(), spread])


geweke = testing.geweke_test(
    Mixture1D(num_components=2, prior_scale=1.0), torch.zeros(3), test_functions,
    observed=lambda data, values: values["x"], seed=0,
    num_marginal=size(2000, 400), num_successive=size(4000, 800),
)
print(geweke)
assert geweke.passed

# %% [markdown]
# ### Fitting: every engine for free
#
# The class gives Gibbs its hooks; SVI (an `AutoNormal` guide with `z` enumerated, so
# `TraceEnum_ELBO`) and NUTS (with `z` summed out) need nothing but the program. SVI and NUTS
# draw `z` afterwards from its conditional given each continuous draw
# (`Posterior.sample_discrete`), so all three results hold the same sites.
#
# Component labels are arbitrary: the posterior is symmetric under swapping them. To compare
# engines we use a **label-invariant** summary, the centres sorted within each draw.

# %%
fits1 = {
    "gibbs": model1.fit(x1, method="gibbs", num_chains=2, num_warmup=size(200, 20),
                        num_samples=size(500, 50), seed=1, progress=False),
    "svi": model1.fit(x1, method="svi", num_steps=size(1500, 150), lr=0.05,
                      num_samples=size(500, 50), seed=2, progress=False),
    "nuts": model1.fit(x1, method="nuts", num_chains=1, num_warmup=size(200, 10),
                       num_samples=size(200, 10), seed=3, progress=False),
}
sorted_centres = {name: post["locs"].sort(-1).values.mean((0, 1)) for name, post in fits1.items()}
for name, centres in sorted_centres.items():
    print(f"{name:>5}: {fits1[name]}\n       sorted centres {centres.numpy().round(3)}")
# Each centre's posterior sd is about sigma / sqrt(n_k) (0.1 here with 300 points), and the
# Monte Carlo error of a few hundred draws is smaller still: 0.3 catches a wrong fit.
testing.assert_engines_agree(sorted_centres, tol=size(0.3, 0.6))

# %% [markdown]
# ## Part 2: the mixture three ways
#
# The reference model of the zoo is `pyromodels.mixture.GaussianMixtureModel`, a finite
# Gaussian mixture in $d$ dimensions with a conjugate prior:
#
# $$
# \begin{aligned}
# w &\sim \mathrm{Dirichlet}(\alpha \mathbf 1_K), &
# \Lambda_k &\sim \mathrm{Wishart}(\nu, \Psi^{-1}), &
# \mu_k \mid \Lambda_k &\sim \mathcal N\big(m, (\kappa \Lambda_k)^{-1}\big), \\
# z_n \mid w &\sim \mathrm{Categorical}(w), &
# x_n \mid z_n &\sim \mathcal N\big(\mu_{z_n}, \Lambda_{z_n}^{-1}\big).
# \end{aligned}
# $$
#
# It is the same program-plus-hooks pattern as `Mixture1D` (read its source next to this
# tutorial), with one more engine: **EM**,
# which finds the posterior mode of $(w, \mu, \Lambda)$ with $z$ summed out. Its E-step computes
# responsibilities $r_{nk} \propto w_k \mathcal N(x_n \mid \mu_k, \Lambda_k^{-1})$ and its M-step
# the conjugate posterior mode given them; the objective (the log posterior) never decreases.
#
# Data: 2-D points from three overlapping Gaussian clusters.

# %%
x2, truth = simulate_gaussian_mixture(
    size(400, 120),
    weights=[0.5, 0.3, 0.2],
    means=[[-2.5, 0.0], [2.5, 0.0], [0.0, 3.5]],
    covs=[[[1.0, 0.5], [0.5, 1.0]], [[1.0, -0.3], [-0.3, 0.8]], [[0.6, 0.0], [0.0, 0.6]]],
    seed=0,
)
mixture = GaussianMixtureModel(num_components=3)

fig, ax = plt.subplots(figsize=(4.5, 4))
ax.scatter(x2[:, 0], x2[:, 1], c=truth["z"], s=8, cmap="viridis")
ax.set_xlabel("x[:, 0]")
ax.set_ylabel("x[:, 1]")
ax.set_title("simulated data, coloured by true component")
show(fig)

# %% [markdown]
# One model object, four engines, one call each. Every call returns a `Posterior`: samples
# shaped `(chain, draw, ...)` with `z` kept as integers, traces, diagnostics, and `attrs`
# recording the method, the seed and the versions.

# %%
fits = {
    "em": mixture.fit(x2, method="em", n_init=size(5, 2), seed=0, progress=False),
    "gibbs": mixture.fit(x2, method="gibbs", num_chains=2, num_warmup=size(300, 20),
                         num_samples=size(1000, 60), seed=1, progress=False),
    "svi": mixture.fit(x2, method="svi", num_steps=size(2000, 100), lr=0.05,
                       num_samples=size(500, 50), seed=2, progress=False),
    "nuts": mixture.fit(x2, method="nuts", num_chains=1, num_warmup=size(100, 5),
                        num_samples=size(100, 5), max_tree_depth=size(6, 3), seed=3,
                        progress=False),
}
em, gibbs, svi = fits["em"], fits["gibbs"], fits["svi"]
for name, post in fits.items():
    print(f"{name:>5}: {post}  ({post.attrs['wall_time_s']:.1f} s)")

# %% [markdown]
# EM's objective must never go down; `assert_monotone` checks the trace. SVI's negative ELBO
# is noisy but should level off.

# %%
testing.assert_monotone(em.losses)
print(f"EM converged: {em.diagnostics['converged']} after {em.diagnostics['n_iter']} iterations; "
      f"best of {len(em.diagnostics['restart_objectives'])} starts")
show(diagnostics.plot_loss(svi))

# %% [markdown]
# How well does each engine recover the clusters? The adjusted Rand index compares partitions,
# so it does not care what the clusters are called. For EM we score its hard labels; for the
# samplers, the average over draws.

# %%
def mean_ari(post):
    if post.method == "em":
        return metrics.ari(truth["z"], post.params["labels"])
    draws = post.flat("z")
    return sum(metrics.ari(truth["z"], z) for z in draws) / len(draws)


def largest_weight(post):
    return post.flat("weights").max(-1).values.mean()


table = diagnostics.compare_engines(fits, {"ARI": mean_ari, "largest weight": largest_weight})
print(table.round(3))

# %% [markdown]
# ### Diagnostics with ArviZ
#
# `to_inference_data()` builds an `arviz.InferenceData` through pyromodels' own converter.
# Its `log_likelihood` group is the **marginal** pointwise log-likelihood
# $\log p(x_n \mid w, \mu, \Lambda) = \log \sum_k w_k \mathcal N(x_n \mid \mu_k, \Lambda_k^{-1})$,
# with $z$ summed out, which is what `az.loo` and `az.waic` need.

# %%
idata = gibbs.to_inference_data()
print(idata)
print(az.loo(idata))

# %% [markdown]
# The log joint `lp` of each draw, the number of occupied clusters and the size of the largest
# cluster do not depend on how the components are named. They are the right things to trace
# and rank-plot: `plot_trace` and `plot_rank` pick them by default.

# %%
show(diagnostics.plot_trace(gibbs))
show(diagnostics.plot_rank(gibbs, var_names=["lp"]))
invariant = diagnostics.label_invariant_stats(gibbs)
print("occupied clusters seen:", invariant["occupied_clusters"].unique().tolist())
invariant_idata = az.from_dict(posterior={k: v.numpy() for k, v in invariant.items()})
print(az.summary(invariant_idata, var_names=["lp", "largest_cluster_fraction"]))

# %% [markdown]
# ### Label switching, honestly
#
# The posterior is symmetric under renaming the components, so "component 0" means nothing by
# itself: the two chains started from different k-means runs and are free to give the same
# cluster different names. R-hat on the raw weights compares things that are not the same
# quantity. `diagnostics.relabel` aligns every draw to a reference labelling (the last draw of
# chain 0) with the Hungarian method, permuting `weights`, `locs` and `precisions` along with
# `z`.
#
# The warning that every MCMC fit ends with (`SamplingWarning`, for R-hat, effective sample
# size and divergences) knows this: `GaussianMixtureModel` declares these sites in
# `label_switched_sites` (as `Mixture1D` does above), so the warning leaves them out, says so
# in one line, and checks the log joint `lp` in their place; after `relabel` they are
# checked again.

# %%
relabelled = diagnostics.relabel(gibbs, component_sites=mixture.component_sites)
rhat_raw = az.rhat(gibbs.to_inference_data(log_likelihood=False), var_names=["weights"])
rhat_new = az.rhat(relabelled.to_inference_data(log_likelihood=False), var_names=["weights"])
print("R-hat of the weights, raw:       ", rhat_raw["weights"].values.round(3))
print("R-hat of the weights, relabelled:", rhat_new["weights"].values.round(3))
print("mean weights per chain, raw:\n", gibbs["weights"].mean(1).numpy().round(3))
print("mean weights per chain, relabelled:\n", relabelled["weights"].mean(1).numpy().round(3))
for post in (gibbs, relabelled):
    show(diagnostics.plot_trace(post, var_names=["weights"]))

# %% [markdown]
# Relabelling is a post-processing choice; the label-invariant view needs none. The
# **co-clustering matrix** $C_{ij} = P(z_i = z_j \mid x)$ is the same for the raw and the
# relabelled draws, and EM's responsibilities give its mean-field counterpart
# $\sum_k r_{ik} r_{jk}$.

# %%
C = diagnostics.coclustering(gibbs["z"])
assert torch.equal(C, diagnostics.coclustering(relabelled["z"]))
C_em = diagnostics.coclustering_from_probs(em.params["responsibilities"])
print(f"largest gap between the Gibbs and EM co-clustering: {float((C - C_em).abs().max()):.3f}")
show(diagnostics.plot_coclustering(C, order=truth["z"].argsort()))

# %% [markdown]
# **Predictive checks.** `to_inference_data(predictive=True)` adds `prior`,
# `prior_predictive` and `posterior_predictive` groups, simulated by the model's own program
# (the same thing `Predictive` did by hand in Part 0), with named dimensions. `az.plot_ppc`
# compares replicated data with the data, one coordinate at a time.

# %%
ppc_idata = gibbs.to_inference_data(predictive=True, num_prior_draws=size(200, 20))
print(ppc_idata.posterior_predictive["x"].dims)
az.plot_ppc(ppc_idata, num_pp_samples=size(50, 10))
fig = plt.gcf()
for ax in fig.axes:  # ArviZ names the variable on the x axis only
    ax.set_ylabel("density")
show(fig)

# %% [markdown]
# R-hat and ESS describe Markov chains. SVI's draws are independent draws from a fitted guide
# (and EM's "draw" is a point estimate), so the summary says so instead of quietly printing
# numbers that look like convergence diagnostics. `kind="stats"` keeps the table to what such
# a fit can tell: mean, sd and HDI (with SVI's single "chain", ArviZ would also complain that
# R-hat needs at least two).

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    print(svi.summary(var_names=["weights"], kind="stats"))
for w in caught:
    if issubclass(w.category, UserWarning):
        print(w.message)

# %% [markdown]
# ## Part 3: `pyro.infer.MCMC` with a Gibbs kernel
#
# `GibbsKernel` wraps a model's sweep as a Pyro `MCMCKernel`, so the sweep can run under
# Pyro's own `MCMC` driver, with its progress bar and hooks. The driver stacks every site into
# one floating-point tensor per draw, so integer sites come back as floats;
# `posterior_from_mcmc` casts them back and gives a `Posterior`.

# %%
kernel = GibbsKernel(mixture, seed=4)
mcmc = MCMC(kernel, num_samples=size(300, 30), warmup_steps=size(100, 10), disable_progbar=True)
mcmc.run(x2)
print("z from the driver:", mcmc.get_samples()["z"].dtype)
from_mcmc = posterior_from_mcmc(mcmc)
print("z from posterior_from_mcmc:", from_mcmc["z"].dtype)

# %% [markdown]
# `arviz.from_pyro` reads the same run. Its `log_likelihood` group would score each point
# given one sampled `z` rather than with `z` summed out, and for this program it cannot build
# that group at all (it warns and leaves it out), so we turn it off. Our converter gives the
# marginal log-likelihood as before, once the posterior knows its data.

# %%
idata_pyro = az.from_pyro(mcmc, log_likelihood=False)
print(idata_pyro.groups())
from_mcmc.data = mixture.prepare(x2)
idata_ours = from_mcmc.to_inference_data()
print(idata_ours.groups())

# %% [markdown]
# For several chains, use `mixture.fit(x, method="gibbs", num_chains=...)`: each chain then
# gets its own seed derived from the fit's seed, `derive_seed(seed, "chain", c)`.
#
# ## What next
#
# The [how-to guides](../guides/README.md) cover each step of this tutorial on one page:
# writing a model, writing a Gibbs block, enumerating discrete latents, diagnostics with
# ArviZ, reproducibility, and the errors bad input gets.
#
# Exercises: give `Mixture1D` an unknown spread per component (a Gamma prior on the precision
# is conjugate, so it is one more block) and check the new block with `check_conditional`;
# refit the reference mixture with `num_components=5` and watch the occupied-cluster trace.
