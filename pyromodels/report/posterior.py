"""A generic report entry for one fit: the :class:`DemoResult` of a :class:`Posterior`."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
import torch

from ..checks import check_name
from ..diagnostics import plot_loss
from .result import DemoResult

__all__ = ["result_from_posterior", "scalar_diagnostics", "final_values"]


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
    metrics.update(scalar_diagnostics(posterior.diagnostics))
    wall = attrs.get("wall_time_s")
    timing = f" in {wall:.2f} s" if isinstance(wall, numbers.Real) else ""
    summary = (
        f"{name} fitted with {method}: {posterior.num_chains} chain(s) of "
        f"{posterior.num_draws} draw(s), seed {attrs.get('seed')}{timing}."
    )
    return DemoResult(
        name=name,
        summary=summary,
        metrics={method: metrics},
        tables=_tables(posterior),
        figures=figures,
        inference_data={method: posterior.to_inference_data()},
    )


def _tables(posterior) -> dict:
    """The ArviZ summary of the draws, or for a point estimate (one draw: EM) its values
    (a spread, R-hat or ESS of one draw is undefined)."""
    sites = _continuous_sites(posterior)
    if posterior.num_chains * posterior.num_draws > 1:
        return {"posterior summary": posterior.summary(var_names=sites)}
    rows = {}
    for site in sites:
        value = posterior.samples[site][0, 0].detach().cpu().double()
        for index in np.ndindex(*value.shape):
            label = f"{site}[{', '.join(map(str, index))}]" if index else site
            rows[label] = float(value[index])
    return {"point estimate": pd.DataFrame({"estimate": rows})}


def _continuous_sites(posterior) -> list[str]:
    """Sites with floating draws: per-point discrete labels make a long, meaningless summary."""
    return [name for name, value in posterior.samples.items() if value.is_floating_point()]
