"""The ``scdc`` demo's report entry: its figures, tables, metrics and summary, built from the
runs of :mod:`.demo`."""

from __future__ import annotations

import numpy as np

from . import paper_numbers, protocols
from .bayes_entry import bayes_settings

__all__ = ["assemble_demo", "FIGURES", "TABLES"]

#: the entry's figures, in report order
FIGURES = ("Fig. 2: the pinwheel by arm and the clusters learned",
           "Fig. 3c: worker weights, estimated and true",
           "pruning of BayesSCDC's components")
#: the entry's tables
TABLES = ("pinwheel (Fig. 2): ours vs the paper",
          "worker weights (Fig. 3c): estimated and true",
          "pruning: components with E[pi] >= 1% per epoch",
          "pruning: E[pi] sorted at the end")

_SETTINGS = ("with links", "without links")
#: the paper's row of :data:`.paper_numbers.PINWHEEL` set beside each of ours
_PAPER_ROWS = {("with links", "bayes-scdc"): ("with links", "bayes-scdc"),
               ("without links", "bayes-scdc"): ("without links", "bayes-scdc (good start)")}


def _warmup(plan) -> int:
    """The epochs during which BayesSCDC holds its globals."""
    return bayes_settings(plan.epochs)["warmup_epochs"]


def _title(name: str, scores: dict) -> str:
    return (f"{name}\nACC {100 * scores['acc']:.1f}%, NMI {scores['nmi']:.2f}, "
            f"{scores['clusters']} clusters")


def _colours(labels) -> np.ndarray:
    """One colour per point: the ten largest clusters in the ten colours of ``tab10`` by
    size, the rest grey (cluster names are arbitrary, so colours follow sizes)."""
    from matplotlib import colormaps

    names, inverse, sizes = np.unique(np.asarray(labels), return_inverse=True,
                                      return_counts=True)
    rank = np.empty(len(names), dtype=np.int64)
    rank[np.argsort(-sizes, kind="stable")] = np.arange(len(names))
    palette = np.vstack([np.asarray(colormaps["tab10"].colors), [[0.6, 0.6, 0.6]]])
    return palette[np.minimum(rank[inverse], 10)]


def _pinwheel_figure(pinwheel: dict):
    from matplotlib.figure import Figure

    x = pinwheel["x"]
    panels = [("the data by true arm", pinwheel["z"], None)]
    for setting in _SETTINGS:
        fit = pinwheel["fits"][setting]
        panels.append((f"BayesSCDC {setting}", fit["labels"], fit["scores"]))
    observed = pinwheel["observed"]
    panels.append(("Gibbs reference (features observed), with links", observed["labels"],
                   observed["scores"]))
    fig = Figure(figsize=(3.4 * len(panels), 3.6), layout="constrained")
    axes = fig.subplots(1, len(panels), sharex=True, sharey=True)
    for ax, (title, labels, scores) in zip(axes, panels, strict=True):
        ax.scatter(x[:, 0], x[:, 1], c=_colours(labels), s=6)
        ax.set_title(title if scores is None else _title(title, scores), fontsize=9)
        ax.set_xlabel("x1")
    axes[0].set_ylabel("x2")
    return fig


def _weights_figure(weights: dict):
    from matplotlib.figure import Figure

    true = np.asarray(protocols.TRUE_WEIGHTS)
    workers = np.arange(1, len(true) + 1)
    fig = Figure(figsize=(5.2, 3.8), layout="constrained")
    ax = fig.subplots()
    ax.plot(workers, true, "k_", markersize=18, mew=2, label="true 2 logit(alpha)")
    err = np.vstack([weights["mean"] - weights["q05"], weights["q95"] - weights["mean"]])
    ax.errorbar(workers - 0.1, weights["mean"], yerr=err, fmt="o", capsize=3,
                label="Gibbs reference: mean, 90% interval")
    ax.plot(workers + 0.1, weights["pairwise"], "s", label="pairwise worker model")
    ax.set_xticks(workers, [f"{a:.2f}" for a in protocols.FACE_ACCURACIES])
    ax.set_xlabel("worker's alpha = beta")
    ax.set_ylabel("logit(alpha) + logit(beta)")
    ax.set_title(f"{weights['points']} digits, {len(true)} workers", fontsize=9)
    ax.legend(fontsize=8)
    return fig


def _pruning_figure(pinwheel: dict, warmup: int):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 3.6), layout="constrained")
    left, *paths = fig.subplots(1, 1 + len(_SETTINGS))
    width = 0.4
    for i, (setting, ax) in enumerate(zip(_SETTINGS, paths, strict=True)):
        fit = pinwheel["fits"][setting]
        ranks = np.arange(1, len(fit["expected_weights"]) + 1)
        left.bar(ranks + (i - 0.5) * width, fit["expected_weights"], width, label=setting)
        trajectory = fit["trajectory"]
        epochs = np.arange(1, trajectory.shape[0] + 1)
        ax.plot(epochs, trajectory, lw=0.9)
        ax.axhline(protocols.OCCUPIED_FRACTION, color="k", lw=0.8, ls=":")
        ax.axvline(warmup + 0.5, color="k", lw=0.8, ls=":")
        ax.set_yscale("log")
        ax.set_xlabel("epoch")
        ax.set_ylabel("E[pi_k], one line per component")
        ax.set_title(f"{setting}: {fit['pruning'][-1]} components >= 1% at the end "
                     f"({fit['scores']['clusters']} hold points)", fontsize=9)
    left.axhline(protocols.OCCUPIED_FRACTION, color="k", lw=0.8, ls=":")
    left.set_yscale("log")
    left.set_xlabel("component, by E[pi] at the end")
    left.set_ylabel("E[pi]")
    left.set_title("expected weights at the end (dotted: 1%)", fontsize=9)
    left.legend(fontsize=8)
    return fig


def _pinwheel_table(pinwheel: dict):
    import pandas as pd

    rows = []
    fits = [(s, "bayes-scdc", pinwheel["fits"][s]["scores"]) for s in _SETTINGS]
    fits.append(("with links", "observed-bayes-scdc", pinwheel["observed"]["scores"]))
    for setting, method, scores in fits:
        paper = paper_numbers.PINWHEEL.get(_PAPER_ROWS.get((setting, method)), {})
        rows.append({"setting": setting, "method": method, **scores,
                     "acc (paper)": paper.get("acc"), "nmi (paper)": paper.get("nmi"),
                     "clusters (paper)": paper.get("clusters")})
    return pd.DataFrame(rows).set_index(["setting", "method"])


def _weights_table(weights: dict):
    import pandas as pd

    frame = pd.DataFrame({"alpha = beta": protocols.FACE_ACCURACIES,
                          "true weight": protocols.TRUE_WEIGHTS,
                          "Gibbs mean": weights["mean"], "Gibbs 5%": weights["q05"],
                          "Gibbs 95%": weights["q95"], "pairwise": weights["pairwise"]},
                         index=pd.RangeIndex(1, len(protocols.TRUE_WEIGHTS) + 1, name="worker"))
    return frame


def _pruning_tables(pinwheel: dict):
    import pandas as pd

    fits = pinwheel["fits"]
    per_epoch = pd.DataFrame({s: fits[s]["pruning"] for s in _SETTINGS},
                             index=pd.RangeIndex(1, len(fits[_SETTINGS[0]]["pruning"]) + 1,
                                                 name="epoch"))
    final = pd.DataFrame({s: fits[s]["expected_weights"] for s in _SETTINGS},
                         index=pd.RangeIndex(1, len(fits[_SETTINGS[0]]["expected_weights"]) + 1,
                                             name="rank"))
    return per_epoch, final


def _non_increasing(counts: list[int]) -> bool:
    return all(b <= a for a, b in zip(counts, counts[1:], strict=False))


def _metrics(plan, seed: int, pinwheel: dict, weights: dict, seconds: float) -> dict:
    pruning = {}
    for setting in _SETTINGS:
        fit = pinwheel["fits"][setting]
        pruning[setting] = {"per_epoch": fit["pruning"],
                            "non_increasing": _non_increasing(fit["pruning"]),
                            "final_expected_weights": fit["expected_weights"].tolist()}
    return {
        "seed": seed, "bayes_fit_seed": pinwheel["fit_seed"], "epochs": plan.epochs,
        "pinwheel": {**{f"bayes-scdc {s}": pinwheel["fits"][s]["scores"] for s in _SETTINGS},
                     "observed-bayes-scdc with links": pinwheel["observed"]["scores"]},
        "worker_weights": {"true": list(protocols.TRUE_WEIGHTS),
                           "observed-bayes-scdc": {"mean": weights["mean"].tolist(),
                                                   "q05": weights["q05"].tolist(),
                                                   "q95": weights["q95"].tolist()},
                           "pairwise-dawid-skene": weights["pairwise"].tolist()},
        "pruning": pruning,
        "seconds": {"total": seconds,
                    **{f"bayes-scdc {s}": pinwheel["fits"][s]["seconds"] for s in _SETTINGS},
                    "observed-bayes-scdc pinwheel": pinwheel["observed"]["seconds"],
                    **{f"{k} weights": v for k, v in weights["seconds"].items()}},
    }


def _fmt(scores: dict) -> str:
    return f"ACC {100 * scores['acc']:.1f}%, NMI {scores['nmi']:.2f}, {scores['clusters']} clusters"


def _summary(plan, seed: int, pinwheel: dict, weights: dict, seconds: float) -> str:
    fits = pinwheel["fits"]
    paper_with = paper_numbers.PINWHEEL[("with links", "bayes-scdc")]
    paper_without = paper_numbers.PINWHEEL[("without links", "bayes-scdc (good start)")]
    warmup = _warmup(plan)
    inside = (weights["q05"] <= np.asarray(protocols.TRUE_WEIGHTS)) & (
        np.asarray(protocols.TRUE_WEIGHTS) <= weights["q95"])
    order = np.argsort(-weights["mean"], kind="stable")
    pruning = []
    for setting in _SETTINGS:
        counts = fits[setting]["pruning"]
        trend = ("never rises" if _non_increasing(counts)
                 else "rises at some epochs (it is not monotone)")
        pruning.append(f"from {counts[0]} to {counts[-1]} {setting} ({trend})")
    return "\n\n".join([
        f"BayesSCDC on the pinwheel (500 points, K = {pinwheel['clusters']}, {plan.epochs} epochs "
        f"of which the first {warmup} hold the globals), one run from the demo's seed {seed} "
        f"(fit seed {pinwheel['fit_seed']}, the same with and without links); no seed was "
        f"picked by its score, and the results vary with the seed: some starts merge or split "
        f"arms. With the 980 noisy links: {_fmt(fits['with links']['scores'])} (paper "
        f"{100 * paper_with['acc']:.1f}%, {paper_with['nmi']:.2f}, {paper_with['clusters']}). "
        f"Without: {_fmt(fits['without links']['scores'])} (paper, from a good start, "
        f"{100 * paper_without['acc']:.1f}%, {paper_without['nmi']:.2f}, "
        f"{paper_without['clusters']}). The observed-feature Gibbs reference with the links "
        f"({plan.gibbs['warmup']} + {plan.gibbs['samples']} sweeps, the draw of highest log "
        f"joint): {_fmt(pinwheel['observed']['scores'])}. Clusters are counted when they hold "
        f"at least {protocols.OCCUPIED_FRACTION:.0%} of the points.",
        f"Worker weights logit(alpha) + logit(beta) on {weights['points']} of scikit-learn's "
        f"digits (PCA to 20 dimensions, the Face protocol's stand-in), {plan.pairs_per_kind} "
        f"same-class and as many different-class pairs per worker: the Gibbs reference's 90% "
        f"intervals hold the true weight for {int(inside.sum())} of 5 workers, and its "
        f"posterior means rank the workers "
        f"{'in the true order' if (order == np.arange(5)).all() else 'out of the true order'} "
        f"(means {', '.join(f'{w:.2f}' for w in weights['mean'])}; true "
        f"{', '.join(f'{w:.2f}' for w in protocols.TRUE_WEIGHTS)}). The pairwise worker "
        f"model, from the links alone: {', '.join(f'{w:.2f}' for w in weights['pairwise'])}"
        + (" (all 0: it stopped at its symmetric fixed point, where every item is spread "
           "evenly over the clusters and the links say nothing about the workers)."
           if np.allclose(weights["pairwise"], 0.0, atol=1e-6) else "."),
        f"Pruning: the number of components with E[pi] >= 1% goes {'; '.join(pruning)}. It "
        f"stays at the start's count for the first {warmup} epochs, while the globals are "
        f"held; "
        + ("then the sparse Dirichlet prior empties the components that no point uses."
           if any(fits[s]["pruning"][-1] < fits[s]["pruning"][0] for s in _SETTINGS)
           else "no component fell below 1% in this run.")
        + " The globals start from the data when they are released (every component then "
        "holds points) and move by natural-gradient steps of 0.01, so a component that loses "
        "its points fades geometrically, by about 1% a step (10 steps an epoch here): the "
        "per-component paths of E[pi] in the figure show the emptied components falling and "
        "the used ones rising. E[pi] counts points softly; the cluster counts above count "
        "each point's most probable cluster, so they can be lower.",
        f"Seconds: {seconds:.1f} in all.",
    ])


def assemble_demo(name: str, plan, seed: int, pinwheel: dict, weights: dict, seconds: float):
    """The :class:`~pyromodels.report.DemoResult` of the demo's runs."""
    from ...report import DemoResult

    per_epoch, final = _pruning_tables(pinwheel)
    tables = dict(zip(TABLES, (_pinwheel_table(pinwheel), _weights_table(weights), per_epoch,
                               final), strict=True))
    figures = dict(zip(FIGURES, (_pinwheel_figure(pinwheel), _weights_figure(weights),
                                 _pruning_figure(pinwheel, _warmup(plan))),
                       strict=True))
    metrics = _metrics(plan, seed, pinwheel, weights, seconds)
    return DemoResult(name=name, summary=_summary(plan, seed, pinwheel, weights, seconds),
                      metrics=metrics, tables=tables, figures=figures)
