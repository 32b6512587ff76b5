"""Each threshold of the sampling diagnostics fires on a constructed posterior and not on a
clean one; the warning names what fired; R-hat is skipped with one chain; label-switching raw
sites are not checked where the posterior names its label-invariant sites."""

from __future__ import annotations

import warnings

import pytest
import torch

from pyromodels.core import Posterior
from pyromodels.core.diagnostic_warnings import (
    BFMI_LIMIT,
    ESS_PER_CHAIN,
    RHAT_LIMIT,
    SamplingWarning,
    e_bfmi,
    sampling_findings,
    warn_sampling_problems,
)


def _iid(num_chains=4, num_draws=500, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(num_chains, num_draws, generator=g, dtype=torch.float64)


def _posterior(mu, method="nuts", **fields) -> Posterior:
    return Posterior(samples={"mu": mu}, method=method, **fields)


def _kinds(posterior) -> list[str]:
    return [f.kind for f in sampling_findings(posterior)]


def test_independent_draws_are_clean():
    # 2000 iid draws: split R-hat within ~0.003 of 1, ESS ~2000 >> 400; iid Gaussian energy
    # has E-BFMI ~2 (differences have twice the variance), far above 0.3
    stats = {"diverging": torch.zeros(4, 500, dtype=torch.bool), "energy": _iid(seed=1)}
    assert _kinds(_posterior(_iid(), sample_stats=stats)) == []


def test_chains_apart_hit_r_hat():
    mu = _iid()
    mu[0] += 3.0  # one chain 3 sd away: R-hat about 1.5
    found = sampling_findings(_posterior(mu))
    assert found[0].kind == "r_hat"  # the ESS falls too: the chains disagree
    assert "at mu" in found[0].message and f"above {RHAT_LIMIT}" in found[0].message


def test_few_draws_hit_bulk_and_tail_ess():
    # 4 x 50 iid draws: ESS about 200, below 100 per chain = 400 (the ESS estimate's
    # relative sd at n = 200 is about 0.1, so 400 is five of them away); R-hat of so few
    # draws may pass 1.01 by chance, so only the ESS findings are asserted
    found = {f.kind: f.message for f in sampling_findings(_posterior(_iid(num_draws=50)))}
    assert {"ess_bulk", "ess_tail"} <= set(found)
    assert f"below {4 * ESS_PER_CHAIN}" in found["ess_bulk"]


def test_one_divergence_is_found():
    diverging = torch.zeros(4, 500, dtype=torch.bool)
    diverging[2, 7] = True
    found = sampling_findings(_posterior(_iid(), sample_stats={"diverging": diverging}))
    assert [f.kind for f in found] == ["divergences"]
    assert found[0].message.startswith("1 of 2000 transitions diverged")


def test_slow_energy_hits_bfmi():
    # a random walk's energy: squared steps of 1 against a variance of order n, E-BFMI << 0.3
    energy = _iid(seed=2).cumsum(1)
    energy[0] = _iid(num_chains=1, seed=3)[0]  # chain 0 keeps a healthy energy
    found = sampling_findings(_posterior(_iid(), sample_stats={"energy": energy}))
    assert [f.kind for f in found] == ["bfmi"]
    assert "chain 0" not in found[0].message and "chain 1:" in found[0].message
    assert f"below {BFMI_LIMIT}" in found[0].message


def test_e_bfmi_formula():
    energy = torch.tensor([[1.0, 3.0, 2.0, 6.0]], dtype=torch.float64)
    # steps 4 + 1 + 16 = 21; mean 3, squared deviations 4 + 0 + 1 + 9 = 14
    assert e_bfmi(energy).tolist() == pytest.approx([21 / 14])
    with pytest.raises(ValueError, match="energy must be"):
        e_bfmi(torch.ones(5))


def test_one_chain_skips_r_hat_but_not_ess():
    mu = _iid(num_chains=1, num_draws=60)
    mu[0, 30:] += 5.0  # split R-hat of this one chain would be huge
    kinds = _kinds(_posterior(mu))
    assert "r_hat" not in kinds and "ess_bulk" in kinds


def test_not_mcmc_has_no_findings():
    mu = _iid()
    mu[0] += 3.0
    assert _kinds(_posterior(mu, method="svi")) == []
    assert _kinds(_posterior(mu[:, :1], method="em")) == []


def test_label_invariant_sites_restrict_the_checks():
    weights = _iid()
    weights[0] += 3.0  # a raw component site whose chains switched labels
    samples = {"weights": weights, "num_clusters": _iid(seed=4)}
    assert "r_hat" in _kinds(Posterior(samples=samples, method="gibbs"))
    named = Posterior(samples=samples, method="gibbs",
                      attrs={"label_invariant_sites": ["num_clusters"]})
    assert _kinds(named) == []


def test_warning_lists_findings_and_is_silenced():
    mu = _iid()
    mu[0] += 3.0
    post = _posterior(mu)
    with pytest.warns(SamplingWarning, match="R-hat"):
        assert warn_sampling_problems(post) is post
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_sampling_problems(post, enabled=False)
        warn_sampling_problems(_posterior(_iid()))
    with pytest.raises(TypeError, match="diagnostic_warnings"):
        warn_sampling_problems(post, enabled="no")
    assert issubclass(SamplingWarning, UserWarning)


def test_an_r_hat_just_above_the_limit_is_printed_above_it():
    from pyromodels.core.diagnostic_warnings import _above

    assert _above(1.0132, RHAT_LIMIT) == "1.013"
    assert _above(1.0100004, RHAT_LIMIT) == "1.0100004"
    assert _above(1.4567, RHAT_LIMIT) == "1.457"
