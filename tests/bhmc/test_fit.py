"""BHMC.fit: chains gathered into a Posterior of label-invariant draws, the best tree's score
against the closed-form CDL / RCDL, the derived chain seeds, ArviZ conversion, bad input."""


import math

import pytest
import torch

from pyromodels.bhmc import BHMC, BHMCPrior, BHMCState, cdl, hinge_log_factor, margin_violations
from pyromodels.bhmc.fit import run_chain
from pyromodels.bnp import Tree
from pyromodels.core import Posterior
from pyromodels.core.seeding import derive_seed

PRIOR = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=4, loc=0.0,
                  scale=1.0)


@pytest.fixture(scope="module")
def x():
    return BHMC(PRIOR).simulate(14, 2, torch.Generator().manual_seed(3)).x


@pytest.fixture(scope="module")
def bhmc_fit(x):
    return BHMC(PRIOR).fit(x, num_warmup=3, num_samples=6, num_chains=2, seed=5, progress=False)


@pytest.fixture(scope="module")
def rbhmc_fit(x):
    return BHMC(PRIOR).fit(x, C=0.5, eps0=1.0, num_warmup=2, num_samples=4, num_chains=2,
                           seed=7, progress=False)


def _state(post):
    p = post.params
    return BHMCState(Tree.from_paths(p["paths"]), p["weights"], p["theta"], p["c"])


def test_draws_are_label_invariant_statistics_per_chain_and_draw(bhmc_fit):
    post = bhmc_fit
    assert isinstance(post, Posterior) and post.method == "gibbs"
    assert set(post.samples) == {"cdl", "num_leaves", "nodes_per_level"}
    assert post.samples["cdl"].shape == (2, 6)
    assert post.samples["nodes_per_level"].shape == (2, 6, PRIOR.depth)
    assert torch.equal(post.samples["num_leaves"], post.samples["nodes_per_level"][..., -1])
    assert torch.equal(post.sample_stats["lp"], post.samples["cdl"])
    assert post.params["cdl_trace"].shape == (2, 9)  # warm-up included
    assert torch.equal(post.params["cdl_trace"][:, 3:], post.samples["cdl"])


def test_last_draw_counts_nodes_of_the_final_tree(bhmc_fit):
    # the recorded counts of the last sweep against the final tree's paths, counted directly
    for chain, paths in enumerate(bhmc_fit.params["last_paths"]):
        counts = [len(torch.unique(paths[:, lv])) for lv in range(1, PRIOR.depth + 1)]
        assert bhmc_fit.samples["nodes_per_level"][chain, -1].tolist() == counts


def test_best_tree_is_the_highest_cdl_and_its_score_is_the_closed_form_cdl(x, bhmc_fit):
    p = bhmc_fit.params
    per_chain = bhmc_fit.samples["cdl"].max(dim=1).values.tolist()
    assert p["chain_best_scores"] == pytest.approx(per_chain, abs=0)
    assert p["best_chain"] == max(range(2), key=lambda i: per_chain[i])
    assert p["best_score"] == max(per_chain)
    # the stored state reproduces its score through the closed-form CDL (joint.cdl)
    assert float(cdl(x, _state(bhmc_fit), PRIOR)) == pytest.approx(p["best_score"], rel=1e-12)
    assert torch.equal(p["paths"], p["chain_paths"][p["best_chain"]])
    assert p["criterion"] == "cdl" and p["aid"] >= 0


def test_rbhmc_selects_by_rcdl_which_is_cdl_plus_the_hinge(x, rbhmc_fit):
    post, p = rbhmc_fit, rbhmc_fit.params
    assert set(post.samples) == {"cdl", "rcdl", "num_leaves", "nodes_per_level"}
    assert bool((post.samples["rcdl"] <= post.samples["cdl"] + 1e-12).all())
    assert torch.equal(post.sample_stats["lp"], post.samples["rcdl"])
    assert p["criterion"] == "rcdl" and p["best_score"] == float(post.samples["rcdl"].max())
    zeta, level, _ = margin_violations(x, Tree.from_paths(p["paths"]), p["eta"], 1.0)
    rcdl = float(cdl(x, _state(post), PRIOR) + hinge_log_factor(zeta[level >= 0], 0.5).sum())
    assert rcdl == pytest.approx(p["best_score"], rel=1e-12)
    assert post.attrs["C"] == 0.5 and post.attrs["model"] == "RBHMC"


def test_chains_come_from_derived_seeds_and_fits_repeat(x, bhmc_fit):
    chain1 = run_chain(x, PRIOR, 3, 6, derive_seed(5, "chain", 1))
    assert torch.equal(chain1.cdl[3:], bhmc_fit.samples["cdl"][1])
    again = BHMC(PRIOR).fit(x, num_warmup=3, num_samples=6, num_chains=2, seed=5,
                            progress=False)
    assert torch.equal(again.samples["cdl"], bhmc_fit.samples["cdl"])
    other = BHMC(PRIOR).fit(x, num_warmup=3, num_samples=6, num_chains=2, seed=6,
                            progress=False)
    assert not torch.equal(other.samples["cdl"], bhmc_fit.samples["cdl"])


def test_to_inference_data(rbhmc_fit):
    idata = rbhmc_fit.to_inference_data()
    assert idata.posterior["rcdl"].shape == (2, 4)
    assert idata.posterior["nodes_per_level"].dims == ("chain", "draw", "level")
    assert idata.sample_stats["lp"].shape == (2, 4)
    assert idata.posterior.attrs["method"] == "gibbs"


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "nuts"}, "method must be one of"),
    ({"num_samples": 0}, "num_samples"),
    ({"num_chains": 0}, "num_chains"),
    ({"num_warmup": -1}, "num_warmup"),
    ({"C": 0.0}, "C must be"),
    ({"C": 1.0, "eps0": -1.0}, "eps0"),
    ({"device": "meta"}, "device must be the CPU"),
])
def test_bad_input_is_refused(x, kwargs, match):
    with pytest.raises(ValueError, match=match):
        BHMC(PRIOR).fit(x, **{"num_samples": 1, "num_warmup": 0, "num_chains": 1, **kwargs})


def test_data_must_be_a_matrix():
    with pytest.raises(ValueError, match="data"):
        BHMC(PRIOR).fit(torch.zeros(5), num_samples=1)




@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_non_finite_data_are_refused(x, bad):
    y = x.clone()
    y[3, 1] = bad
    with pytest.raises(ValueError, match="data must be finite"):
        BHMC(PRIOR).fit(y, num_samples=1, num_warmup=0, num_chains=1)
