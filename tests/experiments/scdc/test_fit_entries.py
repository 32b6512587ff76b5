"""``pyromodels fit scdc`` and ``fit observed-bayes-scdc``: what they read and what they
write (labels.csv, workers.csv and the worker warning)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pyromodels.cli import main
from pyromodels.experiments.scdc.fit_entries import loader, pinwheel_with_links, read_pairs


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    points = np.concatenate([rng.normal(-4, 1, (15, 2)), rng.normal(4, 1, (15, 2))])
    np.savetxt(tmp_path / "x.csv", points, delimiter=",")
    first = rng.integers(0, 30, 80)
    second = (first + rng.integers(1, 29, 80)) % 30
    a, b = np.minimum(first, second), np.maximum(first, second)
    pd.DataFrame({"item_a": a, "item_b": b, "worker": np.repeat(["w1", "w2"], 40),
                  "link": ((a < 15) == (b < 15)).astype(int)}).drop_duplicates(
        ["item_a", "item_b", "worker"]).to_csv(tmp_path / "pairs.csv", index=False)
    return tmp_path


def test_scdc_fit_writes_labels_and_worker_table(files, capsys):
    out = files / "report"
    status = main(["fit", "scdc", "--data", str(files / "x.csv"), "--pairs",
                   str(files / "pairs.csv"), "--epochs", "3", "--batch-size", "10",
                   "--coin-init", "0.9", "--n-clusters", "2", "--no-progress",
                   "--out", str(out)])
    assert status == 0, capsys.readouterr().err
    labels = pd.read_csv(out / "labels.csv")
    assert labels.columns.tolist() == ["point", "cluster", "probability"]
    assert len(labels) == 30
    workers = pd.read_csv(out / "workers.csv")
    assert workers.columns.tolist() == ["worker", "alpha", "beta", "weight"]
    assert sorted(workers["worker"]) == ["w1", "w2"]
    a, b = workers["alpha"], workers["beta"]
    assert np.allclose(workers["weight"], np.log(a / (1 - a)) + np.log(b / (1 - b)))


def test_observed_fit_writes_posterior_worker_table(files, capsys):
    out = files / "gibbs"
    status = main(["fit", "observed-bayes-scdc", "--data", str(files / "x.csv"), "--pairs",
                   str(files / "pairs.csv"), "--num-clusters", "4", "--num-samples", "20",
                   "--num-warmup", "20", "--num-chains", "1", "--no-progress", "--out", str(out)])
    assert status == 0, capsys.readouterr().err
    workers = pd.read_csv(out / "workers.csv")
    assert workers.columns.tolist() == ["worker", "alpha", "beta", "weight", "weight_q05",
                                        "weight_q95"]
    assert (workers["weight_q05"] <= workers["weight"]).all()
    assert (workers["weight"] <= workers["weight_q95"]).all()
    labels = pd.read_csv(out / "labels.csv")
    assert labels["probability"].between(0, 1).all()
    # the best draw's clusters are renamed in order of first appearance
    seen = labels["cluster"].drop_duplicates().tolist()
    assert seen == list(range(len(seen)))


def test_observed_model_needs_links(files, capsys):
    status = main(["fit", "observed-bayes-scdc", "--data", str(files / "x.csv"),
                   "--no-progress", "--out", str(files / "none")])
    assert status == 2
    assert "--pairs" in capsys.readouterr().err


def test_scdc_takes_no_sample_count(files, capsys):
    status = main(["fit", "scdc", "--data", str(files / "x.csv"), "--num-samples", "5"])
    assert status == 2
    assert "--num-samples does not apply to model 'scdc'" in capsys.readouterr().err


def test_pairs_must_name_rows(files):
    pd.DataFrame({"item_a": ["p", "q"], "item_b": ["q", "r"], "worker": [0, 0],
                  "link": [1, 0]}).to_csv(files / "named.csv", index=False)
    with pytest.raises(ValueError, match="column item_a of the pairs must hold row numbers"):
        read_pairs(files / "named.csv", 30)
    pd.DataFrame({"item_a": [0], "item_b": [30], "worker": [0], "link": [1]}).to_csv(
        files / "outside.csv", index=False)
    with pytest.raises(ValueError):
        read_pairs(files / "outside.csv", 30)


def test_pairs_without_data_is_an_error():
    with pytest.raises(ValueError, match="give the data too"):
        loader(None, "pairs.csv")


def test_default_data_is_the_paper_pinwheel():
    data = pinwheel_with_links()
    assert data.x.shape == (500, 2)
    assert data.pairs.num_pairs == 980 and data.pairs.num_workers == 20
    annotated = np.unique(np.r_[data.pairs.i_idx.numpy(), data.pairs.j_idx.numpy()])
    assert len(annotated) <= 100


def test_worker_warning_reaches_metrics(files, capsys):
    # every link contradicts the features: workers read at or below chance
    frame = pd.read_csv(files / "pairs.csv")
    frame["link"] = 1 - frame["link"]
    frame.to_csv(files / "flipped.csv", index=False)
    out = files / "flipped"
    status = main(["fit", "scdc", "--data", str(files / "x.csv"), "--pairs",
                   str(files / "flipped.csv"), "--epochs", "3", "--batch-size", "10",
                   "--coin-init", "0.1", "--n-clusters", "2", "--no-progress",
                   "--out", str(out)])
    assert status == 0, capsys.readouterr().err
    metrics = json.loads((out / "metrics.json").read_text())
    workers = pd.read_csv(out / "workers.csv")
    low = (workers["weight"] <= 0).sum()
    warnings = metrics["scdc-svi"]["svi"].get("warnings", [])
    assert (low > 0) == bool(warnings)
    assert low > 0


def test_bayes_fit_writes_labels_and_worker_table(files, capsys):
    out = files / "bayes"
    status = main(["fit", "bayes-scdc", "--data", str(files / "x.csv"), "--pairs",
                   str(files / "pairs.csv"), "--epochs", "3", "--batch-size", "10",
                   "--n-clusters", "3", "--hidden-width", "8", "--no-progress",
                   "--out", str(out)])
    assert status == 0, capsys.readouterr().err
    labels = pd.read_csv(out / "labels.csv")
    assert labels.columns.tolist() == ["point", "cluster", "probability"]
    assert len(labels) == 30 and labels["cluster"].between(0, 2).all()
    assert labels["probability"].between(1 / 3, 1).all()
    workers = pd.read_csv(out / "workers.csv")
    assert workers.columns.tolist() == ["worker", "alpha", "beta", "weight"]
    assert sorted(workers["worker"]) == ["w1", "w2"]
    a, b = workers["alpha"], workers["beta"]
    assert np.allclose(workers["weight"], np.log(a / (1 - a)) + np.log(b / (1 - b)))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["bayes-scdc-natgrad"]["natgrad"]["num_steps"] == 9  # 3 epochs of 3 steps
    # the written InferenceData holds the fit's draws of the globals, labelled by worker id
    import arviz as az

    posterior = az.from_netcdf(str(out / "bayes-scdc-natgrad" / "natgrad.nc")).posterior
    assert {"weights", "locs", "precisions", "alpha", "beta"} <= set(posterior.data_vars)
    assert posterior.sizes["draw"] > 1
    assert sorted(posterior["alpha"].coords["worker"].values.tolist()) == ["w1", "w2"]


def test_bayes_fit_standardises_all_but_binary_features():
    from pyromodels.experiments.scdc.bayes_entry import bayes_settings, standardised

    x = np.array([[1.0, 10.0], [3.0, 30.0], [5.0, 20.0]])
    z = standardised(x)
    assert np.allclose(z.mean(0), 0) and z.std() == pytest.approx(1.0)
    assert np.allclose(z * (x - x.mean(0)).std() + x.mean(0), x)  # one scale for all columns
    binary = np.array([[0.0, 1.0], [1.0, 1.0]])
    assert np.array_equal(standardised(binary), binary)
    assert bayes_settings(60) == {"num_epochs": 60, "warmup_epochs": 40, "step_size": 0.01}


def test_pairwise_fit_reads_links_alone_and_writes_labels_and_workers(files, capsys):
    frame = pd.read_csv(files / "pairs.csv")
    frame[["item_a", "item_b"]] = "p" + frame[["item_a", "item_b"]].astype(str)  # any ids
    frame.to_csv(files / "named.csv", index=False)
    out = files / "pairwise"
    status = main(["fit", "pairwise-dawid-skene", "--pairs", str(files / "named.csv"),
                   "--num-clusters", "2", "--pi-concentration", "1.0", "--no-progress",
                   "--out", str(out)])
    assert status == 0, capsys.readouterr().err
    labels = pd.read_csv(out / "labels.csv")
    assert labels.columns.tolist() == ["item", "cluster", "probability"]
    linked = sorted(set(frame["item_a"]) | set(frame["item_b"]))
    assert labels["item"].tolist() == linked
    # the links are exact: the two halves of the items are the two clusters
    half = labels["item"].str[1:].astype(int) < 15
    assert labels.groupby(half)["cluster"].nunique().eq(1).all()
    assert labels.loc[half, "cluster"].iloc[0] != labels.loc[~half, "cluster"].iloc[0]
    workers = pd.read_csv(out / "workers.csv")
    assert workers.columns.tolist() == ["worker", "alpha", "beta", "weight"]
    assert (workers["weight"] > 0).all()


def test_pairwise_fit_refuses_features_and_needs_links(files, capsys):
    from pyromodels.experiments.scdc.pairwise_entry import links_loader

    status = main(["fit", "pairwise-dawid-skene", "--data", str(files / "x.csv"), "--pairs",
                   str(files / "pairs.csv"), "--no-progress", "--out", str(files / "no")])
    assert status == 2
    assert "--data does not apply to model 'pairwise-dawid-skene'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="reads no features"):
        links_loader(str(files / "x.csv"), str(files / "pairs.csv"))
    status = main(["fit", "pairwise-dawid-skene", "--no-progress", "--out", str(files / "no")])
    assert status == 2
    assert "needs the links: give --pairs" in capsys.readouterr().err


def test_scdc_kl_warmup_option_reaches_the_fit(files, capsys):
    """``--kl-warmup-epochs`` reaches SCDC's fit: one not below ``--epochs`` is refused with
    the fit's own message."""
    base = ["fit", "scdc", "--data", str(files / "x.csv"), "--epochs", "2", "--batch-size",
            "10", "--n-clusters", "3", "--hidden-width", "8", "--no-progress"]
    status = main([*base, "--kl-warmup-epochs", "2", "--out", str(files / "klw-bad")])
    assert status != 0
    assert "kl_warmup_epochs must be below num_epochs (2)" in capsys.readouterr().err
    status = main([*base, "--kl-warmup-epochs", "1", "--out", str(files / "klw")])
    assert status == 0, capsys.readouterr().err


@pytest.mark.parametrize(("argv", "expected"), [
    ([], 0.01),  # the default 2 x 40 networks: the warm-up schedule's step
    (["--hidden-width", "500"], 1e-3),  # the paper's 2 x 500: its step, the library's default
    (["--hidden-width", "500", "--lr", "0.005"], 0.005),  # a given rate is kept
])
def test_bayes_fit_default_step_follows_the_network_width(files, capsys, monkeypatch, argv,
                                                          expected):
    from pyromodels.scdc import BayesSCDC

    seen = []
    fit = BayesSCDC.fit

    def recording(self, *args, **kwargs):
        seen.append(kwargs["lr"])
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(BayesSCDC, "fit", recording)
    status = main(["fit", "bayes-scdc", "--data", str(files / "x.csv"), "--epochs", "1",
                   "--batch-size", "10", "--n-clusters", "2", *argv, "--no-progress",
                   "--out", str(files / "report")])
    assert status == 0, capsys.readouterr().err
    assert seen == [expected]
