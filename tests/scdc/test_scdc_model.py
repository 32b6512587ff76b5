"""SCDC: its enumerated ELBO against the sum written out, its relational term against
enumeration of both clusters through the family's link site, the minibatch scaling against
all minibatches, and the fit's results, seeds, resume and errors."""

import itertools

import pandas as pd
import pyro
import pytest
import torch
import torch.distributions as D
from pyro import poutine
from pyro.infer import TraceEnum_ELBO

from pyromodels.core import Posterior, run_svi
from pyromodels.data.pairwise import PairwiseAnnotations
from pyromodels.scdc import SCDC, RelationalELBO, prepare_scdc
from pyromodels.scdc.data import balanced_pair_batch
from pyromodels.scdc.elbo import KLWarmup
from pyromodels.scdc.links import observe_links


def _observations(n=6, width=3, binary=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    o = torch.randn(n, width, generator=g, dtype=torch.float64)
    return (o > 0).double() if binary else o


def _pairs(num_items=6, num_workers=3, num_links=9, seed=1):
    g = torch.Generator().manual_seed(seed)
    rows = set()
    while len(rows) < num_links:
        i, j = torch.randperm(num_items, generator=g)[:2].tolist()
        w = int(torch.randint(num_workers, (), generator=g))
        if (min(i, j), max(i, j), w) not in {(min(a, b), max(a, b), c) for a, b, c, _ in rows}:
            rows.add((i, j, w, int(torch.randint(2, (), generator=g))))
    return pd.DataFrame(sorted(rows), columns=["item_a", "item_b", "worker", "link"])


def _init_params(model, data, seed=0):
    """Create every param (the relational term's too) by one loss evaluation."""
    pyro.set_rng_seed(seed)
    model.svi_elbo().loss(model.model, model.guide, data)


@pytest.mark.parametrize("likelihood,covariance,warmup_steps",
                         [("normal", "diag", None), ("bernoulli", "full", None),
                          ("normal", "diag", 4)])
def test_enumerated_loss_is_the_sum_over_clusters_plus_entropy(likelihood, covariance,
                                                               warmup_steps):
    """With a KL warm-up at weight w, the z and x terms (log pi, log p(x | z), -log q(x | z, o),
    the entropy of q(z | o)) are multiplied by w and the reconstruction is not."""
    K, N, B = 3, 6, 4
    o = _observations(N, binary=likelihood == "bernoulli")
    model = SCDC(K, 2, hidden=(5,), likelihood=likelihood, covariance=covariance)
    data = prepare_scdc(o, batch_size=B)
    w = 1.0
    with pyro.get_param_store().scope():
        _init_params(model, data)
        if warmup_steps is not None:
            model._warmup = KLWarmup(warmup_steps)
            w = model._warmup.weight
            assert w == 1 / warmup_steps
        elbo = TraceEnum_ELBO(max_plate_nesting=1)
        pyro.set_rng_seed(5)
        loss = elbo.differentiable_loss(model.model, model.guide, data)
        # the same seed replays the guide's draws: the minibatch and one x per cluster
        pyro.set_rng_seed(5)
        tr = poutine.trace(poutine.enum(model.guide, first_available_dim=-2)).get_trace(data)
        idx, x = tr.nodes["data"]["value"], tr.nodes["x"]["value"]
        assert x.shape == (K, B, 2)
        p = {k: pyro.param(k).detach() for k in pyro.get_param_store().keys()}
        nets = model.networks(data)
        ob = o[idx]
        log_q = torch.log_softmax(nets["encoder_z"](ob), -1).T  # (K, B)
        loc, log_scale = nets["encoder_x"](ob, torch.eye(K, dtype=o.dtype).unsqueeze(1))
        log_pi = torch.log_softmax(p["pi_logits"], -1).unsqueeze(-1)
        if covariance == "diag":
            log_px = D.Normal(p["locs"].unsqueeze(1), p["scales"].unsqueeze(1)).log_prob(x).sum(-1)
        else:
            log_px = D.MultivariateNormal(p["locs"].unsqueeze(1),
                                          scale_tril=p["scale_tril"].unsqueeze(1)).log_prob(x)
        out = nets["decoder"](x)
        if likelihood == "normal":
            log_po = D.Normal(out[0], (0.5 * out[1]).exp()).log_prob(ob).sum(-1)
        else:
            log_po = D.Bernoulli(logits=out[0]).log_prob(ob).sum(-1)
        log_qx = D.Normal(loc, log_scale.exp()).log_prob(x).sum(-1)
        q = log_q.exp()
        per_item = (q * (w * (log_pi + log_px - log_qx) + log_po)).sum(0) - w * (q * log_q).sum(0)
        by_hand = N / B * per_item.sum()
    torch.testing.assert_close(-loss.detach(), by_hand.detach())


def test_relational_term_equals_enumeration_through_the_link_site():
    K = 3
    o, pairs = _observations(), _pairs()
    model = SCDC(K, 2, hidden=(5,), likelihood="normal")
    data = prepare_scdc(o, pairs)
    with pyro.get_param_store().scope():
        _init_params(model, data)
        closed = model.relational_term(data)
        q = torch.softmax(model.networks(data)["encoder_z"](o), -1)
        alpha = torch.sigmoid(pyro.param("alpha_logit"))
        beta = torch.sigmoid(pyro.param("beta_logit"))
    enumerated = 0.0
    for l in range(data.num_links):
        i, j = int(data.i_idx[l]), int(data.j_idx[l])
        for a, b in itertools.product(range(K), repeat=2):
            tr = poutine.trace(observe_links).get_trace(
                torch.tensor([a, b]), torch.tensor([0]), torch.tensor([1]),
                data.worker_idx[l:l + 1], data.link[l:l + 1], alpha, beta)
            enumerated = enumerated + q[i, a] * q[j, b] * tr.log_prob_sum()
    torch.testing.assert_close(closed, enumerated)


def test_minibatch_term_averages_to_the_full_term_over_every_minibatch():
    o, pairs = _observations(), _pairs(num_links=6)
    model = SCDC(3, 2, hidden=(5,), likelihood="normal")
    data = prepare_scdc(o, pairs, batch_size=3, pair_batch_size=2)
    with pyro.get_param_store().scope():
        _init_params(model, data)
        full = model.relational_term(data)
        subsets = list(itertools.combinations(range(6), 2))
        mean = sum(model.relational_term(data, torch.tensor(s)) for s in subsets) / len(subsets)
        torch.testing.assert_close(mean, full)
        # one step's draw: |S| distinct links
        seen = []
        original = model.relational_term
        model.relational_term = lambda d, rows: seen.append(rows) or original(d, rows)
        model.minibatch_relational_term(data)
    assert len(seen[0]) == 2 and len(set(seen[0].tolist())) == 2


def test_balanced_pair_batch_is_n_a_times_b_over_n():
    assert balanced_pair_batch(980, 500, 50) == 98       # the paper's pinwheel
    assert balanced_pair_batch(57330, 60000, 128) == 122  # the released code's MNIST
    assert balanced_pair_batch(3, 1000, 10) == 1 and balanced_pair_batch(5, 10, 10) == 5
    assert balanced_pair_batch(0, 10, 5) == 0


def test_relational_elbo_adds_its_term_to_the_enumerated_elbo():
    o = _observations()
    model = SCDC(3, 2, hidden=(5,), likelihood="normal")
    data = prepare_scdc(o, batch_size=4)
    with pyro.get_param_store().scope():
        _init_params(model, data)
        plain, extra = TraceEnum_ELBO(max_plate_nesting=1), RelationalELBO(
            lambda d: torch.tensor(2.5, dtype=torch.float64), max_plate_nesting=1)
        pyro.set_rng_seed(3)
        a = plain.loss(model.model, model.guide, data)
        pyro.set_rng_seed(3)
        b = extra.loss(model.model, model.guide, data)
    assert b == pytest.approx(a - 2.5, abs=1e-12)
    with pytest.raises(TypeError, match="term must be callable"):
        RelationalELBO(2.5)


def test_fit_returns_point_estimates_workers_and_predictions():
    o, pairs = _observations(12), _pairs(num_items=12, num_workers=3, num_links=15)
    pairs["worker"] = pairs["worker"].map({0: "ann", 1: "bob", 2: "cy"})
    model = SCDC(3, 2, hidden=(5,))
    post = model.fit(o, pairs=pairs, num_epochs=3, batch_size=5, seed=0, progress=False)
    assert post.method == "svi" and post.num_draws == 1
    assert {k: tuple(v.shape) for k, v in post.samples.items()} == {
        "pi": (1, 1, 3), "locs": (1, 1, 3, 2), "scales": (1, 1, 3, 2), "alpha": (1, 1, 3),
        "beta": (1, 1, 3)}
    assert len(post.losses) == 3 * 3 and post.diagnostics["steps_per_epoch"] == 3
    assert post.data.pair_batch_size == round(15 * 5 / 12)
    table = model.worker_table(post)
    assert list(table.index) == ["ann", "bob", "cy"]
    torch.testing.assert_close(torch.tensor(table["weight"].to_numpy()),
                               torch.logit(post["alpha"][0, 0]) + torch.logit(post["beta"][0, 0]))
    probs = model.cluster_probabilities(post, o)
    assert probs.shape == (12, 3)
    torch.testing.assert_close(probs.sum(-1), torch.ones(12, dtype=torch.float64))
    assert torch.equal(model.predict(post, o), probs.argmax(-1))
    assert torch.equal(post.predict(o), probs.argmax(-1))
    again = model.fit(o, pairs=pairs, num_epochs=3, batch_size=5, seed=0, progress=False)
    assert torch.equal(again.losses, post.losses)
    # run_svi on the model reads the model's own objective (links included)
    data = prepare_scdc(o, pairs, batch_size=5)
    direct = run_svi(model, data, num_steps=9, optim=pyro.optim.Adam({"lr": 1e-3}),
                     num_samples=1, seed=0, progress=False)
    assert torch.equal(direct.losses, post.losses)


def test_full_covariances_and_binary_observations_fit():
    o = _observations(12, binary=True)
    model = SCDC(3, 2, hidden=(5,), covariance="full")
    post = model.fit(o, num_epochs=2, batch_size=6, seed=0, progress=False)
    assert post.data.likelihood == "bernoulli"  # chosen by the data
    tril = post["scale_tril"][0, 0]
    assert tril.shape == (3, 2, 2) and torch.equal(tril, torch.tril(tril))
    assert bool((torch.diagonal(tril, dim1=-2, dim2=-1) > 0).all())
    assert "scales" not in post.samples and "alpha" not in post.samples


def test_the_paper_s_coin_start_differs_per_worker_and_coin_init_fixes_it():
    o, pairs = _observations(12), _pairs(num_items=12, num_workers=3, num_links=15)
    model = SCDC(2, 2, hidden=(4,))
    for coin_init in (None, 0.8):
        data = prepare_scdc(o, pairs, coin_init=coin_init)
        with pyro.get_param_store().scope():
            _init_params(model, data)
            alpha, beta = (torch.sigmoid(pyro.param(k)) for k in ("alpha_logit", "beta_logit"))
        if coin_init is None:
            assert len(set(alpha.tolist())) == 3 and not torch.equal(alpha, beta)
        else:
            torch.testing.assert_close(alpha, torch.full((3,), 0.8, dtype=torch.float64))


def test_resume_continues_the_uninterrupted_run(tmp_path):
    o, pairs = _observations(10), _pairs(num_items=10, num_links=12)
    model = SCDC(2, 2, hidden=(4,))
    kw = dict(pairs=pairs, batch_size=5, seed=3, progress=False)
    whole = model.fit(o, num_epochs=4, **kw)
    model.fit(o, num_epochs=2, checkpoint=tmp_path / "run.ckpt", **kw)
    resumed = model.fit(o, num_epochs=4, resume=tmp_path / "run.ckpt", **kw)
    assert torch.equal(resumed.losses, whole.losses)
    for name, value in whole.params.items():
        assert torch.equal(resumed.params[name], value), name


def test_pairs_name_rows_by_row_number_or_by_listing_every_row():
    o = _observations()
    by_number = pd.DataFrame({"item_a": [5, 1], "item_b": [2, 4], "worker": ["w", "w"],
                              "link": [1, 0]})
    data = prepare_scdc(o, by_number)
    assert data.i_idx.tolist() == [5, 1] and data.j_idx.tolist() == [2, 4]
    names = ["r0", "r1", "r2", "r3", "r4", "r5"]
    by_id = pd.DataFrame({"item_a": ["r5", "r1"], "item_b": ["r2", "r4"], "worker": ["w", "w"],
                          "link": [1, 0]})
    listed = prepare_scdc(o, PairwiseAnnotations.from_dataframe(by_id, items=names))
    assert listed.i_idx.tolist() == [5, 1] and listed.j_idx.tolist() == [2, 4]
    assert list(listed.workers) == ["w"] and listed.pair_batch_size == 2


def test_a_saved_fit_predicts_as_the_fit_did(tmp_path):
    o, pairs = _observations(12), _pairs(num_items=12, num_workers=3, num_links=15)
    model = SCDC(3, 2, hidden=(5,))
    post = model.fit(o, pairs=pairs, num_epochs=2, batch_size=5, seed=0, progress=False)
    post.save(tmp_path / "fit.nc")
    back = Posterior.load(tmp_path / "fit.nc")
    assert back.data is None  # the data are not saved: the encoder's weights are enough
    fresh = SCDC(3, 2, hidden=(5,))
    torch.testing.assert_close(fresh.cluster_probabilities(back, o),
                               model.cluster_probabilities(post, o))
    with pytest.raises(ValueError, match="o must have 3 columns, as the fitted data, got 2"):
        fresh.predict(back, o[:, :2])
    with pytest.raises(ValueError, match="its params hold no encoder weights"):
        fresh.predict(Posterior(samples={"pi": torch.ones(1, 1, 3)}, method="svi"), o)


def test_kl_warmup_weights_rise_step_by_step_to_one_then_the_elbo_is_plain():
    o = _observations(10)
    model = SCDC(2, 2, hidden=(4,))
    seen = []

    def record(step, info):  # called after step `step`, so it reads the next step's weight
        seen.append(model._warmup.weight)

    kw = dict(pairs=_pairs(num_items=10, num_links=12), num_epochs=5, batch_size=5, seed=3,
              progress=False)
    post = model.fit(o, kl_warmup_epochs=3, callbacks=[record], **kw)
    # 2 steps an epoch, 6 warm-up steps: step t has weight min(1, (t + 1) / 6)
    assert seen == pytest.approx([min(1.0, (t + 2) / 6) for t in range(10)])
    assert model._warmup is None
    plain = model.fit(o, **kw)
    # the first step differs (weight 1/6), so does the path after it
    assert post.losses[0] != plain.losses[0]
    # once the weight is 1 the model and guide are those of the plain ELBO
    model._warmup = KLWarmup(1)
    data = prepare_scdc(o, batch_size=10)
    with pyro.get_param_store().scope():
        _init_params(model, data)
        pyro.set_rng_seed(1)
        warmed = model.svi_elbo().loss(model.model, model.guide, data)
        model._warmup = None
        pyro.set_rng_seed(1)
        assert model.svi_elbo().loss(model.model, model.guide, data) == warmed


def test_bad_input_is_reported():
    o = _observations()
    model = SCDC(2, 2, hidden=(4,))
    letters = pd.DataFrame({"item_a": ["a"], "item_b": ["b"], "worker": [0], "link": [1]})
    with pytest.raises(ValueError, match="pairs' item ids must be row numbers of o"):
        model.fit(o, pairs=letters, num_epochs=1)
    beyond = pd.DataFrame({"item_a": [0], "item_b": [6], "worker": [0], "link": [1]})
    with pytest.raises(ValueError, match=r"row numbers of o \(0 .. 5\), found 6"):
        model.fit(o, pairs=beyond, num_epochs=1)
    with pytest.raises(TypeError, match="pairs must be None, a PairwiseAnnotations or a DataFrame"):
        model.fit(o, pairs=[(0, 1, 0, 1)], num_epochs=1)
    with pytest.raises(ValueError, match="likelihood='bernoulli' needs binary observations"):
        SCDC(2, 2, likelihood="bernoulli").fit(o, num_epochs=1)
    with pytest.raises(ValueError, match="pair_batch_size was given but there are no links"):
        model.fit(o, pair_batch_size=3, num_epochs=1)
    with pytest.raises(ValueError, match="coin_init must lie strictly between 0 and 1"):
        model.fit(o, pairs=_pairs(), coin_init=1.0, num_epochs=1)
    with pytest.raises(ValueError, match="o must be 2-dimensional"):
        model.fit(o[0], num_epochs=1)
    with pytest.raises(ValueError, match=r"method must be one of \['svi'\], got 'nuts'"):
        model.fit(o, method="nuts")
    with pytest.raises(ValueError, match="num_epochs must be an integer >= 1, got 0"):
        model.fit(o, num_epochs=0)
    with pytest.raises(ValueError, match="covariance must be one of"):
        SCDC(2, 2, covariance="spherical")
    with pytest.raises(ValueError, match="kl_warmup_epochs must be an integer >= 0, got -1"):
        model.fit(o, num_epochs=2, kl_warmup_epochs=-1)
    with pytest.raises(ValueError, match=r"kl_warmup_epochs must be below num_epochs \(2\)"):
        model.fit(o, num_epochs=2, kl_warmup_epochs=2)
    with pytest.raises(ValueError, match="kl_warmup_epochs cannot be combined with resume"):
        model.fit(o, num_epochs=2, kl_warmup_epochs=1, resume="run.ckpt")
    pairs = PairwiseAnnotations.from_arrays([0, 1], [2, 3], [0, 0], [1, 0])
    post = model.fit(o, pairs=pairs, num_epochs=1, batch_size=6, progress=False, seed=0)
    with pytest.raises(ValueError, match="o must have 3 columns, as the fitted data, got 2"):
        model.predict(post, o[:, :2])
    unsupervised = model.fit(o, num_epochs=1, progress=False, seed=0)
    assert "alpha" not in unsupervised.samples
    with pytest.raises(ValueError, match="this fit had no links"):
        model.worker_table(unsupervised)
