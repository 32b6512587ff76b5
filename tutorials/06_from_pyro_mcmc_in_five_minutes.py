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
# # From `pyro.infer.MCMC` to pyromodels in five minutes
#
# You already have a Pyro model and fit it with `MCMC(NUTS(model))`. This tutorial takes that
# model as it is, a plain Pyro function, and runs it on pyromodels' engines with Pyro's own
# calling convention: the program's arguments go to the engine as they go to `MCMC.run`. You
# will
#
# 1. fit eight schools (non-centred) with `pyro.infer.MCMC`, as you know it;
# 2. fit the same function with `run_nuts(model, sigma, y=y, ...)` and
#    `run_svi(model, None, sigma, y=y, ...)`;
# 3. get the full `InferenceData` (posterior, log-likelihood, observed data, posterior
#    predictive) and use it with `az.loo` and `az.plot_ppc`;
# 4. see the `SamplingWarning` that the centred version raises, and how to silence it;
# 5. fit a Poisson change-point model whose change year is discrete and summed out by NUTS.
#
# **Prerequisites.** Pyro's `pyro.sample`, `pyro.plate` and `MCMC`. The guide
# [using with plain Pyro](../guides/using-with-plain-pyro.md) has the details.
#
# **Running it.** As a script, `python tutorials/06_from_pyro_mcmc_in_five_minutes.py`, or as
# a notebook after `python -m jupytext --to ipynb` on it. With `SMOKE_TEST=1` every run is
# shortened; the numbers it prints are then rough.

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
from pyro.infer import MCMC, NUTS

from pyromodels.core import SamplingWarning, run_nuts, run_svi
from pyromodels.notebook import show, sizes, start_session

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
size = sizes(SMOKE_TEST)  # size(full, smoke): full normally, smoke when SMOKE_TEST

torch.set_default_dtype(torch.float64)
start_session()  # readable pandas tables, and the versions this ran with

# %% [markdown]
# ## Your model, as you wrote it
#
# Eight schools (Rubin 1981): the estimated effect `y` of coaching in each school and its
# standard error `sigma`. The non-centred form draws standardised effects `eta` and scales
# them, which keeps the geometry easy for NUTS when `tau` is small.

# %%
y = torch.tensor([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
sigma = torch.tensor([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools(sigma, y=None):
    mu = pyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = pyro.sample("tau", dist.HalfCauchy(5.0))
    with pyro.plate("schools", sigma.shape[0]):
        eta = pyro.sample("eta", dist.Normal(0.0, 1.0))
        theta = pyro.deterministic("theta", mu + tau * eta)
        return pyro.sample("y", dist.Normal(theta, sigma), obs=y)


# %% [markdown]
# ## `pyro.infer.MCMC`, as you know it

# %%
pyro.set_rng_seed(0)
mcmc = MCMC(NUTS(eight_schools), num_samples=size(500, 30), warmup_steps=size(500, 30),
            num_chains=1, disable_progbar=True)
mcmc.run(sigma, y=y)
print("posterior mean of mu (Pyro MCMC):", round(float(mcmc.get_samples()["mu"].mean()), 2))

# %% [markdown]
# ## The same function on pyromodels' NUTS
#
# `run_nuts` takes the program's arguments exactly as `mcmc.run` did. Its own settings
# (`num_samples`, `num_chains`, `seed`, ...) are keyword-only names; every other keyword goes to
# your function, and a misspelt setting is a `TypeError` rather than an ignored argument. The
# chains are seeded from `seed`, so the run is reproducible, and every site comes back shaped
# `(chain, draw) + site shape`.
#
# After the fit, the engine checks its own diagnostics (R-hat, effective sample size,
# divergences, E-BFMI) and emits a `SamplingWarning` when the draws should not be trusted yet;
# the smoke run's chains are far too short for that, so it turns the check off there.

# %%
post = run_nuts(eight_schools, sigma, y=y, num_samples=size(1000, 30),
                num_warmup=size(1000, 30), num_chains=size(4, 2), seed=0, progress=False,
                diagnostic_warnings=not SMOKE_TEST)
print({name: tuple(post[name].shape) for name in ("mu", "tau", "eta")})
print("posterior mean of mu (run_nuts):", round(float(post.mean("mu")), 2))

# %% [markdown]
# ## And on SVI
#
# `run_svi` takes the guide after the program, as `SVI(model, guide, ...)` does; `None` picks
# an autoguide for you and names it in `attrs["guide"]`. The draws of the fitted guide come back
# as one chain, with the same shapes as the NUTS draws.

# %%
approx = run_svi(eight_schools, None, sigma, y=y, num_steps=size(2000, 50),
                 num_samples=size(1000, 50), seed=0, progress=False)
print("guide:", approx.attrs["guide"])
print({name: tuple(approx[name].shape) for name in ("mu", "tau", "eta")})
print("posterior mean of mu (run_svi):", round(float(approx.mean("mu")), 2))

# %% [markdown]
# ## The full InferenceData
#
# The posterior knows your function and its arguments, so `to_inference_data()` can score each
# observation under every draw (`log_likelihood`) and simulate replicated data from the same
# program (`posterior_predictive`), beside `posterior` and `observed_data`. That is what
# `az.loo` and `az.plot_ppc` need; `az.from_pyro(mcmc)` would give you the posterior, and you
# would write the rest yourself.

# %%
idata = post.to_inference_data()
print(idata.groups())
# ArviZ warns when a Pareto k exceeds its threshold for this many draws; the k values are
# printed below instead (above 0.7, that school's LOO estimate is unreliable).
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Estimated shape parameter of Pareto")
    loo = az.loo(idata, pointwise=True)
print(f"elpd_loo = {loo.elpd_loo:.1f} (se {loo.se:.1f}), p_loo = {loo.p_loo:.1f}")
print("Pareto k per school:", loo.pareto_k.values.round(2))

# %%
ax = az.plot_ppc(idata, num_pp_samples=size(100, 20), random_seed=0)
ax.set_xlabel("estimated coaching effect y")
ax.set_ylabel("density")
ax.set_title("eight schools: posterior predictive check")
show(ax.figure)

# %% [markdown]
# ## The centred version, and its warning
#
# Written centred, `theta ~ Normal(mu, tau)` directly, the posterior has a funnel: where `tau`
# is small, `theta` is squeezed towards `mu` and NUTS's step size is too large for the neck.
# The engine tells you so with one `SamplingWarning` listing what it found (divergences, low
# effective sample size, ...). Here we record it with `warnings.catch_warnings` and print it.

# %%
def eight_schools_centred(sigma, y=None):
    mu = pyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = pyro.sample("tau", dist.HalfCauchy(5.0))
    with pyro.plate("schools", sigma.shape[0]):
        theta = pyro.sample("theta", dist.Normal(mu, tau))
        return pyro.sample("y", dist.Normal(theta, sigma), obs=y)


centred_settings = dict(num_samples=size(500, 30), num_warmup=size(500, 30),
                        num_chains=size(4, 2), seed=0, progress=False)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", SamplingWarning)
    centred = run_nuts(eight_schools_centred, sigma, y=y, **centred_settings)
found = [w for w in caught if issubclass(w.category, SamplingWarning)]
print(f"{len(found)} SamplingWarning:")
for w in found:
    print(w.message)

# %% [markdown]
# Once you have read the warning and know what you are doing (a quick look, a benchmark of
# short chains), `diagnostic_warnings=False` silences it. The cure for the funnel itself is the
# non-centred form above.

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", SamplingWarning)
    quick_look = {**centred_settings, "num_samples": size(100, 30), "num_warmup": size(100, 30)}
    run_nuts(eight_schools_centred, sigma, y=y, diagnostic_warnings=False, **quick_look)
print("SamplingWarnings with diagnostic_warnings=False:",
      sum(issubclass(w.category, SamplingWarning) for w in caught))

# %% [markdown]
# ## A discrete latent: a Poisson change point
#
# Yearly counts whose rate drops from `early` to `late` in an unknown year `switch`. With
# `pyro.infer.MCMC` you would enumerate `switch` yourself or leave it out of NUTS. Mark it
# `infer={"enumerate": "parallel"}` and `run_nuts` sums it out exactly while sampling the rates,
# then draws `switch` from its conditional posterior given each draw, so it comes back with the
# other sites, shaped `(chain, draw)`.

# %%
years = 60
gen = torch.Generator().manual_seed(3)
counts = torch.poisson(torch.where(torch.arange(years) < 24, 4.0, 1.0), generator=gen)


def change_point(counts):
    n = counts.shape[0]
    early = pyro.sample("early", dist.Exponential(0.5))
    late = pyro.sample("late", dist.Exponential(0.5))
    switch = pyro.sample("switch", dist.Categorical(logits=torch.zeros(n)),
                         infer={"enumerate": "parallel"})
    with pyro.plate("years", n):
        # `switch` broadcasts against the years, enumerated or not
        rate = torch.where(torch.arange(n) < switch, early, late)
        return pyro.sample("counts", dist.Poisson(rate), obs=counts)


cp = run_nuts(change_point, counts, num_samples=size(500, 30), num_warmup=size(300, 30),
              num_chains=size(4, 2), seed=0, progress=False, diagnostic_warnings=not SMOKE_TEST)
print({name: tuple(cp[name].shape) for name in ("early", "late", "switch")})
print(f"posterior mean rates: early {float(cp.mean('early')):.2f}, "
      f"late {float(cp.mean('late')):.2f}")
print(f"simulated with rates 4 and 1 and the switch in year 24; the counts average "
      f"{float(counts[:24].mean()):.2f} before it and {float(counts[24:].mean()):.2f} after")

# %%
switch_prob = torch.bincount(cp["switch"].flatten(), minlength=years) / cp["switch"].numel()
fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 4.5), sharex=True)
top.bar(range(years), counts.numpy(), color="grey")
top.set_ylabel("count")
top.set_title("yearly counts and the posterior of the change point")
bottom.bar(range(years), switch_prob.numpy())
bottom.set_xlabel("year")
bottom.set_ylabel("P(switch = year)")
show(fig)

# %% [markdown]
# ## Where next
#
# * [Using with plain Pyro](../guides/using-with-plain-pyro.md): Gibbs blocks for your own
#   function, `Predictive` on a fitted posterior, and the library's models on Pyro's tools.
# * [Diagnostics with ArviZ](../guides/diagnostics-with-arviz.md): what the `SamplingWarning`
#   checks and how to read it.
# * Tutorial `00_write_your_own_model.py`: a model of your own as a `Model` class, with EM and
#   a checked Gibbs sweep.
