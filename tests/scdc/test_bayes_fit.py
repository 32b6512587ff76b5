"""BayesSCDC's fit: the result, the two minibatch streams and their weights, the eq. 17
correction, and the Pinwheel toy where annotations help and the sparse prior prunes."""

import math

import pytest
import torch

from pyromodels.core.conjugate_factors import Minibatch
from pyromodels.data import simulate_block_pairs, simulate_pinwheel
from pyromodels.scdc import BayesSCDC
from pyromodels.scdc.bayes import initial_globals
from pyromodels.scdc.bayes_elbo import BayesLocalStep, NetworkObservation


@pytest.fixture(scope="module")
def small():
    o, truth = simulate_pinwheel(num_clusters=3, points_per_cluster=20, seed=0)
    o = (o - o.mean(0)) / o.std()
    pairs, _ = simulate_block_pairs(truth["z"], 4, 10, seed=1)
    return o, pairs


def test_fit_gives_predictions_weights_and_workers(small):
    o, pairs = small
    model = BayesSCDC(5, 2, hidden=(8,))
    post = model.fit(o, pairs, num_epochs=2, batch_size=20, seed=0, progress=False)
    probs = post.params["cluster_probs"]
    assert probs.shape == (60, 5)
    torch.testing.assert_close(probs.sum(-1), torch.ones(60, dtype=torch.float64))
    torch.testing.assert_close(model.cluster_probabilities(post, o), probs)
    assert model.predict(post, o[:7]).shape == (7,)
    e_pi = post.params["expected_weights"]
    assert e_pi.shape == (5,) and math.isclose(float(e_pi.sum()), 1.0)
    assert 1 <= post.diagnostics["occupied_clusters"] <= 5
    table = model.worker_table(post)
    assert list(table.columns) == ["alpha", "beta", "weight"] and len(table) == 4
    assert post.diagnostics["steps_per_epoch"] == 3 and post.diagnostics["num_steps"] == 6
    with pytest.raises(ValueError, match="columns"):
        model.predict(post, o[:, :1])
    no_links = model.fit(o, None, num_epochs=1, batch_size=20, seed=0, progress=False)
    with pytest.raises(ValueError, match="no worker"):
        model.worker_table(no_links)


def _one_step(o, pairs, pair_batch, scaling, kl_warmup_steps=0, step_number=1):
    model = BayesSCDC(4, 2, hidden=(8,))
    gen = torch.Generator().manual_seed(0)
    obs = model.networks(2, "normal", gen, torch.float64, None)
    priors = model.priors(pairs.num_workers)
    step = BayesLocalStep(obs, o, pairs.i_idx, pairs.j_idx, pairs.worker_idx, pairs.link,
                          pairs.num_workers, pair_batch, worker_scaling=scaling,
                          kl_warmup_steps=kl_warmup_steps)
    batch = Minibatch(o[:20], torch.arange(20), 3.0, 0, step_number)
    return step(priors, batch, torch.Generator().manual_seed(3))


def test_the_kl_warmup_weighs_only_the_local_kl_terms_of_the_objective(small):
    """Over a warm-up of 4 steps the weight is step / 4: the objective at steps 1 and 2 is the
    ELBO's plus (1 - w) times the batch's local KL terms (positive, and the same KL at both
    weights), from step 4 on it is the ELBO's; the globals' statistics never change."""
    o, pairs = small
    plain = _one_step(o, pairs, 9, "paper")
    first = _one_step(o, pairs, 9, "paper", kl_warmup_steps=4, step_number=1)
    second = _one_step(o, pairs, 9, "paper", kl_warmup_steps=4, step_number=2)
    done = _one_step(o, pairs, 9, "paper", kl_warmup_steps=4, step_number=4)
    kl_first = float((first.objective - plain.objective).detach()) / 0.75
    kl_second = float((second.objective - plain.objective).detach()) / 0.5
    assert kl_first > 0 and kl_first == pytest.approx(kl_second, rel=1e-9)
    assert float(done.objective.detach()) == pytest.approx(float(plain.objective.detach()),
                                                           rel=1e-12)
    for result in (first, second, done):
        assert result.stats.keys() == plain.stats.keys() and result.scales == plain.scales
        for name in plain.stats:
            for got, want in zip(_fields(result.stats[name]), _fields(plain.stats[name]),
                                 strict=True):
                torch.testing.assert_close(got, want)


def _fields(stats):
    return [stats] if isinstance(stats, torch.Tensor) else list(stats)


def test_the_streams_weigh_items_and_links_unbiasedly(small):
    o, pairs = small
    n_a, drawn = pairs.num_pairs, 9
    paper = _one_step(o, pairs, drawn, "paper")
    code = _one_step(o, pairs, drawn, "code")
    assert paper.scales["alpha"] == pytest.approx(n_a / drawn)
    assert code.scales["alpha"] == pytest.approx(60 * drawn / n_a)
    # the item statistics take the batch's N / |B| (the engine's default): no scale given
    assert "weights" not in paper.scales and "components" not in paper.scales
    # the links' statistics count exactly the drawn links
    total = (paper.stats["alpha"].sum() + paper.stats["beta"].sum()).detach()
    assert float(total) == pytest.approx(drawn)
    torch.testing.assert_close(paper.stats["alpha"], code.stats["alpha"])


def test_correction_changes_the_step(small):
    o, pairs = small
    fits = {c: BayesSCDC(4, 2, hidden=(8,)).fit(o, pairs, num_epochs=1, batch_size=60,
                                                 pair_batch_size=pairs.num_pairs, seed=0,
                                                 correction=c, step_size=0.5,
                                                 z_init="responsibilities", progress=False,
                                                 global_init="prior-draws")
            for c in (False, True)}
    norms = fits[True].diagnostics["correction_norms"][0]
    assert set(norms) == {"weights", "components", "alpha", "beta"}
    assert all(v > 0 for v in norms.values())
    plain, corrected = (fits[c].params["factors"]["components"].loc for c in (False, True))
    assert float((plain - corrected).abs().max()) > 1e-6


def test_bad_input_is_named(small):
    o, pairs = small
    with pytest.raises(ValueError, match="optimizer"):
        BayesSCDC(3, 2).fit(o, pairs, optimizer="lbfgs", progress=False)
    with pytest.raises(ValueError, match="worker_scaling"):
        BayesSCDC(3, 2).fit(o, pairs, worker_scaling="mine", progress=False)
    with pytest.raises(ValueError, match="n_clusters"):
        BayesSCDC(0, 2)
    with pytest.raises(ValueError, match="degrees_of_freedom"):
        BayesSCDC(3, 4, degrees_of_freedom=2.0)
    with pytest.raises(TypeError, match="pairs"):
        BayesSCDC(3, 2).fit(o, "links", progress=False)
    with pytest.raises(ValueError, match="kl_warmup_epochs must be below num_epochs"):
        BayesSCDC(3, 2).fit(o, pairs, num_epochs=3, kl_warmup_epochs=3, progress=False)
    with pytest.raises(ValueError, match="kl_warmup_epochs cannot be combined with resume"):
        BayesSCDC(3, 2).fit(o, pairs, num_epochs=3, kl_warmup_epochs=1, resume="x.pt",
                            progress=False)
    assert isinstance(NetworkObservation, type)


def _accuracy(truth, pred):
    from scipy.optimize import linear_sum_assignment

    size = int(max(truth.max(), pred.max())) + 1
    table = torch.zeros(size, size)
    table.index_put_((pred, truth), torch.ones(len(truth)), accumulate=True)
    rows, cols = linear_sum_assignment(-table.numpy())
    return float(table[rows, cols].sum()) / len(truth)


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_pinwheel_fits_respect_the_annotations_and_the_sparse_prior_prunes():
    """The paper's Pinwheel protocol (500 points, K = 15, d = 2; 20 workers with 49 pairs each
    on 100 points, alpha = beta = 0.9), 40 warm-up epochs and 20 with natural-gradient steps,
    from the paper's literal start (``global_init="prior-draws"``: the globals at their random
    draws until they move by small steps, so the sparse prior prunes as it goes).

    Single runs vary a lot with the seed (as the paper's good and bad initialisations do).
    Fit seeds 0-7 with links gave ACC 0.990, 0.964, 0.708, 0.780, 0.790, 0.976, 0.976, 0.944
    (mean 0.891, sd 0.11) and agreement with the true same-class relation over the annotated
    items' pairs 1.000, 0.976, 0.897, 0.880, 0.904, 0.985, 0.983, 0.986 (mean 0.951, sd 0.045);
    without links ACC averaged 0.721 (sd 0.27), too spread for two seeds to show the gain,
    which the reproduction reports over its seeds. The bounds on the two-seed means sit about
    three standard deviations of such a mean below the expected values. Every run kept at
    most 8 components above 1% of the expected weight and at most 6 occupied."""
    o, truth = simulate_pinwheel(seed=0)
    o = (o - o.mean(0)) / o.std()
    annotated = torch.randperm(500, generator=torch.Generator().manual_seed(0))[:100]
    pairs, _ = simulate_block_pairs(truth["z"], 20, 50, annotated=annotated, seed=1)
    z = truth["z"]
    same_true = z[annotated][:, None] == z[annotated][None, :]
    off_diagonal = ~torch.eye(len(annotated), dtype=torch.bool)
    accuracy, agreement = [], []
    for seed in (0, 1):
        post = BayesSCDC(15, 2).fit(o, pairs, num_epochs=60, warmup_epochs=40, batch_size=50,
                                    seed=seed, step_size=0.01, lr=0.01, progress=False,
                                    global_init="prior-draws")
        labels = post.params["cluster_probs"].argmax(-1)
        accuracy.append(_accuracy(z, labels))
        same_fit = labels[annotated][:, None] == labels[annotated][None, :]
        agreement.append(float((same_fit == same_true)[off_diagonal].float().mean()))
        # pruning: of 15 components at most 8 keep more than 1% of the expected weight
        assert int((post.params["expected_weights"] > 0.01).sum()) <= 8
        assert post.diagnostics["occupied_clusters"] <= 8
    assert sum(agreement) / 2 > 0.85, agreement
    assert sum(accuracy) / 2 > 0.65, accuracy


class _Shifted:
    """A factor whose expected statistics are moved by ``delta`` (for finite differences)."""

    def __init__(self, factor, delta):
        self.factor, self.delta = factor, delta

    def expected_stats(self):
        return self.factor.expected_stats() + self.delta

    def __getattr__(self, name):
        return getattr(self.factor, name)


def test_corrected_step_is_the_finite_difference_gradient_in_mean_parameters(small):
    """The corrected update of the weights is ``(1 - rho) eta + rho (eta_0 + dJ/dmu)``; ``J``
    differenced in the mean parameters ``mu = E log pi`` through the whole local step (the
    message passing included) must give the same vector."""
    from pyromodels.core import run_natgrad
    from pyromodels.core.seeding import derive_seed, make_generator

    o, pairs = small
    model = BayesSCDC(4, 2, hidden=(8,))
    obs = model.networks(2, "normal", torch.Generator().manual_seed(0), torch.float64, None)
    priors = model.priors(pairs.num_workers)
    init = initial_globals(priors, torch.Generator().manual_seed(2), 0.5, loc_std=1.0)
    step = BayesLocalStep(obs, o, pairs.i_idx, pairs.j_idx, pairs.worker_idx, pairs.link,
                          pairs.num_workers, pairs.num_pairs)
    rho = 0.01
    eta, eta0 = init["weights"].natural_params(), priors["weights"].natural_params()
    post = run_natgrad(step, o, priors=priors, init=init, num_epochs=1, batch_size=None,
                       step_size=rho, correction=True, num_samples=0, seed=0, progress=False)
    got = (post.params["factors"]["weights"].natural_params() - (1 - rho) * eta) / rho - eta0
    batch = Minibatch(o, torch.arange(60), 1.0, 0, 1)

    def objective(delta):
        shifted = {**init, "weights": _Shifted(init["weights"], delta)}
        with torch.no_grad():
            gen = make_generator(derive_seed(0, "natgrad"))
            return float(step(shifted, batch, gen).objective)

    eps = 1e-5
    fd = torch.stack([torch.tensor((objective(eps * e) - objective(-eps * e)) / (2 * eps))
                      for e in torch.eye(4, dtype=torch.float64)])
    torch.testing.assert_close(got, fd.to(got.dtype), rtol=1e-4, atol=1e-4)
    # and it is not the plain statistics (the correction is not zero here)
    plain = run_natgrad(step, o, priors=priors, init=init, num_epochs=1, batch_size=None,
                        step_size=rho, num_samples=0, seed=0, progress=False)
    moved = (plain.params["factors"]["weights"].natural_params() - (1 - rho) * eta) / rho - eta0
    assert float((moved - got).abs().max()) > 1e-3


@pytest.mark.parametrize("stop", [1, 2])
def test_a_resumed_fit_equals_the_uninterrupted_one(small, tmp_path, stop):
    """Stopped at the end of the warm-up (the data start then happens after the resume) or
    after it (the resumed run must not restart the globals again)."""
    o, pairs = small
    settings = {"num_epochs": 3, "warmup_epochs": 1, "batch_size": 20, "seed": 4,
                "progress": False}
    whole = BayesSCDC(4, 2, hidden=(8,)).fit(o, pairs, **settings)
    path = tmp_path / "bayes.ckpt"
    BayesSCDC(4, 2, hidden=(8,)).fit(o, pairs, **{**settings, "num_epochs": stop}, checkpoint=path)
    resumed = BayesSCDC(4, 2, hidden=(8,)).fit(o, pairs, **settings, resume=path)
    for name in ("weights", "components", "alpha"):
        for a, b in zip(whole.params["factors"][name].natural_params(),
                        resumed.params["factors"][name].natural_params(), strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.testing.assert_close(whole.params["cluster_probs"], resumed.params["cluster_probs"],
                               rtol=0, atol=0)


def test_schedule_lr_takes_the_larger_step_only_for_narrow_networks():
    assert BayesSCDC(3, 2).schedule_lr() == 0.01  # the default 2 x 40
    assert BayesSCDC(3, 2, hidden=(64, 64)).schedule_lr() == 0.01
    assert BayesSCDC(3, 2, hidden=(500, 500)).schedule_lr() == 1e-3  # the paper's MNIST nets
    assert BayesSCDC(3, 2, hidden=(40,), decoder_hidden=(65,)).schedule_lr() == 1e-3
