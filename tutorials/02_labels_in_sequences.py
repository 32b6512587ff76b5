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
# # Crowd labels in sequences: Dawid-Skene with a hidden Markov chain
#
# Crowd workers (or trained taggers) often label the words of a sentence: named-entity tags,
# part-of-speech tags. The true tags of neighbouring words are not independent: `I-PER`
# follows `B-PER`, a determiner is followed by a noun. Dawid-Skene ignores that order. The
# sequential model of Traganitis and Giannakis puts a **Markov chain** on the true labels and
# keeps Dawid-Skene's confusion matrices for the workers: a hidden Markov model whose
# emissions are the workers' votes. In this tutorial you will
#
# 1. simulate crowd labels of sequences and compare majority vote, Dawid-Skene and the HMM;
# 2. estimate the HMM three ways: moment matching (the paper's Alg. 2), Baum-Welch EM from
#    majority vote ("MV + Alg. 1") and Baum-Welch from moment matching ("Alg. 2 + Alg. 1"),
#    each decoded by Viterbi;
# 3. check that the Pyro program and the hand-written forward-backward agree;
# 4. walk into the **transition orientation trap** of the paper's printed update, and out;
# 5. run it on real crowd NER labels.
#
# **Prerequisites.** Tutorial `01_dawid_skene_three_ways.py` (the Dawid-Skene model).
#
# **Running it.** As a script or as a notebook (`python -m jupytext --to ipynb ...`). With
# `SMOKE_TEST=1` every size shrinks and the file runs in well under a minute. The real-data
# section needs the CoNLL-2003 crowd labels under `$PYROMODELS_DATA` (the Makefile sets it)
# and is skipped with a message otherwise.

# %%
# Figures show in the notebook whatever MPLBACKEND says (a comment when run as a script).
# %matplotlib inline
import inspect
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from pyro import poutine

from pyromodels import metrics, testing
from pyromodels.core import ConvergenceWarning
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.crowd.hmm import SequentialDawidSkene, baum_welch_step
from pyromodels.crowd.hmm.model import collapsed_model
from pyromodels.crowd.majority import majority_vote
from pyromodels.crowd.moments.fit import fit_moments, moment_labels
from pyromodels.crowd.moments.sequential import fit_sequential_moments
from pyromodels.data import (
    AnnotationTable,
    Sequences,
    WorkerPopulation,
    simulate_sequential_annotations,
)
from pyromodels.experiments.crowd.inputs.builders import build_ner
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
# $S$ sequences; sequence $s$ has $T_s$ items whose true labels $y_{s,1}, \dots, y_{s,T_s}$
# form a Markov chain; each worker $m$ who labels item $(s, t)$ answers with Dawid-Skene's
# confusion matrix:
#
# $$
# \begin{aligned}
# y_{s,1} &\sim \mathrm{Categorical}(p_1), \\
# y_{s,t} \mid y_{s,t-1} = i &\sim \mathrm{Categorical}(A_{i\cdot}), && t = 2..T_s, \\
# f_{m,s,t} \mid y_{s,t} = k &\sim \mathrm{Categorical}(\Gamma_{mk\cdot})
#     && \text{for each label in the table.}
# \end{aligned}
# $$
#
# **Orientation, once more.** `transition[i, j]` $= A_{ij} = P(y_t = j \mid y_{t-1} = i)$:
# **rows are the previous state** and each row sums to one, as in hmmlearn's `transmat_` and
# Pyro's `DiscreteHMM`. `confusion[m, k, j]` has rows = true class. The paper writes both
# matrices the other way round (columns = previous state, columns = true class), and, as we
# will see, its Baum-Welch update gets its own convention wrong. `initial` $= p_1$ is the law
# of the **first** label (Pyro's `DiscreteHMM` instead takes the state *before* the first
# observation).
#
# With the chain, the posterior of $y_{s,t}$ depends on the labels of the neighbouring items
# too: a word whose workers disagree borrows strength from its context.
#
# ## Simulated data
#
# The paper's synthetic set-up: $K = 4$ classes, $M = 10$ workers of whom only
# $\lfloor M/2 \rfloor + 1 = 6$ are better than random (`num_random=4`), sequences of 40
# items. To make it a crowd, each item gets labels from only 4 of the 10 workers. A
# `WorkerPopulation` says all this about the workers. The chain is "sticky" (`stickiness=0.5`
# mixes a random transition matrix with the identity), as tags in text tend to come in runs.
#
# `simulate_sequential_annotations` returns a `Sequences`: an `AnnotationTable` whose items
# are the positions of all sequences in order, plus the length of each sequence.

# %%
num_sequences = size(100, 25)
crowd = WorkerPopulation(10, dominance=0.6, num_random=4, labels_per_item=4)
seqs, truth = simulate_sequential_annotations([40] * num_sequences, crowd, 4, stickiness=0.5,
                                              seed=0)
table = seqs.data
print(seqs)
print(table)
print("true transition matrix (rows = previous label):\n", truth["transition"].numpy().round(2))


def accuracy(labels) -> float:
    """Share of positions whose label code equals the true label."""
    return float((torch.as_tensor(labels) == truth["z"]).double().mean())


def macro_f1(labels) -> float:
    """Macro-averaged F1 over all positions (each class weighs the same)."""
    return metrics.macro_f1(truth["z"], labels)

# %% [markdown]
# ## Baselines that ignore the order
#
# * **Majority vote**, ties broken at random.
# * **Dawid-Skene EM** on the same table, as if the items were independent.
# * **Moment matching** (the paper's eq. 17, from Traganitis et al. 2018): the first-,
#   second- and third-order moments of the workers' one-hot answers,
#   $E[f_m] = \Gamma_m^\top \pi$, $E[f_m f_{m'}^\top] = \Gamma_m^\top \mathrm{diag}(\pi)
#   \Gamma_{m'}$ and the three-way tensor $\sum_k \pi_k \gamma_{mk} \circ \gamma_{m'k} \circ
#   \gamma_{m''k}$, are matched to their sample values over simplex-constrained $\pi$ and
#   $\Gamma$, then each item gets $\arg\max_k \log\pi_k + \sum_m \log\Gamma_{m k f_m}$ (eq. 18).
#   It needs at least 3 workers that share items, and enough items for the third-order
#   moments to settle. Its answer does not depend on a starting point being good, which
#   makes it a good **initialiser**.

# %%
mv = majority_vote(table, ties="random", seed=0)
ds = DawidSkene().fit(table, method="em", seed=0, progress=False)
mm = fit_moments(table, n_init=size(5, 2), seed=0)
mm_labels = moment_labels(table, mm)
print(f"moment matching: objective {mm.objective:.3g}, converged {mm.converged}")

# %% [markdown]
# ## The HMM, estimated three ways
#
# ### Alg. 2: moment matching for the chain
#
# If the chain is stationary, each worker's answers are still a Dawid-Skene mixture, so the
# moment-matching $\hat\Gamma$ above stays valid. The chain is in the **lag-1 cross moments**:
# for worker $a$ on item $t - 1$ and worker $b$ on item $t$ of the same sequence,
#
# $$ E\big[e_{f_a(t-1)} e_{f_b(t)}^\top\big] = \Gamma_a^\top J\, \Gamma_b, \qquad
#    J_{ij} = P(y_{t-1} = i, y_t = j). $$
#
# Matching them over the simplex of $K \times K$ joint laws is a convex quadratic programme
# (eq. 22); then $\hat A_{ij} = \hat J_{ij} / \sum_{j'} \hat J_{ij'}$ (eq. 23, read in rows).
# Viterbi decoding with $(\hat\pi, \hat A, \hat\Gamma)$ gives the labels.

# %%
alg2 = fit_sequential_moments(seqs, mm)
print("Alg. 2 transition estimate:\n", alg2.transition.numpy().round(2))

hmm = SequentialDawidSkene()
alg2_params = {"initial": alg2.prior, "transition": alg2.transition, "confusion": alg2.confusion}
alg2_labels = hmm.decode(seqs, alg2_params)  # Viterbi

# %% [markdown]
# ### Alg. 1: Baum-Welch EM
#
# EM for an HMM needs, for every position, the posterior marginal
# $q_t(k) = P(y_t = k \mid F)$ and the pairwise marginal
# $\xi_t(i, j) = P(y_{t-1} = i, y_t = j \mid F)$. Forward-backward computes them in log space,
# with the emission $\log b_t(k) = \sum_{m \text{ labelled } t} \log\Gamma_{m k f_{m,t}}$:
#
# $$ \alpha_t(j) = b_t(j) \sum_i \alpha_{t-1}(i) A_{ij}, \qquad
#    \beta_{t-1}(i) = \sum_j A_{ij}\, b_t(j)\, \beta_t(j), \qquad
#    \xi_t(i, j) \propto \alpha_{t-1}(i)\, A_{ij}\, b_t(j)\, \beta_t(j). $$
#
# The M-step is closed form: $A_{ij} \propto \sum_{s,t} \xi_{s,t}(i, j)$,
# $\Gamma_{mkj} \propto \sum_{t:\, f_{m,t} = j} q_t(k)$ (Dawid-Skene's update) and
# $p_1(k) \propto \sum_s q_{s,1}(k)$. The log-likelihood never decreases.
#
# We run it from two starts: one M-step on the majority-vote labels (the model's default,
# "MV + Alg. 1"), and the Alg. 2 estimate ("Alg. 2 + Alg. 1"). Moment estimates can hold
# exact zeros, which EM could never leave, so we add a floor of $10^{-6}$ first.

# %%
mv_alg1 = hmm.fit(seqs, method="em", seed=0, max_iter=size(300, 60), progress=False)
testing.assert_monotone(mv_alg1.losses)

floored = alg2.confusion + 1e-6
start = hmm.start_from(seqs, confusion=floored / floored.sum(-1, keepdim=True),
                       transition=alg2.transition, initial=alg2.prior)
alg2_alg1 = hmm.fit(seqs, method="em", init=start, seed=0, max_iter=size(300, 60), progress=False)
print(f"MV + Alg. 1: {mv_alg1.diagnostics['n_iter']} iterations; "
      f"Alg. 2 + Alg. 1: {alg2_alg1.diagnostics['n_iter']} iterations")

# %% [markdown]
# The **oracle** decodes with the true parameters: no method can expect to beat it.

# %%
oracle = hmm.decode(seqs, {k: truth[k] for k in ("initial", "transition", "confusion")})

methods = {
    "majority vote": mv,
    "Dawid-Skene EM": ds.params["labels"],
    "moment matching (eq. 18)": mm_labels,
    "Alg. 2 (MM + Viterbi)": alg2_labels,
    "MV + Alg. 1 (Baum-Welch)": mv_alg1.params["labels"],
    "Alg. 2 + Alg. 1": alg2_alg1.params["labels"],
    "oracle Viterbi": oracle,
}
scores = pd.DataFrame({"accuracy": {k: accuracy(v) for k, v in methods.items()},
                       "macro F1": {k: macro_f1(v) for k, v in methods.items()}})
print(scores.round(3))

# %% [markdown]
# Baum-Welch beats both order-blind methods by a wide margin and comes within a point of the
# oracle: an item whose four workers disagree is decided by its neighbours. (A full run, with
# 4,000 items: majority vote 0.635, Dawid-Skene 0.820, Alg. 2 0.883, both Baum-Welch runs
# 0.896, oracle 0.900.) Alg. 2 alone, with no EM at all, already beats Dawid-Skene once there
# are enough items for the moments. How well is the chain itself recovered? We measure the
# worst row's $\ell_1$ error, $\max_i \sum_j |\hat A_{ij} - A_{ij}|$.

# %%
def transition_error(estimate) -> float:
    return float((estimate - truth["transition"]).abs().sum(-1).max())


for name, est in (("Alg. 2", alg2.transition), ("MV + Alg. 1", mv_alg1.params["transition"]),
                  ("Alg. 2 + Alg. 1", alg2_alg1.params["transition"])):
    print(f"{name:>16}: transition error {transition_error(est):.3f}")

# %% [markdown]
# ### More sequences, better estimates
#
# Moment estimates improve as $N$ grows, and so does everything built on them. With 200 items
# the third-order moments of 10 workers who each label 40% of the items are mostly noise, and
# Alg. 2 falls below majority vote; from 1,000 items on it beats Dawid-Skene. Baum-Welch from
# majority vote is the safer choice when $N$ is small, as the paper also found. (Each point is
# one simulation, so the curves are noisy.)

# %%
grid = size([5, 25, 100], [5, 25])
curve = []
for S in grid:
    s_seqs, s_truth = simulate_sequential_annotations([40] * S, crowd, 4, stickiness=0.5, seed=1)
    s_table = s_seqs.data
    s_mm = fit_moments(s_table, n_init=size(3, 2), seed=0)
    s_alg2 = fit_sequential_moments(s_seqs, s_mm)
    row = {"N": 40 * S,
           "majority vote": majority_vote(s_table, seed=0),
           "Dawid-Skene EM": DawidSkene().fit(s_table, method="em", seed=0, progress=False)
           .params["labels"],
           "Alg. 2": hmm.decode(s_seqs, {"initial": s_alg2.prior, "transition": s_alg2.transition,
                                         "confusion": s_alg2.confusion}),
           "MV + Alg. 1": hmm.fit(s_seqs, method="em", seed=0, max_iter=size(300, 60),
                                  progress=False).params["labels"],
           "oracle": hmm.decode(s_seqs, {k: s_truth[k] for k in ("initial", "transition",
                                                                 "confusion")})}
    curve.append({k: v if k == "N" else float((v == s_truth["z"]).double().mean())
                  for k, v in row.items()})
curve = pd.DataFrame(curve).set_index("N")
print(curve.round(3))

fig, ax = plt.subplots(figsize=(6, 3.5))
for name in curve.columns:
    ax.plot(curve.index, curve[name], "o-", label=name)
ax.set(xscale="log", xlabel="number of items N", ylabel="accuracy",
       title="K = 4, M = 10 (6 better than random), 4 labels per item")
ax.legend(fontsize=8)
show(fig)

# %% [markdown]
# ## The Pyro program and the hand-written kernels agree
#
# `SequentialDawidSkene` writes its story as a Pyro program three ways: with the label path
# as one site (`model`), unrolled with `pyro.markov` and each label enumerated
# (`enumerated_model`), and with the path summed out by `pyro.distributions.DiscreteHMM`
# (`collapsed_model`). The last is short:

# %%
print(inspect.getsource(collapsed_model))

# %% [markdown]
# Conditioning the collapsed program on the fitted parameters and scoring it gives the log
# joint $\log p(F, \theta)$ with the labels summed out by Pyro. The EM objective is the same
# quantity, from the hand-written forward-backward. They agree to rounding error; the two
# implementations share nothing but the story.

# %%
fitted = {k: mv_alg1.params[k] for k in ("initial", "transition", "confusion")}
conditioned = poutine.condition(hmm.collapsed_model, data=fitted)
pyro_log_joint = float(poutine.trace(conditioned).get_trace(seqs).log_prob_sum())
ours = hmm.em_objective(seqs, fitted)
print(f"Pyro DiscreteHMM: {pyro_log_joint:.6f}   forward-backward: {ours:.6f}")
assert abs(pyro_log_joint - ours) < 1e-6 * abs(ours)

# %% [markdown]
# ## The orientation trap
#
# The paper defines $T(k, k') = P(y_n = k \mid y_{n-1} = k')$ (columns = previous state), but
# its Baum-Welch update (eq. 26) reads
#
# $$ [\hat T]_{k'k} = \frac{\sum_n \xi_n(k', k)}{\sum_n q_{nk'}}, $$
#
# which estimates $P(y_{n+1} = k \mid y_n = k')$ and stores it at position $(k', k)$: the
# **transpose** of its own convention. Code that follows the printed formula and then uses $T$
# in the paper's convention runs every chain backwards. For a symmetric chain nobody notices.
#
# A deterministic cycle $0 \to 1 \to 2 \to 0$ makes the error impossible to miss. With two
# perfect workers (identity confusion matrices), one Baum-Welch step from a uniform transition
# matrix sees every consecutive pair exactly, so the correct update must return the cycle
# itself.

# %%
cycle = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
c_seqs, c_truth = simulate_sequential_annotations([9, 7, 11], 1, 3, transition=cycle,
                                                  initial=[1 / 3] * 3, seed=0)
n = c_seqs.total_length
items, workers = torch.arange(n).repeat_interleave(2), torch.arange(2).repeat(n)
perfect = AnnotationTable.from_arrays(items, workers, c_truth["z"][items], num_classes=3)
perfect = Sequences(perfect, c_seqs.lengths)
print("true path of the first sequence:", c_truth["z"][:9].tolist())

uniform = {"initial": torch.full((3,), 1 / 3), "transition": torch.full((3, 3), 1 / 3),
           "confusion": torch.eye(3).expand(2, 3, 3)}
correct, _ = baum_welch_step(perfect.data, perfect.lengths, uniform)
literal, _ = baum_welch_step(perfect.data, perfect.lengths, uniform, paper_literal=True)
print("corrected update (rows = previous):\n", correct["transition"].numpy())
print("update as printed, read in our orientation:\n", literal["transition"].numpy())
print("successor of each state, corrected:", correct["transition"].argmax(-1).tolist(),
      " printed:", literal["transition"].argmax(-1).tolist())
assert torch.equal(correct["transition"], cycle)
assert torch.equal(literal["transition"], cycle.T)

# %% [markdown]
# The corrected update says $0 \to 1 \to 2 \to 0$; the printed one says $0 \to 2 \to 1 \to 0$.
# On noisy data the damage goes further: iterating the printed update is no longer EM (its
# likelihood goes down), and Viterbi decodes with a chain that runs backwards.

# %%
sticky_cycle = 0.8 * cycle + 0.2 / 3
n_seq = size(40, 15)
s_seqs, s_truth = simulate_sequential_annotations(
    [30] * n_seq, WorkerPopulation(6, dominance=0.6, labels_per_item=2), 3,
    transition=sticky_cycle, seed=1)
right = SequentialDawidSkene().fit(s_seqs, method="em", seed=0, max_iter=300, progress=False)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    wrong = SequentialDawidSkene(paper_literal=True).fit(s_seqs, method="em", seed=0,
                                                         max_iter=100, progress=False)
drops = sum("should not decrease" in str(w.message) for w in caught
            if issubclass(w.category, ConvergenceWarning))
print(f"printed update: the 'likelihood' went down at {drops} iterations")


def s_accuracy(post) -> float:
    return float((post.params["labels"] == s_truth["z"]).double().mean())


print(f"accuracy: majority vote {float((majority_vote(s_seqs.data, seed=0) == s_truth['z']).double().mean()):.3f}, "
      f"corrected Baum-Welch {s_accuracy(right):.3f}, printed update {s_accuracy(wrong):.3f}")

fig, axes = plt.subplots(1, 3, figsize=(9, 3))
panels = (("true", sticky_cycle), ("corrected EM", right.params["transition"]),
          ("printed update", wrong.params["transition"]))
for ax, (title, matrix) in zip(axes, panels):
    ax.imshow(matrix.numpy(), vmin=0, vmax=1, cmap="Blues")
    for (i, j), value in np.ndenumerate(matrix.numpy()):
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8)
    ax.set(title=title, xlabel="next label", ylabel="previous label", xticks=range(3),
           yticks=range(3))
show(fig)

# %% [markdown]
# The check to keep in your own code: simulate a strongly asymmetric chain, fit, and ask
# whether `transition.argmax(-1)` follows the cycle. The library's tests do exactly that.
#
# ## A real task: crowd NER
#
# Rodrigues et al. (2014) had 47 Mechanical Turk workers tag named entities in CoNLL-2003
# sentences (9 BIO tags). `build_ner(scale="small")` takes the first 500 sentences; the score is
# the paper's: entity-level precision, recall and F1 (a predicted entity counts only if its
# span and type match exactly).

# %%
try:
    ner = build_ner(scale="small")
except FileNotFoundError as err:
    ner = None
    print(f"skipping the NER section: {err}")

if ner is not None:
    print(ner.summary())
    ner_seqs = ner.sequences
    # Workers label few tokens each: a pseudo-count just above 1 keeps every probability off
    # exactly zero (see SequentialDawidSkene's notes on exact zeros).
    smooth = 1 + 1e-6
    ner_hmm = SequentialDawidSkene(initial_concentration=smooth, transition_concentration=smooth,
                                   confusion_concentration=smooth)
    ner_labels = {
        "majority vote": majority_vote(ner.table, seed=0),
        "Dawid-Skene EM": DawidSkene().fit(ner.table, method="em", seed=0, progress=False)
        .params["labels"],
        "MV + Alg. 1": ner_hmm.fit(ner_seqs, method="em", seed=0, max_iter=size(100, 20),
                                   progress=False).params["labels"],
    }
    ner_scores = pd.DataFrame({name: score_task(ner, labels).as_dict()
                               for name, labels in ner_labels.items()}).T
    print(ner_scores[["precision", "recall", "f_score", "accuracy"]].astype(float).round(3))

# %% [markdown]
# On this data both models improve on majority vote's recall a lot. Here Dawid-Skene edges out
# the HMM: with 9 tags, 40 workers and only 500 sentences, the HMM has more to estimate, and
# crowd NER labels are far from the model's assumptions (workers tag whole spans, not
# independent tokens). The paper reports the same ordering within a few points on the full
# corpus (DS 0.71, MV + Alg. 1 0.70, Alg. 2 + Alg. 1 0.72). Moment matching is not run here:
# with 40 workers there are $\binom{40}{3} = 9880$ third-order moment tensors of
# $9^3$ entries each, most resting on a handful of tokens.
#
# ## What next
#
# * `03_labels_on_a_graph.py`: the same idea on a graph, with a Potts prior over the labels.
# * [Choosing an engine](../guides/choosing-an-engine.md): EM, Gibbs (FFBS for the label
#   paths), SVI, NUTS and moment matching side by side.
#
# Exercises: fit `SequentialDawidSkene` with `method="gibbs"` (forward-filtering
# backward-sampling for the paths) on the simulated data and compare its posterior mean of the
# transition matrix with Baum-Welch's; rerun the curve with `stickiness=0.0`, where the chain
# carries less information, and watch the gap to Dawid-Skene shrink.
