"""SCDC and BayesSCDC count their active latent units and warn on posterior collapse.

Collapse is made certain by data whose rows are all the same: the recognition network then
gives every item the same mean, whatever it learned, so no unit can be active. Data the fits
separate (the settings of the recovery tests) leave every unit active."""

import math
import warnings

import pytest
import torch

from pyromodels.core import PosteriorCollapseWarning
from pyromodels.data import simulate_pinwheel
from pyromodels.scdc import SCDC, BayesSCDC


def _fit(make, data, **settings):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post = make().fit(data, **settings, progress=False)
    return post, [w for w in caught if issubclass(w.category, PosteriorCollapseWarning)]


@pytest.fixture(scope="module")
def pinwheel():
    o, _ = simulate_pinwheel(num_clusters=3, points_per_cluster=20, seed=0)
    return (o - o.mean(0)) / o.std()


def test_bayes_scdc_warns_when_every_item_is_encoded_alike(pinwheel):
    same = pinwheel[:1].expand(60, 2).clone()
    settings = dict(num_epochs=1, batch_size=20, seed=0)
    post, found = _fit(lambda: BayesSCDC(3, 2, hidden=(8,)), same, **settings)
    assert (post.diagnostics["active_units"], post.diagnostics["latent_dim"]) == (0, 2)
    assert len(found) == 1 and found[0].filename == __file__
    message = str(found[0].message)
    assert message.startswith("BayesSCDC.fit: posterior collapse: 0 of 2 latent units")
    assert "warmup_epochs" in message and "lr" in message
    quiet, found = _fit(lambda: BayesSCDC(3, 2, hidden=(8,)), same, **settings,
                        diagnostic_warnings=False)
    assert found == [] and quiet.diagnostics["active_units"] == 0


def test_bayes_scdc_fit_that_separates_the_arms_keeps_every_unit_active(pinwheel):
    """Three pinwheel arms with the Pinwheel test's schedule (40 warm-up epochs of 60, lr and
    step 0.01), which separates them (accuracy 0.97): the items' means vary by 0.88 and 5.3
    across items, against thresholds of 0.015 and 0.053 (0.01 times the fitted prior's
    variances)."""
    from pyromodels.metrics import clustering_accuracy

    _, truth = simulate_pinwheel(num_clusters=3, points_per_cluster=20, seed=0)
    post, found = _fit(lambda: BayesSCDC(3, 2, hidden=(8,)), pinwheel, num_epochs=60,
                       warmup_epochs=40, lr=0.01, step_size=0.01, batch_size=20, seed=0)
    assert clustering_accuracy(truth["z"], post.params["cluster_probs"].argmax(-1)) > 0.9
    assert found == [] and post.diagnostics["active_units"] == 2
    assert post.diagnostics["code_information"] > math.log(2)  # 1.36 nats
    assert post.diagnostics["collapsed"] is False


def test_bayes_scdc_fit_of_one_cluster_warns_though_its_units_pass_the_count(pinwheel):
    """Without the warm-up of the globals (lr 0.01, 20 epochs) the fit puts the three arms in
    one cluster: the recognition potentials are weak, every item's q(x) is mostly the one
    component's, and the code says 0.14 nats about the items, below one bit, though the
    means still vary along both units by more than 0.01 times the shrunken fitted prior's
    variances (so the active-unit count alone, 2 of 2, misses it)."""
    post, found = _fit(lambda: BayesSCDC(3, 2, hidden=(8,)), pinwheel, num_epochs=20, lr=0.01,
                       batch_size=20, seed=0)
    assert post.diagnostics["occupied_clusters"] == 1
    assert post.diagnostics["active_units"] == 2
    assert post.diagnostics["code_information"] < math.log(2)
    assert post.diagnostics["collapsed"] is True
    assert len(found) == 1 and found[0].filename == __file__
    message = str(found[0].message)
    assert message.startswith("BayesSCDC.fit: posterior collapse: the items' latent posteriors "
                              "carry at most")
    assert "2 of 2 latent units pass" in message and "kl_warmup_epochs" in message


def test_scdc_warns_when_every_item_is_encoded_alike(make_blobs):
    o, _, _ = make_blobs()
    same = o[:1].expand(200, 10).clone()
    settings = dict(num_epochs=2, batch_size=100, seed=0)
    post, found = _fit(lambda: SCDC(2, 2, hidden=(16, 16), likelihood="normal"), same, **settings)
    assert (post.diagnostics["active_units"], post.diagnostics["latent_dim"]) == (0, 2)
    assert len(found) == 1 and found[0].filename == __file__
    message = str(found[0].message)
    assert message.startswith("SCDC.fit: posterior collapse: 0 of 2 latent units")
    assert "kl_warmup_epochs" in message
    quiet, found = _fit(lambda: SCDC(2, 2, hidden=(16, 16), likelihood="normal"), same,
                        **settings, diagnostic_warnings=False)
    assert found == [] and quiet.diagnostics["active_units"] == 0


def test_scdc_fit_of_the_recovery_blobs_is_not_collapsed(make_blobs):
    """The recovery test's blobs and settings (without links), on which the fit separates
    the rows of blobs: one unit carries them (its means vary by 3.8 across items, against a
    threshold of 0.035, 0.01 times the fitted prior's variance), the other varies by 0.0035
    (threshold 0.0047). Some unit is active, so no warning."""
    o, _, _ = make_blobs()
    post, found = _fit(lambda: SCDC(2, 2, hidden=(16, 16), likelihood="normal"), o,
                       num_epochs=100, batch_size=100, lr=5e-3, seed=0)
    assert found == [] and post.diagnostics["active_units"] >= 1


def test_the_latent_means_average_the_encoder_over_the_clusters(make_blobs):
    """``E_q[x | o] = sum_k q(k | o) m(o, k)``, checked against the networks run one cluster
    at a time."""
    o, _, _ = make_blobs(n=12)
    model = SCDC(3, 2, hidden=(5,), likelihood="normal")
    post = model.fit(o, num_epochs=1, batch_size=12, seed=0, progress=False,
                     diagnostic_warnings=False)
    data = post.data
    nets = model.networks(data)
    q = model.cluster_probabilities(post, o)
    expected = torch.zeros(12, 2, dtype=o.dtype)
    for k in range(3):
        onehot = torch.nn.functional.one_hot(torch.full((12,), k), 3)
        loc, _ = nets["encoder_x"](o, onehot, params=nets["encoder_x"].stored(post.params))
        expected += q[:, k:k + 1] * loc.detach()
    torch.testing.assert_close(model._latent_means(post.params, data, chunk=5), expected)


def test_bayes_scdc_kl_warmup_keeps_the_code_of_the_digits():
    """150 of scikit-learn's digits through the Face protocol's PCA (20 dimensions), d = 8,
    2 x 40 networks at lr 0.01, 40 epochs of which 27 hold the globals, seed 0: the plain
    objective collapses (0 of 8 units active, the code 0.006 nats, one cluster) and warns;
    weighing the local KL terms in over 30 epochs keeps all 8 units, 1.4 nats and seven
    clusters, at a higher final ELBO (-4,525 against -4,671), without a warning."""
    from pyromodels.experiments.scdc.bayes_entry import standardised
    from pyromodels.experiments.scdc.face_sets import face_data

    x, _ = face_data("digits", 150)
    settings = dict(num_epochs=40, warmup_epochs=27, step_size=0.01, lr=0.01, batch_size=32,
                    seed=0)
    fits = {kl: _fit(lambda: BayesSCDC(10, 8), standardised(x), **settings,
                     kl_warmup_epochs=kl) for kl in (0, 30)}
    (plain, plain_found), (warm, warm_found) = fits[0], fits[30]
    assert plain.diagnostics["active_units"] == 0 and plain.diagnostics["collapsed"] is True
    assert plain.diagnostics["occupied_clusters"] == 1 and len(plain_found) == 1
    assert warm.diagnostics["active_units"] == 8 and warm.diagnostics["collapsed"] is False
    assert warm.diagnostics["code_information"] > math.log(2) > plain.diagnostics[
        "code_information"]
    assert warm.diagnostics["occupied_clusters"] > 1 and warm_found == []
    assert float(warm.params["elbo"]) > float(plain.params["elbo"])
