"""The reference Gibbs sampler of BayesSCDC with observed features: each block is the program's
conditional, the sweep leaves the joint invariant (Geweke), workers and clusters are recovered,
and the default prior is scale-free."""

import math

import pytest
import torch

from pyromodels.core import GibbsBlock, GibbsSweep
from pyromodels.data import PairwiseAnnotations
from pyromodels.scdc import observed_gibbs as og
from pyromodels.scdc.observed_model import (
    LABEL_INVARIANT_SITES,
    ObservedBayesSCDC,
    coclustering_probabilities,
    label_invariant_draws,
    label_invariant_summary,
)
from pyromodels.testing import (
    assert_mc_mean,
    check_conditional,
    check_discrete_conditional,
    geweke_test,
)


def simulate(num_items, coins, links_per_worker, separation=3.0, num_clusters=3, dim=2, seed=0):
    """Clusters of unit-variance Gaussian points and two-coin links on random distinct pairs
    (worker m right with probability coins[m] on both kinds of pair)."""
    g = torch.Generator().manual_seed(seed)
    z = torch.arange(num_items) % num_clusters
    centres = separation * torch.randn(num_clusters, dim, generator=g, dtype=torch.float64)
    x = centres[z] + torch.randn(num_items, dim, generator=g, dtype=torch.float64)
    everything = torch.combinations(torch.arange(num_items))
    i, j, w, link = [], [], [], []
    for m, coin in enumerate(coins):
        a, b = everything[torch.randperm(len(everything), generator=g)[:links_per_worker]].T
        right = torch.rand(len(a), generator=g, dtype=torch.float64) < coin
        same = z[a] == z[b]
        i += [a]
        j += [b]
        w += [torch.full_like(a, m)]
        link += [(same == right).long()]
    pairs = PairwiseAnnotations.from_arrays(torch.cat(i), torch.cat(j), torch.cat(w), torch.cat(link),
                                            num_items=num_items, num_workers=len(coins))
    return x, pairs, z


@pytest.fixture
def tiny():
    x, some, _ = simulate(8, [0.8, 0.6], 8, seed=3)
    keep = (some.i_idx != 7) & (some.j_idx != 7)  # item 7 has no links
    pairs = PairwiseAnnotations.from_arrays(some.i_idx[keep], some.j_idx[keep], some.worker_idx[keep],
                                            some.link[keep], num_items=8, num_workers=2)
    model = ObservedBayesSCDC(3, weight_concentration=0.7, alpha_prior=(2.0, 1.0),
                              beta_prior=(1.5, 3.0))
    data = model.prepare((x, pairs))
    gen = torch.Generator().manual_seed(0)
    state = model.init_state(data, gen)
    for _ in range(3):
        state = model.gibbs_sweep(data)(state, data, gen)
    return model, data, state


def test_every_conjugate_block_is_the_programs_conditional(tiny):
    model, data, state = tiny
    blocks = [b for b in model.gibbs_sweep(data).blocks if b.log_density is not None]
    assert [b.name for b in blocks] == ["weights", "components", "workers"]
    for block in blocks:
        spread = check_conditional(model, data, block, state, num_values=6, seed=1)
        assert spread < 1e-9, (block.name, spread)


def test_each_items_conditional_is_the_normalised_joint(tiny):
    model, data, state = tiny
    degree = data.adjacency.indptr.diff()
    assert degree.max() >= 3 and degree.min() == 0  # items with several links and with none
    for n in range(data.num_items):
        block = og.item_block(n)
        own, joint = check_discrete_conditional(model, data, block, state, "z", n, range(3))
        torch.testing.assert_close(own, joint, rtol=0, atol=1e-12)
        assert check_conditional(model, data, block, state, num_values=4, seed=n) < 1e-9


def test_the_sequential_scan_draws_each_item_given_the_updated_partners(tiny):
    model, data, state = tiny
    state = {**state, "z": (state["z"] + 1) % 3}  # a start the scan has to move away from
    g = torch.Generator().manual_seed(5)
    scores = og.base_logits(state, data)
    noise = -torch.log(-torch.log(torch.rand(scores.shape, generator=g, dtype=scores.dtype)))
    adj = data.adjacency
    w = og.link_weights(state, data)[adj.link_of].numpy()
    fast = og.assign_sequentially((scores + noise).numpy(), adj.indptr.numpy(), adj.partner.numpy(),
                                  w, state["z"].numpy().copy())
    z = state["z"].clone()
    for n in range(data.num_items):  # the reference: one item at a time with its exact conditional
        z[n] = int(torch.argmax(og.item_log_probs({**state, "z": z}, data, n) + noise[n]))
    assert fast.tolist() == z.tolist()
    assert fast.tolist() != state["z"].tolist()  # the replay is not trivial


def _geweke_setup():
    x, pairs, _ = simulate(4, [0.8, 0.7], 6, num_clusters=2, dim=1, seed=1)  # every pair twice
    model = ObservedBayesSCDC(2, weight_concentration=1.0, mean_prior=[0.0], mean_precision=1.0,
                              degrees_of_freedom=4.0, covariance_scale=[[1.0]],
                              alpha_prior=(6.0, 1.5), beta_prior=(5.0, 1.5))
    data = model.prepare((x, pairs))
    i, j, w = data.i_idx, data.j_idx, data.worker_idx

    def stats(v):
        z, link = v["z"], v["links"]
        same = (z[i] == z[j]).double()
        agree = (same == link).double()
        return torch.stack([
            v["weights"][0], v["alpha"][0], v["beta"][1], v["alpha"][1] * v["beta"][0],
            torch.tanh(v["locs"][0, 0]), torch.log(v["precisions"][1, 0, 0]),
            (z == 0).double().mean(), same.mean(), link.double().mean(), agree.mean(),
            # couple coins with the clusters and the links: sensitive to a block that ignores them
            v["alpha"][0] * agree[w == 0].mean(), torch.tanh(v["x"][:, 0]).mean() * (z == 0).double().mean(),
        ])

    return model, data, stats, (lambda d, v: d.with_observations(v["x"], v["links"]))


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_gibbs_sweep_passes_geweke():
    model, data, stats, observed = _geweke_setup()
    result = geweke_test(model, data, stats, observed=observed, num_marginal=600,
                         num_successive=1200, seed=0)
    assert result.passed, result


@pytest.mark.slow
def test_geweke_detects_assignments_that_ignore_the_links():
    model, data, stats, observed = _geweke_setup()
    good = model.gibbs_sweep(data).blocks

    def deaf(state, d, gen):  # coins at 1/2: every link weight is zero
        half = torch.full_like(state["alpha"], 0.5)
        return og.assignments_block({**state, "alpha": half, "beta": half}, d, gen)

    broken = GibbsSweep([GibbsBlock("assignments", ("z",), deaf), *good[1:]])
    result = geweke_test(model, data, stats, observed=observed, sweep=broken, num_marginal=1500,
                         num_successive=2500, seed=0)
    assert not result.passed, result


def exact_posterior(data, num_clusters):
    """Co-clustering probabilities and E[alpha], E[beta] given the data, by enumerating every
    assignment with the weights, components and coins integrated out in closed form
    (Dirichlet-multinomial, Normal-Wishart evidence, Beta-binomial)."""
    p, N = data.prior, data.num_items
    nw = p.normal_wishart
    a0 = p.weight_concentration
    logs, together, alphas, betas = [], [], [], []
    for code in range(num_clusters**N):
        z = torch.tensor([(code // num_clusters**n) % num_clusters for n in range(N)])
        onehot = torch.nn.functional.one_hot(z, num_clusters).double()
        count = onehot.sum(0)
        post = nw.posterior(count, onehot.T @ data.x,
                            torch.einsum("nk,nd,ne->kde", onehot, data.x, data.x))
        log = (torch.lgamma(a0 + count) - torch.lgamma(a0)).sum() - torch.lgamma(num_clusters * a0 + N)
        log = log + (post.log_normalizer() - nw.log_normalizer()).sum()
        a, b = og.worker_concentrations({"z": z}, data)
        for conc, prior in ((a, p.alpha_prior), (b, p.beta_prior)):
            log = log + (torch.lgamma(conc).sum(-1) - torch.lgamma(conc.sum(-1))).sum()
            log = log - len(conc) * (torch.lgamma(prior).sum() - torch.lgamma(prior.sum()))
        logs.append(log)
        together.append((z[:, None] == z[None]).double())
        alphas.append(a[:, 0] / a.sum(-1))
        betas.append(b[:, 0] / b.sum(-1))
    w = torch.softmax(torch.stack(logs), 0)
    def avg(xs):
        return torch.einsum("s,s...->...", w, torch.stack(xs))
    return avg(together), avg(alphas), avg(betas)


def test_gibbs_draws_match_the_exact_posterior():
    x, pairs, _ = simulate(5, [0.8, 0.65], 5, num_clusters=2, dim=1, separation=1.5, seed=4)
    model = ObservedBayesSCDC(2, weight_concentration=1.0, alpha_prior=(2.0, 1.0),
                              beta_prior=(2.0, 1.0))
    post = model.fit(x, pairs, num_chains=1, num_samples=1000, num_warmup=50, seed=3,
                     lp_every=0, progress=False, diagnostic_warnings=False)
    together, alpha, beta = exact_posterior(post.data, 2)
    i, j = torch.triu_indices(5, 5, offset=1)
    pair_probs = together[i, j]
    # an uncertain clustering: the check is not of a sure thing
    assert ((pair_probs > 0.2) & (pair_probs < 0.8)).sum() >= 3, pair_probs

    def batch_means(v, batches=20):
        v = v[0].double()
        return v.reshape(batches, -1, *v.shape[1:]).mean(1).numpy()

    # batch means of 50 sweeps are nearly independent on this small, quickly mixing chain
    z = post.samples["z"]
    assert_mc_mean(batch_means(z[..., i] == z[..., j]), pair_probs.numpy(), n_se=5)
    assert_mc_mean(batch_means(post.samples["alpha"]), alpha.numpy(), n_se=5)
    assert_mc_mean(batch_means(post.samples["beta"]), beta.numpy(), n_se=5)


COINS = [0.95, 0.9, 0.85, 0.8, 0.75]


def test_recovers_worker_weights_and_clusters():
    x, pairs, truth = simulate(150, COINS, 4000, separation=2.5, seed=0)
    post = ObservedBayesSCDC(3).fit(x, pairs, num_chains=2, num_samples=150, num_warmup=50,
                                    seed=0, lp_every=0, progress=False, diagnostic_warnings=False)
    weights = label_invariant_draws(post)["worker_weights"].flatten(0, 1)
    mean, sd = weights.mean(0), weights.std(0)
    exact = torch.tensor([2 * math.log(c / (1 - c)) for c in COINS], dtype=torch.float64)
    torch.testing.assert_close(exact, torch.tensor([5.89, 4.39, 3.47, 2.77, 2.20],
                                                   dtype=torch.float64), rtol=0, atol=0.005)
    # the posterior sd is the error of a well-specified posterior mean: allow 4 of it
    assert ((mean - exact).abs() < 4 * sd).all(), (mean, sd)
    assert (mean.diff() < 0).all(), mean  # the workers' order
    assert (label_invariant_draws(post)["occupied_clusters"] == 3).all()
    together = (truth[:, None] == truth[None]).double()
    error = (coclustering_probabilities(post) - together).abs()
    # about 270 judgements per item leave no doubt: no pair on the wrong side of 1/2
    assert error.max() < 0.5 and error.mean() < 0.01, (error.max(), error.mean())


def test_summary_diagnoses_only_label_invariant_sites():
    x, pairs, _ = simulate(30, [0.9, 0.7], 200, seed=2)
    post = ObservedBayesSCDC(3).fit(x, pairs, num_chains=2, num_samples=40, num_warmup=20,
                                    seed=1, progress=False, diagnostic_warnings=False)
    assert post.attrs["label_invariant_sites"] == ["alpha", "beta"]
    table = label_invariant_summary(post)
    assert {"r_hat", "ess_bulk"} <= set(table.columns)
    assert set(table.index) == {f"{s}[{m}]" for s in ("alpha", "beta", "worker_weights")
                                for m in range(2)} | {"occupied_clusters", "largest_cluster_fraction"}
    draws = label_invariant_draws(post)
    assert set(draws) == set(LABEL_INVARIANT_SITES)
    torch.testing.assert_close(draws["worker_weights"],
                               torch.logit(post.samples["alpha"]) + torch.logit(post.samples["beta"]))
    idata = post.to_inference_data()
    assert idata.posterior["alpha"].dims == ("chain", "draw", "worker")
    assert set(idata.observed_data) == {"x", "links"}
    assert idata.posterior_predictive["links"].shape == (2, 40, pairs.num_pairs)


def _clusters(x, pairs, model):
    post = model.fit(x, pairs, num_chains=1, num_samples=30, num_warmup=20, seed=4,
                     progress=False, diagnostic_warnings=False, lp_every=0)
    return post.samples["z"]


def test_default_prior_is_scale_free():
    # weak workers, close clusters: the features matter to the clustering
    x, pairs, _ = simulate(60, [0.7, 0.65], 150, separation=2.0, seed=5)
    model = ObservedBayesSCDC(3)
    ref = _clusters(x, pairs, model)
    assert torch.equal(_clusters(x * 1e-8, pairs, model), ref)
    assert torch.equal(_clusters(x + 1e6, pairs, model), ref)
    # a prior in absolute units sees the shrunk data as one blob: the check can fail
    fixed = ObservedBayesSCDC(3, mean_prior=[0.0, 0.0], covariance_scale=torch.eye(2))
    assert not torch.equal(_clusters(x * 1e-8, pairs, fixed), _clusters(x, pairs, fixed))


def test_bad_input_is_named():
    x, pairs, _ = simulate(10, [0.9], 5, seed=0)
    model = ObservedBayesSCDC(2)
    with pytest.raises(TypeError, match="pairs must be a pyromodels.data.PairwiseAnnotations"):
        model.fit(x, None)
    short = PairwiseAnnotations.from_arrays([0], [1], [0], [1])
    with pytest.raises(ValueError, match="pairs must cover the 10 items of x"):
        model.fit(x, short)
    with pytest.raises(ValueError, match="method"):
        model.fit(x, pairs, method="svi")
    with pytest.raises(TypeError, match="alpha_prior must be a pair"):
        ObservedBayesSCDC(2, alpha_prior=1.0).prepare((x, pairs))
    with pytest.raises(ValueError, match="x must have at least num_clusters=20 rows"):
        ObservedBayesSCDC(20).prepare((x, pairs))


def test_sparse_default_prior_empties_extra_clusters_with_a_finite_log_joint():
    x, pairs, _ = simulate(90, [0.9, 0.8], 500, separation=2.5, seed=6)
    post = ObservedBayesSCDC(8).fit(x, pairs, num_chains=1, num_samples=40, num_warmup=60,
                                    seed=0, progress=False, diagnostic_warnings=False)
    # weight_concentration = 0.05 / K: the unneeded clusters empty (the paper's pruning) ...
    assert (label_invariant_draws(post)["occupied_clusters"] == 3).all()
    # ... and their shares, which underflow, keep the log joint finite
    assert torch.isfinite(post.sample_stats["lp"]).all()
    assert (post.samples["weights"] > 0).all()


def test_equal_workers_get_equal_weights():
    x, pairs, _ = simulate(120, [0.9] * 5, 1500, separation=2.5, seed=7)
    post = ObservedBayesSCDC(3).fit(x, pairs, num_chains=1, num_samples=100, num_warmup=40,
                                    seed=0, lp_every=0, progress=False, diagnostic_warnings=False)
    weights = label_invariant_draws(post)["worker_weights"].flatten(0, 1)
    # 2 logit(0.9) = 4.39 for everyone, within 4 posterior sd
    assert ((weights.mean(0) - 2 * math.log(9.0)).abs() < 4 * weights.std(0)).all(), weights.mean(0)


def test_the_sweep_runs_under_pyro_mcmc():
    from pyro.infer import MCMC

    from pyromodels.core.kernel import GibbsKernel, posterior_from_mcmc

    x, pairs, _ = simulate(20, [0.9, 0.7], 60, seed=8)
    model = ObservedBayesSCDC(2)
    kernel = GibbsKernel(model, seed=0)
    mcmc = MCMC(kernel, num_samples=15, warmup_steps=5, disable_progbar=True)
    mcmc.run(model.prepare((x, pairs)))
    post = posterior_from_mcmc(mcmc)
    assert post.samples["z"].dtype == torch.long and post.samples["z"].shape == (1, 15, 20)
    assert label_invariant_draws(post)["worker_weights"].shape == (1, 15, 2)


def test_numba_and_numpy_scans_give_the_same_draws():
    pytest.importorskip("numba")
    x, pairs, _ = simulate(60, [0.9, 0.6, 0.55], 300, separation=1.0, seed=9)
    fits = {backend: ObservedBayesSCDC(4, backend=backend).fit(
        x, pairs, num_chains=1, num_samples=20, num_warmup=5, seed=2, lp_every=0, progress=False,
        diagnostic_warnings=False) for backend in ("numpy", "numba")}
    z = fits["numpy"].samples["z"]
    assert (z[0, 1:] != z[0, :-1]).any()  # the clusters move: the comparison is not of a frozen chain
    for site in fits["numpy"].samples:
        assert torch.equal(fits["numpy"].samples[site], fits["numba"].samples[site]), site
    with pytest.raises(ValueError, match="backend"):
        ObservedBayesSCDC(2, backend="cuda")


def test_a_batch_of_draws_scores_each_draws_links_with_its_own_coins(tiny, caplog):
    """Under a plate of draws (predictive draws, vectorised particles) every draw's links are
    scored with that draw's clusters and coins, as the unbatched program scores them, and the
    prior draws take one vectorised trace instead of one trace per draw."""
    import logging

    import pyro

    from pyromodels.core.predictive import prior_draws
    from pyromodels.testing import assert_draws_scored_apart, simulate_joint

    model, data = tiny[0], tiny[1]
    pyro.set_rng_seed(2)
    draws = [simulate_joint(model, data) for _ in range(3)]

    assert_draws_scored_apart(model, data, draws, "links", plated={"z", "x", "links"})
    with caplog.at_level(logging.INFO, logger="pyromodels"):
        _, replicates = prior_draws(model, data, num_draws=20, seed=0)
    assert "does not broadcast over a batch of draws" not in caplog.text
    assert replicates["links"].shape == (1, 20, data.link.shape[0])
