"""Measurements of the reference mixture's fits: labels, scores, the engine table, MCMC checks.

Every engine's fit is first put in the labelling of the EM fit (Gibbs, SVI and NUTS draws are
relabelled with :func:`~pyromodels.diagnostics.relabel`), so that "component ``k``" means the
same cluster for every engine. From an aligned fit:

* the assignment probabilities ``P(z_n = k | x)`` are the EM responsibilities, or the share of
  draws with ``z_n = k``; the point labels are their argmax;
* the scores against the true classes are the Hungarian accuracy, NMI and ARI;
* R-hat and ESS (ArviZ's rank-normalised split R-hat, bulk and tail ESS) are computed for the
  log joint ``lp``, the largest-cluster fraction and the weights, before and after relabelling.
"""

from __future__ import annotations

import pandas as pd
import torch

from ...core.posterior import Posterior
from ...diagnostics import compare_engines, label_invariant_stats, relabel, summary
from ...metrics import ari, clustering_accuracy, nmi

__all__ = [
    "MCMC_ENGINES",
    "align_to_em",
    "assignment_probs",
    "point_labels",
    "engine_table",
    "mcmc_checks",
]

#: engines whose draws come from Markov chains (R-hat and ESS are meaningful there)
MCMC_ENGINES = ("gibbs", "nuts")


def align_to_em(fits: dict[str, Posterior], component_sites: dict) -> dict[str, Posterior]:
    """Every fit in the labelling of ``fits["em"]``: sampled fits relabelled draw by draw.

    Args:
        fits: ``{engine: Posterior}`` holding an ``"em"`` fit (with ``params["labels"]``) and
            fits with label draws ``samples["z"]`` shaped ``(chain, draw, N)``.
        component_sites: ``{site: component axis}``, the model's ``component_sites``.

    Returns:
        ``{engine: Posterior}`` in the same order; the EM fit is returned as it is.

    Example:
        >>> aligned = align_to_em(fits, model.component_sites)  # doctest: +SKIP
    """
    reference = fits["em"].params["labels"]
    return {
        engine: post
        if engine == "em"
        else relabel(post, component_sites=component_sites, reference=reference)
        for engine, post in fits.items()
    }


def assignment_probs(posterior: Posterior) -> torch.Tensor:
    """``(N, K)`` probabilities ``P(z_n = k | x)`` of an aligned fit, as ``float64``.

    EM: its responsibilities. Sampled fits: ``(1/S) sum_s [z_n^(s) = k]`` over every chain and
    draw, meaningful once the draws share one labelling.
    """
    if posterior.method == "em":
        return posterior.params["responsibilities"].double()
    z = posterior.samples["z"]
    num_components = posterior.samples["weights"].shape[-1]
    return torch.stack([(z == k).double().mean(dim=(0, 1)) for k in range(num_components)], -1)


def point_labels(posterior: Posterior) -> torch.Tensor:
    """``(N,)`` most probable component of each point (see :func:`assignment_probs`)."""
    return assignment_probs(posterior).argmax(-1)


def _site_sd(posterior: Posterior, site: str) -> float:
    """Posterior sd of ``site`` averaged over its scalar entries (0 for a point estimate)."""
    if posterior.num_chains * posterior.num_draws < 2:
        return 0.0
    return float(posterior.flat(site).double().std(0).mean())


def engine_table(aligned: dict[str, Posterior], truth) -> pd.DataFrame:
    """One row per engine: scores against ``truth``, agreement with EM, weights, spreads, time.

    Args:
        aligned: ``{engine: Posterior}`` from :func:`align_to_em`, one fit per method.
        truth: ``(N,)`` true class of each point.

    Returns:
        The :func:`~pyromodels.diagnostics.compare_engines` table with columns ``accuracy``,
        ``nmi``, ``ari``, ``agreement_with_em`` (share of points whose label equals EM's),
        ``weight_0`` .. ``weight_{K-1}`` (posterior means), ``sd_weights`` and ``sd_locs``
        (posterior sd averaged over entries) and ``wall_time_s``.
    """
    labels = {post.method: point_labels(post).cpu().numpy() for post in aligned.values()}
    em_labels = labels["em"]

    def of(post):
        return labels[post.method]

    stats = {
        "accuracy": lambda p: clustering_accuracy(truth, of(p)),
        "nmi": lambda p: nmi(truth, of(p)),
        "ari": lambda p: ari(truth, of(p)),
        "agreement_with_em": lambda p: float((of(p) == em_labels).mean()),
    }
    num_components = aligned["em"].samples["weights"].shape[-1]
    for k in range(num_components):
        stats[f"weight_{k}"] = lambda p, k=k: float(p.mean("weights")[k])
    stats["sd_weights"] = lambda p: _site_sd(p, "weights")
    stats["sd_locs"] = lambda p: _site_sd(p, "locs")
    stats["wall_time_s"] = lambda p: float(p.attrs["wall_time_s"])
    return compare_engines(aligned, stats)


def _checked_posterior(raw: Posterior, aligned: Posterior) -> Posterior:
    """The label-invariant statistics and the weights before and after relabelling."""
    invariant = label_invariant_stats(raw)
    samples = {
        "lp": invariant["lp"],
        "largest_cluster_fraction": invariant["largest_cluster_fraction"],
        "weights": aligned.samples["weights"],
        "weights_unaligned": raw.samples["weights"],
    }
    return Posterior(samples=samples, method=raw.method, attrs=dict(raw.attrs))


def mcmc_checks(raw: Posterior, aligned: Posterior) -> tuple[dict, pd.DataFrame]:
    """R-hat and ESS of a chain-based fit, as metrics and as ArviZ's summary table.

    Args:
        raw: a Gibbs or NUTS fit with ``sample_stats["lp"]`` and label draws ``samples["z"]``.
        aligned: the same fit relabelled (see :func:`align_to_em`).

    Returns:
        ``(metrics, table)``: metrics ``rhat_lp``, ``ess_bulk_lp``, ``ess_tail_lp``,
        ``rhat_weights`` (largest over components), ``ess_bulk_weights`` (smallest),
        ``rhat_weights_unaligned`` (largest, before relabelling) and, for NUTS,
        ``divergences`` and ``acceptance_rate`` (mean over chains); the table is
        :func:`~pyromodels.diagnostics.summary` of ``lp``, the largest-cluster fraction and
        the weights before and after relabelling.
    """
    table = summary(_checked_posterior(raw, aligned), round_to="none")
    weights = table.loc[[i for i in table.index if i.startswith("weights[")]]
    unaligned = table.loc[[i for i in table.index if i.startswith("weights_unaligned[")]]
    metrics = {
        "rhat_lp": float(table.loc["lp", "r_hat"]),
        "ess_bulk_lp": float(table.loc["lp", "ess_bulk"]),
        "ess_tail_lp": float(table.loc["lp", "ess_tail"]),
        "rhat_weights": float(weights["r_hat"].max()),
        "ess_bulk_weights": float(weights["ess_bulk"].min()),
        "rhat_weights_unaligned": float(unaligned["r_hat"].max()),
    }
    if raw.method == "nuts":
        metrics["divergences"] = int(raw.diagnostics["num_divergences"])
        rates = raw.diagnostics["mean_accept_prob"]
        metrics["acceptance_rate"] = float(sum(rates) / len(rates))
    return metrics, table
