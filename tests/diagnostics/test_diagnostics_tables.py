"""summary (with its warning for non-MCMC fits) and compare_engines."""

import warnings

import numpy as np
import pytest
import torch

from pyromodels.core import Posterior
from pyromodels.diagnostics import compare_engines, summary


def _ar1(chains, draws, rho, seed, shift=0.0):
    """Stationary AR(1) chains x_t = rho x_{t-1} + e_t; chain c is shifted by c * shift."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((chains, draws))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0] / np.sqrt(1 - rho**2)
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    return torch.from_numpy(x + shift * np.arange(chains)[:, None])


def test_summary_columns_and_moments():
    mu = _ar1(4, 1000, 0.0, seed=0)
    z = torch.randint(0, 2, (4, 1000, 3), generator=torch.Generator().manual_seed(0))
    post = Posterior(samples={"mu": mu, "z": z}, method="nuts")
    table = summary(post, var_names=["mu"], round_to="none")
    assert {"mean", "sd", "ess_bulk", "ess_tail", "r_hat"} <= set(table.columns)
    assert list(table.index) == ["mu"]
    assert table.loc["mu", "mean"] == pytest.approx(float(mu.mean()), rel=1e-12)
    assert table.loc["mu", "sd"] == pytest.approx(float(mu.std()), rel=1e-12)
    assert list(summary(post).index) == ["mu", "z[0]", "z[1]", "z[2]"]
    assert post.summary(var_names=["mu"], round_to="none").equals(table)


def test_summary_rhat_and_ess_follow_the_chain_axis():
    # AR(1) with rho = 0.5: ESS = S (1 - rho) / (1 + rho) = 4000 / 3. Over 100 seeds the ArviZ
    # bulk-ESS estimate of such chains had sd 95, so 400 is about four standard deviations.
    post = Posterior(samples={"x": _ar1(4, 1000, 0.5, seed=1)}, method="gibbs")
    row = summary(post, round_to="none").loc["x"]
    assert abs(row["ess_bulk"] - 4000 / 3) < 400
    assert row["r_hat"] < 1.01
    # Chains centred 3 sd apart have not mixed: R-hat far above 1.
    shifted = Posterior(samples={"x": _ar1(4, 1000, 0.5, seed=1, shift=3.0)}, method="gibbs")
    assert summary(shifted, round_to="none").loc["x", "r_hat"] > 1.5


@pytest.mark.parametrize("method, reason", [("svi", "variational guide"), ("em", "point estimate")])
def test_summary_of_non_mcmc_fits_has_no_chain_diagnostics_unless_asked(method, reason):
    post = Posterior(samples={"mu": _ar1(1, 200, 0.0, seed=2)}, method=method)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither ours nor ArviZ's one-chain warning
        table = summary(post, round_to="none")
    assert {"mean", "sd"} <= set(table.columns) and "r_hat" not in table.columns
    with pytest.warns(UserWarning, match=f"R-hat and ESS are MCMC diagnostics.*{reason}"):
        table = summary(post, round_to="none", kind="all")
    assert "r_hat" in table.columns


def test_summary_does_not_warn_for_mcmc():
    post = Posterior(samples={"mu": _ar1(2, 200, 0.0, seed=3)}, method="nuts")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary(post)
    assert not [w for w in caught if "MCMC diagnostics" in str(w.message)]


def test_compare_engines_table():
    fits = {
        "gibbs": Posterior(samples={"mu": _ar1(2, 100, 0.0, seed=4)}, method="gibbs"),
        "svi": Posterior(samples={"mu": _ar1(1, 100, 0.0, seed=5) + 1.0}, method="svi"),
    }
    stats = {
        "mean": lambda p: p.mean("mu"),
        "draws": lambda p: p.num_chains * p.num_draws,
        "q90": lambda p: np.quantile(p.flat("mu").numpy(), 0.9),
    }
    table = compare_engines(fits, stats)
    assert list(table.index) == ["gibbs", "svi"] and table.index.name == "engine"
    assert list(table.columns) == ["mean", "draws", "q90"]
    for engine, post in fits.items():
        assert table.loc[engine, "mean"] == pytest.approx(float(post["mu"].mean()), rel=1e-12)
        assert table.loc[engine, "q90"] == pytest.approx(np.quantile(post["mu"].numpy(), 0.9))
    assert table["draws"].tolist() == [200.0, 100.0]


def test_compare_engines_errors():
    fits = {"gibbs": Posterior(samples={"mu": torch.zeros(2, 3)}, method="gibbs")}
    with pytest.raises(ValueError, match=r"stats\['vec'\] must return a scalar.*shape \(2, 3\)"):
        compare_engines(fits, {"vec": lambda p: p["mu"]})
    with pytest.raises(ValueError, match=r"stats\['name'\] must return a real number, got str"):
        compare_engines(fits, {"name": lambda p: p.method})
    with pytest.raises(TypeError, match=r"stats\['x'\] must be callable"):
        compare_engines(fits, {"x": 3})
    with pytest.raises(TypeError, match=r"posteriors\['bad'\] must be a pyromodels Posterior"):
        compare_engines({"bad": None}, {"m": lambda p: 0.0})
    with pytest.raises(TypeError, match="posteriors must be a non-empty dict"):
        compare_engines({}, {"m": lambda p: 0.0})


def test_summary_of_a_point_estimate_is_its_values():
    post = Posterior(samples={"mu": torch.tensor([[[1.5, -2.0]]])}, method="em")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = summary(post, round_to="none")
    assert list(table.columns) == ["mean"]
    assert table["mean"].tolist() == [1.5, -2.0]
