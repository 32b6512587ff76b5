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
# # Your own model, Gibbs for free
#
# Gibbs sampling is the sampler of choice for many classic models (mixtures, hidden Markov
# models, hierarchies with conjugate priors), but it usually means deriving every full
# conditional by hand. `pyromodels.autogibbs` reads those conditionals off your Pyro program
# instead. In this tutorial you will
#
# 1. write a Gaussian mixture with unknown weights, means and a shared precision as a plain
#    Pyro function, ask for its **plan** and read it;
# 2. run the plan with `fit_gibbs` on several chains and diagnose it with ArviZ, on
#    label-invariant quantities, because the labels of a mixture switch;
# 3. run the same plan as a `pyro.infer.MCMC` kernel, `AutoGibbs`;
# 4. replace one automatic update with a block written by hand, and check that it draws
#    exactly what the automatic one draws;
# 5. see a non-conjugate site handed to NUTS, and give it a Metropolis step of your own
#    instead; then a site with no update at all (a `ValueError` naming it);
# 6. see a `pyro.markov` hidden Markov model get forward-filtering backward-sampling.
#
# **Prerequisites.** `pyro.sample`, `pyro.plate` and the idea of a Gibbs sweep. The guide
# [automatic Gibbs sampling](../guides/automatic-gibbs.md) says how the plan is chosen and
# checked; [writing a Gibbs block](../guides/writing-a-gibbs-block.md) how to write your own.
#
# **Running it.** As a script, `python tutorials/09_your_own_model_gibbs_for_free.py`, or as a
# notebook after `python -m jupytext --to ipynb` on it. With `SMOKE_TEST=1` every run is
# shortened to a few sweeps; the numbers it prints are then rough and the diagnostics poor.

# %%
# Figures show in the notebook whatever MPLBACKEND says (a comment when run as a script).
# %matplotlib inline
import os

import arviz as az
import matplotlib.pyplot as plt
import pyro
import pyro.distributions as dist
import torch
from pyro import poutine
from pyro.infer import MCMC

from pyromodels import diagnostics
from pyromodels.autogibbs import AutoGibbs, fit_gibbs, plan
from pyromodels.conjugate import sample_gamma
from pyromodels.core import GibbsBlock, Posterior, posterior_from_mcmc
from pyromodels.notebook import show, sizes, start_session

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
size = sizes(SMOKE_TEST)  # size(full, smoke): full normally, smoke when SMOKE_TEST

# float64 everywhere: the plan checks each update against the program's log density, and
# float64 lets it do so to rounding error.
torch.set_default_dtype(torch.float64)
start_session()  # readable pandas tables, and the versions this ran with

# %% [markdown]
# ## The data and the model
#
# One-dimensional data from three Gaussian clusters with a common spread. The model says so in
# plain Pyro: mixture weights `w` with a Dirichlet prior, a shared precision `tau` (one over
# the variance) with a Gamma prior, one mean per component, and a component `z` per point.

# %%
num_points = size(200, 40)
gen = torch.Generator().manual_seed(0)
true_locs = torch.tensor([-3.0, 0.5, 3.5])
true_weights = torch.tensor([0.3, 0.45, 0.25])
true_z = torch.multinomial(true_weights, num_points, replacement=True, generator=gen)
x = true_locs[true_z] + 0.8 * torch.randn(num_points, generator=gen)


def mixture(x, num_components=3):
    w = pyro.sample("w", dist.Dirichlet(torch.ones(num_components)))
    tau = pyro.sample("tau", dist.Gamma(torch.tensor(2.0), 2.0))
    with pyro.plate("components", num_components):
        locs = pyro.sample("locs", dist.Normal(torch.tensor(0.0), 5.0))
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Categorical(w))
        pyro.sample("x", dist.Normal(locs[z], tau.rsqrt()), obs=x)


# %%
fig, ax = plt.subplots(figsize=(7, 3))
ax.hist(x.numpy(), bins=size(40, 15), color="grey")
ax.set_xlabel("x")
ax.set_ylabel("count")
ax.set_title("the data: three clusters with a common spread")
show(fig)

# %% [markdown]
# ## The plan
#
# `plan(model, *args)` traces the program once and gives every latent site an update, with
# the reason. Read it line by line:
#
# * `w` and `locs` and `tau` are **conjugate**: with everything else fixed, the program's
#   log density is linear in the prior's sufficient statistics (`log w_k` for the Dirichlet,
#   `log tau, tau` for the Gamma, `locs, locs^2` for the Normal). The plan found that by
#   scoring your program at a few values, not from a table of known pairs, so it works
#   through the indexing `locs[z]` and the scale `tau.rsqrt()` as you wrote them;
# * `z` is **discrete**: three values to enumerate, and because each point's terms depend on
#   its own `z` only, all the points are updated at once.
# * the end of a line says whether the update reads your program at every sweep or a
#   **statistics table** read off it once: `w` gets one (each point adds a count to the
#   weight its `z` picks); `locs` and `tau` do not, because the shared precision multiplies
#   the means' statistics, so they, and `z` with them, keep reading the program.
#
# Each automatic update was checked against the program before it was trusted (and is checked
# again at the first sweep of a run); see the guide for how.

# %%
mixture_plan = plan(mixture, x)
print(mixture_plan)

# %% [markdown]
# ## Several chains with `fit_gibbs`
#
# `fit_gibbs` runs that plan. Every chain starts from a draw of the prior and has its own seed
# derived from `seed`, so the run is reproducible. The result is a `Posterior`, with every site
# shaped `(chain, draw) + site shape` and the plan kept in `attrs["plan"]`.
# `n_jobs=-1` would run the chains on all cores, with the same draws.

# %%
settings = dict(num_samples=size(300, 10), warmup=size(100, 5), seed=0, progress=False)
post = fit_gibbs(mixture, x, num_chains=size(4, 2), diagnostic_warnings=not SMOKE_TEST, **settings)
print({name: tuple(value.shape) for name, value in post.samples.items()})

# %% [markdown]
# ## Label switching, and what to diagnose instead
#
# The likelihood does not change when the components swap names: `(w, locs)` and any
# permutation of them score the same. Each chain settles on one naming, picked by chance from
# where it started, and different chains may pick different ones. A trace of `locs[0]` per
# chain then shows chains sitting on different clusters, and R-hat on the raw `locs` compares
# different quantities: expect values far above 1 there whenever two chains named the
# components differently, even when every chain is fine.
#
# The engine's own check after the fit looks at the raw sites, so in a full run it may warn
# (a `SamplingWarning` above) for exactly this reason: its message says the chains "may sit at
# different, possibly label-switched, modes".
#
# The cure is to diagnose **label-invariant** quantities: the means in increasing order, the
# weight of the lowest, middle and highest component, and `tau`, which has no label.

# %%
fig, ax = plt.subplots(figsize=(7, 3))
for chain in range(post.samples["locs"].shape[0]):
    ax.plot(post.samples["locs"][chain, :, 0].numpy(), label=f"chain {chain}")
ax.set_xlabel("draw")
ax.set_ylabel("locs[0]")
ax.set_title("the first component's mean in each chain")
ax.legend(loc="upper right", fontsize="small")
show(fig)

raw = az.from_dict(posterior={"locs": post.samples["locs"].numpy()})
print("R-hat of the raw locs:", az.rhat(raw)["locs"].values.round(2))

# %%
order = post.samples["locs"].argsort(-1)
invariant = Posterior(samples={
    "sorted_locs": post.samples["locs"].gather(-1, order),
    "weight_by_loc": post.samples["w"].gather(-1, order),  # weights in the order of the means
    "tau": post.samples["tau"],
}, method="gibbs")
invariant_idata = az.from_dict(posterior={k: v.numpy() for k, v in invariant.samples.items()})
print(az.summary(invariant_idata, kind="all").round(3))
print("simulated with means", true_locs.tolist(), "weights", true_weights.tolist(),
      f"and tau {1 / 0.8 ** 2:.3f}")

# %% [markdown]
# In the table, `r_hat` should be close to 1 and `ess_bulk` a good fraction of the draws for
# every row; the smoke run is far too short for either. A chain stuck with two clusters under
# one component shows up here as a large R-hat of the sorted means, which relabelling could
# not hide. The trace plot shows the same draws per chain.

# %%
fig = diagnostics.plot_trace(invariant, var_names=["sorted_locs", "tau"], compact=True)
fig.suptitle("sorted means and precision, one line style per chain")
show(fig)

# %% [markdown]
# `post.to_inference_data()` gives the full `InferenceData` of the run (posterior, the
# pointwise log-likelihood for `az.loo`, the observed data) for any other ArviZ function, and
# `diagnostics.relabel` aligns the component labels across draws when you want the labelled
# parameters themselves.

# %%
idata = post.to_inference_data()
print(idata.groups())

# %% [markdown]
# ## The same plan under `pyro.infer.MCMC`
#
# `AutoGibbs(model, *args)` makes the plan from the arguments you give it and is a
# `pyro.infer.MCMC` kernel: pass the same arguments to `mcmc.run`. `print(kernel.plan)` is the
# plan above. `posterior_from_mcmc` turns the run back into a `Posterior` (with `z` as
# integers again). Its chain is another chain of the same sampler, so its sorted means agree
# with those of `fit_gibbs` only up to Monte Carlo error (hardly at all in the smoke run).

# %%
pyro.set_rng_seed(0)  # MCMC draws its starting point from Pyro's global random state
kernel = AutoGibbs(mixture, x, seed=1)
mcmc = MCMC(kernel, num_samples=size(300, 10), warmup_steps=size(100, 5), num_chains=1,
            disable_progbar=True)
mcmc.run(x)
from_mcmc = posterior_from_mcmc(mcmc)
print("sorted means, fit_gibbs:  ", post.samples["locs"].sort(-1).values.mean((0, 1)).numpy().round(2))
print("sorted means, MCMC kernel:", from_mcmc.samples["locs"].sort(-1).values.mean((0, 1)).numpy().round(2))

# %% [markdown]
# ## Your own block for a site
#
# `overrides={site: GibbsBlock(...)}` replaces a site's automatic update with yours (or gives
# one to a site the plan cannot update). Here is the precision's conditional written by hand:
#
# $$\tau \mid \text{rest} \sim \mathrm{Gamma}\Big(2 + \tfrac N2,\; 2 + \tfrac12 \sum_n
# (x_n - \mu_{z_n})^2\Big).$$
#
# A block is a pure function of the state, the program's arguments (`data.args`) and a
# `torch.Generator`. The automatic update draws a Gamma the same way, a unit-rate draw of
# `sample_gamma` divided by the rate, so with the same seed the hand-written block should give
# the same chain as the automatic one, to rounding error, and every other site too: check the
# largest difference below.

# %%
def precision_update(state, data, generator):
    (x,) = data.args
    residuals = x - state["locs"][state["z"]]
    shape = torch.tensor(2.0 + 0.5 * x.shape[0])
    rate = 2.0 + 0.5 * residuals.pow(2).sum()
    return {"tau": sample_gamma(shape, generator) / rate}


by_hand = GibbsBlock("precision by hand", ("tau",), precision_update)
print(plan(mixture, x, overrides={"tau": by_hand}))
# diagnostic_warnings=False: the raw sites switch labels as above, and the comparison below
# is the check here
hand = fit_gibbs(mixture, x, num_chains=size(4, 2), overrides={"tau": by_hand},
                 diagnostic_warnings=False, **settings)
for name in ("tau", "locs", "w"):
    print(f"largest difference in {name}: {float((hand.samples[name] - post.samples[name]).abs().max()):.1e}")
print("assignments that differ:", int((hand.samples["z"] != post.samples["z"]).sum()))

# %% [markdown]
# ## A continuous site that is not conjugate
#
# A common way to write the mixture puts a half-normal prior on the standard deviation instead
# of a Gamma on the precision. That prior is not conjugate, so the plan cannot draw `sigma`
# exactly; it says so and hands the site to a NUTS block inside the sweep (see the guide).

# %%
def mixture_sd(x, num_components=3):
    w = pyro.sample("w", dist.Dirichlet(torch.ones(num_components)))
    sigma = pyro.sample("sigma", dist.HalfNormal(torch.tensor(2.0)))
    with pyro.plate("components", num_components):
        locs = pyro.sample("locs", dist.Normal(torch.tensor(0.0), 5.0))
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Categorical(w))
        pyro.sample("x", dist.Normal(locs[z], sigma), obs=x)


print(plan(mixture_sd, x))

# %% [markdown]
# You can also put a step of your own in its place with `overrides=`: any Markov step that
# leaves the conditional of `sigma` invariant will do. Here is a random-walk Metropolis step on `log sigma`, scoring the program itself with
# `poutine.condition` (the `log sigma` proposal adds the Jacobian term
# `log sigma' - log sigma`). Such a step mixes more slowly than an exact draw, so compare its
# effective sample size with the conjugate `tau` above.
#
# Read the per-chain means too. The Gibbs sweep of a mixture can sit for a long time in a
# poor mode where two clusters share one component; there the spread of that component is
# wide, so a chain whose mean of `sigma` stands well above the others' is in such a mode, and
# R-hat of `sigma` is large for that reason rather than because of the Metropolis step. More
# warm-up and more chains are the remedies.

# %%
def log_joint(model, state, args):
    return poutine.trace(poutine.condition(model, data=state)).get_trace(*args).log_prob_sum()


def sigma_metropolis(state, data, generator, step=0.15):
    current = state["sigma"]
    proposal = current * torch.exp(step * torch.randn((), generator=generator))
    log_ratio = (log_joint(mixture_sd, {**state, "sigma": proposal}, data.args)
                 - log_joint(mixture_sd, state, data.args)
                 + proposal.log() - current.log())
    accept = torch.rand((), generator=generator).log() < log_ratio
    return {"sigma": torch.where(accept, proposal, current)}


# diagnostic_warnings=False: label switching again; sigma, which has no label, is summarised
# below
sd_post = fit_gibbs(mixture_sd, x, num_chains=size(4, 2), diagnostic_warnings=False,
                    overrides={"sigma": GibbsBlock("sigma by Metropolis", ("sigma",), sigma_metropolis)},
                    **settings)
sigma_idata = az.from_dict(posterior={"sigma": sd_post.samples["sigma"].numpy()})
print(az.summary(sigma_idata, kind="all").round(3))
moved = (sd_post.samples["sigma"][:, 1:] != sd_post.samples["sigma"][:, :-1]).double().mean()
print(f"share of sweeps in which sigma moved: {float(moved):.2f}")
print("mean of sigma in each chain:", sd_post.samples["sigma"].mean(1).numpy().round(3))

# %% [markdown]
# ## A site with no automatic update
#
# Some sites get no update at all: a discrete site with unbounded support, such as a latent
# Poisson count, cannot be enumerated and has no conjugate draw. The plan marks it
# **unsupported** and says why, and `fit_gibbs` stops with a `ValueError` naming it (and
# saying how to pass a block) rather than sampling something else.

# %%
def noisy_counts(y):
    rate = pyro.sample("rate", dist.Gamma(torch.tensor(2.0), 0.5))
    with pyro.plate("days", len(y)):
        n = pyro.sample("n", dist.Poisson(rate))
        pyro.sample("y", dist.Normal(n, 1.0), obs=y)


readings = torch.tensor([3.2, 4.9, 2.1, 4.0])
print(plan(noisy_counts, readings))
try:
    fit_gibbs(noisy_counts, readings, num_chains=1, **settings)
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# ## A hidden Markov model gets forward-filtering backward-sampling
#
# Write the chain of hidden states with `pyro.markov`, as for Pyro's enumeration, and the plan
# gives the whole chain `z_0 .. z_{T-1}` one **ffbs** block: it reads the transition and
# emission potentials off the program and draws all the states jointly, which mixes far
# better than updating one state at a time. The rows of the transition matrix and the state
# means are conjugate as before.

# %%
num_steps = size(80, 15)
switch = torch.tensor([[0.9, 0.1], [0.15, 0.85]])
states = [0]
for _ in range(num_steps - 1):
    states.append(int(torch.multinomial(switch[states[-1]], 1, generator=gen)))
true_states = torch.tensor(states)
series = torch.tensor([-1.0, 1.5])[true_states] + 0.7 * torch.randn(num_steps, generator=gen)


def hmm(y, num_states=2):
    with pyro.plate("states", num_states):
        trans = pyro.sample("trans", dist.Dirichlet(torch.ones(num_states)))
        locs = pyro.sample("locs", dist.Normal(torch.tensor(0.0), 3.0))
    z = 0
    for t in pyro.markov(range(len(y))):
        z = pyro.sample(f"z_{t}", dist.Categorical(trans[z]))
        pyro.sample(f"y_{t}", dist.Normal(locs[z], 0.7), obs=y[t])


print(plan(hmm, series))

# %%
hmm_post = fit_gibbs(hmm, series, num_samples=size(200, 4), warmup=size(50, 2), num_chains=1,
                     seed=0, progress=False, diagnostic_warnings=not SMOKE_TEST)
# Label-invariant: the probability that step t is in the state with the higher mean.
z_draws = torch.stack([hmm_post.samples[f"z_{t}"] for t in range(num_steps)], -1)
high = hmm_post.samples["locs"].argmax(-1, keepdim=True)
prob_high = (z_draws == high).double().mean((0, 1))
agreement = ((prob_high > 0.5).long() == true_states).double().mean()
print(f"steps whose more probable state is the simulated one: {float(agreement):.2f}")

# %%
fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 4.5), sharex=True)
top.plot(series.numpy(), color="grey", lw=0.8)
top.set_ylabel("y")
top.set_title("the series and the posterior of its hidden state")
bottom.plot(prob_high.numpy(), label="posterior")
bottom.plot(true_states.numpy(), ls=":", color="black", label="simulated")
bottom.set_xlabel("step t")
bottom.set_ylabel("P(high state)")
bottom.legend(loc="upper right", fontsize="small")
show(fig)

# %% [markdown]
# ## Where next
#
# * [Automatic Gibbs sampling of your own Pyro model](../guides/automatic-gibbs.md): how each
#   update is found and verified, and what is not covered yet.
# * [Writing a Gibbs block](../guides/writing-a-gibbs-block.md): blocks with a `log_density`,
#   checked by condition-and-score and Geweke's test.
# * Tutorial `06_from_pyro_mcmc_in_five_minutes.py`: the same kind of plain Pyro function on
#   NUTS and SVI, with the full `InferenceData`.
