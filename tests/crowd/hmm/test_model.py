"""SequentialDawidSkene: its three Pyro programs agree with the kernels; FFBS and the Gibbs
blocks are the program's exact conditionals; the engines recover the truth."""

import itertools

import pyro.distributions as dist
import pytest
import torch
from pyro import poutine
from pyro.infer import TraceEnum_ELBO
from scipy.stats import chisquare

from pyromodels.core import ModelSpecError
from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.hmm import (
    CrowdResponses,
    MarkovChain,
    SequentialDawidSkene,
    ffbs_sample,
    log_likelihood,
    stationary_distribution,
)
from pyromodels.crowd.majority import majority_vote
from pyromodels.data.simulate_crowd import WorkerPopulation, simulate_sequential_annotations
from pyromodels.testing import assert_draws_scored_apart, assert_mc_mean, check_conditional, simulate_joint

INITIAL = torch.tensor([0.7, 0.2, 0.1], dtype=torch.float64)


def tiny(K=2, lengths=(2, 3), seed=0):
    seqs, truth = simulate_sequential_annotations(list(lengths),
                                                  WorkerPopulation(2, dominance=0.6, missing_rate=0.3),
                                                  K, seed=seed)
    return seqs, {"initial": INITIAL[:K] / INITIAL[:K].sum(), "transition": truth["transition"],
                  "confusion": truth["confusion"]}


def _sites(mode, params):
    return params if mode == "learned" else {k: params[k] for k in ("transition", "confusion")}


def _all_paths(K, T):
    return [torch.tensor(p) for p in itertools.product(range(K), repeat=T)]


@pytest.mark.parametrize("mode", ["learned", "fixed", "stationary"])
def test_the_three_programs_and_forward_backward_give_one_marginal_likelihood(mode):
    seqs, params = tiny(K=3, lengths=(2, 1, 2), seed=1)
    model = SequentialDawidSkene(initial=mode, initial_probs=params["initial"] if mode == "fixed" else None)
    data = model.prepare(seqs)
    used = {**params, "initial": stationary_distribution(params["transition"])} if mode == "stationary" \
        else params
    sites = _sites(mode, params)
    kernel = model.log_likelihood(data, used).sum() + model.log_prior(data, used)
    # the full program: log p(F, theta) = logsumexp over every label path of the log joint
    joint = torch.stack([model.log_joint(data, {**sites, "z": z}) for z in _all_paths(3, 5)])
    collapsed = poutine.trace(poutine.condition(model.collapsed_model, data=sites)).get_trace(data)
    enumerated = -TraceEnum_ELBO(max_plate_nesting=1).loss(
        poutine.condition(model.enumerated_model, data=sites), lambda d: None, data)
    assert float(torch.logsumexp(joint, 0)) == pytest.approx(float(kernel), abs=1e-10)
    assert float(collapsed.log_prob_sum()) == pytest.approx(float(kernel), abs=1e-10)
    assert enumerated == pytest.approx(float(kernel), abs=1e-10)


def test_discrete_hmm_initial_logits_are_the_state_before_the_first_observation():
    # Pyro's DiscreteHMM moves once before the first observation: passing the law of y_1 as
    # initial_logits is wrong unless that law is stationary (the program pads one step instead)
    seqs, params = tiny(K=3, lengths=(6,), seed=2)
    data = SequentialDawidSkene().prepare(seqs)
    responses, _ = data.dense
    obs = CrowdResponses(params["confusion"].log().transpose(0, 1))
    e = log_emissions(data.table, params["confusion"].log())

    def naive(initial):
        return float(dist.DiscreteHMM(initial.log(), params["transition"].log(), obs).log_prob(responses[0]))

    def exact(initial):
        return float(log_likelihood(e, initial.log(), params["transition"].log()))

    assert abs(naive(params["initial"]) - exact(params["initial"])) > 1e-3
    pi = stationary_distribution(params["transition"])
    assert naive(pi) == pytest.approx(exact(pi), abs=1e-12)


def test_markov_chain_samples_follow_its_log_prob():
    chain = MarkovChain(INITIAL[:2] / 0.9, torch.tensor([[0.8, 0.2], [0.35, 0.65]], dtype=torch.float64),
                        torch.tensor([1, 2]))
    torch.manual_seed(0)
    draws = chain.sample((20_000,))
    paths = torch.stack(_all_paths(2, 3))
    exact = chain.log_prob(paths).exp()
    assert float(exact.sum()) == pytest.approx(1.0, abs=1e-12)
    hits = (draws.unsqueeze(1) == paths.unsqueeze(0)).all(-1).double()  # (N, 8) path indicators
    assert_mc_mean(hits, exact, n_se=5)  # each path's frequency within 5 Monte Carlo s.e.


def _exact_path_probs(data, params):
    e = log_emissions(data.table, params["confusion"].log())
    la, lt = params["initial"].log(), params["transition"].log()
    paths = torch.stack(_all_paths(data.num_classes, e.shape[0]))
    starts = data.starts
    score = []
    for z in paths:  # written out step by step: independent of the kernels
        s = sum(float(la[z[t]]) if starts[t] else float(lt[z[t - 1], z[t]]) for t in range(len(z)))
        score.append(s + float(e[torch.arange(len(z)), z].sum()))
    return paths, torch.softmax(torch.tensor(score, dtype=torch.float64), 0)


def test_ffbs_draws_paths_with_their_exact_posterior_probabilities():
    seqs, _ = tiny(seed=3)
    t = torch.float64
    params = {"initial": torch.tensor([0.55, 0.45], dtype=t),  # weak signals: no negligible path
              "transition": torch.tensor([[0.6, 0.4], [0.3, 0.7]], dtype=t),
              "confusion": torch.tensor([[0.65, 0.35], [0.3, 0.7]], dtype=t).expand(2, 2, 2)}
    data = SequentialDawidSkene().prepare(seqs)
    paths, exact = _exact_path_probs(data, params)
    assert float(exact.min()) > 1e-3  # >= 40 expected draws of every path: the checks are sound
    e = log_emissions(data.table, params["confusion"].log())
    args = (e, params["initial"].log(), params["transition"].log(), data.lengths)
    n = 40_000
    draws = ffbs_sample(*args, generator=torch.Generator().manual_seed(0), num_samples=n, backend="torch")
    again = ffbs_sample(*args, generator=torch.Generator().manual_seed(0), num_samples=n, backend="numba")
    assert torch.equal(draws, again)  # same uniforms, same inverse-CDF draws
    hits = (draws.unsqueeze(1) == paths.unsqueeze(0)).all(-1).double()
    assert_mc_mean(hits, exact, n_se=5)  # per-path frequency within 5 Monte Carlo s.e.
    # and jointly: Pearson chi-square over the 32 paths; a correct sampler fails w.p. 1e-3
    assert chisquare(hits.sum(0).numpy(), exact.numpy() * n).pvalue > 1e-3


def test_labels_block_density_is_the_exact_conditional_of_the_whole_path():
    seqs, params = tiny(seed=4)
    model = SequentialDawidSkene()
    data = model.prepare(seqs)
    block = model.gibbs_sweep(data).blocks[0]
    dens = torch.stack([block.log_density({"z": z}, params, data) for z in _all_paths(2, 5)])
    joint = torch.stack([model.log_joint(data, {**params, "z": z}) for z in _all_paths(2, 5)])
    assert float(torch.logsumexp(dens, 0)) == pytest.approx(0.0, abs=1e-12)  # normalised
    torch.testing.assert_close(dens, torch.log_softmax(joint, 0), rtol=0, atol=1e-10)


@pytest.mark.parametrize("mode", ["learned", "fixed"])
def test_every_gibbs_block_passes_condition_and_score(mode):
    seqs, params = tiny(K=3, lengths=(4, 3, 5), seed=5)
    model = SequentialDawidSkene(initial=mode, transition_concentration=1.5, confusion_concentration=2.0)
    data = model.prepare(seqs)
    state = model.init_state(data, torch.Generator().manual_seed(0))
    assert set(state) == ({"initial"} if mode == "learned" else set()) | {"transition", "confusion", "z"}
    for block in model.gibbs_sweep(data).blocks:
        spread = check_conditional(model, data, block, state, num_values=6, seed=1)
        assert spread < 1e-9, block.name


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_gibbs_sweep_passes_geweke():
    from pyromodels.data import AnnotationTable, Sequences
    from pyromodels.testing import geweke_test

    seqs, _ = tiny(lengths=(3, 2), seed=6)
    model = SequentialDawidSkene(transition_concentration=2.0,
                                 confusion_concentration=[[3.0, 1.0], [1.0, 3.0]])
    data = model.prepare(seqs)
    table = data.table

    def observed(d, values):
        new = AnnotationTable.from_arrays(table.item_idx, table.worker_idx, values["labels"],
                                          num_items=table.num_items, num_workers=table.num_workers,
                                          num_classes=2)
        return model.prepare(Sequences(new, d.lengths))

    def stats(v):
        z = v["z"].double()
        return torch.stack([v["initial"][0], v["transition"][0, 0], v["transition"][1, 1],
                            v["confusion"][0, 0, 0], z.mean(), (z[1:] == z[:-1]).double().mean(),
                            (v["labels"] == v["z"][table.item_idx]).double().mean()])

    result = geweke_test(model, data, stats, observed=observed, num_marginal=1000, num_successive=1500,
                         num_burn=50)
    assert result.passed, result


def test_gibbs_is_refused_for_a_stationary_first_label():
    seqs, _ = tiny(seed=7)
    with pytest.raises(ModelSpecError, match="initial='stationary'"):
        SequentialDawidSkene(initial="stationary").fit(seqs, method="gibbs", progress=False)


def test_em_and_gibbs_recover_a_sticky_chain_and_beat_majority_vote():
    seqs, truth = simulate_sequential_annotations([40] * 15, WorkerPopulation(5, dominance=0.6), 3,
                                                  stickiness=0.7, seed=8)
    model = SequentialDawidSkene()
    em = model.fit(seqs, method="em", seed=0, progress=False, max_iter=300)
    labels = em.params["labels"]
    assert torch.equal(labels, model.decode(seqs, em))
    hmm_acc = float((labels == truth["z"]).double().mean())
    mv_acc = float((majority_vote(seqs.data, seed=0) == truth["z"]).double().mean())
    assert hmm_acc > mv_acc + 0.03
    assert float((em.params["transition"] - truth["transition"]).abs().max()) < 0.08
    gibbs = model.fit(seqs, method="gibbs", seed=0, progress=False, num_samples=150, num_warmup=50,
                      num_chains=1, lp_every=0)
    assert gibbs.samples["z"].dtype == torch.long and gibbs.samples["z"].shape == (1, 150, 600)
    # posterior mean and MAP of the transition agree within a few posterior standard deviations
    assert float((gibbs.mean("transition") - em.params["transition"]).abs().max()) < 0.05
    start = model.start_from(seqs, confusion=truth["confusion"], transition=truth["transition"])
    from_truth = model.fit(seqs, method="em", init=start, progress=False, max_iter=300)
    assert from_truth.losses[-1] >= from_truth.losses[0]


# tying the first label's law to the transition makes the step a heuristic, not exact EM, so
# the objective may dip slightly near convergence (the monitor warns)
@pytest.mark.filterwarnings("ignore:EM objective should not decrease")
def test_stationary_first_label_em_ties_initial_to_the_transition():
    seqs, _ = simulate_sequential_annotations([25] * 6, 4, 3, stickiness=0.5, seed=9)
    fit = SequentialDawidSkene(initial="stationary").fit(seqs, method="em", seed=0, progress=False,
                                                         max_iter=100, warn_not_converged=False)
    p = fit.params
    torch.testing.assert_close(p["initial"] @ p["transition"], p["initial"], rtol=0, atol=1e-10)


def test_simulated_program_draws_have_the_declared_sites():
    seqs, _ = tiny(seed=10)
    model = SequentialDawidSkene()
    data = model.prepare(seqs)
    draw = simulate_joint(model, data)
    assert set(draw) == {"initial", "transition", "confusion", "z", "labels"}
    assert draw["z"].shape == (5,) and draw["labels"].shape == (data.table.num_labels,)


@pytest.mark.parametrize("mode", ["learned", "stationary"])
def test_a_batch_of_draws_scores_each_draws_labels_with_its_own_path(mode, caplog):
    """Under a plate of draws (predictive draws, vectorised particles) every draw's labels are
    scored with that draw's path and confusion, as the unbatched program scores them, and the
    prior draws take one vectorised trace instead of one trace per draw."""
    import logging

    import pyro

    from pyromodels.core.predictive import prior_draws

    seqs, _ = tiny(K=3, lengths=(3, 4), seed=5)
    model = SequentialDawidSkene(initial=mode)
    data = model.prepare(seqs)
    pyro.set_rng_seed(5)
    draws = [simulate_joint(model, data) for _ in range(4)]
    assert_draws_scored_apart(model, data, draws, "labels", plated={"labels"})
    with caplog.at_level(logging.INFO, logger="pyromodels"):
        _, replicates = prior_draws(model, seqs, num_draws=30, seed=0)
    assert "does not broadcast over a batch of draws" not in caplog.text
    assert replicates["labels"].shape == (1, 30, data.table.num_labels)


@pytest.mark.parametrize("mode", ["learned", "fixed"])
def test_pointwise_log_likelihood_sums_out_each_sequences_path(mode):
    """ArviZ's log_likelihood of a Gibbs fit is each sequence's marginal (every label path
    summed out, checked by enumeration), not the likelihood given the drawn path."""
    seqs, params = tiny(K=2, lengths=(2, 3), seed=3)
    model = SequentialDawidSkene(initial=mode, initial_probs=params["initial"] if mode == "fixed" else None)
    post = model.fit(seqs, method="gibbs", seed=0, progress=False, num_samples=3, num_warmup=2,
                     num_chains=2)
    ll = post.to_inference_data(predictive=False).log_likelihood["sequences"].values
    assert ll.shape == (2, 3, 2)
    data = model.prepare(seqs)
    for c, d in [(0, 0), (1, 2)]:
        draw = {k: v[c, d] for k, v in post.samples.items() if k in ("initial", "transition", "confusion")}
        used = model.start_from(data, confusion=draw["confusion"], transition=draw["transition"],
                                initial=draw.get("initial"))
        sites = _sites(mode, draw)
        paths = torch.stack([model.log_joint(data, {**sites, "z": z}) for z in _all_paths(2, 5)])
        exact = torch.logsumexp(paths, 0) - model.log_prior(data, used)
        assert float(ll[c, d].sum()) == pytest.approx(float(exact), abs=1e-9)
        assert ll[c, d] == pytest.approx(model.log_likelihood(data, used).numpy(), abs=1e-12)
