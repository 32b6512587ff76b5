"""The user surface of the semi-crowdsourced family: every model's fit converts to ArviZ with
named axes labelled by the users' ids, predicts, and survives ``Posterior.save`` / ``load``."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.core import ConvergenceWarning, Posterior
from pyromodels.data.pairwise import PairwiseAnnotations
from pyromodels.scdc import (
    SCDC,
    BayesSCDC,
    ObservedBayesSCDC,
    PairwiseDawidSkene,
    PairwiseDawidSkeneEstimator,
)

WORKERS = ["ann", "bob", "cy"]


def _features(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.cat([torch.randn(12, 2, generator=g, dtype=torch.float64) - 3,
                      torch.randn(12, 2, generator=g, dtype=torch.float64) + 3])


def _links_df():
    """Judgements over rows 0..23 by workers named by strings (not in sorted code order)."""
    return pd.DataFrame({"item_a": [0, 0, 12, 1, 3, 13, 5], "item_b": [1, 13, 14, 2, 15, 14, 6],
                         "worker": ["bob", "ann", "cy", "bob", "ann", "cy", "ann"],
                         "link": [1, 0, 1, 1, 0, 1, 1]})


def _named_pairs():
    df = pd.DataFrame({"item_a": ["a", "a", "b", "c", "c", "d", "e"],
                       "item_b": ["b", "c", "c", "d", "e", "e", "f"],
                       "worker": ["w2", "w1", "w2", "w1", "w2", "w1", "w2"],
                       "link": [1, 0, 1, 0, 0, 1, 1]})
    return df, PairwiseAnnotations.from_dataframe(df)


def _worker_coord(idata, site="alpha"):
    return list(idata.posterior[site].coords["worker"].values)


# ---------------------------------------------------------------------------- SCDC
def test_scdc_inference_data_labels_workers_with_their_ids():
    o = _features()
    post = SCDC(2, 2, hidden=(8,)).fit(o, pairs=_links_df(), num_epochs=1, batch_size=24,
                                       seed=0, progress=False)
    idata = post.to_inference_data()
    assert idata.posterior["alpha"].dims == ("chain", "draw", "worker")
    assert _worker_coord(idata) == WORKERS
    assert _worker_coord(idata, "beta") == WORKERS
    assert list(post.summary().index[-3:]) == [f"beta[{w}]" for w in WORKERS]
    # the values under each label are that worker's: the worker table indexes them by id too
    table = post.model.worker_table(post)
    np.testing.assert_allclose(idata.posterior["alpha"].sel(worker="cy").values.item(),
                               table.loc["cy", "alpha"])


def test_scdc_user_coords_win_over_the_model_labels():
    post = SCDC(2, 2, hidden=(8,)).fit(_features(), pairs=_links_df(), num_epochs=1,
                                       batch_size=24, seed=0, progress=False)
    idata = post.to_inference_data(coords={"worker": ["x", "y", "z"]})
    assert _worker_coord(idata) == ["x", "y", "z"]


def test_scdc_predict_proba_is_the_encoder_posterior_and_predict_its_argmax():
    o = _features()
    model = SCDC(2, 2, hidden=(8,))
    post = model.fit(o, pairs=_links_df(), num_epochs=1, batch_size=24, seed=0, progress=False)
    probs = model.predict_proba(post, o[:5])
    assert probs.shape == (5, 2)
    torch.testing.assert_close(probs.sum(-1), torch.ones(5, dtype=probs.dtype))
    torch.testing.assert_close(probs, model.cluster_probabilities(post, o[:5]))
    torch.testing.assert_close(post.predict_proba(o[:5]), probs)
    assert torch.equal(post.predict(o[:5]), probs.argmax(-1))


# ------------------------------------------------------------------------ BayesSCDC
@pytest.fixture(scope="module")
def bayes_fit():
    model = BayesSCDC(2, 2, hidden=(8,))
    post = model.fit(_features(), pairs=_links_df(), num_epochs=3, batch_size=8, seed=0,
                     progress=False, num_samples=200)
    return model, post


def test_bayes_scdc_fit_converts_to_arviz_with_named_dims_and_worker_ids(bayes_fit):
    model, post = bayes_fit
    assert post.model is model
    idata = post.to_inference_data()
    assert idata.posterior["weights"].dims == ("chain", "draw", "cluster")
    assert idata.posterior["locs"].dims == ("chain", "draw", "cluster", "latent")
    assert idata.posterior["precisions"].dims == ("chain", "draw", "cluster", "latent",
                                                  "latent_col")
    assert idata.posterior["alpha"].shape == (1, 200, 3)
    assert _worker_coord(idata) == WORKERS
    table = post.summary()
    assert {"mean", "sd"} <= set(table.columns) and "alpha[bob]" in table.index


def test_bayes_scdc_draws_are_those_of_the_fitted_factors(bayes_fit):
    """The stored draws average to the fitted factors' means (200 draws; 6 Monte Carlo
    standard errors)."""
    _, post = bayes_fit
    factors = post.params["factors"]
    for site, mean in (("weights", factors["weights"].mean()),
                       ("alpha", factors["alpha"].mean()), ("beta", factors["beta"].mean())):
        draws = post.samples[site][0]
        se = draws.std(0) / draws.shape[0] ** 0.5
        assert bool(((draws.mean(0) - mean).abs() <= 6 * se + 1e-12).all()), site


def test_bayes_scdc_result_carries_its_final_elbo_and_loss_trace(bayes_fit):
    _, post = bayes_fit
    per_epoch = post.diagnostics["steps_per_epoch"]
    assert post.losses.shape == (3 * per_epoch,)
    assert bool(torch.isfinite(post.losses).all())
    last_epoch = -post.losses[-per_epoch:].mean()
    torch.testing.assert_close(post.params["elbo"], last_epoch)


def test_bayes_scdc_predicts_through_the_posterior(bayes_fit):
    model, post = bayes_fit
    o = _features(seed=1)[:6]
    probs = model.predict_proba(post, o)
    assert probs.shape == (6, 2)
    assert torch.equal(post.predict(o), probs.argmax(-1))
    torch.testing.assert_close(model.predict_proba(post, _features()), post.params["cluster_probs"])


def test_bayes_scdc_save_load_round_trip_then_predict(bayes_fit, tmp_path):
    model, post = bayes_fit
    path = post.save(tmp_path / "bayes.nc")
    o = _features(seed=2)
    expected = model.predict_proba(post, o)
    bare = Posterior.load(path)  # neither model nor data: the file has what predict needs
    torch.testing.assert_close(model.predict_proba(bare, o), expected)
    pd.testing.assert_frame_equal(model.worker_table(bare).reset_index(drop=True),
                                  model.worker_table(post).reset_index(drop=True))
    back = Posterior.load(path, model=model, data=post.data)
    assert torch.equal(back.predict(o), expected.argmax(-1))
    assert _worker_coord(back.to_inference_data()) == WORKERS
    torch.testing.assert_close(back.params["elbo"], post.params["elbo"])


def test_bayes_scdc_num_samples_leaves_the_fit_unchanged(bayes_fit):
    _, post = bayes_fit
    other = BayesSCDC(2, 2, hidden=(8,)).fit(_features(), pairs=_links_df(), num_epochs=3,
                                             batch_size=8, seed=0, progress=False,
                                             num_samples=0)
    assert other.samples == {}
    assert torch.equal(other.losses, post.losses)
    torch.testing.assert_close(other.params["cluster_probs"], post.params["cluster_probs"])


def test_bayes_scdc_checkpoint_resume_between_epochs_keeps_the_surface(bayes_fit, tmp_path):
    model, post = bayes_fit
    ckpt = tmp_path / "bayes.ckpt"
    kwargs = dict(pairs=_links_df(), batch_size=8, seed=0, progress=False, num_samples=200)
    model.fit(_features(), num_epochs=1, checkpoint=ckpt, **kwargs)
    resumed = model.fit(_features(), num_epochs=3, resume=ckpt, **kwargs)
    assert torch.equal(resumed.losses, post.losses)
    torch.testing.assert_close(resumed.params["elbo"], post.params["elbo"])
    for site, value in post.samples.items():
        torch.testing.assert_close(resumed.samples[site], value)
    assert _worker_coord(resumed.to_inference_data()) == WORKERS


# ------------------------------------------------------------- pairwise worker model
def test_pairwise_inference_data_uses_worker_and_item_ids():
    _, pairs = _named_pairs()
    post = PairwiseDawidSkene(2).fit(pairs, seed=0, progress=False)
    idata = post.to_inference_data()
    assert _worker_coord(idata) == ["w1", "w2"]
    assert list(idata.prior["z"].coords["item"].values) == list("abcdef")


def test_pairwise_predict_proba_and_predict_on_fitted_items():
    _, pairs = _named_pairs()
    model = PairwiseDawidSkene(2)
    post = model.fit(pairs, seed=0, progress=False)
    q = post.params["probas"]
    torch.testing.assert_close(model.predict_proba(post), q)
    torch.testing.assert_close(model.predict_proba(post, ["f", "b"]), q[[5, 1]])
    torch.testing.assert_close(post.predict_proba(["f", "b"]), q[[5, 1]])
    assert post.predict(["f", "b"]).tolist() == q[[5, 1]].argmax(-1).tolist()
    with pytest.raises(ValueError, match="new_data holds id"):
        model.predict(post, ["zz"])
    with pytest.raises(TypeError, match="new_data must be None or a list of item ids"):
        model.predict(post, pairs)


def test_pairwise_save_load_round_trip_then_predict(tmp_path):
    _, pairs = _named_pairs()
    model = PairwiseDawidSkene(2)
    post = model.fit(pairs, seed=0, progress=False)
    back = Posterior.load(post.save(tmp_path / "pairwise.nc"), model=model, data=post.data)
    assert back.predict(["c", "e"]).tolist() == post.predict(["c", "e"]).tolist()
    assert _worker_coord(back.to_inference_data()) == ["w1", "w2"]


def test_pairwise_fit_that_hits_max_iter_warns():
    _, pairs = _named_pairs()
    with pytest.warns(ConvergenceWarning, match="did not converge in 2 iterations"):
        post = PairwiseDawidSkene(2).fit(pairs, seed=0, progress=False, max_iter=2)
    assert post.diagnostics["converged"] is False
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert PairwiseDawidSkene(2).fit(pairs, seed=0, progress=False).diagnostics["converged"]


def test_pairwise_estimator_posterior_and_fit_predict_proba_use_the_table_ids():
    df, _ = _named_pairs()
    est = PairwiseDawidSkeneEstimator(2, n_init=2)
    probas = est.fit_predict_proba(df)
    pd.testing.assert_frame_equal(probas, est.probas_)
    assert list(probas.index) == list("abcdef")
    idata = est.posterior_.to_inference_data()
    assert _worker_coord(idata) == ["w1", "w2"]
    np.testing.assert_allclose(idata.posterior["alpha"].sel(worker="w2").values.item(),
                               est.alpha_["w2"])
    with pytest.warns(ConvergenceWarning):
        PairwiseDawidSkeneEstimator(2, n_iter=2, n_init=1).fit(df)


# ------------------------------------------------------------------ observed sub-model
@pytest.fixture(scope="module")
def observed_fit():
    x = _features()
    items = [f"item{n}" for n in range(24)]
    df = _links_df().assign(item_a=lambda d: [items[i] for i in d.item_a],
                            item_b=lambda d: [items[j] for j in d.item_b])
    pairs = PairwiseAnnotations.from_dataframe(df, items=items)
    model = ObservedBayesSCDC(2)
    post = model.fit(x, pairs, num_chains=1, num_samples=30, num_warmup=20, seed=0,
                     progress=False, diagnostic_warnings=False)
    return model, post, x, items


def test_observed_inference_data_uses_worker_and_item_ids(observed_fit):
    _, post, _, items = observed_fit
    idata = post.to_inference_data(predictive=False)
    assert _worker_coord(idata) == WORKERS
    assert list(idata.posterior["z"].coords["item"].values) == items
    # the judgements' axis has the pairwise worker model's name
    assert idata.observed_data["links"].dims == ("link",)
    assert PairwiseDawidSkene.site_dims["links"] == ("link",)


def test_observed_predict_proba_averages_each_draws_cluster_posterior(observed_fit):
    from scipy.stats import multivariate_normal

    model, post, x, _ = observed_fit
    new = x[[0, 13, 20]]
    s = post.samples
    expected = np.zeros((3, 2))
    for t in range(s["weights"].shape[1]):
        dens = np.stack([s["weights"][0, t, k].item() * multivariate_normal(
            s["locs"][0, t, k].numpy(), np.linalg.inv(s["precisions"][0, t, k].numpy())).pdf(
            new.numpy()) for k in range(2)], -1)
        expected += dens / dens.sum(-1, keepdims=True)
    expected /= s["weights"].shape[1]
    np.testing.assert_allclose(model.predict_proba(post, new).numpy(), expected, rtol=1e-8)
    assert torch.equal(post.predict(new), torch.from_numpy(expected.argmax(-1)))
    with pytest.raises(ValueError, match="x must have 2 columns"):
        model.predict(post, torch.zeros(2, 3, dtype=torch.float64))


def test_observed_save_load_round_trip_then_predict(observed_fit, tmp_path):
    model, post, x, _ = observed_fit
    back = Posterior.load(post.save(tmp_path / "observed.nc"), model=model, data=post.data)
    torch.testing.assert_close(model.predict_proba(back, x[:4]), model.predict_proba(post, x[:4]))
    assert torch.equal(back.predict(x[:4]), post.predict(x[:4]))


def test_bayes_scdc_warns_when_tol_is_not_met_in_num_epochs():
    kwargs = dict(pairs=_links_df(), batch_size=8, seed=0, progress=False, num_samples=0)
    with pytest.warns(ConvergenceWarning, match="BayesSCDC did not converge in 2 epochs"):
        post = BayesSCDC(2, 2, hidden=(8,)).fit(_features(), num_epochs=2, tol=1e-12, **kwargs)
    assert post.diagnostics["converged"] is False
    # a tolerance met before the last epoch stops the fit there, without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        post = BayesSCDC(2, 2, hidden=(8,)).fit(_features(), num_epochs=50, tol=10.0, **kwargs)
    assert post.diagnostics["converged"] is True
    assert len(post.diagnostics["epoch_objectives"]) == 2


def test_bayes_scdc_elbo_of_a_fit_a_callback_stopped_mid_epoch():
    post = BayesSCDC(2, 2, hidden=(8,)).fit(_features(), pairs=_links_df(), num_epochs=3,
                                           batch_size=8, seed=0, progress=False, num_samples=0,
                                           callbacks=[lambda step, info: step == 2])
    assert post.diagnostics["num_steps"] == 2 and post.diagnostics["epoch_objectives"] == []
    torch.testing.assert_close(post.params["elbo"], -post.losses.mean())


def test_posterior_predict_proba_needs_a_model_that_defines_it():
    post = Posterior(samples={"mu": torch.zeros(1, 3)}, method="nuts")
    with pytest.raises(NotImplementedError, match="does not define predict_proba"):
        post.predict_proba(torch.zeros(2, 1))
