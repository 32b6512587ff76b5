"""EM, Gibbs, SVI and NUTS fit the same Dawid-Skene program and agree with each other."""

import arviz as az
import numpy as np
import pytest
import torch

from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import WorkerPopulation, simulate_annotations
from pyromodels.data.annotations import AnnotationTable


def _mcse(samples: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Posterior sd and Monte Carlo standard error (sd / sqrt(ESS)) of each entry of a site."""
    x = samples.numpy()
    ess = az.ess(az.convert_to_dataset({"x": x}))["x"].values
    sd = x.std(axis=(0, 1))
    return sd, sd / np.sqrt(ess)


@pytest.fixture(scope="module")
def engines():
    torch.set_default_dtype(torch.float64)
    table, truth = simulate_annotations(400, WorkerPopulation(4, dominance=0.8), 2, seed=2)
    model = DawidSkene()
    fits = {
        "em": model.fit(table, method="em", seed=0, progress=False),
        "gibbs": model.fit(table, method="gibbs", seed=0, num_samples=1000, num_warmup=200,
                           lp_every=0, progress=False),
        "svi": model.fit(table, method="svi", seed=0, num_steps=600, lr=0.05, num_samples=300,
                         progress=False),
    }
    return model, table, truth, fits


def test_engines_agree_on_confusion_and_prior(engines):
    model, table, truth, fits = engines
    gibbs = fits["gibbs"]
    for site in ("confusion", "prior"):
        sd, mcse = _mcse(gibbs.samples[site])
        ref = gibbs.mean(site).numpy()
        for name in ("em", "svi"):
            est = (fits[name].params[site] if name == "em" else fits[name].mean(site)).numpy()
            # The posterior mode (EM) and the mean-field mean (SVI) lie within one posterior
            # standard deviation of the posterior mean, up to 5 Monte Carlo errors of the latter.
            bound = sd + 5 * mcse
            assert (np.abs(est - ref) <= bound).all(), (name, site, np.abs(est - ref) / bound)


def test_engines_agree_on_class_probabilities(engines):
    model, table, truth, fits = engines
    ref = model.predict(fits["gibbs"], table)
    confident = (ref.max(-1).values > 0.7)
    # Each Gibbs probability is an average over >= 300 effective draws of values in [0, 1], so
    # its Monte Carlo error is <= 0.5 / sqrt(300) = 0.03; allow 0.02 on average over items.
    for name in ("em", "svi"):
        probs = fits[name].params["probas"] if name == "em" else model.predict(fits[name], table)
        assert float((probs - ref).abs().mean()) < 0.02, name
        assert torch.equal(probs.argmax(-1)[confident], ref.argmax(-1)[confident]), name


def test_svi_uses_the_mean_field_dirichlet_guide(engines):
    model, table, truth, fits = engines
    params = fits["svi"].params
    assert set(params) == {"prior_q_concentration", "confusion_q_concentration"}
    assert params["confusion_q_concentration"].shape == (4, 2, 2)
    assert bool((params["confusion_q_concentration"] > 0).all())
    z = fits["svi"].samples["z"]
    assert z.dtype == torch.long and z.shape == (1, 300, 400)


def test_nuts_agrees_with_gibbs_within_monte_carlo_error():
    table, _ = simulate_annotations(40, WorkerPopulation(2, dominance=0.8), 2, seed=5)
    model = DawidSkene(diagonal=1.0)
    # a shallow tree keeps the run short; it only lowers the effective sample size, which the
    # Monte Carlo errors below account for
    nuts = model.fit(table, method="nuts", seed=0, num_samples=100, num_warmup=60, num_chains=1,
                     max_tree_depth=3, lp=False, progress=False)
    gibbs = model.fit(table, method="gibbs", seed=0, num_samples=2000, num_warmup=100,
                      lp_every=0, progress=False)
    assert nuts.samples["z"].dtype == torch.long and nuts.samples["z"].shape == (1, 100, 40)
    for site in ("confusion", "prior"):
        _, se_n = _mcse(nuts.samples[site])
        _, se_g = _mcse(gibbs.samples[site])
        diff = (nuts.mean(site) - gibbs.mean(site)).abs().numpy()
        assert (diff <= 5 * np.sqrt(se_n**2 + se_g**2)).all(), (site, diff)


def test_predict_on_new_items_by_fitted_workers(engines):
    model, table, truth, fits = engines
    new = AnnotationTable.from_arrays([0, 0, 1], [0, 3, 2], [1, 1, 0], num_workers=4,
                                      num_classes=2)
    for post in fits.values():
        probs = post.predict(new)
        assert probs.shape == (2, 2)
        torch.testing.assert_close(probs.sum(-1), torch.ones(2, dtype=torch.float64))
    # EM: the plug-in posterior of item 0 from its two labels, written out
    p, c = fits["em"].params["prior"], fits["em"].params["confusion"]
    logits = p.log() + c[0, :, 1].log() + c[3, :, 1].log()
    torch.testing.assert_close(fits["em"].predict(new)[0], torch.softmax(logits, -1))


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_every_engine_runs_on_the_datas_device(device):
    table, _ = simulate_annotations(60, WorkerPopulation(3, missing_rate=0.2), 2, seed=9)
    model = DawidSkene(allow_unlabelled=True)
    reference = model.fit(table, method="em", seed=0, progress=False)
    em = model.fit(table.to(device), method="em", seed=0, progress=False)
    assert em.params["confusion"].device.type == device
    torch.testing.assert_close(em.params["confusion"].cpu(), reference.params["confusion"],
                               rtol=0, atol=1e-10)
    gibbs = model.fit(table, method="gibbs", seed=0, num_samples=20, num_warmup=5,
                      device=device, progress=False)
    svi = model.fit(table, method="svi", seed=0, num_steps=20, num_samples=10, device=device,
                    progress=False)
    for post in (gibbs, svi):
        assert post.samples["z"].device.type == device and post.samples["z"].dtype == torch.long
        assert torch.isfinite(post.samples["confusion"]).all()
        assert post.predict(table.to(device)).device.type == device
