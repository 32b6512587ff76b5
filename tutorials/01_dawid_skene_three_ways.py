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
# # Dawid-Skene three ways: EM, Gibbs and SVI on real crowd labels
#
# When many people label the same items, some of them are careful, some are careless and some
# are consistently wrong. Majority vote (MV) treats every vote alike. The Dawid-Skene model
# (Dawid & Skene 1979) instead learns one **confusion matrix** per worker and weighs each vote
# by how reliable that worker is on that kind of item. In this tutorial you will
#
# 1. write down the Dawid-Skene story in maths and read it as the library's Pyro program;
# 2. fit it to a real crowd data set where majority vote is far from perfect, with three
#    engines (EM, Gibbs sampling and SVI, plus a short NUTS run) and with the
#    scikit-learn-style facade `DawidSkeneEstimator`;
# 3. check the Gibbs chains with ArviZ (R-hat and ESS after relabelling), and see why label
#    switching almost never happens here;
# 4. compare every method's accuracy against the gold labels and look at the workers'
#    confusion matrices.
#
# **Prerequisites.** Tutorial `00_write_your_own_model.py` (the `Model` class, engines,
# `Posterior`), and the idea of a posterior distribution.
#
# **Running it.** As a script, `python tutorials/01_dawid_skene_three_ways.py`, or as a
# notebook after `python -m jupytext --to ipynb tutorials/01_dawid_skene_three_ways.py`. With
# `SMOKE_TEST=1` every iteration count shrinks and the file runs in well under a minute; the
# numbers it prints are then rough.

# %%
# Figures show in the notebook whatever MPLBACKEND says (a comment when run as a script).
# %matplotlib inline
import inspect
import os
import warnings

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from pyro import poutine

from pyromodels import diagnostics, testing
from pyromodels.core import first_available_dim
from pyromodels.crowd.ds.data import SparseWorkerWarning
from pyromodels.crowd.ds.em import log_posterior
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.crowd.estimators import DawidSkeneEstimator, MajorityVote
from pyromodels.crowd.majority import majority_vote
from pyromodels.data import AnnotationTable, load_crowd
from pyromodels.notebook import show, sizes, start_session

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
size = sizes(SMOKE_TEST)  # size(full, smoke): full normally, smoke when SMOKE_TEST


torch.set_default_dtype(torch.float64)
# The tensors here are small: one thread avoids the cost of spreading each operation out.
torch.set_num_threads(1)
start_session()  # readable pandas tables, and the versions this ran with

# %% [markdown]
# ## The story
#
# $N$ items, $M$ workers, $K$ classes. Item $n$ has an unknown true class $z_n$; worker $m$,
# shown an item of class $k$, answers $j$ with probability $\Gamma_{mkj}$. Every label is a
# row $l$ of a long table: worker $w_l$ gave label $y_l$ to item $n_l$.
#
# $$
# \begin{aligned}
# \pi &\sim \mathrm{Dirichlet}(\alpha) && \text{class prevalences} \\
# \Gamma_{mk\cdot} &\sim \mathrm{Dirichlet}(\beta_k), \quad m = 1..M,\ k = 1..K
#     && \text{row } k \text{ of worker } m\text{'s confusion matrix} \\
# z_n \mid \pi &\sim \mathrm{Categorical}(\pi), \quad n = 1..N && \text{true class} \\
# y_l \mid z, \Gamma &\sim \mathrm{Categorical}(\Gamma_{w_l, z_{n_l}, \cdot})
#     && \text{each label in the table}
# \end{aligned}
# $$
#
# **Orientation.** `confusion[m, k, j]` $= P(\text{worker } m \text{ answers } j \mid
# \text{true class } k)$: rows are the *true* class and each row sums to one. The ensemble
# paper this zoo follows (Traganitis & Giannakis) writes $\Gamma_m$ with columns as the true
# class, the transpose.
#
# Labels that a worker did not give are simply absent rows: they contribute nothing to the
# likelihood (missingness is ignorable). Summing $z_n$ out gives the marginal likelihood of
# item $n$'s labels,
#
# $$ p(y_{\cdot n} \mid \pi, \Gamma) = \sum_k \pi_k \prod_{l:\, n_l = n} \Gamma_{w_l k y_l}, $$
#
# and the posterior of its class, $q_{nk} \propto \pi_k \prod_{l:\, n_l = n} \Gamma_{w_l k y_l}$.
# This one formula is the E-step of EM, the Gibbs conditional of $z_n$, and what SVI and NUTS
# sum over.
#
# The prior: $\alpha = 1$ and $\beta_{kj} = 1 + d\,[j = k]$, where `diagonal` $= d \ge 0$
# adds $d$ pseudo-counts of "answered correctly" to every row. With $d = 0$ the MAP is the
# maximum-likelihood estimate of Dawid and Skene. We will use $d = 1$ for the Bayesian fits
# and see below what it buys.
#
# ## The Pyro program
#
# The model class is `pyromodels.crowd.ds.model.DawidSkene`. Its program is the story
# above, with one implementation detail: Pyro sums an enumerated site out per element of the
# plate it lives in, so each item's labels are observed together *inside* the item plate, as
# one masked event padded to the largest number of labels per item (`label_pad`, `mask`).

# %%
print(inspect.getsource(DawidSkene.model))

# %% [markdown]
# ## The data: bluebirds
#
# `load_crowd` ships ten classic crowd data sets with gold labels. We use **bluebirds**
# (Welinder et al. 2010): 39 workers each told which of two similar blue bird species (an
# Indigo Bunting or a Blue Grosbeak; the files code them 0 and 1) each of 108 photos shows.
# Majority vote gets only about 76% right, because several workers are consistently wrong on
# one of the species. (Two of the other sets, `product` and
# `music_genre`, have item ids that encode the gold label: never feed ids to a model. Here the
# model only ever sees integer codes.)
#
# `load_crowd` returns a long DataFrame, one row per judgement, in crowd-kit's layout
# (`task`, `worker`, `label`), and the gold labels as a Series indexed by task.
# `AnnotationTable.from_dataframe` turns the user's ids into integer codes and keeps the ids,
# so results can be handed back indexed by the user's own task ids.

# %%
answers, gold = load_crowd("bluebirds")
print(answers.head(3), "\n")
table = AnnotationTable.from_dataframe(answers)
print(table)
print("labels per item:", table.counts_per_item().unique().tolist(),
      " labels per worker:", table.counts_per_worker().unique().tolist())


def accuracy(labels) -> float:
    """Share of gold items whose predicted label (a Series indexed by task) is right."""
    return float((labels.reindex(gold.index) == gold).mean())


def as_series(codes) -> pd.Series:
    """Class codes ``(N,)`` of the table's items as a Series of class ids indexed by task."""
    return table.index_items(codes, decode=True)


mv = as_series(majority_vote(table, ties="random", seed=0))
print(f"majority vote accuracy: {accuracy(mv):.3f}")

# %% [markdown]
# Before fitting, look at the shapes Pyro sees under enumeration: `z` takes its two values in
# a new dimension left of the item plate, and the labels `y` are an `(N, S)` event of slots
# per item (here every item has all 39 labels, so there is no padding).

# %%
model = DawidSkene(diagonal=1.0)
data = model.prepare(table)
enumerated = poutine.enum(model.model, first_available_dim=first_available_dim(model.max_plate_nesting))
trace = poutine.trace(enumerated).get_trace(data)
trace.compute_log_prob()
print(trace.format_shapes())

# %% [markdown]
# ## Engine 1: EM
#
# EM alternates the E-step, $q_{nk} \propto \pi_k \prod_l \Gamma_{w_l k y_l}$, with the
# M-step, the posterior mode of $\pi$ and $\Gamma$ given the expected counts
#
# $$ \Gamma_{mkj} \propto \beta_{kj} - 1 + \sum_{l:\, w_l = m,\ y_l = j} q_{n_l k}, \qquad
#    \pi_k \propto \alpha_k - 1 + \sum_n q_{nk}. $$
#
# It starts, like crowd-kit, from one M-step on the majority-vote fractions. Its objective,
# the log joint $\log p(y, \pi, \Gamma)$ with $z$ summed out, never decreases. EM gives a
# **point estimate**: no uncertainty about $\Gamma$, only the class probabilities $q$.

# %%
em = model.fit(table, method="em", seed=0, progress=False)
testing.assert_monotone(em.losses)
print(f"EM: {em.diagnostics['n_iter']} iterations, converged: {em.diagnostics['converged']}")
print(f"EM accuracy: {accuracy(as_series(em.params['labels'])):.3f}")
print("EM class prior:", em.params["prior"].numpy().round(3))

# %% [markdown]
# ## Engine 2: Gibbs sampling
#
# Every prior is conjugate, so the blocked Gibbs sweep draws each block from its full
# conditional in closed form:
#
# * $z_n \mid \pi, \Gamma, y \sim \mathrm{Categorical}(q_n)$, independently over items;
# * $\pi \mid z \sim \mathrm{Dirichlet}(\alpha + n)$, $n_k = \#\{n: z_n = k\}$;
# * $\Gamma_{mk\cdot} \mid z, y \sim \mathrm{Dirichlet}(\beta_k + C_{mk\cdot})$, with
#   $C_{mkj}$ the number of items of class $k$ that worker $m$ labelled $j$.
#
# Here the discrete labels $z$ are an ordinary block of the sampler, drawn every sweep.

# %%
gibbs = model.fit(table, method="gibbs", num_chains=2, num_warmup=size(300, 30),
                  num_samples=size(1000, 60), seed=1, progress=False)
print(gibbs)
gibbs_probs = model.predict(gibbs, table)  # per-draw q_n, averaged over the draws
print(f"Gibbs accuracy: {accuracy(as_series(gibbs_probs.argmax(-1))):.3f}")

# %% [markdown]
# ### Label switching, and why the diagonal prior prevents it
#
# Renaming the classes (permuting the rows of every $\Gamma_m$ and the entries of $\pi$ along
# with $z$) leaves the likelihood unchanged. With a flat prior ($d = 0$) the posterior is then
# exactly symmetric: for every "good" mode there is a mirror mode in which every worker is
# worse than random and every item has the other class. A sampler that visited both would
# mix the names, and R-hat on `confusion` would measure the naming.
#
# The diagonal prior breaks the symmetry. $\mathrm{Dirichlet}(\beta_k)$ with extra mass on
# $j = k$ favours workers who mostly answer correctly, so the mirror mode, which needs most of
# the 39 workers to be worse than random, pays the prior's penalty once per worker and row.
# We can measure the penalty: the log joint at EM's estimate, and at the same estimate with
# the classes renamed.

# %%
swap = torch.tensor([1, 0])
mirror = {"prior": em.params["prior"][swap], "confusion": em.params["confusion"][:, swap, :]}
fitted = {"prior": em.params["prior"], "confusion": em.params["confusion"]}
for d in (0.0, 1.0):
    prepared = DawidSkene(diagonal=d).prepare(table)
    gap = float(log_posterior(prepared, fitted) - log_posterior(prepared, mirror))
    print(f"diagonal = {d}: log p(fit) - log p(mirror) = {gap:7.2f} nats")

# %% [markdown]
# With $d = 0$ the two are equally probable; with $d = 1$ the mirror is $e^{-\text{gap}}$ times
# less probable, so no chain ever goes there. Even with $d = 0$ a switch needs every item and
# every worker to flip at once, which a Gibbs chain essentially never does once it has settled;
# the prior makes the choice of mode principled rather than lucky.
#
# To be safe we still align every draw to EM's labelling with `diagnostics.relabel` (the
# Hungarian method on the overlap of each draw's `z` with a reference). `component_sites`
# says which axis of each site is indexed by the true class: axis 0 of `prior` and axis 1 of
# `confusion` (`(worker, true, given)`). The permutations show how often a draw was renamed.

# %%
relabelled = diagnostics.relabel(gibbs, site="z", component_sites={"prior": 0, "confusion": 1},
                                 reference=em.params["labels"])
perms = relabelled.diagnostics["relabel_permutations"]
renamed = (perms != torch.arange(table.num_classes)).any(-1).double().mean()
print(f"share of draws that relabelling renamed: {float(renamed):.3f}")

# %% [markdown]
# ### ArviZ diagnostics
#
# `to_inference_data` builds an `arviz.InferenceData`; `dims` and `coords` name the axes with
# the user's worker ids and classes. R-hat near 1 and a bulk ESS of a few hundred say the two
# chains agree and the draws are enough for posterior means. We look at the class prior and
# the confusion matrices of three workers.

# %%
dims = {"prior": ["true"], "confusion": ["worker", "true", "given"], "z": ["item"]}
coords = {"true": list(table.classes), "given": list(table.classes),
          "worker": list(table.workers), "item": list(table.items)}
idata = relabelled.to_inference_data(dims=dims, coords=coords)
some_workers = list(table.workers[:3])
print(az.summary(idata, var_names=["prior", "confusion"], coords={"worker": some_workers},
                 kind="diagnostics"))
print(az.summary(idata, var_names=["prior"], kind="stats"))

# %%
# diagnostics.plot_trace is ArviZ's trace plot with its axes labelled
fig = diagnostics.plot_trace(relabelled, var_names=["prior"], compact=True)
fig.suptitle("class prior, two Gibbs chains after relabelling")
show(fig)

# %% [markdown]
# ## Engine 3: SVI
#
# SVI fits a mean-field guide $q(\pi)\, q(\Gamma)$ (free Dirichlet concentrations, started
# one conjugate update away from the majority-vote fractions) by maximising the ELBO. It has
# no guide for $z$: `TraceEnum_ELBO` **sums the discrete labels out exactly** inside the
# model, so the ELBO is that of the collapsed model $p(y, \pi, \Gamma)$. After the fit,
# `run_svi` draws $(\pi, \Gamma)$ from the guide and then calls `sample_discrete`, which draws
# each $z_n$ from its conditional $q_n$ given each guide draw. That is why the SVI posterior
# holds a `z` site although no part of the optimisation ever sampled one.

# %%
svi = model.fit(table, method="svi", num_steps=size(1500, 150), lr=0.05,
                num_samples=size(500, 50), seed=2, progress=False)
print(svi, "\n sites:", sorted(svi.samples))
svi_probs = model.predict(svi, table)
print(f"SVI accuracy: {accuracy(as_series(svi_probs.argmax(-1))):.3f}")
show(diagnostics.plot_loss(svi))

# %% [markdown]
# R-hat and ESS mean nothing for SVI: its draws are independent draws from a fitted guide,
# not a Markov chain. `Posterior.summary` of an SVI fit therefore gives the mean, sd and HDI
# only; asking for the chain diagnostics (`kind="all"`) prints them with a warning that says so.

# %%
print(svi.summary(var_names=["prior"]))

# %% [markdown]
# ## A short NUTS run
#
# NUTS also needs continuous sites only. Its potential energy is the log joint with `z`
# **summed out by enumeration** (the same sum as the ELBO's), and `sample_discrete` restores
# `z` after sampling, exactly as for SVI. It explores $\pi$ and the $39 \times 2$ confusion
# rows through their unconstrained (stick-breaking) coordinates, which costs far more per
# draw than a Gibbs sweep; we run a few draws only to show the result has the same form.

# %%
nuts = model.fit(table, method="nuts", num_chains=1, num_warmup=size(100, 4),
                 num_samples=size(100, 4), seed=3, progress=False)
print(nuts, f"({nuts.attrs['wall_time_s']:.1f} s)")
nuts_probs = model.predict(nuts, table)
print(f"NUTS accuracy: {accuracy(as_series(nuts_probs.argmax(-1))):.3f}")

# %% [markdown]
# ### Who handles the discrete labels?
#
# | engine | what happens to $z$ | you get |
# |--------|---------------------|---------|
# | `em`    | never sampled: the E-step computes $q_{nk}$ exactly | a point estimate of $\pi, \Gamma$; `params["probas"]`, `params["labels"]` |
# | `gibbs` | a block of the sweep, drawn from $\mathrm{Categorical}(q_n)$ every sweep | posterior draws of $\pi, \Gamma, z$ |
# | `svi`   | summed out of the ELBO (`TraceEnum_ELBO`), then drawn by `sample_discrete` | guide draws of $\pi, \Gamma$, with $z$ restored |
# | `nuts`  | summed out of the potential energy, then drawn by `sample_discrete` | posterior draws of $\pi, \Gamma$, with $z$ restored |
#
# For every engine, `model.predict(posterior, table)` gives the class probabilities
# $q_n$ averaged over the draws (the Rao-Blackwellised estimate, better than counting the
# sampled `z`).
#
# ## The facade: `DawidSkeneEstimator`
#
# For everyday aggregation there is a scikit-learn / crowd-kit style facade. It takes the
# long DataFrame as it is (any hashable ids, labels of any type), and returns pandas objects
# indexed by the user's task ids, with the user's class values.

# %%
estimator = DawidSkeneEstimator(method="em", diagonal=0.0)  # maximum likelihood
facade_labels = estimator.fit_predict(answers)
print(facade_labels.head(3))
print(f"facade EM accuracy: {accuracy(facade_labels):.3f}, "
      f"converged: {estimator.converged_} after {estimator.n_iter_} iterations")
print(estimator.confusions_.head(4))  # rows (worker, true label), columns the label given

mv_facade = MajorityVote(ties="random", seed=0).fit_predict(answers)
bayes = DawidSkeneEstimator(method="gibbs", diagonal=1.0, num_warmup=size(300, 30),
                            num_samples=size(500, 40), seed=4)
bayes_labels = bayes.fit_predict(answers)

# %% [markdown]
# ## Accuracy against the gold labels

# %%
results = pd.Series({
    "majority vote": accuracy(mv_facade),
    "EM (d = 1)": accuracy(as_series(em.params["labels"])),
    "Gibbs (d = 1)": accuracy(as_series(gibbs_probs.argmax(-1))),
    "SVI (d = 1)": accuracy(as_series(svi_probs.argmax(-1))),
    "NUTS (d = 1, short)": accuracy(as_series(nuts_probs.argmax(-1))),
    "facade EM (d = 0, ML)": accuracy(facade_labels),
    "facade Gibbs (d = 1)": accuracy(bayes_labels),
}, name="accuracy")
print(results.round(3).to_string())

# %% [markdown]
# Every Dawid-Skene fit beats majority vote by more than ten points. (A full run gives 0.759
# for MV and 0.898 for every Dawid-Skene fit; one item out of 108 is 0.009, so the smoke run's
# 0.889 is one item off.) The engines agree with each other because 39 labels per item leave
# little doubt about most items: the posterior is concentrated, and a point estimate is nearly
# as good as the full posterior.
#
# ## The workers' confusion matrices
#
# For two classes each worker is a point: the probability of answering correctly on class 0
# (horizontal) and on class 1 (vertical). Good workers sit top right; a worker below the
# anti-diagonal is worse than random. The error bars are Gibbs 90% intervals, the crosses
# EM's estimates. Majority vote trusts every worker equally; Dawid-Skene learns where each one
# sits and uses a worker in the bottom-right corner (who always answers class 0) as almost no
# evidence.

# %%
conf_draws = relabelled.flat("confusion")  # (draws, M, K, K)
correct = torch.diagonal(conf_draws, dim1=-2, dim2=-1)  # (draws, M, K)
mean = correct.mean(0).numpy()
lo, hi = np.quantile(correct.numpy(), [0.05, 0.95], axis=0)
em_correct = torch.diagonal(em.params["confusion"], dim1=-2, dim2=-1).numpy()

fig, ax = plt.subplots(figsize=(5, 5))
ax.errorbar(mean[:, 0], mean[:, 1], xerr=[mean[:, 0] - lo[:, 0], hi[:, 0] - mean[:, 0]],
            yerr=[mean[:, 1] - lo[:, 1], hi[:, 1] - mean[:, 1]], fmt="o", ms=4, alpha=0.6,
            label="Gibbs mean, 90% interval")
ax.plot(em_correct[:, 0], em_correct[:, 1], "x", color="k", label="EM")
ax.plot([0, 1], [1, 0], ":", color="grey", label="no better than random")
ax.set(xlim=(0, 1), ylim=(0, 1), xlabel=f"P(correct | true = {table.classes[0]})",
       ylabel=f"P(correct | true = {table.classes[1]})", title="bluebirds workers")
ax.legend(loc="lower left", fontsize=8)
show(fig)

# %% [markdown]
# The full matrices of the best and the worst worker (by mean probability of a correct
# answer), as heatmaps with rows = true class:

# %%
mean_conf = relabelled.mean("confusion")
score = torch.diagonal(mean_conf, dim1=-2, dim2=-1).mean(-1)
picks = [int(score.argmax()), int(score.argmin())]
fig, axes = plt.subplots(1, 2, figsize=(7, 3.2))
for ax, m in zip(axes, picks):
    image = ax.imshow(mean_conf[m].numpy(), vmin=0, vmax=1, cmap="Blues")
    for (k, j), value in np.ndenumerate(mean_conf[m].numpy()):
        ax.text(j, k, f"{value:.2f}", ha="center", va="center")
    ax.set(xticks=range(2), yticks=range(2), xlabel="answer", ylabel="true class",
           title=f"worker {table.workers[m]}")
fig.colorbar(image, ax=axes, shrink=0.8)
show(fig)

# %% [markdown]
# ## Sparse workers
#
# On larger sets some workers give one label or two. Their confusion matrices rest on the
# prior and that label, and the library says so with a `SparseWorkerWarning` rather than
# dropping them silently. A worker who labelled one item of bluebirds would look like this:

# %%
one_label = pd.concat([answers, pd.DataFrame({"task": [answers.task.iloc[0]],
                                              "worker": [answers.worker.max() + 1],
                                              "label": [1]})])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    DawidSkene().prepare(one_label)
print([str(w.message) for w in caught if issubclass(w.category, SparseWorkerWarning)][0])

# %% [markdown]
# ## What next
#
# * `02_labels_in_sequences.py`: when the items come in sequences (words of a sentence), the
#   true labels form a Markov chain, and an HMM over them beats Dawid-Skene.
# * `03_labels_on_a_graph.py`: when the items sit on a graph, a Potts prior over the labels.
# * The guides [crowdsourcing data formats](../guides/crowdsourcing-data-formats.md) and
#   [choosing an engine](../guides/choosing-an-engine.md).
#
# Exercises: refit with `diagonal=0.0` and compare the share of renamed draws; fit the `web`
# data set (5 classes, 177 workers, many of them sparse) and compare MV with EM.
