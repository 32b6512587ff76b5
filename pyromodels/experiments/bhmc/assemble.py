"""The RBHMC reproduction's report entry: settings beside the paper's, AID / AOD and per-level
F-measure tables, figures, JSON-ready metrics, ArviZ data and the summary."""

from __future__ import annotations

import math
from dataclasses import asdict

import pandas as pd
import torch

from ...core.posterior import Posterior
from .figures import plot_f_measure, plot_sensitivity, plot_traces, setting_label
from .paper_numbers import HYPERPARAMETERS, NO_NUMBERS
from .protocol import summarise_sensitivity
from .settings import PROTOCOLS, protocol_settings

__all__ = ["assemble", "describe_fit", "settings_table", "f_summary", "json_ready", "merge_chains",
           "EXACTNESS"]

#: what our sampler does where the paper's is inexact
EXACTNESS = (
    "Exactness: our RBHMC sampler targets the regularised posterior exactly. The path move's "
    "Metropolis-Hastings ratio includes the Polson-Scott kernels of the other data whose "
    "sibling sets (and so worst violations) change when a node is born or dies, which the "
    "paper's ratio (datum n only) leaves out, and the eta update is a Gaussian proposal from "
    "the paper's conditional corrected by a Metropolis-Hastings step (the conditional ignores "
    "that eta also moves which sibling is the worst). The paper's literal steps (its path "
    "ratio, and its always-accepted eta draw with the printed prior precision) are kept "
    "behind paper_literal=True.")


def json_ready(value):
    """``value`` with NaN floats as ``None`` and tuples as lists, recursively (dicts, lists).

    Example:
        >>> json_ready({"a": float("nan"), "b": (1, 2.5)})
        {'a': None, 'b': [1, 2.5]}
    """
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def settings_table(plan) -> pd.DataFrame:
    """Our runs beside the paper's: one row per (data set, protocol)."""
    rows = {}
    for dplan in plan.datasets:
        for p in PROTOCOLS:
            ours = dplan.runs[p]
            paper = protocol_settings(dplan.dataset, p, "paper")
            rows[(dplan.dataset, p)] = {
                "chains": ours.chains, "repeats": ours.repeats, "burn_in": ours.burn_in,
                "draws": ours.draws, "settings (C, eps0)": str(ours.settings),
                "paper chains": paper.chains, "paper repeats": paper.repeats,
                "paper burn_in": paper.burn_in, "paper draws": paper.draws,
                "paper settings": str(paper.settings) if paper.paper else
                f"{paper.settings} (partly ours: lost or unstated)"}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["dataset", "protocol"])
    return frame


def f_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-level F-measure over chains: mean, median, min and max per (method, C, eps0,
    level), and the mean against the true clusters where known."""
    frame = frame.assign(C=frame.C.astype(float))
    return frame.groupby(["method", "C", "eps0", "level"], dropna=False, sort=False).agg(
        chains=("f_measure", "size"), mean=("f_measure", "mean"),
        median=("f_measure", "median"), min=("f_measure", "min"), max=("f_measure", "max"),
        true_mean=("f_true", "mean")).reset_index()


def merge_chains(posteriors: list[Posterior]) -> Posterior:
    """One-chain fits of the same setting and length as one multi-chain Posterior."""
    first = posteriors[0]
    samples = {k: torch.cat([p.samples[k] for p in posteriors]) for k in first.samples}
    stats = {k: torch.cat([p.sample_stats[k] for p in posteriors]) for k in first.sample_stats}
    return Posterior(samples=samples, method=first.method, sample_stats=stats,
                     attrs={**first.attrs, "seeds": [int(p.attrs["seed"]) for p in posteriors]},
                     model=first.model, data=first.data)


def _grouped_fits(sampler) -> dict:
    groups: dict = {}
    for (_, c, e, burn, draws, _), post in sampler.fits.items():
        groups.setdefault((setting_label("BHMC" if c is None else "RBHMC", c, e), burn, draws),
                          []).append(post)
    best: dict = {}
    for (label, _, _), posts in groups.items():  # per setting, the group of most chains
        if label not in best or len(posts) > len(best[label]):
            best[label] = posts
    return {label: merge_chains(posts) for label, posts in best.items()}


def _tree_figures(name: str, out: dict) -> dict:
    from ...bnp import Tree, plot_tree

    data = out["data"]
    if name == "animals":
        names = list(data.names)
    else:
        names = [data.class_names[int(k)] for k in data.labels]
    figs = {}
    for (method, c, e, chain), paths in out["case_study"].items():
        label = setting_label(method, c, e)
        fig = plot_tree(Tree.from_paths(torch.as_tensor(paths)), names=names)
        fig.suptitle(f"{name}: best tree of {label}, chain {chain + 1}")
        figs[f"{name}: tree, {label}, chain {chain + 1}"] = fig
    return figs


def _figures(results: dict) -> dict:
    figs = {}
    fig_no = {"animals": ("3", "4", "6"), "fashion_mnist": ("7", "8", "10")}
    for name, out in results.items():
        f3, f4, f6 = fig_no.get(name, ("3", "4", "6"))
        figs[f"{name}: CDL and RCDL traces"] = plot_traces(
            out["convergence"], f"{name}: CDL and RCDL per iteration (Fig. {f3} style)")
        figs[f"{name}: AID and AOD against C and eps0"] = plot_sensitivity(
            out["sensitivity"], f"{name}: AID and AOD of the last tree (Fig. {f4} style)")
        figs.update(_tree_figures(name, out))
        figs[f"{name}: per-level F-measure"] = plot_f_measure(
            out["f_measure"], "f_measure",
            f"{name}: F-measure of each chain's best tree (Fig. {f6} style)")
        if out["data"].true_paths is not None:
            figs[f"{name}: per-level F against the true tree"] = plot_f_measure(
                out["f_measure"], "f_true", f"{name}: F-measure against the true clusters")
    return figs


def _findings(results: dict) -> list[str]:
    lines = []
    for name, out in results.items():
        frame = out["f_measure"]
        col = "f_true" if out["data"].true_paths is not None else "f_measure"
        level1 = frame[frame.level == 1].groupby("method")[col].mean()
        sens = summarise_sensitivity(out["sensitivity"])
        better = int(sens.get("better_than_bhmc", pd.Series(dtype=bool)).sum())
        reg = len(sens[sens.method == "RBHMC"])
        text = (f"{name}: mean level-1 F ({'true clusters' if col == 'f_true' else 'classes'})"
                f" BHMC {level1.get('BHMC', math.nan):.3f}, RBHMC "
                f"{level1.get('RBHMC', math.nan):.3f}; {better} of {reg} RBHMC settings beat "
                f"BHMC on both AID and AOD")
        lines.append(text)
    return lines


def assemble(name: str, plan, results: dict, skipped: dict, seconds: float):
    """The :class:`~pyromodels.report.DemoResult` of a run."""
    from ...report import DemoResult

    tables = {"settings: ours beside the paper's": settings_table(plan),
              "hyperparameters (the paper's)": pd.DataFrame(
                  {k: asdict(v) for k, v in HYPERPARAMETERS.items()})}
    metrics = {"seconds": {"total": seconds}, "skipped": dict(skipped), "datasets": {}}
    inference_data = {}
    for dname, out in results.items():
        sens = summarise_sensitivity(out["sensitivity"])
        fsum = f_summary(out["f_measure"])
        tables[f"{dname}: AID and AOD per setting"] = sens
        tables[f"{dname}: per-level F-measure over chains"] = fsum
        metrics["seconds"][dname] = out["sampler"].seconds
        metrics["datasets"][dname] = {
            "num_points": int(out["data"].x.shape[0]), "dim": int(out["data"].x.shape[1]),
            "prior": asdict(out["prior"]),
            "sensitivity": sens.to_dict(orient="records"),
            "f_measure": fsum.to_dict(orient="records"),
            "chains_run": len(out["sampler"].fits)}
        for label, post in _grouped_fits(out["sampler"]).items():
            key = label.replace("RBHMC C=", "RBHMC-C").replace(", eps0=", "-eps0")
            inference_data[f"{dname}-{key}"] = post.to_inference_data()
    findings = _findings(results)
    summary = "\n\n".join([
        NO_NUMBERS + " So there is nothing to match number for number: the tables put our "
        "settings beside the paper's and report what we measured.",
        "What we found: " + ("; ".join(findings) if findings else "no data set ran") + ".",
        EXACTNESS,
        ("Chains ran one after another in one process. " if plan.n_jobs == 1 else
         f"Chains ran on {plan.n_jobs} joblib workers. ")
        + (f"Skipped: {', '.join(skipped)} (files not installed)." if skipped else "")])
    return DemoResult(name=name, summary=summary, metrics=json_ready(metrics), tables=tables,
                      figures=_figures(results), inference_data=inference_data)


def describe_fit(posterior, data, *, name: str):
    """The report of ``pyromodels fit bhmc``: the generic one, plus the best tree (drawn, and
    its paths as ``paths.csv``, one row per datum), the data coloured by its clusters, its
    score, AID and AOD, and the CDL (complete-data log-likelihood; and RCDL, the regularised
    CDL) trace of every chain, warm-up included."""
    from ...bnp import Tree, plot_tree
    from ...registry import FitOutput
    from ...report import result_from_posterior
    from .figures import plot_chain_traces, plot_data_by_cluster

    result = result_from_posterior(posterior, name)
    p = posterior.params
    best = {"criterion": p["criterion"], "best_score": p["best_score"],
            "best_chain": p["best_chain"], "aid": p["aid"], "aod": p["aod"],
            "leaves": int(len(torch.unique(p["paths"][:, -1])))}
    result.metrics.setdefault(posterior.method, {}).update(json_ready(best))
    result.figures["data coloured by cluster of the best tree (top split and leaves)"] = (
        plot_data_by_cluster(torch.as_tensor(data).cpu().numpy(), p["paths"].numpy()))
    result.figures["best tree (leaves labelled by data row)"] = plot_tree(
        Tree.from_paths(p["paths"]))
    result.figures["CDL / RCDL per sweep"] = plot_chain_traces(p)
    paths = pd.DataFrame(p["paths"].numpy(),
                         columns=[f"level_{lv}" for lv in range(p["paths"].shape[1])])
    paths.index.name = "datum"
    result.tables["best tree: nodes per level"] = pd.DataFrame(
        {"nodes": [int(len(torch.unique(p["paths"][:, lv])))
                   for lv in range(1, p["paths"].shape[1])]},
        index=pd.Index(range(1, p["paths"].shape[1]), name="level"))
    return FitOutput(result, {"paths.csv": paths})
