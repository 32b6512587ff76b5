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
# # Dirichlet process mixtures: truncation vs the infinite model, three samplers, and label-invariant diagnostics
#
# A Dirichlet process (DP) mixture is a mixture with **no fixed number of components**: the
# data decide how many clusters they need, and a new point can always open a new one. It is
# the model under DPM and DDPM (Deep Dirichlet Process Mixture Models). In this tutorial you
# will
#
# 1. write the DP mixture with an isotropic Normal-Gamma base as a small Pyro program by hand,
#    seating the points one by one in a Chinese restaurant, and check it against the library's
#    `pyromodels.ddpm.dp_mixture_crp` and `DPMixture`;
# 2. meet the truncated stick-breaking form (`pyromodels.bnp.truncated_dp_mixture`) and
#    compute exactly what truncation costs, next to the bound you would use in practice;
# 3. run three samplers on the same small data set, Neal's Algorithms 2 and 3 and the blocked
#    sampler of the truncated model, and time them;
# 4. diagnose them with **label-invariant** statistics (the number of clusters $K$, the log
#    joint, sorted cluster sizes, the co-clustering matrix) and ArviZ trace and rank plots and
#    R-hat across chains, and see why the raw cluster names are useless for that;
# 5. check all three samplers against the **exact posterior over set partitions** of five
#    points;
# 6. see what the DDPM paper's misprinted eq. 24 does to $K$.
#
# **Prerequisites.** Tutorial `00_write_your_own_model.py` (Pyro programs, `poutine`, Gibbs
# sampling, label switching); what a posterior distribution is.
#
# **Running it.** As a script, `python tutorials/04_dirichlet_process_mixtures.py`, or as a
# notebook after `python -m jupytext --to ipynb tutorials/04_dirichlet_process_mixtures.py`.
# With `SMOKE_TEST=1` every chain is shorter and the whole file runs in well under a minute;
# the numbers it prints are then rough.

# %%
# Figures show in the notebook whatever MPLBACKEND says (a comment when run as a script).
# %matplotlib inline
import math
import os
import time

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pyro
import pyro.distributions as dist
import torch
from pyro import poutine

from pyromodels import diagnostics, testing
from pyromodels.bnp import (
    BlockedState,
    assignment_log_probs,
    blocked_init,
    blocked_labels,
    blocked_log_joint,
    blocked_sweep,
    collapsed_log_joint,
    crp_expected_clusters,
    crp_log_prob,
    exact_partition_posterior,
    init_state,
    new_cluster_log_predictive,
    partition_frequencies,
    partition_key,
    run_chain,
    set_partitions,
    total_variation,
    truncated_dp_mixture,
)
from pyromodels.ddpm import (
    DPMixture,
    DPMixturePrior,
    dp_mixture_crp,
    state_values,
)
from pyromodels.notebook import show, sizes, start_session

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
size = sizes(SMOKE_TEST)  # size(full, smoke): full normally, smoke when SMOKE_TEST


# Every tensor here is float64: the checks compare log densities to rounding error.
torch.set_default_dtype(torch.float64)
# The tensors are tiny: one thread avoids the cost of spreading each operation out.
torch.set_num_threads(1)
start_session()  # readable pandas tables, and the versions this ran with

# %% [markdown]
# ## Part 1: the Chinese restaurant, by hand
#
# ### The story
#
# $N$ points $z_1, \dots, z_N$ in $d$ dimensions. The DP mixture with concentration $\alpha$
# and base measure $G_0$ is easiest to write as a **Chinese restaurant process** (CRP): the
# points arrive one at a time, and point $i$ sits at an occupied table $k$ (joins cluster
# $k$, which already holds $n_k$ points) or at a new table,
#
# $$
# P(c_i = k \mid c_{<i}) = \frac{n_k}{i - 1 + \alpha}, \qquad
# P(c_i = \text{new} \mid c_{<i}) = \frac{\alpha}{i - 1 + \alpha}
# \qquad \text{(DDPM paper, eq. 8)}.
# $$
#
# A new table gets its own parameters from the base measure, here the isotropic
# **Normal-Gamma** $G_0 = \mathrm{NG}(\mu_0, \kappa_0, \alpha_0, \beta_0)$ (eq. 7), and each
# point is a Gaussian draw around its table's mean:
#
# $$
# \begin{aligned}
# \lambda_k &\sim \mathrm{Gamma}(\alpha_0, \text{rate } \beta_0), &
# \mu_k \mid \lambda_k &\sim \mathcal N\big(\mu_0, (\kappa_0 \lambda_k)^{-1} I_d\big), &
# z_i \mid c, \mu, \lambda &\sim \mathcal N\big(\mu_{c_i}, \lambda_{c_i}^{-1} I_d\big).
# \end{aligned}
# $$
#
# The number of clusters $K$ is random and grows like $\alpha \log N$:
# $E[K] = \sum_{i=1}^N \alpha / (\alpha + i - 1)$. The probability of a whole seating
# (the exchangeable partition probability function) depends only on the table sizes,
# $p(c) = \alpha^K \frac{\Gamma(\alpha)}{\Gamma(\alpha + N)} \prod_k \Gamma(n_k)$, so the
# order in which the points arrive does not matter.
#
# ### The program
#
# Written as Pyro, the story is a Python loop with one `pyro.sample` per decision: the
# number of sample sites depends on the draw (a new table adds a `lam_k` and a `mu_k`), which
# is exactly what a fixed-size plate cannot express. The seating and parameter sites are
# named as in the library's program, so that each program can score the other's draws.

# %%
def crp_mixture(num_points, hyper, dim, z=None):
    """DP mixture by sequential CRP seating. ``hyper`` is a ``DPMixturePrior``."""
    mu0 = torch.full((dim,), float(hyper.mu0))
    alpha0, beta0 = torch.tensor(hyper.alpha0), torch.tensor(hyper.beta0)
    counts, mus, lams = [], [], []
    points = []
    for i in range(num_points):
        weights = torch.tensor(counts + [hyper.alpha]) / (i + hyper.alpha)
        c = int(pyro.sample(f"c_{i}", dist.Categorical(weights)))
        if c == len(counts):  # a new table: draw its parameters from the base measure
            lam = pyro.sample(f"lam_{c}", dist.Gamma(alpha0, beta0))
            mus.append(pyro.sample(f"mu_{c}", dist.Normal(mu0, (hyper.kappa0 * lam).rsqrt())
                                   .to_event(1)))
            lams.append(lam)
            counts.append(0)
        counts[c] += 1
        obs = None if z is None else z[i]
        points.append(pyro.sample(f"z_{i}", dist.Normal(mus[c], lams[c].rsqrt()).to_event(1),
                                  obs=obs))
    return torch.stack(points)


hyper = DPMixturePrior(mu0=0.0, kappa0=0.1, alpha0=2.0, beta0=1.0, alpha=1.0)
pyro.set_rng_seed(0)
trace = poutine.trace(crp_mixture).get_trace(12, hyper, 2)
labels = torch.stack([trace.nodes[f"c_{i}"]["value"] for i in range(12)])
print("seating of 12 points:", labels.tolist())

# %% [markdown]
# **The same joint as the library's program.** `pyromodels.ddpm.dp_mixture_crp` tells the same
# story with the observations in one plate at the end. Condition it on our draw (the
# seating, the cluster parameters and the points) and score it: the two log joints must be
# equal. `DPMixture.complete_log_joint` is the closed form of the same number (eqs. 16-19),
# written without Pyro.

# %%
draw = {name: site["value"] for name, site in trace.nodes.items() if site["type"] == "sample"}
z12 = torch.stack([draw.pop(f"z_{i}") for i in range(12)])
ours = trace.log_prob_sum()
theirs = poutine.trace(poutine.condition(dp_mixture_crp, data=draw)).get_trace(
    12, 2, hyper, z12).log_prob_sum()
k12 = int(labels.max()) + 1
mu12 = torch.stack([draw[f"mu_{k}"] for k in range(k12)])
lam12 = torch.stack([draw[f"lam_{k}"] for k in range(k12)])
closed = DPMixture(hyper).complete_log_joint(z12, labels, mu12, lam12)
for name, value in (("hand-written", ours), ("library", theirs), ("closed form", closed)):
    print(f"{name:>12}: {float(value):.10f}")
assert torch.allclose(ours, theirs, atol=1e-10) and torch.allclose(ours, closed, atol=1e-10)
# state_values turns (labels, mu, lam) into the program's site values, for any labelling
assert set(state_values(labels, mu12, lam12)) == set(draw)

# %% [markdown]
# **The prior on $K$.** Simulate the hand-written program many times and compare the mean
# number of tables with $E[K]$. The tolerance is five Monte Carlo standard errors
# (`testing.assert_mc_mean`), so a correct program fails about once in two million runs.

# %%
def num_tables(trace):
    return 1 + max(int(s["value"]) for n, s in trace.nodes.items() if n.startswith("c_"))


pyro.set_rng_seed(1)
ks = torch.tensor([float(num_tables(poutine.trace(crp_mixture).get_trace(20, hyper, 2)))
                   for _ in range(size(2000, 300))])
print(f"mean K over {len(ks)} draws: {float(ks.mean()):.3f}; "
      f"exact E[K] = {crp_expected_clusters(20, hyper.alpha):.3f}")
testing.assert_mc_mean(ks.unsqueeze(-1), [crp_expected_clusters(20, hyper.alpha)])

# %% [markdown]
# `DPMixture` wraps the library's program as a model class: `simulate` draws from the story
# through a `torch.Generator` (no global random state), and the sampler drivers of the DDPM
# family plug in from outside. Here is a larger draw from the prior, coloured by table: a
# few big clusters and a tail of small ones.

# %%
prior_draw = DPMixture(hyper).simulate(300, torch.Generator().manual_seed(4), dim=2)
print(f"{prior_draw.num_clusters} clusters, sizes "
      f"{torch.bincount(prior_draw.labels).sort(descending=True).values.tolist()}")
fig, ax = plt.subplots(figsize=(4.5, 4))
ax.scatter(prior_draw.z[:, 0], prior_draw.z[:, 1], c=prior_draw.labels, s=8, cmap="tab20")
ax.set(xlabel="z[:, 0]", ylabel="z[:, 1]", title="300 points from the DP mixture prior")
show(fig)

# %% [markdown]
# ## Part 2: the truncated stick-breaking form
#
# The DP has a second description (Sethuraman's stick breaking): break a unit stick at
# $v_1 \sim \mathrm{Beta}(1, \alpha)$, break the rest at $v_2$, and so on; the pieces
# $\pi_k = v_k \prod_{j<k} (1 - v_j)$ are the weights of infinitely many components drawn
# from $G_0$, and each point picks a component with probability $\pi_k$. **Truncation**
# keeps $T$ components by setting $v_T = 1$: the last one takes all the remaining stick.
# With a fixed number of sites the model fits in plates, and a sampler can update every
# label at once (the blocked sampler below). `truncated_dp_mixture` is that program:

# %%
prior = hyper.normal_gamma(2)  # the base measure as a pyromodels.conjugate.NormalGamma
trace = poutine.trace(truncated_dp_mixture).get_trace(None, prior, hyper.alpha, 6, num_points=10)
trace.compute_log_prob()
print(trace.format_shapes())

# %% [markdown]
# As in Part 1, the program and the library's closed form must agree: `blocked_log_joint`
# scores a `BlockedState` (labels, sticks with $v_T = 1$, component parameters) without Pyro.

# %%
site = {name: trace.nodes[name]["value"] for name in ("v", "lam", "mu", "c", "z")}
state6 = BlockedState(labels=site["c"], v=torch.cat([site["v"], torch.ones(1)]), mu=site["mu"],
                      lam=site["lam"], alpha=torch.tensor(hyper.alpha))
print(f"program {float(trace.log_prob_sum()):.10f}, "
      f"blocked_log_joint {float(blocked_log_joint(site['z'], state6, prior)):.10f}")
assert torch.allclose(trace.log_prob_sum(), blocked_log_joint(site["z"], state6, prior), atol=1e-10)

# %% [markdown]
# ### What truncation costs
#
# Couple the two models: the same sticks $v_1..v_{T-1}$ and the same uniform per point.
# They seat every point alike unless some point lands beyond stick $T - 1$, where the
# untruncated model goes on breaking and the truncated one stops. The leftover stick after
# $T - 1$ breaks has mean $E[\prod_{j<T}(1 - v_j)] = (\alpha / (1 + \alpha))^{T-1}$, so the
# total variation distance between the two laws of the partition (and hence of the data) is
# at most
#
# $$ \epsilon(N, \alpha, T) = N \left(\frac{\alpha}{1 + \alpha}\right)^{T-1}. $$
#
# (Ishwaran and James (2001) give the approximation $4 N e^{-(T-1)/\alpha}$ for the
# $L_1$ distance, accurate for large $\alpha$.) For five points we can compute the exact
# distance: under the truncated prior, a labelling with $m_k$ points in component $k$ has
# probability $E[\prod_k \pi_k^{m_k}] = \prod_{k<T} B(1 + m_k, \alpha + m_{>k}) / B(1, \alpha)$
# (with $m_{>k} = \sum_{j>k} m_j$), and summing over the $T^5$ labellings of each partition gives
# its probability, to compare with the CRP's.

# %%
def truncated_partition_prior(n, alpha, T):
    """Exact law of the partition of ``n`` points under the prior truncated at ``T`` sticks."""
    every = torch.cartesian_prod(*[torch.arange(T)] * n)  # all T^n labellings
    m = torch.nn.functional.one_hot(every, T).sum(1).double()  # (T^n, T) counts
    beyond = m.sum(1, keepdim=True) - m.cumsum(1)  # m_{>k}
    a, b = 1.0 + m[:, :-1], alpha + beyond[:, :-1]
    log_beta_1a = -math.log(alpha)  # log B(1, alpha)
    logp = (torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b) - log_beta_1a).sum(1)
    law = {}
    for row, p in zip(every, logp.exp().tolist()):
        key = partition_key(row)
        law[key] = law.get(key, 0.0) + p
    return law


n5, alpha = 5, hyper.alpha
crp_law = {p: math.exp(float(crp_log_prob(torch.bincount(torch.tensor(p)), alpha)))
           for p in set_partitions(n5)}
rows = []
for T in range(2, 8):
    law = truncated_partition_prior(n5, alpha, T)
    assert abs(sum(law.values()) - 1.0) < 1e-12
    rows.append({"T": T, "exact TV": total_variation(law, crp_law),
                 "bound N (a/(1+a))^(T-1)": n5 * (alpha / (1 + alpha)) ** (T - 1)})
truncation = pd.DataFrame(rows).set_index("T")
print(truncation.to_string(float_format="{:.2e}".format))
assert (truncation["exact TV"] <= truncation["bound N (a/(1+a))^(T-1)"]).all()

fig, ax = plt.subplots(figsize=(5, 3))
ax.semilogy(truncation.index, truncation["exact TV"], "o-", label="exact TV (N = 5)")
ax.semilogy(truncation.index, truncation["bound N (a/(1+a))^(T-1)"], "s--", label="bound")
ax.set_xlabel("truncation T")
ax.set_ylabel("TV to the DP prior")
ax.legend(frameon=False)
show(fig)

# %% [markdown]
# The bound is loose (by a factor of 6 to 25 here) but easy to use: pick $T$ so that
# $\epsilon(N, \alpha, T)$ is below the error you accept. It grows only logarithmically in
# $N$ and is tiny for the paper's concentrations ($\alpha = 10^{-5}$ for MNIST):

# %%
def truncation_needed(n, alpha, eps=1e-3):
    """Smallest T with N (alpha / (1 + alpha))^(T-1) <= eps."""
    return 1 + math.ceil(math.log(n / eps) / math.log((1 + alpha) / alpha))


print(pd.DataFrame({f"alpha = {a:g}": {f"N = {n}": truncation_needed(n, a)
                                       for n in (100, 10_000, 70_000)}
                    for a in (1e-5, 1.0, 5.0)}))

# %% [markdown]
# ## Part 3: three samplers on the same data
#
# The data: 80 points in the plane from three groups of unequal size. The prior is the
# `hyper` above ($\kappa_0 = 0.1$, so the cluster means may lie far from the origin;
# $\lambda_k$ of mean $\alpha_0 / \beta_0 = 2$; $\alpha = 1$).

# %%
gen = torch.Generator().manual_seed(3)
truth = torch.arange(3).repeat_interleave(torch.tensor([40, 25, 15]))
centres = torch.tensor([[-3.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
z = centres[truth] + 0.7 * torch.randn(len(truth), 2, generator=gen)
fig, ax = plt.subplots(figsize=(4.5, 4))
ax.scatter(z[:, 0], z[:, 1], c=truth, s=10, cmap="viridis")
ax.set(xlabel="z[:, 0]", ylabel="z[:, 1]", title="the data, coloured by the group it came from")
show(fig)

# %% [markdown]
# The three samplers (all in `pyromodels.bnp`, all drawing through a `torch.Generator`):
#
# | sampler | state | one sweep |
# |---------|-------|-----------|
# | Neal's **Algorithm 2** (`sweep`/`run_chain`, `algorithm="alg2"`, the paper's) | labels and $(\mu_k, \lambda_k)$ of the occupied clusters | each point in turn: join cluster $k$ with weight $n_{-i,k}\, \mathcal N(z_i \mid \mu_k, \lambda_k^{-1} I)$ or a new one with weight $\alpha\, m(z_i)$ (eqs. 23-24); then redraw every $(\mu_k, \lambda_k)$ from its posterior (eq. 22) |
# | Neal's **Algorithm 3** (`algorithm="alg3"`) | labels only | the same pass with the parameters integrated out: cluster $k$'s weight uses its Student-t posterior predictive |
# | **blocked** Gibbs (`blocked_init`, `blocked_sweep`) | labels, sticks $v$, all $T$ components | draw all $(\mu_k, \lambda_k)$, then all $v_k$, then **all labels at once**: vectorised, but for the truncated model |
#
# $m(z_i)$ is the prior predictive of one point under $G_0$, a Student-t (eq. 24, corrected:
# see Part 6). Algorithms 2 and 3 run the point loop in compiled numba code (a torch
# fallback, `backend="torch"`, gives the same chain for one seed); the blocked sampler is
# plain torch, so it also runs on a GPU.
#
# We run four chains of each from deliberately poor starts (everything in one cluster for
# Neal's samplers, random labels over three components for the blocked one), and record the
# labels after every sweep.

# %%
num_chains, num_warmup, num_samples = 4, size(200, 40), size(1500, 150)
T = 20  # truncation: epsilon(80, 1, 20) = 80 * 2^-19 = 1.5e-4


def run_neal(algorithm, seed):
    g = torch.Generator().manual_seed(seed)
    state = init_state(z, [0] * len(z), prior, g, algorithm=algorithm)
    run_chain(z, state, prior, hyper.alpha, g, num_warmup, algorithm=algorithm)
    return run_chain(z, state, prior, hyper.alpha, g, num_samples, algorithm=algorithm,
                     keep_labels=True).labels


def run_blocked(seed):
    g = torch.Generator().manual_seed(seed)
    state = blocked_init(z, 3, prior, hyper.alpha, T, g)
    draws, mu_first = [], []
    for t in range(num_warmup + num_samples):
        state = blocked_sweep(z, state, prior, g)
        if t >= num_warmup:
            draws.append(state.labels)
            mu_first.append(state.mu[0, 0])  # x-coordinate of the first stick's component
    return torch.stack(draws), torch.stack(mu_first)


for algorithm in ("alg2", "alg3"):  # load the compiled passes before timing
    g = torch.Generator().manual_seed(0)
    run_chain(z, init_state(z, [0] * len(z), prior, g, algorithm=algorithm), prior,
              hyper.alpha, g, 1, algorithm=algorithm)
chains, seconds = {}, {}
for name in ("alg2", "alg3", "blocked"):
    start = time.perf_counter()
    if name == "blocked":
        out = [run_blocked(100 + c) for c in range(num_chains)]
        chains[name] = torch.stack([labels for labels, _ in out])
        mu_first = torch.stack([m for _, m in out])
    else:
        chains[name] = torch.stack([run_neal(name, 100 + c) for c in range(num_chains)])
    seconds[name] = time.perf_counter() - start
    sweeps = num_chains * (num_warmup + num_samples)
    print(f"{name:>8}: {1e3 * seconds[name] / sweeps:.3f} ms per sweep, labels "
          f"{tuple(chains[name].shape)} (chain, draw, point)")

# %% [markdown]
# On this CPU and these 80 points the collapsed Algorithm 3 is the fastest: its numba pass
# keeps per-cluster sums and needs no parameter draws. Algorithm 2 pays for redrawing every
# $(\mu_k, \lambda_k)$ each sweep, and the blocked sampler for computing all $N \times T$
# label probabilities with torch operations, whose fixed overhead dominates at this size. The
# blocked sampler's advantage is elsewhere: its cost is a few large tensor operations, so it
# scales to large $N$ and to a GPU, where a point-by-point loop cannot follow.
#
# ## Part 4: label switching and label-invariant diagnostics
#
# A cluster's **name** carries no information. Algorithm 2 and 3 hand out a fresh id to every
# new cluster (ids grow through the run); in the blocked sampler, which component index holds
# the left-hand group is an accident of the start and of the sticks' size-biased order. Look
# at the blocked sampler's "component 0": its mean is a different group's in different
# chains, so R-hat on it compares different things.

# %%
fig, ax = plt.subplots(figsize=(6, 2.8))
for c in range(num_chains):
    ax.plot(mu_first[c].numpy(), lw=0.6, label=f"chain {c}")
ax.set_xlabel("draw")
ax.set_ylabel("mu[0] (x coordinate)")
ax.set_title("blocked sampler: the mean of component 0")
ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
show(fig)
rhat_mu0 = float(az.rhat(az.from_dict(posterior={"mu0_x": mu_first.numpy()}))["mu0_x"])
print(f"R-hat of mu[0]: {rhat_mu0:.2f}")

# %% [markdown]
# Statistics that do not depend on the names are the right things to trace: the number of
# occupied clusters $K$, the **collapsed log joint** $\log p(c, Z)$ (the partition's
# probability with the parameters integrated out, `collapsed_log_joint`), and the sizes of the
# clusters sorted in decreasing order. We compute them for every draw of every sampler and
# build one `InferenceData` per sampler with `arviz.from_dict`, each statistic shaped
# `(chain, draw)`.

# %%
def invariant_stats(labels):
    """K, collapsed log joint and the three largest cluster sizes of each draw."""
    flat = labels.reshape(-1, labels.shape[-1])
    k, lj, top = [], [], []
    for row in flat:
        sizes = torch.bincount(row)
        sizes = sizes[sizes > 0].sort(descending=True).values
        k.append(len(sizes))
        lj.append(float(collapsed_log_joint(z, row, prior, hyper.alpha)))
        top.append(torch.nn.functional.pad(sizes[:3], (0, max(0, 3 - len(sizes)))))
    shape = labels.shape[:2]
    return {"K": torch.tensor(k).reshape(shape).numpy(),
            "log_joint": torch.tensor(lj).reshape(shape).numpy(),
            "sorted_sizes": torch.stack(top).reshape(*shape, 3).numpy()}


idatas = {name: az.from_dict(posterior=invariant_stats(labels), dims={"sorted_sizes": ["rank"]})
          for name, labels in chains.items()}
print(az.summary(idatas["alg3"], kind="all", round_to=3))

# %% [markdown]
# Trace plots of the invariant statistics: the four chains should look like one. Rank plots
# show it more sharply: pool the draws of all chains, rank them, and histogram each chain's
# ranks; for chains that sample the same distribution every histogram is flat. These
# statistics are discrete (the same partitions recur, so many draws tie), and tied draws
# would all get one average rank, a spike in every histogram. Breaking the ties at random
# keeps the ranks uniform for chains that agree, so we rank-plot a copy with a tiny random
# tie-breaker added.

# %%
for name in ("alg2", "blocked"):
    axes = az.plot_trace(idatas[name], var_names=["K", "log_joint"], compact=True)
    # ArviZ leaves the axes bare; label_trace names them (and draws K as histograms)
    fig = diagnostics.label_trace(axes, idatas[name])
    fig.suptitle(f"{name}: label-invariant statistics, {num_chains} chains")
    fig.tight_layout()
    show(fig)

def ties_broken(idata, seed=0):
    """K and the log joint plus uniform noise far below their smallest gap (1e-6)."""
    rng = np.random.default_rng(seed)
    return az.from_dict(posterior={name: idata.posterior[name].values
                                   + rng.uniform(-1e-6, 1e-6, idata.posterior[name].shape)
                                   for name in ("K", "log_joint")})


for name in ("alg3", "blocked"):
    axes = az.plot_rank(ties_broken(idatas[name]), var_names=["K", "log_joint"])
    fig = np.atleast_1d(axes).ravel()[0].figure
    fig.suptitle(f"{name}: rank plots, ties broken at random")
    fig.tight_layout()
    show(fig)

# %% [markdown]
# The comparison in numbers: time per sweep, posterior mean of $K$ and of the log joint, and
# R-hat and bulk ESS of $K$ and of the log joint across the four chains. ESS per second is
# what to compare between samplers: a cheap sweep that mixes slowly is no bargain.

# %%
rows = {}
for name, idata in idatas.items():
    rhat, ess = az.rhat(idata), az.ess(idata)
    rows[name] = {
        "ms/sweep": 1e3 * seconds[name] / (num_chains * (num_warmup + num_samples)),
        "E[K]": float(idata.posterior["K"].mean()),
        "P(K = 3)": float((idata.posterior["K"] == 3).mean()),
        "E[log joint]": float(idata.posterior["log_joint"].mean()),
        "R-hat K": float(rhat["K"]),
        "R-hat log joint": float(rhat["log_joint"]),
        "ESS/s log joint": float(ess["log_joint"]) / seconds[name],
    }
table = pd.DataFrame(rows).T
print(table.round(3))
largest = idatas["blocked"].posterior["sorted_sizes"].sel(rank=0).mean("draw")
print("blocked: mean size of the largest cluster, per chain:", largest.values.round(1))

# %% [markdown]
# All three agree on the posterior of $K$ within their Monte Carlo error, but they mix very
# differently. In a full run (1500 draws per chain) Algorithms 2 and 3 give R-hat within
# 1.01 for both statistics, while the blocked sampler's log joint has an R-hat well above
# 1.01 and an ESS per second more than a hundred times smaller than Algorithm 3's. Its trace
# and rank plots above and the per-chain size of the largest cluster show why: a chain
# sometimes splits one group over two components and keeps the split for hundreds of
# sweeps. Given the parameters, every label moves at once towards the nearer mean, so two
# components that share a group rarely give it back to one; here Algorithms 2 and 3, which
# move one point at a time, leave such splits far sooner. R-hat on a label-invariant statistic is what caught
# it; R-hat on "component 0" would have failed for the wrong reason.
#
# **The co-clustering matrix** $C_{ij} = P(c_i = c_j \mid Z)$ is the posterior probability
# that points $i$ and $j$ share a cluster. It is label-invariant, it summarises the whole
# posterior over partitions (not one "best" clustering), and every correct sampler must give
# the same one up to Monte Carlo error. `diagnostics.coclustering` takes labels shaped
# `(chain, draw, N)`.

# %%
co = {name: diagnostics.coclustering(labels) for name, labels in chains.items()}
for name in ("alg2", "blocked"):
    print(f"largest |C_alg3 - C_{name}|: {float((co['alg3'] - co[name]).abs().max()):.3f}")
show(diagnostics.plot_coclustering(co["alg3"], order=truth.argsort()))

# %% [markdown]
# The block structure shows the three groups; the pale off-diagonal band is the posterior
# probability that a few points between two groups (or a small group of stragglers) belong
# together. With a few thousand draws the largest entry-wise gap between samplers is a few
# hundredths, the Monte Carlo error of a probability estimated from a few hundred effective
# draws. A tighter check needs a problem where the right answer is known exactly.
#
# ## Part 5: checking the samplers against the exact posterior
#
# With the parameters integrated out, the posterior over partitions is
#
# $$ p(c \mid Z) \propto \alpha^K \prod_k \Gamma(n_k)\, m(Z_k), $$
#
# with $m(Z_k)$ the Normal-Gamma marginal likelihood of cluster $k$'s points; this is
# $\exp$ `collapsed_log_joint(z, c, prior, alpha)` up to the normaliser. Five points have
# only Bell(5) = 52 partitions, so we can normalise by enumeration (`set_partitions`) and
# compare a sampler's **partition frequencies** with the exact probabilities.

# %%
z5 = torch.tensor([[0.0, 0.0], [0.5, -0.3], [2.0, 1.2], [2.4, 1.5], [-1.0, 1.6]])
prior5 = DPMixturePrior(kappa0=0.5, alpha0=2.0, beta0=1.0, alpha=1.0)
ng5 = prior5.normal_gamma(2)
parts = set_partitions(5)
log_post = torch.stack([collapsed_log_joint(z5, p, ng5, prior5.alpha) for p in parts])
exact = dict(zip(parts, torch.softmax(log_post, 0).tolist()))
# the library packages these lines as bnp.exact_partition_posterior
labels_all, probs_all = exact_partition_posterior(z5, ng5, prior5.alpha)
assert all(abs(exact[tuple(row)] - float(p)) < 1e-12
           for row, p in zip(labels_all.tolist(), probs_all))
top = sorted(exact, key=exact.get, reverse=True)
print("most probable partitions:", [(p, round(exact[p], 3)) for p in top[:4]])

# %% [markdown]
# **How far is far?** A chain of $S$ draws gives frequencies $\hat p$ and a distance
# $\mathrm{TV}(\hat p, p) = \tfrac12 \sum_c |\hat p_c - p_c|$ that is never zero. Its size
# for a *correct* sampler is known: the draws are worth $S_\text{eff}$ independent ones, and
# the TV of a multinomial($S_\text{eff}$, $p$) sample can be simulated. We estimate
# $S_\text{eff}$ from batch means: split the chain into 40 batches; the variance of the batch
# frequencies of a partition, times the batch length, over $p_c (1 - p_c)$, is that
# indicator's autocorrelation time $\tau_c$; we take the largest over the likely partitions.
# The bound is the simulated mean plus five standard deviations, so a correct sampler exceeds
# it with probability of order $10^{-6}$.

# %%
def tv_and_bound(labels, exact, num_batches=40, n_sd=5.0, seed=0):
    """TV of a chain's partition frequencies to ``exact``, and its Monte Carlo bound."""
    keys = list(exact)
    p = np.array([exact[k] for k in keys])
    index = {k: j for j, k in enumerate(keys)}
    visits = np.array([index[partition_key(row)] for row in labels])
    b = len(visits) // num_batches
    taus = [1.0]
    for j in np.flatnonzero(p >= 0.02):
        batch = (visits[: b * num_batches] == j).reshape(num_batches, b).mean(1)
        taus.append(b * batch.var(ddof=1) / (p[j] * (1 - p[j])))
    n_eff = int(len(visits) / max(taus))
    sims = np.random.default_rng(seed).multinomial(n_eff, p, size=4000) / n_eff
    tv_sims = 0.5 * np.abs(sims - p).sum(1)
    bound = tv_sims.mean() + n_sd * tv_sims.std()
    return total_variation(partition_frequencies(labels), exact), bound


def chain5(name, num_sweeps, seed, alpha=prior5.alpha, paper_literal=False):
    """``(num_sweeps, 5)`` labels of one chain on ``z5``, started with every point apart."""
    g = torch.Generator().manual_seed(seed)
    if name == "blocked":
        state, out = blocked_init(z5, torch.arange(5), ng5, alpha, 20, g), []
        for _ in range(num_sweeps):
            state = blocked_sweep(z5, state, ng5, g)
            out.append(blocked_labels(state))
        return torch.stack(out)
    state = init_state(z5, torch.arange(5), ng5, g, algorithm=name)
    return run_chain(z5, state, ng5, alpha, g, num_sweeps, algorithm=name,
                     paper_literal=paper_literal, keep_labels=True).labels


long5 = {"alg2": size(8000, 1500), "alg3": size(20000, 4000), "blocked": size(8000, 1500)}
freqs, results = {}, {}
for name, num_sweeps in long5.items():
    labels5 = chain5(name, num_sweeps, seed=7)
    freqs[name] = partition_frequencies(labels5)
    tv, bound = tv_and_bound(labels5, exact)
    results[name] = {"sweeps": num_sweeps, "TV": tv, "bound": bound}
    assert tv < bound, f"{name}: TV {tv:.4f} above its Monte Carlo bound {bound:.4f}"
print(pd.DataFrame(results).T.round(4))

fig, ax = plt.subplots(figsize=(7, 3))
shown = top[:10]
x = np.arange(len(shown))
ax.bar(x - 0.3, [exact[p] for p in shown], width=0.2, color="k", label="exact")
for i, name in enumerate(long5):
    ax.bar(x - 0.1 + 0.2 * i, [freqs[name].get(p, 0.0) for p in shown], width=0.2, label=name)
ax.set_xticks(x, ["".join(map(str, p)) for p in shown], rotation=45, fontsize=8)
ax.set_xlabel("partition (canonical labels)")
ax.set_ylabel("probability")
ax.legend(frameon=False, fontsize=8)
show(fig)

# %% [markdown]
# All three samplers pass. (The blocked sampler's chain targets the truncated model, which
# differs from the DP by at most $\epsilon(5, 1, 20) = 5 \cdot 2^{-19} \approx 10^{-5}$ in TV,
# far below the Monte Carlo bound.) A check is only worth something if it can fail: the next
# part feeds it a sampler with a known error.
#
# ## Part 6: the paper's eq. 24
#
# A new cluster's weight in the assignment step is $\alpha\, m(z_i)$, with $m$ the prior
# predictive of one point under $G_0$:
#
# $$
# \log m(z) = \log\Gamma(\alpha') - \log\Gamma(\alpha_0) + \alpha_0 \log\beta_0 - \alpha' \log\beta'
#   + \tfrac{d}{2}\big(\log\kappa_0 - \log\kappa'\big) - \tfrac{d}{2}\log 2\pi,
# $$
#
# with $\kappa' = \kappa_0 + 1$, $\alpha' = \alpha_0 + d/2$,
# $\beta' = \beta_0 + \kappa_0 \|z - \mu_0\|^2 / (2\kappa')$. The paper prints
# $\tfrac12$ instead of $\tfrac{d}{2}$ in front of the $\kappa$ term, right only for $d = 1$.
# `new_cluster_log_predictive(..., paper_literal=True)` reproduces the printed version. First,
# which one is a density? Integrate both over a grid in $d = 2$.

# %%
grid = torch.linspace(-60.0, 60.0, 1201)
xy = torch.cartesian_prod(grid, grid)
cell = float(grid[1] - grid[0]) ** 2
for literal in (False, True):
    mass = float(new_cluster_log_predictive(xy, ng5, paper_literal=literal).exp().sum()) * cell
    print(f"paper_literal={literal!s:>5}: integral of m over the plane = {mass:.4f}")
print(f"sqrt(kappa'/kappa0) = {math.sqrt(1.5 / 0.5):.4f}")
shift = (new_cluster_log_predictive(z5, ng5, paper_literal=True)
         - new_cluster_log_predictive(z5, ng5))
delta = 0.5 * (2 - 1) * math.log((0.5 + 1) / 0.5)  # ((d-1)/2) log(kappa'/kappa0)
assert torch.allclose(shift, torch.full_like(shift, delta))

# %% [markdown]
# The printed version integrates to $(\kappa'/\kappa_0)^{(d-1)/2}$ instead of 1 (the grid
# misses a little of the Student-t's heavy tails). Since the extra factor is the same for
# every point, it multiplies the new-cluster weight by a constant $e^\delta$,
# $\delta = \tfrac{d-1}{2} \log(\kappa'/\kappa_0)$: the sampler then targets **the DP
# posterior with concentration $\alpha e^\delta$** instead of $\alpha$. We can see both halves
# of that statement with the exact check of Part 5: the literal chain fails against the
# posterior for $\alpha$, and passes against the one for $\alpha e^\delta$.

# %%
literal5 = chain5("alg3", long5["alg3"], seed=8, paper_literal=True)
tv, bound = tv_and_bound(literal5, exact)
print(f"paper's eq. 24 vs the posterior for alpha:         TV {tv:.3f} (bound {bound:.3f})")
assert tv > bound
alpha_inflated = prior5.alpha * math.exp(delta)
inflated = torch.stack([collapsed_log_joint(z5, p, ng5, alpha_inflated) for p in parts])
exact_inflated = dict(zip(parts, torch.softmax(inflated, 0).tolist()))
tv, bound = tv_and_bound(literal5, exact_inflated)
print(f"paper's eq. 24 vs the posterior for alpha e^delta: TV {tv:.3f} (bound {bound:.3f})")
assert tv < bound

# %% [markdown]
# At the check's level the two conditionals differ by one line of the assignment
# distribution; `assignment_log_probs` shows it for one point of a state: only the last
# entry (the new cluster) moves relative to the others, by exactly $\delta$ in log odds.

# %%
state5 = init_state(z5, [0, 0, 1, 1, 2], ng5, algorithm="alg3")
right = assignment_log_probs(z5, state5, 0, ng5, prior5.alpha, algorithm="alg3").log_probs
printed = assignment_log_probs(z5, state5, 0, ng5, prior5.alpha, algorithm="alg3",
                               paper_literal=True).log_probs
print("P(c_0 = cluster 0, 1, 2, new):\n  corrected", right.exp().numpy().round(3),
      "\n  printed  ", printed.exp().numpy().round(3))

# %% [markdown]
# In two dimensions $\delta$ is small. It grows linearly with $d$: with DDPM's MNIST preset
# $\kappa_0 = 0.3$ in $d = 10$ it is $4.5 \log(1.3/0.3) = 6.6$ nats, a factor of about 700
# on $\alpha$. On 60 points in three well separated groups in $d = 10$:

# %%
hyper10 = DPMixturePrior(kappa0=0.3, alpha0=2.0, beta0=1.0, alpha=1.0)
ng10 = hyper10.normal_gamma(10)
g10 = torch.Generator().manual_seed(5)
truth10 = torch.arange(3).repeat_interleave(20)
z10 = 3.0 * torch.eye(3, 10)[truth10] + 0.7 * torch.randn(60, 10, generator=g10)
delta10 = 4.5 * math.log(1.3 / 0.3)
k10 = {}
for literal in (False, True):
    g = torch.Generator().manual_seed(6)
    state = init_state(z10, [0] * 60, ng10, algorithm="alg3")
    out = run_chain(z10, state, ng10, hyper10.alpha, g, size(2000, 300), algorithm="alg3",
                    paper_literal=literal)
    k10["printed eq. 24" if literal else "corrected"] = out.num_clusters[size(200, 50):]
print(f"delta = {delta10:.2f} nats")
for name, ks in k10.items():
    print(f"{name:>15}: posterior mean K = {float(ks.double().mean()):.2f}, "
          f"P(K = 3) = {float((ks == 3).double().mean()):.2f}")

fig, ax = plt.subplots(figsize=(5, 2.8))
top_k = int(max(int(ks.max()) for ks in k10.values()))
bins = np.arange(0.5, top_k + 1.5)
for name, ks in k10.items():
    ax.hist(ks.numpy(), bins=bins, density=True, alpha=0.6, label=name)
ax.set_xlabel("number of clusters K")
ax.set_ylabel("posterior probability")
ax.legend(frameon=False)
show(fig)

# %% [markdown]
# With the printed formula the sampler opens many more clusters than the three groups need:
# every point pays $\delta$ nats less to start a cluster of its own. The library's samplers
# use the corrected formula; `paper_literal=True` is there to reproduce the paper's numbers
# and to measure the difference, as here.
#
# ## What next
#
# * The guide [checking a sampler against exact posteriors](../guides/checking-a-sampler-against-exact-posteriors.md)
#   turns Part 5 into a recipe for any sampler: enumeration, the TV bound, condition and
#   score for single conditionals, and Geweke's test with the likelihood switched off.
# * The tests in `tests/bnp` are the full versions of Parts 5 and 6 (six points, every
#   backend) and of the conditional checks.
# * The guide [diagnostics with ArviZ](../guides/diagnostics-with-arviz.md) covers
#   relabelling when a finite mixture's components *are* worth aligning.
#
# Exercises: put a Gamma hyperprior on $\alpha$ (`run_chain(..., alpha_prior=(1.0, 1.0))`,
# or `blocked_sweep(..., resample_alpha=(1.0, 1.0))`) and compare the posterior of $K$; rerun
# Part 5 with the blocked sampler at $T = 3$ and see the truncation error appear as a TV
# beyond the bound; time the three samplers at $N = 2000$.
