"""The reference mixture's demo, its registration, its CSV loader and its command-line use."""

import json
import pickle

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from sklearn.mixture import GaussianMixture

from pyromodels import registry
from pyromodels.cli import main
from pyromodels.core.posterior import Posterior
from pyromodels.experiments.reference_mixture import reproduction as rm
from pyromodels.experiments.reference_mixture.analysis import (
    assignment_probs,
    mcmc_checks,
    point_labels,
)
from pyromodels.metrics import clustering_accuracy
from pyromodels.mixture import GaussianMixtureModel

ENGINES = ("em", "gibbs", "svi", "nuts")


@pytest.fixture(scope="module")
def smoke():
    """The smoke demo, run once with two torch threads to check that the count is restored."""
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        result = rm.demo(smoke=True, progress=False, seed=0)
        threads_after = torch.get_num_threads()
    finally:
        torch.set_num_threads(old)
    return result, threads_after


def test_smoke_demo_reports_every_engine(smoke):
    result, threads_after = smoke
    assert threads_after == 2
    assert result.name == "gaussian-mixture"
    for engine in ENGINES:
        m = result.metrics[engine]
        # Chance level: the best one-to-one matching of a random labelling of the 59/71/48
        # cultivars scores about 0.4; the two-component projection separates them, and every
        # engine, even with smoke-sized runs, finds the same three clusters as EM.
        assert m["accuracy"] > 0.9, engine
        assert m["agreement_with_em"] > 0.95, engine
        assert 0 < m["nmi"] <= 1 and -1 <= m["ari"] <= 1
        weights = np.array(m["weights_mean"])
        assert weights.shape == (3,) and np.all(weights > 0)
        assert weights.sum() == pytest.approx(1.0, abs=1e-6)
        assert m["wall_time_s"] > 0
    assert result.metrics["em"]["sd_locs"] == 0.0  # a point estimate has no spread
    for engine in ("gibbs", "nuts"):
        m = result.metrics[engine]
        for key in ("rhat_lp", "ess_bulk_lp", "rhat_weights", "ess_bulk_weights"):
            assert np.isfinite(m[key]) and m[key] > 0, (engine, key)
    assert result.metrics["nuts"]["divergences"] >= 0
    assert set(result.inference_data) == set(ENGINES)
    for engine, idata in result.inference_data.items():
        assert "weights" in idata.posterior, engine
    assert all(isinstance(f, Figure) for f in result.figures.values())
    names = " | ".join(result.figures)
    for part in ("gibbs: trace", "nuts: rank", "nuts: energy", "co-clustering",
                 "EM objective and SVI loss", "data and EM clusters"):
        assert part in names
    table = result.tables["engine comparison (aligned to the EM labels)"]
    assert list(table.index) == list(ENGINES)
    assert table.loc["gibbs", "accuracy"] == result.metrics["gibbs"]["accuracy"]


def test_em_agrees_with_scikit_learn_maximum_likelihood():
    # Peer check: the MAP fit under the weak data-driven prior moves only boundary points
    # relative to scikit-learn's maximum-likelihood mixture (2 of 178 differ at these seeds).
    x, y, explained = rm.load_features()
    assert x.shape == (178, 2) and 0.5 < explained < 0.6
    peer = GaussianMixture(3, covariance_type="full", n_init=10, random_state=0).fit(x)
    em = rm.default_model().fit(x, method="em", n_init=3, seed=0, progress=False)
    labels = em.params["labels"].numpy()
    assert clustering_accuracy(peer.predict(x), labels) >= 0.97
    assert clustering_accuracy(y, labels) >= clustering_accuracy(y, peer.predict(x)) - 0.02


def _switched_posterior(num_draws=500, seed=0):
    """Two chains of iid draws of one clustering; chain 1 names components 0 and 2 the other way.

    Returns the fit and the reference labelling (chain 0's component of each point).
    """
    gen = torch.Generator().manual_seed(seed)
    n, probs = 60, torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    truth = torch.multinomial(probs, n, replacement=True, generator=gen)
    swap = torch.tensor([2, 1, 0])
    z, w, locs = [], [], []
    for chain in range(2):
        flip = torch.rand(num_draws, n, generator=gen) < 0.05  # a few points move each draw
        draws = torch.where(flip, torch.randint(3, (num_draws, n), generator=gen), truth)
        weights = probs + 0.01 * torch.randn(num_draws, 3, generator=gen, dtype=torch.float64)
        means = torch.tensor([-3.0, 0.0, 3.0], dtype=torch.float64).expand(num_draws, 3)
        if chain == 1:
            draws, weights, means = swap[draws], weights[:, swap], means[:, swap]
        z.append(draws)
        w.append(weights)
        locs.append(means.unsqueeze(-1))
    lp = torch.randn(2, num_draws, generator=gen, dtype=torch.float64)
    post = Posterior(samples={"z": torch.stack(z), "weights": torch.stack(w),
                              "locs": torch.stack(locs)},
                     method="gibbs", sample_stats={"lp": lp})
    return post, truth


def test_mcmc_checks_see_label_switching_and_relabelling_removes_it():
    from pyromodels.diagnostics import relabel

    raw, reference = _switched_posterior()
    aligned = relabel(raw, component_sites={"weights": 0, "locs": 0}, reference=reference)
    metrics, table = mcmc_checks(raw, aligned)
    # Chain means of weights 0 and 2 differ by 0.3 against a within-chain sd of 0.01, so the
    # chains do not overlap. ArviZ's R-hat is rank-normalised, which bounds it: for two fully
    # separated chains the rank z-scores are two half-normals, giving
    # sqrt(1 + (2/pi) / (1 - 2/pi)) = 1.66 before the folded and split refinements; 1.5 is
    # far above anything overlapping chains give. After relabelling the draws are iid within and
    # across chains, and split R-hat of 1000 iid draws exceeds 1.02 with negligible
    # probability (its sd is about 0.003).
    assert metrics["rhat_weights_unaligned"] > 1.5
    assert metrics["rhat_weights"] < 1.02
    assert metrics["rhat_lp"] < 1.02
    assert "lp" in table.index and "weights_unaligned[0]" in table.index
    # Assignment probabilities are the share of draws per label: the 5% of moved points are
    # spread over 3 labels, so P(z_n = truth_n) = 0.95 + 0.05 / 3 up to Monte Carlo error
    # (sd sqrt(p (1 - p) / 1000) < 0.006, so 0.03 is five standard errors).
    probs = assignment_probs(aligned)
    assert probs.shape == (60, 3)
    torch.testing.assert_close(probs.sum(-1), torch.ones(60, dtype=torch.float64))
    hit = probs.gather(-1, reference.unsqueeze(-1)).squeeze(-1)
    assert float((hit - (0.95 + 0.05 / 3)).abs().max()) < 0.03
    assert torch.equal(point_labels(aligned), reference)


def test_registration_and_picklable_factory():
    registry.load_builtin()
    entry = registry.get("gaussian-mixture")
    assert entry is rm.ENTRY
    assert entry.engines == ENGINES
    model = pickle.loads(pickle.dumps(entry.factory))()
    assert isinstance(model, GaussianMixtureModel) and model.num_components == 3


def test_demo_and_reproduce_reject_bad_arguments():
    with pytest.raises(TypeError, match="smoke must be a bool, got str"):
        rm.demo(smoke="yes", progress=False, seed=0)
    with pytest.raises(ValueError, match="seed must be an integer >= 0, got -1"):
        rm.demo(smoke=True, progress=False, seed=-1)
    with pytest.raises(ValueError, match=r"scale must be one of \['small', 'medium'\], got 'paper'"):
        rm.reproduce(scale="paper", progress=False, seed=0)


def _write(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_read_numeric_csv_matches_numpy(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.normal(size=(7, 3))
    plain = tmp_path / "plain.csv"
    np.savetxt(plain, values, delimiter=",")
    headed = tmp_path / "headed.csv"
    np.savetxt(headed, values, delimiter=",", header="a,b,c", comments="")
    for path in (plain, str(headed)):
        out = rm.read_numeric_csv(path)
        assert out.dtype == np.float64
        np.testing.assert_array_equal(out, np.loadtxt(plain, delimiter=","))
    assert rm.loader(None).shape == (178, 2)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", r"is empty: expected numeric CSV rows"),
        ("\n\n", r"is empty"),
        ("a,b\n", r"has a header line but no data lines"),
        ("x,y,species\n1.0,2.0,setosa\n", r"line 2, column 'species': 'setosa' is not a number"),
        ("1.0,2.0\n3.0,4.0,5.0\n", r"line 2: expected 2 comma-separated values, got 3"),
        ("x,y\n1.0,\n", r"line 2, column 'y': '' is not a number"),
        ("1.0,2.0\nnan,4.0\n", r"line 2, column '1': 'nan' is not finite"),
    ],
)
def test_read_numeric_csv_rejects_bad_files(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        rm.read_numeric_csv(_write(tmp_path, text))


def test_read_numeric_csv_rejects_a_non_path():
    with pytest.raises(TypeError, match="path must be a str or Path, got int"):
        rm.read_numeric_csv(3)


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_cli_demo_writes_a_report_with_images(tmp_path):
    out = tmp_path / "demo"
    code = main(["demo", "--smoke", "--out", str(out), "--no-progress",
                 "--only", "gaussian-mixture"])
    assert code == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.count('<img src="data:image/png;base64,') == 10  # with the NUTS energy plot
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert set(ENGINES) <= set(metrics["gaussian-mixture"])
    for engine in ENGINES:
        assert (out / "gaussian-mixture" / f"{engine}.nc").is_file()


def test_cli_fit_reads_a_csv(tmp_path):
    x, _, _ = rm.load_features()
    data = tmp_path / "wine.csv"
    np.savetxt(data, x, delimiter=",", header="pc1,pc2", comments="")
    out = tmp_path / "fit"
    code = main(["fit", "gaussian-mixture", "--method", "em", "--data", str(data),
                 "--out", str(out), "--no-progress", "--n-init", "2"])
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["gaussian-mixture-em"]["em"]["converged"] is True


@pytest.mark.parametrize(
    "text, message",
    [
        ("x,y,species\n1.0,2.0,setosa\n", "'setosa' is not a number"),
        ("", "is empty"),
    ],
)
def test_cli_fit_bad_csv_exits_2(tmp_path, capsys, text, message):
    path = _write(tmp_path, text)
    code = main(["fit", "gaussian-mixture", "--method", "em", "--data", str(path),
                 "--out", str(tmp_path / "fit"), "--no-progress"])
    assert code == 2
    err = capsys.readouterr().err
    assert "cannot load data for 'gaussian-mixture'" in err and message in err
