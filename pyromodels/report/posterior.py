"""A generic report entry for one fit: the :class:`DemoResult` of a :class:`Posterior`."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
import torch

from ..checks import check_name
from ..core.posterior import to_inference_data
from ..diagnostics import plot_energy, plot_loss, plot_rank, plot_trace
from ..diagnostics.plots import az
from .fit_warnings import collapse_warnings, mcmc_warnings, with_warnings
from .result import DemoResult

__all__ = ["result_from_posterior", "mcmc_figures", "scalar_diagnostics", "final_values"]


def scalar_diagnostics(diagnostics: dict) -> dict:
    """The scalar entries of a posterior's ``diagnostics`` (numbers, booleans, strings).

    One-element tensors count as scalars. Array-valued diagnostics are left out of the
    metrics table; they stay in the ``Posterior`` and in the NetCDF file's sample statistics.

    Example:
        >>> scalar_diagnostics({"converged": True, "n_iter": 12, "trace": torch.ones(3)})
        {'converged': True, 'n_iter': 12}
    """
    out = {}
    for key, value in diagnostics.items():
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, str | bool | numbers.Real):
            out[key] = value
    return out


def final_values(losses: torch.Tensor):
    """The last finite value of an optimisation trace: a float for ``(iter,)``, a list (one per
    restart) for ``(restart, iter)`` padded with NaN; ``None`` where a trace has no finite value.

    Example:
        >>> final_values(torch.tensor([[3.0, 2.0, float("nan")], [4.0, 1.5, 1.0]]))
        [2.0, 1.0]
    """
    trace = losses.detach().double().cpu()
    if trace.dim() not in (1, 2):
        raise ValueError(f"losses must be (iter,) or (restart, iter), got {tuple(trace.shape)}")
    finals = []
    for row in trace.reshape(-1, trace.shape[-1]):
        finite = row[torch.isfinite(row)]
        finals.append(float(finite[-1]) if finite.numel() else None)
    return finals[0] if trace.dim() == 1 else finals


def result_from_posterior(posterior, name: str) -> DemoResult:
    """Summarise one fit as a :class:`DemoResult`.

    The result holds the metrics ``{method: {num_chains, num_draws, seed, wall_time_s,
    final_objective (see :func:`final_values`), <scalar diagnostics>}}``, the ArviZ summary
    table, a figure of the optimisation trace when the posterior has one, and the
    ``arviz.InferenceData`` under the method's name.

    For Markov chain draws the summary warns (and ``metrics[method]["warnings"]`` lists) when
    an R-hat, effective sample size or E-BFMI is bad or a transition diverged: the findings of
    :func:`~pyromodels.core.diagnostic_warnings.sampling_findings`, on the continuous sites or,
    where the posterior names them, its label-invariant sites.

    Args:
        posterior: a :class:`~pyromodels.core.Posterior`.
        name: the result's name in the report (letters, digits, ``.``, ``_``, ``-``).

    Example:
        >>> result = result_from_posterior(model.fit(data, method="em"), "gaussian-mixture")  # doctest: +SKIP
        >>> list(result.inference_data)  # doctest: +SKIP
        ['em']
    """
    check_name(name, "name")
    method = check_name(posterior.method, "posterior.method")
    attrs = posterior.attrs
    metrics = {
        "num_chains": posterior.num_chains,
        "num_draws": posterior.num_draws,
        "seed": attrs.get("seed"),
        "wall_time_s": attrs.get("wall_time_s"),
    }
    figures = {}
    if posterior.losses is not None:
        metrics["final_objective"] = final_values(posterior.losses)
        figures["optimisation trace"] = plot_loss(posterior)
    if _is_mcmc(posterior):
        figures.update(mcmc_figures(posterior))
    metrics.update(scalar_diagnostics(posterior.diagnostics))
    wall = attrs.get("wall_time_s")
    timing = f" in {wall:.2f} s" if isinstance(wall, numbers.Real) else ""
    summary = (
        f"{name} fitted with {method}: {posterior.num_chains} chain(s) of "
        f"{posterior.num_draws} draw(s), seed {attrs.get('seed')}{timing}."
    )
    note = _diagnostics_note(posterior)
    if not posterior.samples:  # a fit that keeps networks, not draws (a VAE's SVI)
        summary = (f"{name} fitted with {method}, seed {attrs.get('seed')}{timing}. The fit keeps "
                   "its networks and draws no samples, so there is no summary table nor "
                   "InferenceData; the figure shows its objective per step.")
        note = ""
    if note:
        summary += "\n\n" + note
    tables = _tables(posterior) if posterior.samples else {}
    idata = {method: posterior.to_inference_data()} if posterior.samples else {}
    result = DemoResult(
        name=name,
        summary=summary,
        metrics={method: metrics},
        tables=tables,
        figures=figures,
        inference_data=idata,
    )
    sampling = mcmc_warnings(posterior) if posterior.samples else []
    return with_warnings(result, method, sampling + collapse_warnings(posterior))


def _is_mcmc(posterior) -> bool:
    """Whether the draws come from Markov chains (not a point estimate nor a guide's draws)."""
    return posterior.method not in ("em", "svi") and posterior.num_draws > 1


def _diagnostics_note(posterior) -> str:
    """What the report's summary table can and cannot say about this fit."""
    if posterior.method == "em":
        return ("EM gives a point estimate: the table lists its values; there are no draws, so "
                "no spread, R-hat or ESS. The figure shows the EM objective per iteration.")
    if posterior.method == "svi":
        return ("The draws come from the fitted variational guide, independent by construction: "
                "R-hat and ESS say nothing about an SVI fit and are not shown. The figure shows "
                "the negative ELBO per step, the fit's own convergence check.")
    if _is_mcmc(posterior) and posterior.num_chains < 2:
        return ("One chain: R-hat compares chains, so it needs at least two (fit with "
                "num_chains >= 2) and is not shown, nor is the rank plot; ESS (effective "
                "sample size) is per chain.")
    return ""


def mcmc_figures(posterior) -> dict:
    """Trace and rank plots of an MCMC fit, and the energy plot when the draws record the
    Hamiltonian (NUTS/HMC). The rank plot needs two chains or more: with one it is left out.

    The traces and ranks are of the label-invariant statistics of the first integer site of
    per-point labels (a site named in ``posterior.attrs["label_invariant_sites"]`` is a
    statistic already, never labels) and the log joint, or else of the sites with one number per draw (for
    example the number of clusters of a DP mixture's Monte Carlo EM), or else of the continuous
    sites.

    Returns:
        ``{caption: Figure}``; empty when the posterior has nothing to plot.
    """
    summaries = set(posterior.attrs.get("label_invariant_sites", ()))
    labels = [k for k, v in posterior.samples.items()  # (chain, draw, point) labels
              if not v.is_floating_point() and v.dim() == 3 and k not in summaries]
    site = labels[0] if labels else "z"
    figures, var_names = {}, None
    statistics = [k for k in _scalar_sites(posterior)  # constant ones have nothing to show
                  if k in summaries and not _constant(posterior.samples[k])]
    try:
        if statistics:  # the draws are label-invariant statistics: trace them
            raise ValueError("no label site")
        trace = plot_trace(posterior, site=site)
    except ValueError:  # no label site, no log joint, or constant statistics only
        var_names = (statistics or _scalar_sites(posterior) or _continuous_sites(posterior))[:4]
        trace = plot_trace(posterior, var_names, site=site) if var_names else None
    if trace is not None:
        figures["trace plot (one line per chain)"] = trace
        if posterior.num_chains > 1:
            figures["rank plot (uniform bars: the chains mix)"] = plot_rank(
                posterior, var_names, site=site)
    if "energy" in posterior.sample_stats:
        figures["energy plot (NUTS): marginal energy against energy transitions, with BFMI"] = (
            plot_energy(posterior))
    return figures


def _tables(posterior) -> dict:
    """The ArviZ summary of the draws, or for a point estimate (one draw: EM) its values
    (a spread, R-hat or ESS of one draw is undefined). R-hat and ESS appear only for MCMC
    draws, R-hat only with two chains or more."""
    sites = _continuous_sites(posterior)
    if posterior.num_chains * posterior.num_draws > 1:
        if _is_mcmc(posterior) and posterior.num_chains > 1:
            return {"posterior summary": posterior.summary(var_names=sites)}
        idata = to_inference_data(posterior, log_likelihood=False, predictive=False)
        table = az.summary(idata, var_names=sites, kind="stats")
        if _is_mcmc(posterior):
            for method in ("bulk", "tail"):
                # one chain's ESS, in the summary's row order (sites, then C order)
                ess = az.ess(idata, var_names=sites, method=method)
                table[f"ess_{method}"] = np.concatenate(
                    [np.ravel(ess[v].values) for v in sites]).round()
        return {"posterior summary": table}
    rows = {}
    for site in sites:
        value = posterior.samples[site][0, 0].detach().cpu().double()
        for index in np.ndindex(*value.shape):
            label = f"{site}[{', '.join(map(str, index))}]" if index else site
            rows[label] = float(value[index])
    return {"point estimate": pd.DataFrame({"estimate": rows})}


def _constant(values) -> bool:
    return bool((values == values.flatten()[0]).all())


def _scalar_sites(posterior) -> list[str]:
    """Sites with one number per draw (label-invariant statistics such as a number of
    clusters), of any dtype."""
    return [name for name, value in posterior.samples.items() if value.dim() == 2]


def _continuous_sites(posterior) -> list[str]:
    """Sites with floating draws: per-point discrete labels make a long, meaningless summary."""
    return [name for name, value in posterior.samples.items() if value.is_floating_point()]
