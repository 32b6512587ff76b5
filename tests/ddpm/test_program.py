"""The CRP Pyro program scores a full state exactly as the closed forms do, and its prior draws
follow the CRP and the Normal-Gamma base measure."""

import math

import numpy as np
import pytest
import torch
from pyro import poutine
from torch.distributions.transforms import AffineTransform, ExpTransform, identity_transform

from pyromodels.bnp import canonical_labels, crp_log_prob
from pyromodels.core.seeding import seeded
from pyromodels.ddpm import DPMixture, DPMixturePrior, complete_log_joint, dp_mixture_crp, state_values

PRIOR = DPMixturePrior(mu0=(0.5, -1.0, 0.25), kappa0=0.7, alpha0=3.0, beta0=2.0, alpha=1.3)


def _draw(seed, num=25, prior=PRIOR, flow=None):
    return DPMixture(prior, flow).simulate(num, torch.Generator().manual_seed(seed))


def _program_log_joint(data, draw, prior=PRIOR, flow=None):
    values = state_values(draw.labels, draw.mu, draw.lam)
    cond = poutine.condition(dp_mixture_crp, data=values)
    kwargs = {"z": data} if flow is None else {"y": data, "flow": flow}
    tr = poutine.trace(cond).get_trace(data.shape[0], data.shape[1], prior, **kwargs)
    return tr.log_prob_sum()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_program_scores_a_state_as_eppf_plus_normal_gamma_plus_gaussian(seed, oracle):
    draw = _draw(seed)
    assert draw.num_clusters >= 2  # several clusters, so the EPPF and the relabelling matter
    got = _program_log_joint(draw.z, draw)
    want = oracle(draw.z, draw.labels, draw.mu, draw.lam, np.array(PRIOR.mu0), 0.7, 3.0, 2.0, 1.3)
    assert float(got) == pytest.approx(want, rel=1e-12, abs=1e-10)
    closed = complete_log_joint(draw.z, draw.labels, draw.mu, draw.lam, PRIOR)
    assert float(closed) == pytest.approx(want, rel=1e-12, abs=1e-10)


def test_the_joint_does_not_depend_on_the_names_of_the_clusters(oracle):
    draw = _draw(0, num=30)
    k = draw.num_clusters
    assert k >= 3
    perm = torch.randperm(k, generator=torch.Generator().manual_seed(5))
    relabelled = torch.argsort(perm)[draw.labels]  # new label of old cluster j is argsort(perm)[j]
    mu, lam = draw.mu[perm], draw.lam[perm]
    values = state_values(relabelled, mu, lam)
    tr = poutine.trace(poutine.condition(dp_mixture_crp, data=values)).get_trace(30, 3, PRIOR, draw.z)
    assert float(tr.log_prob_sum()) == pytest.approx(float(_program_log_joint(draw.z, draw)), rel=1e-13)
    assert float(complete_log_joint(draw.z, relabelled, mu, lam, PRIOR)) == pytest.approx(
        float(tr.log_prob_sum()), rel=1e-13)


def test_the_sequential_seating_probabilities_multiply_to_the_eppf():
    labels = torch.tensor([0, 0, 1, 0, 2, 1, 1, 3])
    draw_mu, draw_lam = torch.zeros(4, 1), torch.ones(4)
    values = state_values(labels, draw_mu, draw_lam)
    tr = poutine.trace(poutine.condition(dp_mixture_crp, data=values)).get_trace(
        8, 1, DPMixturePrior(alpha=0.4), torch.zeros(8, 1))
    tr.compute_log_prob()
    seating = sum(float(tr.nodes[f"c_{i}"]["log_prob_sum"]) for i in range(8))
    # by hand: 1 * 1/1.4 * .4/2.4 * 2/3.4 * .4/4.4 * 1/5.4 * 2/6.4 * .4/7.4
    by_hand = math.log(1 / 1.4 * 0.4 / 2.4 * 2 / 3.4 * 0.4 / 4.4 * 1 / 5.4 * 2 / 6.4 * 0.4 / 7.4)
    assert seating == pytest.approx(by_hand, rel=1e-13)
    assert float(crp_log_prob(torch.bincount(labels), 0.4)) == pytest.approx(by_hand, rel=1e-13)


@pytest.mark.parametrize("event_dim", [0, 1])
def test_flow_observation_adds_the_log_determinant(event_dim, oracle):
    shift = torch.tensor([0.3, -2.0, 1.0])
    scale = torch.tensor([2.0, 0.5, -1.5])
    flow = AffineTransform(shift, scale, event_dim=event_dim)  # z = f(y) = shift + scale * y
    draw = _draw(3, flow=flow)
    assert torch.allclose(flow(draw.y), draw.z, atol=1e-12)
    got = _program_log_joint(draw.y, draw, flow=flow)
    want = oracle(draw.z, draw.labels, draw.mu, draw.lam, np.array(PRIOR.mu0), 0.7, 3.0, 2.0, 1.3)
    want += draw.y.shape[0] * math.log(2.0 * 0.5 * 1.5)
    assert float(got) == pytest.approx(want, rel=1e-12)
    model = DPMixture(PRIOR, flow)
    assert float(model.log_joint(draw.y, state_values(draw.labels, draw.mu, draw.lam))) == pytest.approx(
        want, rel=1e-12)
    assert float(model.complete_log_joint(draw.y, draw.labels, draw.mu, draw.lam)) == pytest.approx(
        want, rel=1e-12)


def test_a_nonlinear_flow_scores_with_its_jacobian(oracle):
    flow = ExpTransform().inv  # z = log y, so log|dz/dy| = -log y per coordinate
    draw = _draw(4, flow=flow)
    model = DPMixture(PRIOR, flow)
    got = model.log_joint(draw.y, state_values(draw.labels, draw.mu, draw.lam))
    want = oracle(draw.z, draw.labels, draw.mu, draw.lam, np.array(PRIOR.mu0), 0.7, 3.0, 2.0, 1.3)
    want -= float(torch.log(draw.y).sum())
    assert float(got) == pytest.approx(want, rel=1e-12)
    assert float(model.complete_log_joint(draw.y, draw.labels, draw.mu, draw.lam)) == pytest.approx(
        want, rel=1e-12)


def test_identity_flow_equals_no_flow():
    draw = _draw(5)
    values = state_values(draw.labels, draw.mu, draw.lam)
    plain = DPMixture(PRIOR).log_joint(draw.z, values)
    flowed = DPMixture(PRIOR, identity_transform).log_joint(draw.z, values)
    assert float(flowed) == pytest.approx(float(plain), rel=1e-14)


def test_empirical_mu0_resolves_to_the_mean_of_the_transformed_data(oracle):
    prior = DPMixturePrior(mu0="empirical", kappa0=0.7, alpha0=3.0, beta0=2.0, alpha=1.3)
    draw = _draw(6)
    flow = AffineTransform(1.0, 2.0)
    y = (draw.z - 1.0) / 2.0
    want = oracle(draw.z, draw.labels, draw.mu, draw.lam, draw.z.mean(0).numpy(), 0.7, 3.0, 2.0, 1.3)
    got = _program_log_joint(y, draw, prior=prior, flow=flow) - y.numel() * math.log(2.0)
    assert float(got) == pytest.approx(want, rel=1e-12)
    assert float(complete_log_joint(draw.z, draw.labels, draw.mu, draw.lam, prior)) == pytest.approx(
        want, rel=1e-12)


def _crp_k_moments(num, alpha):
    p = np.array([alpha / (alpha + i) for i in range(num)])
    return p.sum(), (p * (1 - p)).sum()


def test_simulated_number_of_clusters_follows_the_crp():
    # E[K] = sum_i alpha/(alpha+i-1), Var[K] = sum_i p_i(1-p_i) (independent indicators of a new
    # table); the mean of R draws has sd sqrt(Var/R): 4 sd bounds a false alarm by 6e-5.
    num, reps = 15, 3000
    model, gen = DPMixture(PRIOR), torch.Generator().manual_seed(11)
    ks = np.array([model.simulate(num, gen).num_clusters for _ in range(reps)])
    mean, var = _crp_k_moments(num, PRIOR.alpha)
    assert abs(ks.mean() - mean) < 4 * math.sqrt(var / reps)


def test_program_prior_draws_follow_the_crp_and_the_normal_gamma():
    # Same 4-sd rule as above for K; for lam_0 ~ Gamma(3, 2): mean 1.5, var 3/4; and
    # kappa0 lam_0 (mu_0 - m)^2 ~ chi^2_1 per coordinate: mean 1, var 2.
    num, reps = 12, 400
    prior = DPMixturePrior(mu0=0.5, kappa0=0.7, alpha0=3.0, beta0=2.0, alpha=1.3)
    ks, lams, chis = [], [], []
    with seeded(2024):
        for _ in range(reps):
            tr = poutine.trace(dp_mixture_crp).get_trace(num, 1, prior)
            ks.append(sum(1 for name in tr.nodes if name.startswith("lam_")))
            lam0 = float(tr.nodes["lam_0"]["value"])
            lams.append(lam0)
            chis.append(0.7 * lam0 * float(tr.nodes["mu_0"]["value"][0] - 0.5) ** 2)
    mean, var = _crp_k_moments(num, 1.3)
    assert abs(np.mean(ks) - mean) < 4 * math.sqrt(var / reps)
    assert abs(np.mean(lams) - 1.5) < 4 * math.sqrt(0.75 / reps)
    assert abs(np.mean(chis) - 1.0) < 4 * math.sqrt(2.0 / reps)


def test_simulate_is_reproducible_and_uses_only_its_generator():
    a = _draw(9)
    torch.manual_seed(0)
    b = _draw(9)
    assert torch.equal(a.z, b.z) and torch.equal(a.labels, b.labels)
    assert a.y is None
    assert int(a.labels[0]) == 0
    assert torch.equal(canonical_labels(a.labels), a.labels)


def test_state_values_renumber_clusters_in_order_of_first_appearance():
    # labels [2, 2, 0, 1, 0] become [0, 0, 1, 2, 1]: new cluster k is old cluster [2, 0, 1][k]
    mu = torch.arange(6.0).reshape(3, 2)
    lam = torch.tensor([1.0, 2.0, 3.0])
    values = state_values(torch.tensor([2, 2, 0, 1, 0]), mu, lam)
    assert [values[f"c_{i}"].item() for i in range(5)] == [0, 0, 1, 2, 1]
    for k, old in enumerate([2, 0, 1]):
        assert values[f"mu_{k}"].tolist() == mu[old].tolist()
        assert float(values[f"lam_{k}"]) == float(lam[old])
    values = state_values(torch.tensor([1, 0, 2]), mu, lam)
    assert values["c_0"].item() == 0 and values["c_2"].item() == 2
    assert values["mu_0"].tolist() == [2.0, 3.0] and float(values["lam_0"]) == 2.0


def test_bad_input_is_named():
    mu, lam = torch.zeros(2, 1), torch.ones(2)
    with pytest.raises(ValueError, match="no empty cluster"):
        state_values(torch.tensor([0, 0]), mu, lam)
    with pytest.raises(ValueError, match="lam must have one entry per row of mu"):
        state_values(torch.tensor([0, 1]), mu, torch.ones(3))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 1\]"):
        state_values(torch.tensor([0, 2]), mu, lam)
    with pytest.raises(ValueError, match="no empty cluster"):
        complete_log_joint(torch.zeros(2, 1), torch.tensor([0, 2]), torch.zeros(3, 1), torch.ones(3),
                           PRIOR.with_mu0(0.0))
    with pytest.raises(ValueError, match=r"labels must take the values 0..1"):
        complete_log_joint(torch.zeros(3, 1), torch.tensor([0, 1, 2]), mu, lam, PRIOR.with_mu0(0.0))
    with pytest.raises(ValueError, match="lam must be > 0"):
        complete_log_joint(torch.zeros(2, 1), torch.tensor([0, 1]), mu, torch.tensor([1.0, 0.0]),
                           PRIOR.with_mu0(0.0))
    with pytest.raises(ValueError, match="log_abs_det must have one entry per row of z"):
        complete_log_joint(torch.zeros(2, 1), torch.tensor([0, 1]), mu, lam, PRIOR.with_mu0(0.0),
                           torch.zeros(3))
    with pytest.raises(ValueError, match=r"z must have shape \(3, 2\)"):
        dp_mixture_crp(3, 2, PRIOR, torch.zeros(3, 3))
    with pytest.raises(ValueError, match="without a flow pass z"):
        dp_mixture_crp(3, 2, PRIOR, y=torch.zeros(3, 2))
    with pytest.raises(ValueError, match="pass y, not z"):
        dp_mixture_crp(3, 2, PRIOR, torch.zeros(3, 2), flow=identity_transform)
    with pytest.raises(TypeError, match="flow must be a torch.distributions.Transform"):
        DPMixture(PRIOR, flow=lambda y: y)
    with pytest.raises(TypeError, match="prior must be a DPMixturePrior"):
        DPMixture({"alpha": 1.0})
    with pytest.raises(ValueError, match="num_points must be an integer >= 1"):
        DPMixture(PRIOR).simulate(0, torch.Generator())
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        DPMixture(PRIOR).simulate(3, 0)
    with pytest.raises(ValueError, match="dim is needed unless mu0 is a vector"):
        DPMixture(DPMixturePrior()).simulate(3, torch.Generator())
    with pytest.raises(ValueError, match='data is needed to resolve mu0="empirical"'):
        DPMixture(DPMixturePrior(mu0="empirical")).simulate(3, torch.Generator(), dim=2)
    with pytest.raises(ValueError, match="data must be 2-dimensional"):
        DPMixture(PRIOR).model(torch.zeros(3))
    with pytest.raises(ValueError, match=r"method must be one of \['mcem', 'gibbs'\], got 'svi'"):
        DPMixture(PRIOR).fit(torch.zeros(3, 3), method="svi")
