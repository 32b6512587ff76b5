"""A fit's report shows the diagnostics that apply to its method and no others."""

from __future__ import annotations

import logging
import warnings

import matplotlib

matplotlib.use("Agg")

import torch  # noqa: E402

from pyromodels.core import Posterior  # noqa: E402
from pyromodels.report import result_from_posterior  # noqa: E402


def _mcmc(num_chains: int, method: str = "nuts") -> Posterior:
    g = torch.Generator().manual_seed(0)
    shape = (num_chains, 60)
    stats = {"lp": torch.randn(shape, generator=g, dtype=torch.float64)}
    if method == "nuts":
        stats["energy"] = 5.0 + torch.randn(shape, generator=g, dtype=torch.float64)
    return Posterior(
        samples={"mu": torch.randn(*shape, 2, generator=g, dtype=torch.float64),
                 "z": torch.randint(0, 3, (*shape, 12), generator=g)},
        method=method, sample_stats=stats, attrs={"seed": 0, "wall_time_s": 1.0})


def test_nuts_report_has_trace_rank_and_energy_plots():
    result = result_from_posterior(_mcmc(2), "toy-nuts")
    captions = " | ".join(result.figures)
    assert "trace" in captions and "rank" in captions and "energy" in captions
    assert "r_hat" in result.tables["posterior summary"].columns


def test_gibbs_report_has_trace_and_rank_plots_but_no_energy():
    result = result_from_posterior(_mcmc(2, "gibbs"), "toy-gibbs")
    captions = " | ".join(result.figures)
    assert "trace" in captions and "rank" in captions and "energy" not in captions


def test_one_chain_says_r_hat_needs_two_and_prints_no_nan_column(caplog):
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        result = result_from_posterior(_mcmc(1), "toy-one")
    assert not [w for w in caught if "R-hat" in str(w.message) or "chain" in str(w.message)]
    table = result.tables["posterior summary"]
    assert "r_hat" not in table.columns
    assert {"ess_bulk", "ess_tail"} <= set(table.columns)
    assert not table.isna().any().any()
    assert "R-hat compares chains, so it needs at least two" in result.summary
    # ArviZ's "Shape validation failed" warning for one chain is not triggered
    assert not [r for r in caplog.records if "Shape validation" in r.getMessage()]


def test_every_trace_axis_is_labelled():
    result = result_from_posterior(_mcmc(2), "toy-labels")
    trace = next(f for name, f in result.figures.items() if name.startswith("trace"))
    for ax in trace.axes:
        assert ax.get_xlabel() and ax.get_ylabel()


def test_fit_without_draws_reports_its_objective():
    # a VAE's SVI fit keeps networks, not draws: its report is the loss curve, with no table
    # nor InferenceData (both need draws), and says so
    post = Posterior(samples={}, method="svi", losses=torch.linspace(10.0, 2.0, 30),
                     attrs={"seed": 3, "wall_time_s": 0.5})
    result = result_from_posterior(post, "toy-vae")
    assert list(result.figures) == ["optimisation trace"]
    assert result.tables == {} and result.inference_data == {}
    assert "draws no samples" in result.summary
    assert abs(result.metrics["svi"]["final_objective"] - 2.0) < 1e-6
