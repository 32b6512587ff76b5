"""The truncated stick-breaking DP mixture as a model class: its program against the blocked
sampler's log joint, the enumerated ELBO against a hand-written marginal, the Gibbs blocks by
condition-and-score, SVI against blocked Gibbs and the exact conditional posterior, bad input."""

import logging
import math

import numpy as np
import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro import poutine
from pyro.infer import TraceEnum_ELBO
from scipy import stats
from scipy.special import logsumexp
from sklearn.metrics import adjusted_rand_score

import pyromodels.ddpm.truncated as truncated_module
from pyromodels.bnp import BlockedState, blocked_log_joint, component_posterior, truncated_dp_mixture
from pyromodels.core.enumeration import sample_discrete
from pyromodels.ddpm import DPMixturePrior, TruncatedDPMixture
from pyromodels.testing import assert_mc_mean, check_conditional, check_discrete_conditional

F64 = torch.float64
PRIOR = DPMixturePrior(mu0=0.5, kappa0=0.7, alpha0=2.0, beta0=1.5, alpha=0.8)


def _state(T, n, d, seed):
    g = torch.Generator().manual_seed(seed)
    state = {
        "c": torch.randint(T, (n,), generator=g),
        "lam": 0.5 + torch.rand(T, dtype=F64, generator=g),
        "mu": torch.randn(T, d, dtype=F64, generator=g),
    }
    if T > 1:
        state["v"] = 0.1 + 0.8 * torch.rand(T - 1, dtype=F64, generator=g)
    return state, torch.randn(n, d, dtype=F64, generator=g)


def _full_v(state, T):
    return torch.cat([state["v"], torch.ones(1, dtype=F64)]) if T > 1 else torch.ones(1, dtype=F64)


def _hand_marginal(z, state, prior, T):
    """log p(z, v, lam, mu) with c summed out, written with scipy (independent of torch)."""
    z = z.numpy()
    lam, mu = state["lam"].numpy(), state["mu"].numpy()
    v = _full_v(state, T).numpy()
    log_pi = np.log(v) + np.concatenate([[0.0], np.cumsum(np.log1p(-v[:-1]))])
    lp = stats.beta.logpdf(v[:-1], 1.0, prior.alpha).sum()
    lp += stats.gamma.logpdf(lam, prior.alpha0, scale=1.0 / prior.beta0).sum()
    lp += stats.norm.logpdf(mu, prior.mu0, 1.0 / np.sqrt(prior.kappa0 * lam)[:, None]).sum()
    comp = stats.norm.logpdf(z[:, None, :], mu[None], 1.0 / np.sqrt(lam)[None, :, None]).sum(-1)
    pointwise = logsumexp(comp + log_pi, axis=1)
    return lp + pointwise.sum(), pointwise


@pytest.mark.parametrize("T", [1, 4])
def test_log_prob_sum_equals_blocked_log_joint(T):
    model = TruncatedDPMixture(PRIOR, truncation=T)
    state, z = _state(T, 7, 3, seed=T)
    lj = model.log_joint(z, state)
    blocked = BlockedState(state["c"], _full_v(state, T), state["mu"], state["lam"],
                           torch.tensor(PRIOR.alpha, dtype=F64))
    base = model.base_measure(z)
    assert torch.allclose(lj, blocked_log_joint(z, blocked, base), rtol=0, atol=1e-10)
    # and the unenumerated program of pyromodels.bnp, conditioned on the same state
    cond = poutine.condition(truncated_dp_mixture, data=state)
    ref = poutine.trace(cond).get_trace(z, base, PRIOR.alpha, T).log_prob_sum()
    assert torch.allclose(lj, ref, rtol=0, atol=1e-10)


def _delta_guide(state):
    def guide(z):
        with pyro.plate("sticks", state["v"].shape[0], dim=-1):
            pyro.sample("v", dist.Delta(state["v"]))
        with pyro.plate("components", state["lam"].shape[0], dim=-1):
            pyro.sample("lam", dist.Delta(state["lam"]))
            pyro.sample("mu", dist.Delta(state["mu"], event_dim=1))
    return guide


@pytest.mark.parametrize("particles", [1, 3])
def test_enumerated_elbo_is_the_exact_marginal_over_c(particles):
    # N = 4 points, T = 3 sticks: a Delta guide at (v, lam, mu) has zero entropy, so the
    # enumerated ELBO is log p(z, v, lam, mu) with the 3^4 label vectors summed out exactly;
    # vectorised particles run the program with an extra batch dimension left of its plate
    model = TruncatedDPMixture(PRIOR, truncation=3)
    state, z = _state(3, 4, 2, seed=11)
    elbo = TraceEnum_ELBO(max_plate_nesting=1, num_particles=particles, vectorize_particles=True)
    loss = elbo.loss(model.model, _delta_guide(state), z)
    exact = _hand_marginal(z, state, PRIOR, 3)[0]
    assert math.isclose(-loss, exact, rel_tol=0, abs_tol=1e-9)
    # the same marginal by brute force over every labelling
    labels = torch.cartesian_prod(*[torch.arange(3)] * 4)
    joints = torch.stack([model.log_joint(z, {**state, "c": c}) for c in labels])
    assert math.isclose(float(torch.logsumexp(joints, 0)), exact, rel_tol=0, abs_tol=1e-9)


@pytest.mark.parametrize("block", [1, 1 << 22])
def test_pointwise_log_likelihood_sums_out_c(block, monkeypatch):
    # the pointwise log-likelihood ArviZ gets, for (chain, draw) = (2, 3) draws, taken one draw
    # at a time or all at once, against the scipy marginal of each draw
    monkeypatch.setattr(truncated_module, "_BLOCK_ENTRIES", block)
    model = TruncatedDPMixture(PRIOR, truncation=3)
    z = _state(3, 4, 2, seed=0)[1]
    draws = [_state(3, 4, 2, seed=s)[0] for s in range(6)]
    samples = {k: torch.stack([d[k] for d in draws]).reshape((2, 3) + draws[0][k].shape)
               for k in ("v", "lam", "mu")}
    ll = model.log_likelihood_pointwise(z, samples)["z"]
    assert ll.shape == (2, 3, 4)
    for s, d in enumerate(draws):
        assert np.allclose(ll[s // 3, s % 3].numpy(), _hand_marginal(z, d, PRIOR, 3)[1], rtol=0, atol=1e-12)


def test_sample_discrete_broadcasts_over_draws(caplog):
    # the MAP labels given each of 5 draws: the vectorised trace (no fallback warning) equals
    # the loop over draws and the argmax of the hand-computed logits
    model = TruncatedDPMixture(PRIOR, truncation=4)
    draws = [_state(4, 9, 2, seed=s)[0] for s in range(5)]
    z = _state(4, 9, 2, seed=0)[1]
    samples = {k: torch.stack([d[k] for d in draws]).unsqueeze(0) for k in ("v", "lam", "mu")}
    with caplog.at_level(logging.WARNING, logger="pyromodels"):
        fast = sample_discrete(model, z, samples, temperature=0, seed=0, vectorize=True)["c"]
    assert not caplog.records
    slow = sample_discrete(model, z, samples, temperature=0, seed=0, vectorize=False)["c"]
    assert torch.equal(fast, slow)
    for s, d in enumerate(draws):
        logits = model._log_weights_and_components(z, d["v"], d["lam"], d["mu"])
        assert torch.equal(fast[0, s], logits.argmax(-1))


def test_gibbs_blocks_are_the_programs_conditionals():
    model = TruncatedDPMixture(PRIOR, truncation=4)
    state, z = _state(4, 12, 2, seed=5)
    params, labels = model.gibbs_sweep(z).blocks
    # condition-and-score: log q(draw) - log p(draw, rest) is constant over draws of the block
    assert check_conditional(model, z, params, state, num_values=6) < 1e-9
    for i in (0, 7):
        own, joint = check_discrete_conditional(model, z, labels, state, "c", i, range(4))
        assert torch.allclose(own, joint, rtol=0, atol=1e-12)
    assert set(model.init_state(z, torch.Generator().manual_seed(0))) == {"c", "v", "lam", "mu"}


def test_gibbs_blocks_draw_from_their_conditionals():
    # 2000 draws of each block at a fixed state: Monte Carlo means within 5 se of the exact
    # conditional means (E[mu_k] = m_n, E[lam_k] = a_n / b_n, E[v_k] = a / (a + b), and the
    # label probabilities), each entry failing with probability 5.7e-7 for a correct block
    model = TruncatedDPMixture(PRIOR, truncation=4)
    state, z = _state(4, 12, 2, seed=5)
    params, labels = model.gibbs_sweep(z).blocks
    g = torch.Generator().manual_seed(3)
    draws = [params(state, z, g) for _ in range(2000)]
    post, a, b = model._parameter_conditionals(state, z)
    assert_mc_mean(torch.stack([d["mu"] for d in draws]), post.loc)
    assert_mc_mean(torch.stack([d["lam"] for d in draws]), post.a / post.b)
    assert_mc_mean(torch.stack([d["v"] for d in draws]), a / (a + b))
    one_hot = torch.stack([torch.nn.functional.one_hot(labels(state, z, g)["c"], 4) for _ in range(2000)])
    probs = torch.softmax(model._log_weights_and_components(z, state["v"], state["lam"], state["mu"]), -1)
    assert_mc_mean(one_hot.double(), probs)


def test_fits_repeat_with_their_seed():
    z = torch.randn(20, 2, dtype=F64, generator=torch.Generator().manual_seed(4))
    model = TruncatedDPMixture(PRIOR, truncation=3)
    runs = [model.fit(z, method="svi", num_steps=10, num_samples=5, seed=7, progress=False) for _ in range(2)]
    assert torch.equal(runs[0].losses, runs[1].losses) and torch.equal(runs[0]["c"], runs[1]["c"])
    runs = [model.fit(z, method="gibbs", num_warmup=3, num_samples=4, num_chains=2, seed=7, progress=False)
            for _ in range(2)]
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in ("c", "v", "mu", "lam"))
    assert not torch.equal(runs[0]["mu"][0], runs[0]["mu"][1])  # chains have their own seeds


# ---------------------------------------------------------------- SVI against Gibbs
BLOBS = torch.tensor([[-4.0, 0.0], [4.0, 0.0], [0.0, 5.0]], dtype=F64)
BLOB_PRIOR = DPMixturePrior(kappa0=0.1, alpha0=2.0, beta0=1.0, alpha=1.0)
SVI_STEPS = 800


@pytest.fixture(scope="module")
def blobs():
    g = torch.Generator().manual_seed(0)
    truth = torch.arange(3).repeat_interleave(50)
    z = BLOBS[truth] + 0.5 * torch.randn(150, 2, dtype=F64, generator=g)
    model = TruncatedDPMixture(BLOB_PRIOR, truncation=6)
    optim = pyro.optim.ClippedAdam({"lr": 0.1, "lrd": 0.01 ** (1 / SVI_STEPS)})  # lr 0.1 -> 1e-3
    svi = model.fit(z, method="svi", num_steps=SVI_STEPS, optim=optim, num_samples=1000, seed=0,
                    progress=False)
    gibbs = model.fit(z, method="gibbs", num_warmup=300, num_samples=600, num_chains=1,
                      lp_every=0, seed=0, progress=False)
    exact = component_posterior(z, truth, model.base_measure(z), 3)  # NG posterior given truth
    return model, z, truth, svi, gibbs, exact


def test_svi_recovers_the_partition_and_agrees_with_gibbs(blobs):
    model, z, truth, svi, gibbs, exact = blobs
    assert torch.isfinite(svi.losses).all()
    labels = model.predict(svi, z).labels
    assert adjusted_rand_score(truth.numpy(), labels.numpy()) == 1.0
    # the labels run_svi restores per guide draw (infer_discrete): given draw s, c_i equals the
    # hard label with probability p_si = softmax(log pi + log N)[label_i], independently over
    # (s, i), so the fraction of agreements has mean mean(p) and sd sqrt(sum p(1-p)) / (S N)
    c = svi.samples["c"]
    assert c.dtype == torch.long and c.shape == (1, 1000, 150)
    logits = model._log_weights_and_components(z, svi.samples["v"][0], svi.samples["lam"][0],
                                               svi.samples["mu"][0])
    p = torch.softmax(logits, -1).gather(-1, labels.expand(1000, 150).unsqueeze(-1)).squeeze(-1)
    sd = float((p * (1 - p)).sum().sqrt()) / p.numel()
    assert abs(float((c[0] == labels).double().mean()) - float(p.mean())) < 5 * sd
    comp = torch.stack([labels[truth == j][0] for j in range(3)])
    svi_means = svi.params["AutoNormal.locs.mu"][comp]
    # Given the partition, E[mu_k | z] is the NG posterior mean m_n, and the mean-field optimum
    # of the Gaussian q(mu_k) has the same loc whatever q(lam_k) is (mu and lam independent
    # under q; the point responsibilities are 1 to within 1e-3). Optimisation error: after
    # 800 steps with the learning rate decayed to 1e-3 the locs sat 0.010-0.014 from m_n over
    # 9 runs (3 data seeds x 3 settings; 0.004-0.008 after 2000 steps); we allow 0.03, 0.4
    # posterior sd (sd = sqrt(b_n / ((a_n - 1) kappa_n)) = 0.07 here).
    opt_tol = 0.03
    post_sd = (exact.b / ((exact.a - 1) * exact.kappa)).sqrt()
    assert float(post_sd.max()) < 0.08
    assert float((svi_means - exact.loc).abs().max()) < opt_tol
    # The guide's spread: the mean-field optimum has sd(mu) = (kappa_n E_q[lam])^-1/2, which is
    # sqrt(b_n / (a_n kappa_n)) = sqrt(1 - 1/a_n) = 0.99 x the exact sd; 1000 draws estimate an
    # sd to 1/sqrt(2000) = 2.2% (4 se = 9%); allow 12%.
    draws = svi.samples["mu"][0][:, comp]  # (draw, 3, 2)
    assert torch.allclose(draws.std(0), post_sd.unsqueeze(-1).expand(3, 2), rtol=0.12, atol=0)
    # Blocked Gibbs: the label-invariant statistic "mean of the component of a point of blob j"
    # per draw. Its Monte Carlo error comes from batch means (20 batches of 30 draws, which
    # absorbs the chain's autocorrelation); SVI and Gibbs agree within 4 se + opt_tol.
    c, mu = gibbs.samples["c"][0], gibbs.samples["mu"][0]
    stat = torch.stack([
        torch.stack([mu[s][c[s][truth == j]].mean(0) for j in range(3)]) for s in range(c.shape[0])
    ])
    batches = stat.reshape(20, 30, 3, 2).mean(1)
    se = batches.std(0) / math.sqrt(20)
    assert float(se.max()) < 0.02  # the error budget below is meaningful
    gibbs_means = stat.mean(0)
    assert ((gibbs_means - exact.loc).abs() <= 4 * se).all()
    assert ((svi_means - gibbs_means).abs() <= 4 * se + opt_tol).all()


def test_predict_is_the_plug_in_rule_at_the_posterior_means(blobs):
    model, z, _, svi, _, _ = blobs
    pred = model.predict(svi, z[:5])
    v = torch.cat([svi.mean("v"), torch.ones(1, dtype=F64)])
    log_pi = torch.log(v) + torch.cat([torch.zeros(1, dtype=F64), torch.cumsum(torch.log1p(-v[:-1]), 0)])
    mu, lam = svi.mean("mu"), svi.mean("lam")
    x = z[:5].numpy()
    comp = torch.stack([
        torch.tensor(stats.multivariate_normal.logpdf(x, mu[k].numpy(), np.eye(2) / float(lam[k])))
        for k in range(6)
    ], -1)
    assert torch.allclose(pred.responsibilities, torch.softmax(comp + log_pi, -1), rtol=0, atol=1e-12)
    assert torch.equal(pred.labels, pred.responsibilities.argmax(-1))
    with pytest.raises(ValueError, match=r"z must have 2 columns \(the training dimension\), got 3"):
        model.predict(svi, torch.zeros(4, 3, dtype=F64))


def test_inference_data_has_named_dims_and_the_marginal_log_likelihood(blobs):
    model, z, _, svi, _, _ = blobs
    idata = svi.to_inference_data(predictive=False)
    assert idata.posterior["mu"].dims == ("chain", "draw", "component", "feature")
    assert idata.log_likelihood["z"].shape == (1, 1000, 150)


def test_paper_scale_alpha_stays_finite_under_svi():
    # alpha = 1e-5 (the paper's): P(1 - v < 2^-53) = 2^(-53 alpha) = 1 - 3.7e-4, so of 2000 prior
    # draws 0.73 on average fall below the largest double under 1 (at least 6: probability 1e-4);
    # a state with a stick exactly 1 scores +inf; the SVI guide keeps v below 1, so its loss
    # stays finite
    model = TruncatedDPMixture(DPMixturePrior(kappa0=0.1, alpha0=2.0, beta0=1.0, alpha=1e-5), truncation=3)
    z = torch.randn(30, 2, dtype=F64, generator=torch.Generator().manual_seed(1))
    z[15:] += 6.0
    with torch.random.fork_rng():
        torch.manual_seed(0)
        v = dist.Beta(torch.tensor(1.0, dtype=F64), torch.tensor(1e-5, dtype=F64)).sample((2000,))
    assert int((v == 1 - 2.0**-53).sum()) >= 1994
    state = model.init_state(z, torch.Generator().manual_seed(0))
    state.update(c=(z[:, 0] > 3).long(), v=torch.tensor([0.5, 1.0], dtype=F64))  # pi = (1/2, 1/2, 0)
    with pytest.warns(UserWarning, match=r"Encountered \+inf: log_prob_sum at site 'v'"):
        assert float(model.log_joint(z, state)) == math.inf
    post = model.fit(z, method="svi", num_steps=60, lr=0.05, num_samples=20, seed=0, progress=False)
    assert torch.isfinite(post.losses).all()
    assert bool((post.samples["v"] < 1).all())


# with one stick c has a single value, which Pyro's infer_discrete does not count as enumerated
@pytest.mark.filterwarnings("ignore:infer_discrete found no sample sites:UserWarning")
def test_single_stick_has_no_v_site():
    z = torch.randn(6, 2, dtype=F64, generator=torch.Generator().manual_seed(2))
    model = TruncatedDPMixture(PRIOR, truncation=1)
    post = model.fit(z, method="gibbs", num_warmup=2, num_samples=3, num_chains=1, seed=0, progress=False)
    assert "v" not in post.samples and post.samples["mu"].shape == (1, 3, 1, 2)
    svi = model.fit(z, method="svi", num_steps=5, num_samples=4, seed=0, progress=False)
    assert torch.equal(model.predict(svi, z).labels, torch.zeros(6, dtype=torch.long))


def test_bad_input_is_named():
    z = torch.randn(5, 2, dtype=F64)
    with pytest.raises(ValueError, match="truncation must be an integer >= 1, got 0"):
        TruncatedDPMixture(PRIOR, truncation=0)
    with pytest.raises(TypeError, match="truncation must be an integer, got float 2.0"):
        TruncatedDPMixture(PRIOR, truncation=2.0)
    with pytest.raises(ValueError, match="alpha must be > 0, got 0.0"):
        TruncatedDPMixture(DPMixturePrior(alpha=0.0))
    with pytest.raises(ValueError, match="alpha must be > 0, got -1.0"):
        TruncatedDPMixture(DPMixturePrior(alpha=-1.0))
    with pytest.raises(TypeError, match="prior must be a DPMixturePrior or None, got dict"):
        TruncatedDPMixture({"alpha": 1.0})
    model = TruncatedDPMixture(PRIOR, truncation=3)
    bad = z.clone()
    bad[1, 0] = float("nan")
    with pytest.raises(ValueError, match=r"data must be finite: found 1 NaN or infinite value\(s\)"):
        model.fit(bad, method="svi", num_steps=1, progress=False)
    with pytest.raises(ValueError, match="data must hold at least 2 points, got 1"):
        model.fit(z[:1], method="gibbs", progress=False)
    with pytest.raises(ValueError, match=r"data must be 2-dimensional, got shape \(5,\)"):
        model.fit(z[:, 0], method="svi", progress=False)
    with pytest.raises(ValueError, match="method must be one of"):
        model.fit(z, method="nuts")




@pytest.mark.parametrize("T", [1, 4])
def test_gibbs_sweep_is_the_bnp_blocked_sweep(T):
    # one blocked implementation: the model's two blocks and bnp's blocked chain, started from
    # one state with generators of one seed, draw the same chain
    from pyromodels.bnp import blocked_chain

    model = TruncatedDPMixture(PRIOR, truncation=T)
    state, z = _state(T, 40, 2, seed=6)
    blocked = BlockedState(state["c"], _full_v(state, T), state["mu"], state["lam"],
                           torch.tensor(PRIOR.alpha, dtype=F64))
    sweep = model.gibbs_sweep(z)
    g_model, g_bnp = torch.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    for theirs in blocked_chain(z, blocked, model.base_measure(z), g_bnp, 6):
        state = sweep(state, z, g_model)
        assert torch.equal(state["c"], theirs.labels)
        assert torch.equal(state["mu"], theirs.mu) and torch.equal(state["lam"], theirs.lam)
        assert torch.equal(_full_v(state, T), theirs.v)
