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
# # Clustering with noisy pairwise labels
#
# Crowd workers are shown two items at a time and say "same cluster" (a must link) or
# "different clusters" (a cannot link). Each worker has a sensitivity `alpha` (says "same" when
# the items share a cluster) and a specificity `beta` (says "different" when they do not). This
# tutorial clusters the Pinwheel toy of the semi-crowdsourced clustering paper from such
# judgements, with and without the points' features. You will
#
# 1. cluster the annotated points from the links alone with the pairwise worker model
#    (`PairwiseDawidSkeneEstimator`) and read each worker's weight;
# 2. sample the conjugate reference, a Bayesian Gaussian mixture on the observed points plus
#    the two-coin workers (`ObservedBayesSCDC`, Gibbs), and check it with ArviZ on quantities
#    that do not depend on the clusters' names;
# 3. fit the deep models, BayesSCDC with and without the links and SCDC, and draw their
#    clusters.
#
# **Prerequisites.** The guide [pairwise crowd clustering](../guides/pairwise-crowd-clustering.md)
# describes the models and the data format.
#
# **Running it.** As a script, `python tutorials/07_clustering_with_noisy_pairwise_labels.py`,
# or as a notebook after `python -m jupytext --to ipynb` on it. With `SMOKE_TEST=1` every fit is
# shortened; the accuracies it prints are then rough.

# %%
# Figures show in the notebook whatever MPLBACKEND says (a comment when run as a script).
# %matplotlib inline
import os

import matplotlib.pyplot as plt
import torch

from pyromodels.data import simulate_block_pairs, simulate_pinwheel
from pyromodels.metrics import clustering_accuracy
from pyromodels.notebook import show, sizes, start_session
from pyromodels.scdc import (
    SCDC,
    BayesSCDC,
    ObservedBayesSCDC,
    PairwiseDawidSkeneEstimator,
    label_invariant_summary,
)

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
size = sizes(SMOKE_TEST)  # size(full, smoke): full normally, smoke when SMOKE_TEST

torch.set_default_dtype(torch.float64)
start_session()  # readable pandas tables, and the versions this ran with

# %% [markdown]
# ## The data: a pinwheel and 20 workers
#
# Five arms of 100 points each. 100 of the 500 points are annotated: each of 20 workers gets a
# shuffled block of 50 of them and judges 49 pairs along it, right with probability 0.9 on
# both kinds of pair (`alpha = beta = 0.9`). `pairs` is a `PairwiseAnnotations` over the 500
# points; `pair_truth["annotated"]` lists the points that some worker saw.

# %%
x, truth = simulate_pinwheel(seed=0)
z = truth["z"]
pairs, pair_truth = simulate_block_pairs(z, 20, 50, annotated=100, seed=1)
print(f"{x.shape[0]} points, {pairs.num_workers} workers, {pairs.num_pairs} judgements, "
      f"{int(pairs.link.sum())} of them 'same cluster'")
links = pairs.to_frame()
links.head()

# %%
def draw_clusters(ax, labels, title):
    """Scatter the pinwheel coloured by ``labels``."""
    ax.scatter(x[:, 0], x[:, 1], c=labels, cmap="tab10", s=8)
    ax.set_xlabel("x1")
    ax.set_ylabel("x2")
    ax.set_title(title)


fig, ax = plt.subplots(figsize=(4.5, 4))
draw_clusters(ax, z, "the pinwheel's five arms")
show(fig)

# %% [markdown]
# ## 1. The links alone: the pairwise worker model
#
# `PairwiseDawidSkeneEstimator` takes the links as a DataFrame (one row per judgement: two item
# ids, a worker, a 0/1 link) and clusters the items that appear in it, learning each worker's
# two coins on the way. Its `weights_` are `logit alpha + logit beta`: 0 for a worker at
# chance, about 4.39 for one right 90% of the time. The cluster labels are arbitrary up to a
# permutation, so we score them with `clustering_accuracy`, which matches clusters to arms.

# %%
est = PairwiseDawidSkeneEstimator(5, n_init=size(5, 1), seed=0).fit(links)
seen = torch.tensor(est.labels_.index.tolist())
print(f"{len(seen)} annotated points clustered, accuracy "
      f"{clustering_accuracy(z[seen], est.labels_.to_numpy()):.3f}")
print("worker weights (true 4.39):", est.weights_.round(2).to_numpy())

# %% [markdown]
# ## 2. The conjugate reference: features observed, Gibbs sampling
#
# `ObservedBayesSCDC` treats the points themselves as observed Gaussian-mixture data and adds
# the workers' two coins. Its Gibbs sampler targets the exact posterior, which makes
# it the reference for the approximate fits below. Clusters can swap names between chains, so
# ArviZ's diagnostics are read on label-invariant quantities: the coins, the worker weights,
# the number of occupied clusters and the largest cluster's share.

# %%
observed = ObservedBayesSCDC(5)
gibbs = observed.fit(x, pairs, method="gibbs", num_chains=size(4, 2),
                     num_samples=size(500, 10), num_warmup=size(300, 10), seed=0, progress=False,
                     diagnostic_warnings=not SMOKE_TEST)
last_z = gibbs["z"][0, -1]
print(f"clustering accuracy (last draw of chain 0): {clustering_accuracy(z, last_z):.3f}")
weights = label_invariant_summary(gibbs)
weights.loc[[name for name in weights.index if name.startswith(("worker_weights", "occupied",
                                                                 "largest"))]]

# %% [markdown]
# ## 3. Deep models: BayesSCDC and SCDC
#
# BayesSCDC puts the mixture in a latent space and learns a network from points to it; the
# links pull the latent clusters together. It starts with 15 components and lets its sparse
# Dirichlet prior prune the ones it does not need. On the pinwheel it needs standardised
# features, the networks trained alone for two thirds of the run (`warmup_epochs`), after
# which the mixture restarts from the encoded points (`global_init="data"`, the default:
# k-means++ means and one coordinate-ascent step), and small steps (so the pruning after the
# restart is slow: count the clusters the points occupy, not the components with weight). SCDC is the non-Bayesian version, fitted by amortised SVI; starting the workers as
# reliable (`coin_init=0.9`) lets the links lead.
#
# A single fit of either depends a lot on its seed (its start), so each is run from a few
# seeds and the one with the lowest final loss (the negative evidence lower bound, averaged
# over the last epoch's steps) is kept: a choice made without the true arms. The accuracy of
# every seed is printed, so you can see the spread.

# %%
o = (x - x.mean(0)) / x.std()
seeds = size((0, 1, 2), (0,))


batch_size = 50
steps_per_epoch = -(-len(o) // batch_size)


def final_loss(post):
    """The mean loss over the last epoch's steps."""
    return float(torch.as_tensor(post.losses[-steps_per_epoch:]).mean())


def best_of_seeds(fit_one, predict):
    """Fit from every seed, print each accuracy, return the labels of the lowest final loss."""
    runs = [fit_one(seed) for seed in seeds]
    print("  accuracy per seed:", [round(clustering_accuracy(z, predict(post)), 3) for post in runs])
    return predict(min(runs, key=final_loss))


bayes_settings = dict(num_epochs=size(60, 2), warmup_epochs=size(40, 1), batch_size=batch_size,
                      step_size=0.01, lr=0.01, progress=False)
fits = {}
for name, given in (("BayesSCDC without links", None), ("BayesSCDC with links", pairs)):
    print(name)
    fits[name] = best_of_seeds(
        lambda seed, given=given: BayesSCDC(15, 2).fit(o, given, seed=seed, **bayes_settings),
        lambda post: post.params["cluster_probs"].argmax(-1))

scdc = SCDC(5, 2, hidden=(40, 40))
print("SCDC with links")
fits["SCDC with links"] = best_of_seeds(
    lambda seed: scdc.fit(o, pairs, num_epochs=size(200, 2), batch_size=batch_size, coin_init=0.9,
                          lr=0.003, seed=seed, progress=False),
    lambda post: scdc.predict(post, o))
for name, labels in fits.items():
    print(f"{name}, lowest-loss seed: accuracy {clustering_accuracy(z, labels):.3f}")

# %% [markdown]
# On the full run, the links mostly make the fits reliable rather than better at their best:
# without them, BayesSCDC finds the arms from some starts and merges or splits them from
# others; with them, most starts end near the arms. In smoke mode the fits are far too short
# to say anything.

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), sharex=True, sharey=True)
for ax, (name, labels) in zip(axes, fits.items()):
    draw_clusters(ax, labels, name)
show(fig)

# %% [markdown]
# ## Where next
#
# * [Pairwise crowd clustering](../guides/pairwise-crowd-clustering.md): the models, their
#   engines and the data format of the links.
# * [Diagnostics with ArviZ](../guides/diagnostics-with-arviz.md): label-invariant
#   diagnostics for mixtures.
# * `pyromodels reproduce scdc` runs the paper's protocols.
