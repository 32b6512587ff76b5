"""The RBHMC reproduction: its smoke run (metrics, tables, figures, ArviZ data), the chain
sharing between protocols, its registration and ``pyromodels fit bhmc`` from the command line."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from matplotlib.figure import Figure

from pyromodels import registry
from pyromodels.core import SamplingWarning
from pyromodels.experiments.bhmc import reproduction as rep
from pyromodels.experiments.bhmc.assemble import f_summary, json_ready
from pyromodels.experiments.bhmc.chains import ChainSampler, planned_requests
from pyromodels.experiments.bhmc.data import planted_hierarchy
from pyromodels.experiments.bhmc.paper_numbers import HYPERPARAMETERS
from pyromodels.experiments.bhmc.protocol import (
    ChainRequest,
    run_convergence,
    run_f_measure,
    run_seed,
    run_sensitivity,
)
from pyromodels.experiments.bhmc.settings import PROTOCOLS, protocol_settings


@pytest.fixture(scope="module")
def smoke():
    return rep.demo(smoke=True, progress=False, seed=0)


def test_smoke_metrics_are_json_ready_and_complete(smoke):
    json.dumps(smoke.metrics, allow_nan=False)
    assert set(smoke.metrics["datasets"]) == {"animals", "planted"}
    animals = smoke.metrics["datasets"]["animals"]
    assert (animals["num_points"], animals["dim"]) == (33, 7)
    # one chain per method, shared by the four protocols (same seed and length)
    assert animals["chains_run"] == 2
    methods = {row["method"] for row in animals["sensitivity"]}
    assert methods == {"BHMC", "RBHMC"}
    levels = {row["level"] for row in animals["f_measure"]}
    assert levels == {1, 2, 3}
    assert all(0 <= row["mean"] <= 1 for row in animals["f_measure"])


def test_smoke_tables_and_summary(smoke):
    settings = smoke.tables["settings: ours beside the paper's"]
    assert settings.loc[("animals", "f_measure"), "paper chains"] == 10
    assert settings.loc[("animals", "f_measure"), "paper draws"] == 10000
    planted = smoke.tables["planted: per-level F-measure over chains"]
    assert planted.true_mean.notna().any()  # the planted set is scored against its truth
    assert "no numeric results" in smoke.summary and "paper_literal" in smoke.summary


def test_smoke_figures_and_trees_with_names(smoke):
    assert all(isinstance(f, Figure) for f in smoke.figures.values())
    for key in ("animals: CDL and RCDL traces", "animals: AID and AOD against C and eps0",
                "animals: per-level F-measure", "planted: per-level F against the true tree"):
        assert key in smoke.figures
    tree = smoke.figures["animals: tree, BHMC, chain 1"]
    texts = {t.get_text() for t in tree.axes[0].texts}
    assert "Whale" in texts and len(texts) >= 33


def test_trees_of_images_are_labelled_by_class():
    from pyromodels.experiments.bhmc.assemble import _tree_figures

    data = planted_hierarchy(n_per_leaf=2)
    figs = _tree_figures("fashion_mnist", {"data": data,
                                           "case_study": {("BHMC", None, 1.0, 0): data.true_paths}})
    fig = figs["fashion_mnist: tree, BHMC, chain 1"]
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sorted(texts) == sorted(data.class_names[int(k)] for k in data.labels)


def test_smoke_inference_data(smoke):
    idata = smoke.inference_data["animals-RBHMC-C1-eps01"]
    run = rep.PLANS["smoke"].datasets[0].runs["f_measure"]
    assert idata.posterior["rcdl"].shape == (run.chains, run.draws)
    assert "rcdl" not in smoke.inference_data["animals-BHMC"].posterior


def test_sampler_shares_a_chain_between_selections():
    data = planted_hierarchy(n_per_leaf=2)
    sampler = ChainSampler("planted", rep.prior_for("planted"))
    hyper = HYPERPARAMETERS["animals"]
    best = sampler(ChainRequest(data, hyper, 1.0, 1.0, 1, 2, "best", run_seed(0, 1, 0)))
    last = sampler(ChainRequest(data, hyper, 1.0, 1.0, 1, 2, "last", run_seed(0, 1, 0)))
    assert len(sampler.fits) == 1
    post = next(iter(sampler.fits.values()))
    assert torch.equal(best.paths, post.params["paths"])
    assert torch.equal(last.paths, post.params["last_paths"][0])
    assert best.cdl.shape == best.rcdl.shape == (3,)
    sampler(ChainRequest(data, hyper, None, float("nan"), 1, 2, "best", run_seed(0, 0, 0)))
    assert len(sampler.fits) == 2


def test_planned_requests_are_the_chains_the_protocols_ask_for():
    # the protocols run against a recording sampler; the planned keys must be exactly theirs
    data = planted_hierarchy(n_per_leaf=2)
    hyper = HYPERPARAMETERS["animals"]
    runs = {p: protocol_settings("planted", p, "smoke") for p in PROTOCOLS}
    sampler = ChainSampler("planted", rep.prior_for("planted"))
    asked = set()

    def recording(request):
        asked.add(sampler.key(request))
        return sampler(request)

    for fn in (run_convergence, run_sensitivity, run_f_measure):
        fn(data, hyper, recording, runs[fn.__name__.removeprefix("run_")], seed=3)
    case = runs["case_study"]
    for index, c, e in [(0, None, float("nan")), (1, *case.settings[0])]:
        for chain in range(2):
            recording(ChainRequest(data, hyper, c, e, case.burn_in, case.draws, "best",
                                   run_seed(3, index, chain)))
    planned = {sampler.key(r) for r in planned_requests(data, hyper, runs, seed=3)}
    assert planned == asked == set(sampler.fits)


def test_joblib_workers_give_the_chains_of_a_sequential_run():
    data = planted_hierarchy(n_per_leaf=2)
    runs = {"f_measure": protocol_settings("planted", "f_measure", "smoke")}
    requests = planned_requests(data, HYPERPARAMETERS["animals"], runs, seed=0)[:3]
    one, two = (ChainSampler("planted", rep.prior_for("planted")) for _ in range(2))
    one.prefetch(requests, 1)
    two.prefetch(requests, 2)
    assert set(one.fits) == set(two.fits) and len(one.fits) == 3
    for key, post in one.fits.items():
        assert torch.equal(post.samples["cdl"], two.fits[key].samples["cdl"])


def test_plans_follow_the_brief_and_the_paper():
    demo = rep.PLANS["demo"].datasets[0]
    assert demo.dataset == "animals"
    assert {c for c, _ in demo.runs["f_measure"].settings} == {1.0, 0.01}
    paper = {d.dataset: d for d in rep.PLANS["paper"].datasets}
    assert paper["animals"].runs["f_measure"].draws == 10000
    assert paper["fashion_mnist"].runs["convergence"].chains == 5
    assert rep.prior_for("fashion_mnist").depth == 4 and rep.prior_for("planted").alpha == 0.4
    assert rep.PLANS["demo"].n_jobs == 1 and rep.PLANS["paper"].n_jobs == -1


def test_json_ready_and_f_summary():
    assert json_ready({"a": np.float64("nan"), "b": [np.int64(2)]}) == {"a": None, "b": [2]}
    frame = pd.DataFrame({"method": ["BHMC", "BHMC"], "C": [None, None], "eps0": [np.nan] * 2,
                          "chain": [0, 1], "level": [1, 1], "f_measure": [0.25, 0.75],
                          "f_true": [np.nan, np.nan]})
    row = f_summary(frame).iloc[0]
    assert (row.chains, row["mean"], row["min"], row["max"]) == (2, 0.5, 0.25, 0.75)


def test_registered_with_its_scales():
    registry.load_builtin()
    entry = registry.get("bhmc")
    assert entry.engines == ("gibbs",) and entry.scales == ("small", "medium", "paper")
    with pytest.raises(ValueError, match="scale"):
        rep.reproduce(scale="huge", progress=False)
    assert rep.loader(None).shape == (33, 7)


def test_fit_from_the_command_line(tmp_path):
    from pyromodels.cli import main

    data = tmp_path / "points.csv"
    np.savetxt(data, planted_hierarchy(n_per_leaf=2).x.numpy(), delimiter=",")
    out = tmp_path / "report"
    assert main(["fit", "bhmc", "--method", "gibbs", "--data", str(data), "--out", str(out),
                 "--num-warmup", "1", "--num-samples", "3", "--num-chains", "2",
                 "--no-progress"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert any(key.startswith("bhmc") for key in metrics)
    assert (out / "index.html").is_file()
    fit = metrics[next(key for key in metrics if key.startswith("bhmc"))]["gibbs"]
    assert fit["criterion"] == "cdl" and fit["leaves"] >= 1
    paths = pd.read_csv(out / "paths.csv")
    assert len(paths) == 12 and list(paths.columns)[-1] == "level_3"




def test_fit_rbhmc_from_the_command_line_checkpointed_and_resumed(tmp_path):
    import warnings

    from pyromodels.cli import main

    data = tmp_path / "points.csv"
    np.savetxt(data, planted_hierarchy(n_per_leaf=2).x.numpy(), delimiter=",")
    out = tmp_path / "report"
    args = ["fit", "bhmc", "--method", "gibbs", "--data", str(data), "--out", str(out),
            "--regularisation", "0.1", "--margin", "0.5", "--num-warmup", "2",
            "--num-samples", "4", "--num-chains", "2", "--checkpoint-every", "3",
            "--no-progress"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no warning a user cannot act on
        # but the sampling warning of 2 x 4 draws, which says to draw more
        warnings.filterwarnings("ignore", category=SamplingWarning)
        assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    fit = metrics[next(key for key in metrics if key.startswith("bhmc"))]["gibbs"]
    assert fit["criterion"] == "rcdl"
    saved = json.loads((out / "checkpoint-args.json").read_text())
    assert saved["regularisation"] == 0.1 and saved["margin"] == 0.5
    assert (out / "checkpoint.pt").is_file()
    # the finished run resumes to the same report numbers
    assert main(["fit", "--resume", str(out), "--no-progress"]) == 0
    again = json.loads((out / "metrics.json").read_text())
    resumed = again[next(key for key in again if key.startswith("bhmc"))]["gibbs"]
    assert resumed.pop("wall_time_s") < fit.pop("wall_time_s")  # nothing sampled again
    assert resumed == fit


def test_the_margin_needs_the_regularisation(tmp_path, capsys):
    from pyromodels.cli import main

    assert main(["fit", "bhmc", "--method", "gibbs", "--margin", "0.5",
                 "--out", str(tmp_path)]) == 2
    assert "--margin sets RBHMC's margin: it needs --regularisation C" in capsys.readouterr().err
    assert main(["fit", "gaussian-mixture", "--method", "em", "--regularisation", "1"]) == 2
    assert "--regularisation does not apply to model 'gaussian-mixture'" in capsys.readouterr().err


def test_a_fit_names_its_draws_label_invariant(tmp_path):
    from pyromodels.bhmc import BHMC

    x = planted_hierarchy(n_per_leaf=2).x
    post = BHMC(rep.prior_for("animals")).fit(x, C=0.1, num_warmup=1, num_samples=2,
                                              num_chains=1, seed=0, progress=False)
    assert post.attrs["label_invariant_sites"] == ["cdl", "rcdl", "num_leaves",
                                                   "nodes_per_level"]
