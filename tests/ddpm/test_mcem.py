"""Monte Carlo EM (Algorithm 1): the M-step's gradient is eq. 21, the E-step is the DP
sampler on f(y), restarts keep the best log joint, and a run resumes to the same result."""

import math

import pytest
import torch

from pyromodels.ddpm import DPMixture, DPMixturePrior, mcem
from pyromodels.ddpm.mcem import MCEMSettings, flow_loss
from pyromodels.metrics import ari
from pyromodels.nn import NICE

PRIOR = DPMixturePrior(kappa0=0.1, alpha0=20.0, beta0=20.0, alpha=1.0)


def _blobs(n_per=40, d=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[-6.0, 0.0], [6.0, 0.0], [0.0, 8.0]], dtype=torch.float64)[:, :d]
    labels = torch.arange(3).repeat_interleave(n_per)
    return centres[labels] + torch.randn(3 * n_per, d, generator=gen, dtype=torch.float64), labels


def _flow(d=2, seed=0):
    return NICE(d, num_layers=2, hidden=(8,), seed=seed, dtype=torch.float64)


def test_flow_loss_gradient_is_eq_21():
    # eq. 21: d/dtheta log p = -sum_i lam_i (z_i - mu_i)^T dz_i/dtheta; the loss is its
    # negative divided by B, so its gradient is sum_i lam_i (z_i - mu_i)^T J_i / B, with the
    # per-point Jacobians J_i = dz_i/dtheta taken one point at a time.
    flow = NICE.random(3, num_layers=2, hidden=(5,), seed=2, dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    y = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    mu = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    lam = torch.rand(6, generator=gen, dtype=torch.float64) + 0.5
    params = list(flow.parameters())
    grads = torch.autograd.grad(flow_loss(flow, y, mu, lam), params)
    expected = [torch.zeros_like(p) for p in params]
    for i in range(6):
        z_i = flow(y[i:i + 1])[0]
        residual = (lam[i] * (z_i - mu[i])).detach()
        for j in range(3):  # row j of J_i, weighted by the residual's coordinate j
            rows = torch.autograd.grad(z_i[j], params, retain_graph=True, allow_unused=True)
            for e, r in zip(expected, rows):
                if r is not None:
                    e += residual[j] * r / 6
    for g, e in zip(grads, expected):
        assert torch.allclose(g, e, rtol=1e-10, atol=1e-12)


def test_flow_loss_subtracts_the_log_determinant_of_a_scaling_flow():
    flow = NICE.random(2, num_layers=1, hidden=(4,), scaling=True, seed=1, dtype=torch.float64)
    y = torch.randn(5, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    mu, lam = torch.zeros(5, 2, dtype=torch.float64), torch.full((5,), 2.0, dtype=torch.float64)
    z = flow(y)
    by_hand = (lam * (z ** 2).sum(-1) / 2 - flow.log_abs_det_jacobian(y, z)).mean()
    assert flow_loss(flow, y, mu, lam).item() == pytest.approx(by_hand.item(), rel=1e-12)
    assert flow.log_abs_det_jacobian(y, z)[0].item() != 0.0


def test_without_a_flow_the_rounds_are_the_dp_sampler_and_find_separated_clusters():
    y, truth = _blobs()
    settings = MCEMSettings(rounds=10, gibbs_sweeps=3, init_clusters=8, restarts=1)
    post = DPMixture(PRIOR).fit(y, settings=settings, seed=0, progress=False)
    assert post.method == "mcem"
    assert post.samples["num_clusters"].shape == (1, 10)
    sizes = post.samples["sorted_sizes"]
    assert sizes.shape == (1, 10, 5) and bool((sizes[..., :-1] >= sizes[..., 1:]).all())
    assert torch.equal(sizes[..., 0], post.samples["largest_cluster"])
    assert sizes[0, -1].tolist() == [40, 40, 40, 0, 0]  # three clusters of 40, padded
    assert math.isnan(float(post.losses[0, 0]))  # no M-step
    assert ari(truth, post.params["labels"]) == 1.0
    # the recorded log joint is the sampler's log joint of the kept state (zero log-det)
    z = y
    ids, mu, lam = post.params["cluster_ids"], post.params["mu"], post.params["lam"]
    assert mu.shape == (3, 2) and lam.shape == (3,) and ids.shape == (3,)
    # row k of mu is the cluster of label k: near the mean of its points (posterior sd of a
    # mean of 40 points of unit spread with a weak prior is about 0.16; 1.0 is > 6 sd)
    for k in range(3):
        assert float((mu[k] - z[post.params["labels"] == k].mean(0)).norm()) < 1.0
    assert post.params["log_joint"] == float(post.sample_stats["lp"][0, -1])
    assert torch.equal(post.params["z"], z)


def test_recorded_log_joint_equals_the_samplers_log_joint_plus_the_flows_log_det(monkeypatch):
    y, _ = _blobs(n_per=15)
    seen = []
    original = mcem.log_joint

    def spy(z, state, base, alpha):
        value = original(z, state, base, alpha)
        seen.append(float(value))
        return value

    monkeypatch.setattr(mcem, "log_joint", spy)
    flow = NICE.random(2, num_layers=1, hidden=(4,), scaling=True, seed=3, dtype=torch.float64)
    settings = MCEMSettings(rounds=2, gibbs_sweeps=1, init_clusters=3, batch_size=16)
    post = DPMixture(PRIOR, flow).fit(y, settings=settings, seed=1, progress=False)
    # round 0 ran with the starting flow, whose log-det is the same at every point
    with torch.no_grad():
        log_det0 = float(flow.log_abs_det_jacobian(y, flow(y)).sum())
    assert float(post.sample_stats["lp"][0, 0]) == pytest.approx(seen[0] + log_det0, rel=1e-12)


def test_the_flow_is_trained_and_the_best_restart_is_kept():
    y, truth = _blobs(n_per=20)
    flow = _flow()
    before = [p.detach().clone() for p in flow.parameters()]
    settings = MCEMSettings(rounds=3, gibbs_sweeps=2, flow_epochs=2, batch_size=16,
                            init_clusters=5, restarts=3)
    post = DPMixture(PRIOR, flow).fit(y, settings=settings, seed=4, progress=False)
    finals = post.diagnostics["final_log_joint"]
    assert post.params["best_restart"] == max(range(3), key=finals.__getitem__)
    assert post.losses.shape == (3, 3) and bool(torch.isfinite(post.losses).all())
    # the caller's flow is left as it was; the result holds the trained copy of the best run
    assert all(torch.equal(a, b) for a, b in zip(before, flow.parameters()))
    trained = post.params["flow"]
    assert any(not torch.equal(a, b) for a, b in zip(before, trained.parameters()))
    assert torch.allclose(post.params["z"], trained(y).detach())


def test_a_run_interrupted_between_rounds_resumes_to_the_uninterrupted_result(tmp_path,
                                                                               monkeypatch):
    y, _ = _blobs(n_per=15)
    settings = MCEMSettings(rounds=3, gibbs_sweeps=2, flow_epochs=1, batch_size=16,
                            init_clusters=4, restarts=2, alpha_prior=(2.0, 1.0),
                            feature_snapshots=2, snapshot_points=10)
    whole = DPMixture(PRIOR, _flow()).fit(y, settings=settings, seed=7, progress=False)

    calls = {"n": 0}
    original = mcem._round

    def interrupt_on_fifth(*args):
        calls["n"] += 1
        if calls["n"] == 5:  # restart 1, round 1: restart 0 and one round of restart 1 done
            raise KeyboardInterrupt
        return original(*args)

    monkeypatch.setattr(mcem, "_round", interrupt_on_fifth)
    path = tmp_path / "run.ckpt"
    with pytest.raises(KeyboardInterrupt):
        DPMixture(PRIOR, _flow()).fit(y, settings=settings, seed=7, progress=False,
                                      checkpoint=path)
    monkeypatch.setattr(mcem, "_round", original)
    resumed = DPMixture(PRIOR, _flow()).fit(y, settings=settings, progress=False, resume=path)
    assert resumed.attrs["seed"] == 7
    assert torch.equal(resumed.params["labels"], whole.params["labels"])
    assert torch.equal(resumed.sample_stats["lp"], whole.sample_stats["lp"])
    assert torch.equal(resumed.samples["num_clusters"], whole.samples["num_clusters"])
    assert torch.allclose(resumed.params["z"], whole.params["z"], rtol=0, atol=0)
    assert torch.equal(resumed.samples["alpha"], whole.samples["alpha"])
    snaps = resumed.params["feature_snapshots"]
    assert sorted(snaps) == [1, 3] and snaps[3].shape == (10, 2)
    assert all(torch.equal(snaps[t], whole.params["feature_snapshots"][t]) for t in snaps)


def test_concentration_is_redrawn_only_with_a_hyperprior():
    y, _ = _blobs(n_per=10)
    fixed = DPMixture(PRIOR).fit(y, settings=MCEMSettings(rounds=3, init_clusters=3), seed=0,
                                 progress=False)
    assert bool((fixed.samples["alpha"] == PRIOR.alpha).all())
    drawn = DPMixture(PRIOR).fit(y, settings=MCEMSettings(rounds=3, init_clusters=3,
                                                          alpha_prior=(2.0, 1.0)),
                                 seed=0, progress=False)
    assert len(set(drawn.samples["alpha"][0].tolist())) == 3


def test_snapshot_rounds_spread_from_first_to_last():
    assert MCEMSettings(rounds=10, feature_snapshots=4).snapshot_rounds() == (0, 3, 6, 9)
    assert MCEMSettings(rounds=2, feature_snapshots=5).snapshot_rounds() == (0, 1)
    assert MCEMSettings(rounds=5).snapshot_rounds() == ()


def test_resume_refuses_other_settings(tmp_path):
    y, _ = _blobs(n_per=10)
    settings = MCEMSettings(rounds=1, gibbs_sweeps=1, init_clusters=3)
    path = tmp_path / "run.ckpt"
    DPMixture(PRIOR).fit(y, settings=settings, seed=0, progress=False, checkpoint=path)
    other = MCEMSettings(rounds=1, gibbs_sweeps=2, init_clusters=3)
    with pytest.raises(ValueError, match="resume: the checkpoint's run has gibbs_sweeps=1"):
        DPMixture(PRIOR).fit(y, settings=other, progress=False, resume=path)


def test_traces_convert_to_inference_data_with_restarts_as_chains():
    y, _ = _blobs(n_per=10)
    settings = MCEMSettings(rounds=4, gibbs_sweeps=1, init_clusters=3, restarts=2)
    post = DPMixture(PRIOR).fit(y, settings=settings, seed=0, progress=False)
    idata = post.to_inference_data()
    assert idata.posterior["num_clusters"].shape == (2, 4)
    assert idata.sample_stats["lp"].shape == (2, 4)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"settings": "fast"}, TypeError, "settings must be MCEMSettings"),
    ({"settings": MCEMSettings(rounds=1), "seed": -1}, ValueError, "seed"),
])
def test_bad_fit_arguments(kwargs, error, match):
    y, _ = _blobs(n_per=5)
    with pytest.raises(error, match=match):
        DPMixture(PRIOR).fit(y, progress=False, **kwargs)


@pytest.mark.parametrize("field, value, match", [
    ("rounds", 0, "rounds must be an integer >= 1"),
    ("lr", 0.0, "lr must be > 0"),
    ("algorithm", "alg8", "algorithm must be one of"),
    ("backend", "cuda", "backend must be one of"),
    ("alpha_prior", (1.0, -1.0), "alpha_prior\\[1\\] must be > 0"),
])
def test_bad_settings(field, value, match):
    with pytest.raises(ValueError, match=match):
        MCEMSettings(**{field: value})


def test_bad_data():
    with pytest.raises(ValueError, match="at least 2 points"):
        DPMixture(PRIOR).fit(torch.zeros(1, 2), progress=False)
    with pytest.raises(ValueError, match="data"):
        DPMixture(PRIOR).fit(torch.tensor([[0.0, float("nan")], [1.0, 1.0]]), progress=False)
    with pytest.raises((ValueError, TypeError), match="4"):
        DPMixture(PRIOR, NICE(4, num_layers=1, hidden=(4,), seed=0,
                              dtype=torch.float64)).fit(torch.zeros(5, 3), progress=False)
    with pytest.raises(ValueError, match="method"):
        DPMixture(PRIOR).fit(torch.zeros(5, 2), method="nuts", progress=False)


def test_fit_report_traces_the_statistics_not_per_point_labels():
    from pyromodels.report.posterior import mcmc_figures

    y, _ = _blobs(n_per=10)
    settings = MCEMSettings(rounds=4, init_clusters=6, restarts=2)
    post = DPMixture(PRIOR).fit(y, settings=settings, seed=0, progress=False)
    titles = {ax.get_title() for ax in mcmc_figures(post)["trace plot (one line per chain)"].axes}
    assert "num_clusters" in titles and "occupied_clusters" not in titles
    assert "alpha" not in titles  # fixed, so constant


def _list_items(value) -> int:
    """How many list items ``value`` holds, nested lists and dicts included."""
    if isinstance(value, dict):
        return sum(_list_items(v) for v in value.values())
    if isinstance(value, list | tuple):
        return len(value) + sum(_list_items(v) for v in value)
    return 0


@pytest.mark.parametrize("checkpointed", [False, True], ids=["no-checkpoint", "checkpoint"])
def test_a_round_copies_no_history(tmp_path, monkeypatch, checkpointed):
    # a round's cost must not grow with the rounds before it: the traces so far are copied
    # once per restart (its outcome), never per round, so the list items deep-copied grow
    # linearly in the rounds (equal second differences), and without a checkpoint no
    # snapshot of the run is taken at all
    y, _ = _blobs(n_per=5)
    copied, snapshots = [0], [0]
    deepcopy, snapshot = mcem.copy.deepcopy, mcem._Run.snapshot

    def counting_deepcopy(value, *args, **kwargs):
        copied[0] += _list_items(value)
        return deepcopy(value, *args, **kwargs)

    def counting_snapshot(self):
        snapshots[0] += 1
        return snapshot(self)

    monkeypatch.setattr(mcem.copy, "deepcopy", counting_deepcopy)
    monkeypatch.setattr(mcem._Run, "snapshot", counting_snapshot)
    items = []
    for rounds in (4, 8, 16):
        copied[0] = snapshots[0] = 0
        settings = MCEMSettings(rounds=rounds, init_clusters=2, gibbs_sweeps=1, backend="torch")
        path = tmp_path / f"{rounds}.ckpt" if checkpointed else None
        DPMixture(PRIOR).fit(y, settings=settings, seed=0, progress=False, checkpoint=path)
        items.append(copied[0])
        assert snapshots[0] == (rounds if checkpointed else 0)
    assert items[2] - items[1] == 2 * (items[1] - items[0]) > 0
