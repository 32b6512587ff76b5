"""The written summary of the reference mixture's demo, worded from the measured numbers.

Each sentence that judges a fit (engines agree, chains converged, SVI is under-dispersed) is
chosen by comparing the metrics with fixed thresholds, so the text stays true when the numbers
change with the seed or the iteration counts.
"""

from __future__ import annotations

__all__ = ["summary_text", "RHAT_GOOD", "RHAT_FAIR", "AGREEMENT_GOOD", "SPREAD_TOLERANCE"]

#: R-hat at or below this reads as converged (the threshold of Vehtari et al., 2021)
RHAT_GOOD = 1.01
#: R-hat at or below this reads as acceptable for a short demo run
RHAT_FAIR = 1.05
#: share of points labelled as EM labels them, above which an engine "agrees" with EM
AGREEMENT_GOOD = 0.95
#: a ratio of posterior spreads within ``1 +- SPREAD_TOLERANCE`` reads as "comparable"
SPREAD_TOLERANCE = 0.1

_ENGINE_NAMES = {"em": "EM", "gibbs": "Gibbs", "svi": "SVI", "nuts": "NUTS"}


def _fmt_list(values) -> str:
    return "[" + ", ".join(f"{v:.3f}" for v in values) + "]"


def _setup(settings, explained: float) -> str:
    s = settings
    return (
        "A three-component Bayesian Gaussian mixture (full covariances, Dirichlet(1) weights, "
        "Normal-inverse-Wishart components centred on the data mean and covariance) is fitted "
        "to scikit-learn's wine data: 178 wines of 3 cultivars, whose 13 chemical measurements "
        "are standardised and projected on their first two principal components "
        f"({explained:.0%} of the variance). Wine rather than iris: on standardised iris the "
        "three-component posterior is multimodal (versicolor and virginica overlap) and NUTS "
        "is about ten times slower, so short chains there say little; the wine projection has "
        "three well-separated clusters, so the engines can be checked against each other and "
        f"against the cultivars. Engines: EM ({s.em_n_init} restarts), Gibbs ({s.num_chains} "
        f"chains of {s.gibbs_warmup} warm-up + {s.gibbs_samples} kept sweeps), SVI "
        f"({s.svi_steps} steps, mean-field normal guide, {s.svi_samples} draws) and NUTS "
        f"({s.num_chains} chains of {s.nuts_warmup} warm-up + {s.nuts_samples} draws). Every "
        "sampled fit is relabelled to the EM labels (Hungarian matching, draw by draw) before "
        "anything per component is compared."
    )


def _agreement(metrics: dict, engines: list[str]) -> str:
    scores = ", ".join(
        f"{_ENGINE_NAMES[e]} {metrics[e]['accuracy']:.3f} (NMI {metrics[e]['nmi']:.2f}, "
        f"ARI {metrics[e]['ari']:.2f})"
        for e in engines
    )
    text = f"Accuracy of the most probable component against the cultivars: {scores}. "
    sampled = [e for e in engines if e != "em"]
    off = [e for e in sampled if metrics[e]["agreement_with_em"] < AGREEMENT_GOOD]
    worst = min(metrics[e]["agreement_with_em"] for e in sampled)
    if not off:
        text += (
            f"Every engine labels at least {worst:.1%} of the points as EM does, so the four "
            "engines find the same clustering. "
        )
    else:
        text += " ".join(
            f"{_ENGINE_NAMES[e]} labels only {metrics[e]['agreement_with_em']:.1%} of the points "
            "as EM does, so it does not find the same clustering."
            for e in off
        ) + " "
    means = "; ".join(f"{_ENGINE_NAMES[e]} {_fmt_list(metrics[e]['weights_mean'])}" for e in engines)
    spread = max(
        abs(a - b)
        for k in range(len(metrics["em"]["weights_mean"]))
        for a in (metrics[e]["weights_mean"][k] for e in engines)
        for b in (metrics[e]["weights_mean"][k] for e in engines)
    )
    return text + f"Posterior-mean weights: {means} (largest difference {spread:.3f})."


def _verdict(rhat: float) -> str:
    if rhat <= RHAT_GOOD:
        return f"consistent with convergence (all R-hat <= {RHAT_GOOD})"
    if rhat <= RHAT_FAIR:
        return f"acceptable for a short run but short of the R-hat <= {RHAT_GOOD} target"
    return (
        "not converged: these chains are too short to trust (run "
        "`pyromodels reproduce gaussian-mixture --scale medium` for longer ones)"
    )


def _chains(metrics: dict, engine: str) -> str:
    m, name = metrics[engine], _ENGINE_NAMES[engine]
    raw = m["rhat_weights_unaligned"]
    if raw > RHAT_FAIR:
        switching = (
            f"{name}: before relabelling the largest R-hat of the weights is {raw:.2f}, because "
            "the chains settled on different orderings of the same clusters (label switching); "
        )
    else:
        switching = (
            f"{name}: before relabelling the largest R-hat of the weights is already {raw:.2f}: "
            "the chains happened to order the clusters alike and did not switch; "
        )
    worst = max(m["rhat_weights"], m["rhat_lp"])
    text = (
        switching
        + f"after relabelling it is {m['rhat_weights']:.3f} (smallest bulk ESS "
        f"{m['ess_bulk_weights']:.0f}), and the log joint has R-hat {m['rhat_lp']:.3f} and bulk "
        f"ESS {m['ess_bulk_lp']:.0f}: {_verdict(worst)}."
    )
    if "divergences" in m:
        text += (
            f" NUTS reports {m['divergences']} divergent transitions and a mean acceptance "
            f"probability of {m['acceptance_rate']:.2f} (the step size was adapted to 0.8)."
        )
    return text


def _svi(metrics: dict, reference: str) -> str:
    svi, ref = metrics["svi"], metrics[reference]
    ratio_locs = svi["sd_locs"] / ref["sd_locs"]
    ratio_weights = svi["sd_weights"] / ref["sd_weights"]
    numbers = (
        f"its posterior sd of the component means is {ratio_locs:.0%} of "
        f"{_ENGINE_NAMES[reference]}'s, that of the weights {ratio_weights:.0%}"
    )
    low, high = 1 - SPREAD_TOLERANCE, 1 + SPREAD_TOLERANCE
    if ratio_locs < low or ratio_weights < low:
        return (
            f"SVI is under-dispersed: {numbers}. A mean-field guide ignores the posterior "
            "correlations between parameters, and minimising KL(q || p) makes it fit inside the "
            "posterior; its means still agree with the samplers'."
        )
    if ratio_locs > high or ratio_weights > high:
        return (
            f"SVI is over-dispersed here: {numbers}, a sign that the guide's scales have not "
            "finished shrinking in the steps given."
        )
    return f"SVI's spread is comparable with the samplers' here: {numbers}."


def summary_text(metrics: dict, settings, explained: float) -> str:
    """The demo's summary: set-up, agreement, chain diagnostics, SVI's spread, caveats.

    Args:
        metrics: ``{engine: {metric: value}}`` as assembled by
            :func:`~pyromodels.experiments.reference_mixture.reproduction.run` (rows of the engine table
            plus ``weights_mean`` and the MCMC checks of Gibbs and NUTS).
        settings: the :class:`~pyromodels.experiments.reference_mixture.reproduction.Settings` used.
        explained: share of the standardised variance kept by the projection.

    Returns:
        Paragraphs separated by blank lines.
    """
    engines = [e for e in ("em", "gibbs", "svi", "nuts") if e in metrics]
    times = ", ".join(f"{_ENGINE_NAMES[e]} {metrics[e]['wall_time_s']:.1f} s" for e in engines)
    caveats = (
        "Caveats: the Gibbs lp is the log joint with the labels z, the NUTS lp has z summed "
        "out, so their levels differ and only chains of one engine should be compared; EM gives "
        "a single point, so it has no spread; ESS and R-hat of SVI draws would say nothing "
        "about the fit and are not reported. Wall times: " + times + "."
    )
    return "\n\n".join(
        [
            _setup(settings, explained),
            _agreement(metrics, engines),
            _chains(metrics, "gibbs") + "\n\n" + _chains(metrics, "nuts"),
            _svi(metrics, "gibbs"),
            caveats,
        ]
    )
