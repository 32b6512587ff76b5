"""The DDPM reproduction: its smoke run, its tables beside the paper's, its registration, the
feature scaling and the synthetic set."""

import json
import math

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from pyromodels import registry
from pyromodels.ddpm import DPMixturePrior
from pyromodels.experiments.ddpm import features as feats
from pyromodels.experiments.ddpm import reproduction as rep
from pyromodels.experiments.ddpm.assemble import difference_table, ours_table
from pyromodels.experiments.ddpm.paper_numbers import TABLE_1
from pyromodels.experiments.ddpm.table1 import METHOD_ORDER


@pytest.fixture(scope="module")
def smoke():
    return rep.demo(smoke=True, progress=False, seed=0)


def test_smoke_run_scores_every_method_on_every_set(smoke):
    table = smoke.metrics["table_1"]
    assert set(table) == {"digits", "synthetic"}
    for name, scores in table.items():
        assert set(scores) == set(METHOD_ORDER), name
        for method, row in scores.items():
            assert set(row) == {"F score", "V score", "ARI", "ACC*", "K"}
            assert -1 <= row["ARI"] <= 1 and 0 <= row["F score"] <= 1, (name, method)
            assert row["K"] >= 1
        # k-means takes its K from the DP fits
        assert scores["KMeans^dp"]["K"] == scores["DPM"]["K"]
        assert scores["KMeans^ddp"]["K"] == scores["DDPM"]["K"]
    json.dumps(smoke.metrics)  # JSON-ready


def test_smoke_tables_put_ours_beside_the_papers(smoke):
    ours = smoke.tables["Table 1 (ours): F, V, ARI, ACC* and K per data set"]
    assert ours.loc[("digits", "ARI"), "DDPM"] == smoke.metrics["table_1"]["digits"]["DDPM"]["ARI"]
    paper = smoke.tables["Table 1 (the paper, its data sets)"]
    assert paper.loc[("MNIST", "ARI"), "DDPM"] == TABLE_1["MNIST"]["ARI"]["DDPM"]
    diff = smoke.tables["DDPM minus DPM: ours and the paper's"]
    assert diff.loc["MNIST (paper)", "ARI"] == pytest.approx(0.6106 - 0.4307)
    assert "digits (ours)" in diff.index
    assert "eq. 24" in smoke.summary and "DEC is not built" in smoke.summary


def test_smoke_figures_and_traces(smoke):
    assert all(isinstance(f, Figure) for f in smoke.figures.values())
    assert "digits: images decoded from DDPM cluster centres" in smoke.figures
    assert "synthetic: DDPM's z over the rounds" in smoke.figures
    idata = smoke.inference_data["synthetic-DDPM"]
    plan = rep.PLANS["smoke"].synthetic_protocol.mcem
    assert idata.posterior["num_clusters"].shape == (plan.restarts, plan.rounds)


def test_ours_and_difference_tables_from_scores():
    class Run:
        def __init__(self, dpm, ddpm):
            row = {"F score": 0.5, "V score": 0.5, "ARI": 0.5, "ACC*": 0.5, "K": 3}
            self.scores = {m: dict(row) for m in METHOD_ORDER}
            self.scores["DPM"]["ARI"], self.scores["DDPM"]["ARI"] = dpm, ddpm

    runs = {"a": Run(0.25, 0.75)}
    assert ours_table(runs).loc[("a", "ARI"), "DDPM"] == 0.75
    assert difference_table(runs).loc["a (ours)", "ARI"] == 0.5


def test_features_are_scaled_to_the_prior_predictive():
    prior = DPMixturePrior.paper_preset("mnist")
    assert feats.prior_scale(prior) == pytest.approx(math.sqrt(250_000 * 1.3 / (10_000 * 0.3)))
    images = feats.Images("toy", torch.rand(40, 6, generator=torch.Generator().manual_seed(0)),
                          np.arange(40) % 2, (2, 3))
    f = feats.autoencoder_features(images, prior, dims=(4, 2), layerwise_epochs=1,
                                   finetune_epochs=1, seed=0)
    assert f.y.shape == (40, 2)
    assert float(f.y.mean(0).abs().max()) < 1e-10
    assert float(f.y.std(0).mean()) == pytest.approx(feats.prior_scale(prior), rel=1e-10)
    # decoding undoes the scaling: the decoder sees the autoencoder's own codes
    with torch.no_grad():
        codes = f.autoencoder.encode(images.x).double()
    net_dtype = next(f.autoencoder.parameters()).dtype
    assert torch.allclose(f.decode(f.y), f.autoencoder.decode(codes.to(net_dtype)), atol=1e-5)


def test_warped_set_is_reproducible_and_invertible():
    a = feats.warped_clusters(200, seed=3)
    b = feats.warped_clusters(200, seed=3)
    assert torch.equal(a.y, b.y) and np.array_equal(a.labels, b.labels)
    assert set(a.labels.tolist()) <= set(range(6))
    with torch.no_grad():
        assert torch.allclose(a.warp(a.y), a.z, atol=1e-8)
    assert not torch.allclose(a.y, a.z)


def test_load_images_refuses_unknown_sets():
    with pytest.raises(ValueError, match="name must be one of"):
        feats.load_images("mnist70k")


def test_registered_with_its_scales():
    registry.load_builtin()
    entry = registry.get("ddpm")
    assert entry.engines == ("mcem",) and entry.scales == ("small", "medium", "paper")
    with pytest.raises(ValueError, match="scale"):
        rep.reproduce(scale="huge", progress=False)
    y = rep.loader(None)
    assert y.shape == (rep.FIT_POINTS, 4)


def test_fit_from_the_command_line_writes_a_report_with_traces(tmp_path):
    from pyromodels.cli import main

    rng = np.random.default_rng(0)
    points = np.concatenate([rng.normal(0, 1, (30, 2)), rng.normal(8, 1, (30, 2))])
    data = tmp_path / "points.csv"
    np.savetxt(data, points, delimiter=",")
    out = tmp_path / "report"
    assert main(["fit", "ddpm", "--method", "mcem", "--data", str(data), "--out", str(out),
                 "--no-progress"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert any(key.startswith("ddpm") for key in metrics)
    assert (out / "index.html").is_file()
