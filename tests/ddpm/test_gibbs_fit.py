"""DPMixture.fit(method="gibbs"): each sampler recovers a planted partition, returns canonical
labels that ArviZ converts, repeats with its seed, and checks its inputs once per chain (never
per sweep)."""

from unittest import mock

import pytest
import torch
from sklearn.metrics import adjusted_rand_score

import pyromodels.bnp.blocked as blocked_module
import pyromodels.bnp.dp_sweep as sweep_module
from pyromodels.bnp import canonical_labels
from pyromodels.ddpm import DPMixture, DPMixturePrior

F64 = torch.float64
PRIOR = DPMixturePrior(kappa0=0.02, alpha0=5.0, beta0=5.0, alpha=0.05)
ALGORITHMS = (2, 3, "blocked")


def planted(seed=0):
    """Three clusters of 30 points in 2-d, 8 standard deviations apart, in shuffled order."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[-8.0, 0.0], [8.0, 0.0], [0.0, 8.0]], dtype=F64)
    truth = torch.arange(3).repeat_interleave(30)
    order = torch.randperm(90, generator=g)
    truth = truth[order]
    return centres[truth] + torch.randn(90, 2, generator=g, dtype=F64), truth


def _fit(algorithm, z, **kwargs):
    opts = {"num_warmup": 5, "num_samples": 10, "num_chains": 2, "seed": 3, "progress": False,
            "truncation": 10}
    return DPMixture(PRIOR).fit(z, method="gibbs", algorithm=algorithm, **{**opts, **kwargs})


# a one-cluster start suits the collapsed sampler only: under Algorithm 2 and the blocked
# sampler a new cluster's parameters come from the prior or one point, and the chain stays
# at fewer clusters for many sweeps
@pytest.mark.parametrize("algorithm, init", [(2, "sequential"), (3, "sequential"),
                                             ("blocked", "sequential"), (3, "one")])
def test_each_sampler_recovers_the_planted_clusters(algorithm, init):
    z, truth = planted()
    post = _fit(algorithm, z, init=init, num_warmup=30)
    c = post["c"]
    assert c.shape == (2, 10, 90) and c.dtype == torch.int64
    # the posterior sits on the planted partition but for a point now and then alone (each
    # costs the ARI about 0.03, so 0.9 allows three at once)
    ari = [adjusted_rand_score(truth.numpy(), row.numpy()) for row in c.reshape(-1, 90)]
    assert min(ari) >= 0.9
    assert int(post["num_clusters"].flatten().mode().values) == 3
    assert post.attrs["algorithm"] == str(algorithm) and post.method == "gibbs"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_labels_are_canonical_and_convert_to_arviz(algorithm):
    z, _ = planted(1)
    post = _fit(algorithm, z)
    flat = post["c"].reshape(-1, 90)
    assert all(torch.equal(canonical_labels(row), row) for row in flat)
    assert bool((flat[:, 0] == 0).all())
    idata = post.to_inference_data()
    assert idata.posterior["c"].dims == ("chain", "draw", "point")
    assert idata.posterior["c"].dtype.kind == "i"
    assert idata.sample_stats["lp"].shape == (2, 10)
    assert bool(torch.isfinite(post.sample_stats["lp"]).all())


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_same_seed_same_draws(algorithm):
    # a weakly separated set, so that the chains move and differ between seeds
    g = torch.Generator().manual_seed(2)
    z = torch.randn(40, 2, generator=g, dtype=F64) * 2.0
    runs = [_fit(algorithm, z, seed=s) for s in (5, 5, 6)]
    for key in ("c", "num_clusters", "alpha"):
        assert torch.equal(runs[0][key], runs[1][key])
    assert torch.equal(runs[0].sample_stats["lp"], runs[1].sample_stats["lp"])
    assert not torch.equal(runs[0]["c"], runs[2]["c"])
    assert not torch.equal(runs[0]["c"][0], runs[0]["c"][1])  # chains have their own seeds


def test_alpha_prior_moves_alpha():
    z, _ = planted(2)
    post = _fit(3, z, alpha_prior=(1.0, 1.0))
    assert post["alpha"].dtype == F64 and len(set(post["alpha"].flatten().tolist())) > 1


@pytest.mark.parametrize("kwargs, err, match", [
    ({"algorithm": 4}, ValueError, "algorithm must be one of"),
    ({"algorithm": "alg3"}, ValueError, "algorithm must be one of"),
    ({"init": "kmeans"}, ValueError, "init must be one of"),
    ({"num_samples": 0}, ValueError, "num_samples"),
    ({"alpha_prior": 1.0}, TypeError, "alpha_prior"),
    ({"algorithm": "blocked", "truncation": 2}, ValueError, "larger truncation"),
    ({"algorithm": "blocked", "init": "one", "backend": "gpu"}, ValueError, "backend"),
    ({"paper_literal": 1}, TypeError, "paper_literal"),
])
def test_bad_settings_are_named(kwargs, err, match):
    z, _ = planted()
    with pytest.raises(err, match=match):
        _fit(kwargs.pop("algorithm", 3), z, **kwargs)


def _count_checks(algorithm, sweeps):
    z, _ = planted()
    module, name = ((blocked_module, "check_state") if algorithm == "blocked"
                    else (sweep_module, "check_data"))
    with mock.patch.object(module, name, wraps=getattr(module, name)) as spy:
        _fit(algorithm, z, num_warmup=sweeps, num_samples=2)
    return spy.call_count


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_data_are_checked_once_per_chain_not_per_sweep(algorithm):
    # two chains: the sweeps' checks run where a chain starts, however many sweeps follow
    few, many = _count_checks(algorithm, 1), _count_checks(algorithm, 12)
    assert few == many
    assert few <= 4


def test_ddpm_offers_monte_carlo_em_only():
    # DDPM's flow is trained by Monte Carlo EM; Gibbs sampling alone would keep the untrained one
    from pyromodels.ddpm import DDPM

    z, _ = planted()
    with pytest.raises(ValueError, match="method must be one of"):
        DDPM(PRIOR, hidden=(4,)).fit(z, method="gibbs")


def test_with_a_flow_the_chain_runs_on_the_features():
    # a fixed flow z = f(y): the fit on y draws what the fit on z = f(y) without a flow draws
    from torch.distributions.transforms import AffineTransform

    z, _ = planted(3)
    flow = AffineTransform(1.0, 2.0)
    y = flow.inv(z)
    on_y = DPMixture(PRIOR, flow=flow).fit(y, method="gibbs", num_warmup=3, num_samples=4,
                                           num_chains=1, seed=0, progress=False)
    on_z = _fit(3, z, num_warmup=3, num_samples=4, num_chains=1, seed=0)
    assert torch.equal(on_y["c"], on_z["c"])
