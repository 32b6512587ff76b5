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
# # Crowd labels on a graph: Dawid-Skene with a Potts prior
#
# Sometimes the items to label sit on a graph: papers that cite each other, pixels of an
# image, songs that sound alike. Neighbours tend to share their class. The networked model of
# Traganitis and Giannakis keeps Dawid-Skene's confusion matrices for the workers and puts a
# **Potts Markov random field** on the true labels: every edge whose two ends disagree costs
# energy. In this tutorial you will
#
# 1. write the Potts energies and compute them on a three-node graph;
# 2. find labels by iterated conditional modes (ICM), and see why the update order matters;
# 3. run the paper's mode-field EM (Alg. 3) from majority vote and from moment matching
#    (Alg. 4) on stochastic-block-model graphs of mean degree 0.5 and 5;
# 4. check Gibbs sampling against exact enumeration of every labelling of a tiny graph;
# 5. label the Cora citation graph.
#
# **Prerequisites.** Tutorial `01_dawid_skene_three_ways.py`; tutorial 02 for moment matching.
#
# **Running it.** As a script or as a notebook (`python -m jupytext --to ipynb ...`). With
# `SMOKE_TEST=1` every size shrinks and the file runs in well under a minute. The Cora section
# needs the Planetoid files under `$PYROMODELS_DATA` (the Makefile sets it) and is skipped
# with a message otherwise.

# %%
# Figures show in the notebook whatever MPLBACKEND says (a comment when run as a script).
# %matplotlib inline
import inspect
import os

import arviz as az
import matplotlib.pyplot as plt
import pandas as pd
import torch

from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.majority import majority_vote
from pyromodels.crowd.moments.fit import fit_moments, moment_labels
from pyromodels.crowd.mrf import (
    NetworkedDawidSkene,
    PottsCoupling,
    conditional_logits,
    enumerate_labelings,
    exact_collapsed_posterior,
    exact_posterior,
    icm,
    local_energies,
    networked_em,
    potts_energy,
    sample_labels,
    total_energy,
)
from pyromodels.data import Graph, WorkerPopulation, simulate_networked_annotations
from pyromodels.experiments.crowd.inputs.builders import build_planetoid
from pyromodels.experiments.crowd.scores import score_task
from pyromodels.notebook import show, sizes, start_session

SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
size = sizes(SMOKE_TEST)  # size(full, smoke): full normally, smoke when SMOKE_TEST


torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)
start_session()  # readable pandas tables, and the versions this ran with

# %% [markdown]
# ## The story
#
# An undirected graph $G = (V, E)$ with one node per item, **each edge listed once**. The
# true labels $y \in \{0..K-1\}^N$ have the Potts prior
#
# $$ p(y) = \frac{1}{Z} e^{-U(y)}, \qquad
#    U(y) = \frac12 \sum_{\{i, j\} \in E} \delta_{ij}\, [y_i \ne y_j], $$
#
# and given $y$ the workers answer as in Dawid-Skene, $f_{mn} \mid y_n = k \sim
# \mathrm{Categorical}(\Gamma_{mk\cdot})$. There is no class prior $\pi$: the field has no
# unary term. The coupling $\delta$ says how much the graph is trusted; the paper uses
# $\delta = M$, the number of workers (`delta="M"`, the default), or, on crowdsourcing sets,
# $\delta_n = M_n / 2$ with $M_n$ the labels of item $n$ (`delta="node"`).
#
# **The factor 1/2.** With each edge listed once, a disagreeing edge costs $\delta/2$. Code
# that sums over ordered neighbour pairs sees every edge twice and must halve again.
#
# Two derived quantities drive every algorithm below. The **local energy** of node $n$ in
# class $k$, with its neighbours $N_n$ at their current labels, is
# $U_n(k) = \frac12 \sum_{n' \in N_n} \delta_{nn'} [k \ne y_{n'}]$, and the **full
# conditional** (eq. 31) is
#
# $$ p(y_n = k \mid y_{N_n}, F, \Gamma) \propto \exp\Big(-U_n(k) + \log b_n(k)\Big), \qquad
#    \log b_n(k) = \sum_{m \text{ labelled } n} \log \Gamma_{m k f_{mn}}. $$
#
# The negative log posterior of a whole labelling is, up to a constant, the **total energy**
# $E(y) = U(y) - \sum_n \log b_n(y_n)$.
#
# ### By hand on three nodes
#
# A path $0 - 1 - 2$ with $\delta = 2$, and evidence that prefers class 0 at the ends and
# (mildly) class 1 in the middle:

# %%
path = Graph.from_edges([[0, 1], [1, 2]], num_nodes=3)
coupling = PottsCoupling.constant(path, 2.0)
log_b = torch.log(torch.tensor([[0.8, 0.2], [0.4, 0.6], [0.7, 0.3]]))
y = torch.tensor([0, 1, 0])
print("U(y) for y = [0, 1, 0]:", float(potts_energy(coupling, y)), "(two disagreeing edges x 2 / 2)")
print("local energies U_n(k):\n", local_energies(coupling, y, num_classes=2).numpy())
print("full conditionals p(y_n = k | rest):\n",
      torch.softmax(conditional_logits(coupling, log_b, y), -1).numpy().round(3))
for labels in ([0, 1, 0], [0, 0, 0]):
    print(f"E({labels}) = {float(total_energy(coupling, log_b, torch.tensor(labels))):.3f}")

# %% [markdown]
# The graph overrules node 1's mild preference: $[0, 0, 0]$ has the lower total energy.
#
# ## ICM: iterated conditional modes
#
# The MAP labelling $\arg\min_y E(y)$ is intractable on a real graph. ICM (Besag 1986; the
# paper's eq. 33) visits the nodes in turn and gives each the class of least local cost,
# $\arg\min_k [U_n(k) - \log b_n(k)]$, keeping its label on ties. Visiting them **one after
# another** with the neighbours' newest labels (Gauss-Seidel, `schedule="sequential"`, the
# default) can only lower $E$, so ICM stops at a local minimum. Updating **all nodes at once**
# from the previous sweep (Jacobi, the reading suggested by the paper's $t-1$ superscripts)
# can cycle for ever. One edge, no evidence, opposite labels:

# %%
edge = PottsCoupling.constant(Graph.from_edges([[0, 1]], num_nodes=2), 2.0)
flat = torch.zeros(2, 2)
for schedule in ("sequential", "jacobi"):
    result = icm(flat, edge, labels=torch.tensor([0, 1]), schedule=schedule, max_iter=6)
    print(f"{schedule:>10}: final labels {result.labels.tolist()}, converged {result.converged}, "
          f"labels changed per sweep {result.changes}")

# %% [markdown]
# Jacobi swaps the two labels every sweep; Gauss-Seidel settles after one. (A third schedule,
# `"colored"`, updates the nodes of one colour class of a proper colouring at once: they are
# never neighbours, so it is Gauss-Seidel in another order, vectorised.)
#
# ## Simulated data on a stochastic block model
#
# The paper's networked experiments draw the graph from a **stochastic block model** whose
# communities are the true classes (the labels are *not* drawn from the Potts model: it is a
# working model). `simulate_networked_annotations` draws $N \bar d / 2$ edges, each inside a
# community with probability 0.9. We take $K = 4$, $M = 10$ workers with 4 labels per item,
# and two mean degrees: $\bar d = 0.5$ (about $e^{-0.5} \approx 61\%$ of the nodes have no
# neighbour at all) and $\bar d = 5$.
#
# Methods, all with $\delta = M$:
#
# * majority vote; Dawid-Skene EM; moment matching with the MAP rule (eq. 18);
# * **MV + Alg. 3**: the paper's mode-field EM started from majority vote. Each iteration runs
#   ICM with the current confusions, then an E-step with every node's neighbours clamped at
#   their ICM labels, $q_{nk} \propto e^{-U_n(k)} b_n(k)$ (eqs. 34-35), then Dawid-Skene's
#   M-step (eq. 36);
# * **Alg. 4**: the same EM started from the moment-matching confusions, labels from eq. 18.
#
# The mode-field objective is *not* monotone (ICM moves the clamped labels between
# iterations), so nothing checks that it increases.

# %%
num_items = size(2000, 500)
crowd = WorkerPopulation(10, dominance=0.6, labels_per_item=4)


def five_methods(table, graph, mm) -> dict:
    """The labels of the five methods, by name; ``mm`` is the moment-matching fit of ``table``."""
    return {
        "majority vote": majority_vote(table, seed=0),
        "Dawid-Skene EM": DawidSkene().fit(table, method="em", seed=0, progress=False)
        .params["labels"],
        "moment matching": moment_labels(table, mm),
        "MV + Alg. 3": networked_em(table, graph, seed=0).params["labels"],
        "Alg. 4 (MM + Alg. 3)": networked_em(table, graph, confusion=mm.confusion,
                                             prior=mm.prior, seed=0).params["labels"],
    }


def networked_scores(mean_degree: float) -> dict:
    table, graph, truth = simulate_networked_annotations(
        num_items, crowd, 4, mean_degree=mean_degree, seed=0)
    labels = five_methods(table, graph, fit_moments(table, n_init=size(3, 1), seed=0))
    out = {name: float((y == truth["z"]).double().mean()) for name, y in labels.items()}
    isolated = float((graph.degree() == 0).double().mean())
    print(f"mean degree {graph.mean_degree:.2f}: {isolated:.0%} of the nodes are isolated")
    return out


sbm = pd.DataFrame({f"d = {d}": networked_scores(d) for d in (0.5, 5.0)})
print(sbm.round(3))

fig, ax = plt.subplots(figsize=(6.5, 3.2))
sbm.plot.barh(ax=ax)
ax.set(xlabel="accuracy", ylabel="method", xlim=(0.5, 1.0), title=f"SBM, N = {num_items}, K = 4, M = 10")
show(fig)

# %% [markdown]
# The three graph-blind methods score the same at both degrees (same labels, same seed). At
# $\bar d = 0.5$, where most nodes have no neighbour to borrow from, the graph is worth a point
# at most; at $\bar d = 5$ it is worth more than ten, and almost every node is decided
# correctly: the paper's observation that better-connected graphs gain more. (Full run,
# $N = 2000$: Dawid-Skene 0.850; at $\bar d = 0.5$ MV + Alg. 3 0.846 and Alg. 4 0.858; at
# $\bar d = 5$ both 0.993.) Starting from moment matching rather than majority vote matters
# most when the graph is sparse, since ICM then has little to correct a poor start with.
#
# ICM inside each iteration really is a descent on $E$: here are its energies on the dense
# graph, started from majority vote with the Dawid-Skene confusions.

# %%
table5, graph5, truth5 = simulate_networked_annotations(num_items, crowd, 4, mean_degree=5.0,
                                                        seed=0)
ds5 = DawidSkene().fit(table5, method="em", seed=0, progress=False)
log_b5 = log_emissions(table5, ds5.params["confusion"].log())
run = icm(log_b5, PottsCoupling.constant(graph5, table5.num_workers),
          labels=majority_vote(table5, seed=0))
print(f"ICM: {run.n_iter} sweeps, labels changed per sweep {run.changes}")
assert all(b <= a + 1e-9 for a, b in zip(run.energies, run.energies[1:]))
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(run.energies, "o-")
ax.set(xlabel="sweep", ylabel="total energy E(y)", title="Gauss-Seidel ICM never goes up")
show(fig)

# %% [markdown]
# ## The model class and its Pyro program
#
# `NetworkedDawidSkene` wraps the same algorithms as a `Model`: `fit(data, method="em")` runs
# Alg. 3 (pass `init_confusion=` for Alg. 4) and `method="gibbs"` samples the Bayesian variant
# with Dirichlet priors on the confusion rows. Its program writes the Potts prior as a uniform
# base measure over labellings times `pyro.factor("potts", -U(y))`. The normaliser $Z$
# depends only on the fixed $\delta$, so the program is the joint up to a constant: enough for
# scoring, conditionals and, on tiny graphs, enumerating every labelling at once.

# %%
print(inspect.getsource(NetworkedDawidSkene.model))

# %% [markdown]
# ## Exact enumeration against Gibbs sampling
#
# On a graph of 10 nodes with $K = 2$ there are $2^{10} = 1024$ labellings, few enough to
# sum over. With the confusion matrices held fixed, `exact_posterior` gives the exact
# marginals $P(y_n = 1 \mid F, \Gamma)$ and the MAP labelling; `sample_labels` draws from the
# same posterior by Gibbs sampling (each node from its full conditional, one colour class at a
# time). We run four chains and let ArviZ compute the Monte Carlo standard error of each
# marginal: the sampler is right if the gaps are a few standard errors at most.

# %%
tiny_table, tiny_graph, tiny_truth = simulate_networked_annotations(
    10, WorkerPopulation(3, dominance=0.7, labels_per_item=2), 2, mean_degree=2.0, seed=3)
tiny_coupling = PottsCoupling.constant(tiny_graph, tiny_table.num_workers)
tiny_log_b = log_emissions(tiny_table, tiny_truth["confusion"].log())
exact = exact_posterior(tiny_log_b, tiny_coupling)

gibbs = sample_labels(tiny_log_b, tiny_coupling, num_samples=size(5000, 1000), num_warmup=100,
                      num_chains=4, seed=0)
draws = az.convert_to_dataset({"y": gibbs.samples["y"].double().numpy()})
table_mc = az.summary(draws, kind="all")
comparison = pd.DataFrame({"exact": exact.marginals[:, 1].numpy(),
                           "Gibbs": table_mc["mean"].to_numpy(),
                           "MCSE": table_mc["mcse_mean"].to_numpy(),
                           "R-hat": table_mc["r_hat"].to_numpy()})
comparison["gap / MCSE"] = (comparison["Gibbs"] - comparison["exact"]).abs() / comparison["MCSE"]
print(comparison.round(3))
print("MAP by enumeration:", exact.map_labels.tolist())
print("ICM from argmax b :", icm(tiny_log_b, tiny_coupling).labels.tolist())

# %% [markdown]
# The MCSE is larger than independent draws would give: the connected nodes tend to flip
# together, so successive sweeps are correlated. ICM finds the exact MAP here; on larger
# graphs it finds a local minimum that depends on where it starts.
#
# ### The Bayesian model, and a label-switching lesson
#
# `NetworkedDawidSkene(...).fit(method="gibbs")` also samples the confusion matrices. The
# exact answer integrates them out over their Dirichlet(1) priors
# (`exact_collapsed_posterior`, a Dirichlet-multinomial evidence per labelling). With flat
# priors and no class prior, renaming the two classes changes nothing, so the **exact
# marginals are all 1/2**, and a sampler's marginals depend on how often it happens to switch.
# The label-invariant quantity to compare is the co-labelling probability
# $P(y_i = y_j \mid F)$.

# %%
collapsed = exact_collapsed_posterior(tiny_table, tiny_coupling, 1.0)
print("exact marginals P(y_n = 1):", collapsed.marginals[:, 1].numpy().round(3))

labellings = enumerate_labelings(10, 2)                          # (1024, 10)
weights = torch.softmax(collapsed.log_weights, 0)                # (1024,)
same = (labellings[:, :, None] == labellings[:, None, :]).double()
exact_colabel = torch.einsum("s,sij->ij", weights, same)

bayes = NetworkedDawidSkene().fit((tiny_table, tiny_graph), method="gibbs", num_chains=2,
                                  num_warmup=200, num_samples=size(2000, 500), seed=0,
                                  progress=False)
y_draws = bayes.flat("y")
gibbs_colabel = (y_draws[:, :, None] == y_draws[:, None, :]).double().mean(0)
print("Gibbs marginals P(y_n = 1):", y_draws.double().mean(0).numpy().round(3))
print(f"largest gap in P(y_i = y_j): {float((gibbs_colabel - exact_colabel).abs().max()):.3f}"
      " (Monte Carlo error of a short run: a few hundredths)")

fig, axes = plt.subplots(1, 2, figsize=(7, 3.2))
for ax, (title, matrix) in zip(axes, (("exact", exact_colabel), ("Gibbs", gibbs_colabel))):
    image = ax.imshow(matrix.numpy(), vmin=0, vmax=1, cmap="viridis")
    ax.set(title=f"P(y_i = y_j), {title}", xlabel="node j", ylabel="node i")
fig.colorbar(image, ax=axes, shrink=0.8)
show(fig)

# %% [markdown]
# ## A real graph: Cora
#
# Table II of the paper: ten classifiers, each trained on 150 random nodes of the Cora citation
# graph (2,708 papers, 7 topics, mean degree 3.9), label every paper; the citation graph links
# them. `build_planetoid("cora")` rebuilds that task with ten scikit-learn classifiers. The score
# is the paper's macro-F1 over all nodes.

# %%
try:
    cora = build_planetoid("cora")
except FileNotFoundError as err:
    cora = None
    print(f"skipping the Cora section: {err}")

if cora is not None:
    print(cora.summary())
    c_table, c_graph = cora.table, cora.graph
    c_mm = fit_moments(c_table, n_init=size(3, 1), max_iter=size(500, 50), seed=0)
    cora_labels = five_methods(c_table, c_graph, c_mm)
    cora_scores = pd.Series({name: score_task(cora, labels).f_score
                             for name, labels in cora_labels.items()}, name="macro F1")
    print(cora_scores.round(3).to_string())

# %% [markdown]
# The graph is worth more than ten points of macro-F1 here (full run: majority vote 0.64,
# Dawid-Skene 0.66, Alg. 4 0.75, MV + Alg. 3 0.78). The paper reports 0.64 for Alg. 4 on its
# own classifiers (its MV baseline was far weaker, 0.28), and also finds that the graph-aware
# methods win by the largest margins on the best-connected graphs.
#
# ## What next
#
# * [Choosing an engine](../guides/choosing-an-engine.md): EM, Gibbs, SVI, NUTS and moment
#   matching for all three crowd models, and when to start from moment matching.
# * [Crowdsourcing data formats](../guides/crowdsourcing-data-formats.md): building the graph
#   so that its node ids match the items.
#
# Exercises: refit the SBM comparison with `delta=0.0` and check that Alg. 3 reduces to
# Dawid-Skene EM with equal priors; compare ICM with `mean_field` from
# `pyromodels.crowd.mrf` on the dense graph; try `delta="node"` on Cora.
