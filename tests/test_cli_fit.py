"""``pyromodels fit`` on real and simulated data, through ``main(argv)`` with the built-in models.

The shared crowd data (``$PYROMODELS_DATA``) name the task column
``item``; the bundled sets are read by name.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import adjusted_rand_score

from pyromodels import registry
from pyromodels.cli import main
from pyromodels.crowd.hmm.model import SequentialDawidSkene
from pyromodels.crowd.mrf.model import NetworkedDawidSkene
from pyromodels.data import (
    WorkerPopulation,
    list_crowd_datasets,
    load_crowd,
    simulate_networked_annotations,
    simulate_sequential_annotations,
)
from pyromodels.report import read_metrics

SHARED = Path(os.environ.get("PYROMODELS_DATA", Path(__file__).resolve().parents[2] / "shared"
                             / "data"))
RTE = SHARED / "rte" / "answers.csv"
needs_shared = pytest.mark.skipif(not RTE.is_file(), reason="the shared rte set is not here")


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1, captured.err
    assert lines[0].startswith("pyromodels: error: ")
    return lines[0]


def _fit(argv, tmp_path, name="r") -> Path:
    out = tmp_path / name
    assert main(["fit", *argv, "--out", str(out), "--no-progress"]) == 0
    return out


# ---------------------------------------------------------------- data and columns
@needs_shared
def test_fit_reads_the_shared_data_whose_task_column_is_item(tmp_path, capsys):
    out = _fit(["crowd", "--method", "em", "--data", str(RTE)], tmp_path)
    labels = pd.read_csv(out / "labels.csv")
    answers = pd.read_csv(RTE)
    assert len(labels) == answers["item"].nunique() == 800
    assert set(labels["task"]) == set(answers["item"])


def test_column_options_name_the_columns(tmp_path, capsys):
    answers, _ = load_crowd("bluebirds")
    path = tmp_path / "renamed.csv"
    answers.set_axis(["question", "annotator", "answer"], axis=1).to_csv(path, index=False)
    argv = ["dawid-skene", "--method", "em", "--data", str(path)]
    assert main(["fit", *argv, "--out", str(tmp_path / "no")]) == 2
    line = _one_error_line(capsys)
    assert "no column(s) ['task', 'worker', 'label']" in line
    assert "--task-col, --worker-col and --label-col" in line and "item=" not in line
    assert line.count(str(path)) == 1  # the path is named once
    out = _fit([*argv, "--task-col", "question", "--worker-col", "annotator",
                "--label-col", "answer"], tmp_path)
    labels = pd.read_csv(out / "labels.csv")
    assert sorted(labels["task"]) == sorted(answers["task"].unique())


def test_dataset_option_reads_bundled_sets_and_the_data_folder(tmp_path, capsys, monkeypatch):
    out = _fit(["dawid-skene", "--method", "em", "--dataset", "bluebirds"], tmp_path, "bundled")
    assert len(pd.read_csv(out / "labels.csv")) == 108
    folder = tmp_path / "data" / "mine"
    folder.mkdir(parents=True)
    pd.DataFrame({"item": ["a", "a", "b", "b"], "worker": ["u", "v", "u", "v"],
                  "label": ["x", "x", "y", "y"]}).to_csv(folder / "answers.csv", index=False)
    monkeypatch.setenv("PYROMODELS_DATA", str(tmp_path / "data"))
    out = _fit(["dawid-skene", "--method", "em", "--dataset", "mine"], tmp_path, "folder")
    labels = pd.read_csv(out / "labels.csv")
    assert labels["task"].tolist() == ["a", "b"] and labels["label"].tolist() == ["x", "y"]
    capsys.readouterr()
    assert main(["fit", "dawid-skene", "--method", "em", "--dataset", "nope"]) == 2
    line = _one_error_line(capsys)
    assert "unknown crowd data set 'nope'" in line and "bluebirds" in line


# ---------------------------------------------------------------- models as choices
def test_list_shows_every_model_as_a_choice(capsys):
    assert main(["list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:] if line]
    for name in ("dawid-skene", "sequential-dawid-skene", "networked-dawid-skene",
                 "gaussian-mixture", "crowd"):
        assert name in names


def test_fit_help_shows_the_models_methods_data_format_and_options(capsys):
    assert main(["fit", "sequential-dawid-skene", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--method {em,gibbs}" in text and "--sequence-col" in text
    assert "sequence, position" in text and "--num-components" not in text
    assert main(["fit", "gaussian-mixture", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--num-components" in text and "--task-col" not in text
    assert main(["fit", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "networked-dawid-skene (em, gibbs)" in text


def test_an_option_of_another_model_is_a_one_line_error(capsys):
    assert main(["fit", "gaussian-mixture", "--method", "em", "--edges", "e.csv"]) == 2
    assert "--edges does not apply to model 'gaussian-mixture'" in _one_error_line(capsys)
    assert main(["fit", "dawid-skene", "--method", "bogus"]) == 2
    line = _one_error_line(capsys)
    assert "model 'dawid-skene' has no method 'bogus'; its methods: em, gibbs, svi, nuts" in line
    assert "''" not in line


def test_method_defaults_to_the_models_natural_engine(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["fit", "dawid-skene", "--out", str(out), "--no-progress"]) == 0
    assert [p.name for p in out.iterdir() if p.is_dir()] == ["dawid-skene-em"]
    assert list(read_metrics(out)[1]["dawid-skene-em"]) == ["em"]
    assert main(["fit", "bhmc", "--help"]) == 0
    assert "--method {gibbs} the inference method (default gibbs)" in " ".join(
        capsys.readouterr().out.split())


def test_every_fit_option_is_known_to_the_registry():
    from pyromodels.cli.parser import FIT_OPTIONS

    assert set(FIT_OPTIONS) == set(registry.LOADER_OPTIONS + registry.REPORT_OPTIONS
                                   + tuple(registry.FIT_ARGUMENTS))


@pytest.mark.parametrize("argv", [[], ["fit", "--bogus"], ["nope"], ["list", "extra"]])
def test_argument_errors_are_one_line(capsys, argv):
    assert main(argv) == 2
    _one_error_line(capsys)


# ---------------------------------------------------------------- what a crowd fit writes
def test_crowd_fit_writes_labels_confusions_entropy_and_gold_scores(tmp_path):
    answers, gold = load_crowd("bluebirds")
    gold_path = tmp_path / "gold.csv"
    gold.rename_axis("item").reset_index().to_csv(gold_path, index=False)
    out = _fit(["dawid-skene", "--method", "gibbs", "--num-samples", "40", "--num-warmup", "20",
                "--num-chains", "2", "--gold", str(gold_path)], tmp_path)
    labels = pd.read_csv(out / "labels.csv")
    assert labels.columns.tolist() == ["task", "label", "p_0", "p_1", "entropy"]
    p = labels[["p_0", "p_1"]].to_numpy()
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-6)
    np.testing.assert_allclose(labels["entropy"], -(p * np.log(np.clip(p, 1e-300, 1))).sum(1),
                               atol=1e-9)
    assert (labels["label"] == np.where(p[:, 1] > p[:, 0], 1, 0)).all()
    cells = pd.read_csv(out / "worker_confusion.csv")
    assert len(cells) == answers["worker"].nunique() * 4
    assert set(cells["worker"]) == set(answers["worker"])  # the user's worker ids
    assert ((cells["lower"] <= cells["mean"] + 1e-12)
            & (cells["mean"] <= cells["upper"] + 1e-12)).all()
    assert (cells["lower"] < cells["upper"]).any()  # an interval, not a point
    metrics = json.loads((out / "metrics.json").read_text())["dawid-skene-gibbs"]["gibbs"]
    expected = (labels.set_index("task")["label"] == gold.loc[labels["task"]].to_numpy()).mean()
    assert metrics["gold"]["accuracy"] == pytest.approx(expected)
    assert metrics["gold"]["accuracy"] > 0.8 and 0 < metrics["gold"]["macro_f1"] <= 1
    assert metrics["mean_entropy"] == pytest.approx(labels["entropy"].mean())
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "posterior mean and 90% interval per cell" in page
    assert "confusion[0, 0, 0]" not in page  # no flat per-cell rows keyed by worker index


def test_em_crowd_fit_reports_point_estimates(tmp_path):
    out = _fit(["dawid-skene", "--method", "em", "--dataset", "temp"], tmp_path)
    cells = pd.read_csv(out / "worker_confusion.csv")
    assert cells.columns.tolist() == ["worker", "true", "answer", "estimate"]
    assert "worker confusions: point estimate" in (out / "index.html").read_text()
    assert pd.read_csv(out / "labels.csv").columns.tolist()[2:] == ["p_1", "p_2", "entropy"]


def test_gold_without_common_tasks_is_a_one_line_error(tmp_path, capsys):
    gold = tmp_path / "gold.csv"
    gold.write_text("task,label\nzzz,0\n")
    assert main(["fit", "dawid-skene", "--method", "em", "--gold", str(gold),
                 "--out", str(tmp_path / "r"), "--no-progress"]) == 2
    assert "no task of the data has a gold label" in _one_error_line(capsys)


def test_sequential_fit_reads_sequence_and_position_columns(tmp_path):
    seqs, _ = simulate_sequential_annotations([12, 9, 15], 4, 3, stickiness=0.6, seed=1)
    frame = seqs.data.to_frame()
    codes = torch.as_tensor(frame["task"].to_numpy().copy())
    frame["sequence"] = seqs.sequence_ids()[codes].numpy()
    frame["position"] = seqs.positions()[codes].numpy()
    frame["task"] = "t" + frame["task"].astype(str)  # ids that do not sort in sequence order
    path = tmp_path / "seq.csv"
    frame.sample(frac=1.0, random_state=0).to_csv(path, index=False)
    out = _fit(["sequential-dawid-skene", "--method", "em", "--data", str(path)], tmp_path)
    labels = pd.read_csv(out / "labels.csv")
    assert labels["task"].tolist() == [f"t{i}" for i in range(36)]
    direct = SequentialDawidSkene().fit(seqs, method="em", seed=0, progress=False)
    np.testing.assert_allclose(labels[["p_0", "p_1", "p_2"]].to_numpy(),
                               direct.params["posterior"].numpy(), atol=1e-6)


def test_networked_fit_reads_an_edge_list(tmp_path, capsys):
    table, graph, _ = simulate_networked_annotations(
        60, WorkerPopulation(4, labels_per_item=3), 3, mean_degree=3, seed=0)
    answers, edges = tmp_path / "answers.csv", tmp_path / "edges.csv"
    table.to_frame().to_csv(answers, index=False)
    pd.DataFrame(graph.edges.numpy(), columns=["a", "b"]).to_csv(edges, index=False)
    argv = ["networked-dawid-skene", "--method", "em", "--data", str(answers)]
    assert main(["fit", *argv]) == 2
    assert "needs --edges FILE" in _one_error_line(capsys)
    out = _fit([*argv, "--edges", str(edges)], tmp_path)
    labels = pd.read_csv(out / "labels.csv")
    direct = NetworkedDawidSkene().fit((table, graph), method="em", seed=0, progress=False)
    np.testing.assert_allclose(labels[["p_0", "p_1", "p_2"]].to_numpy(),
                               direct.params["posteriors"].numpy(), atol=1e-6)


# ---------------------------------------------------------------- the mixture
def test_mixture_gibbs_fit_is_relabelled_before_its_diagnostics(tmp_path):
    out = _fit(["gaussian-mixture", "--method", "gibbs", "--num-chains", "2", "--num-samples",
                "60", "--num-warmup", "30"], tmp_path)
    metrics = json.loads((out / "metrics.json").read_text())["gaussian-mixture-gibbs"]["gibbs"]
    assert metrics["relabelled"] is True
    assert "Label switching undone before the diagnostics" in (out / "index.html").read_text()
    idata = az.from_netcdf(str(out / "gaussian-mixture-gibbs" / "gibbs.nc"))
    # the raw chains of this run name the clusters differently (chain 0's component 0 is chain
    # 1's component 2); relabelled, every draw names them as the reference draw (the last of
    # chain 0) does: no renaming of a draw's labels agrees with the reference's more often.
    # (R-hat of the relabelled means is no check: on these data the chains also visit
    # different partitions, and it ranges from 1.0 to 1.8 over seeds.)
    z = idata.posterior["z"].values
    reference = z[0, -1]
    for draw in z.reshape(-1, z.shape[-1]):
        own = int((draw == reference).sum())
        assert all(own >= int((np.asarray(perm)[draw] == reference).sum())
                   for perm in itertools.permutations(range(3)))


def test_mixture_num_components(tmp_path, capsys):
    out = _fit(["gaussian-mixture", "--method", "em", "--num-components", "2", "--n-init", "2"],
               tmp_path)
    idata = az.from_netcdf(str(out / "gaussian-mixture-em" / "em.nc"))
    assert idata.posterior["locs"].shape[2] == 2
    capsys.readouterr()
    assert main(["fit", "gaussian-mixture", "--method", "em", "--num-components", "1"]) == 2
    assert "expected an integer >= 2, got '1'" in _one_error_line(capsys)


@pytest.mark.parametrize("header", ["", "Unnamed: 0", "index"])
def test_a_saved_pandas_index_column_is_rejected(tmp_path, capsys, header):
    x = np.random.default_rng(0).normal(size=(20, 2))
    path = tmp_path / "points.csv"
    frame = pd.DataFrame(x, columns=["a", "b"])
    frame.insert(0, header, np.arange(20))
    frame.to_csv(path, index=False)
    assert main(["fit", "gaussian-mixture", "--method", "em", "--data", str(path)]) == 2
    line = _one_error_line(capsys)
    assert f"its first column ({header!r}) is a saved pandas index" in line
    assert line.count(str(path)) == 1


def test_a_first_column_that_is_data_is_kept(tmp_path):
    x = np.random.default_rng(0).normal(size=(30, 2))
    path = tmp_path / "points.csv"
    pd.DataFrame({"index": x[:, 0], "b": x[:, 1]}).to_csv(path, index=False)
    out = _fit(["gaussian-mixture", "--method", "em", "--data", str(path), "--n-init", "1"],
               tmp_path)
    idata = az.from_netcdf(str(out / "gaussian-mixture-em" / "em.nc"))
    assert idata.posterior["locs"].shape[-1] == 2


def test_bundled_names_are_the_help_text_names():
    from pyromodels.cli.parser import FIT_OPTIONS

    for name in list_crowd_datasets():
        assert name in FIT_OPTIONS["dataset"][2]


# ---------------------------------------------------------------- checkpoint and resume
def test_checkpointed_fit_interrupted_then_resumed_equals_the_uninterrupted_fit(tmp_path, capsys,
                                                                               monkeypatch):
    from pyromodels.core import GibbsSweep

    argv = ["gaussian-mixture", "--method", "gibbs", "--num-chains", "2", "--num-samples", "8",
            "--num-warmup", "4", "--seed", "3"]  # 12 sweeps per chain
    full = _fit(argv, tmp_path, "full")
    out = tmp_path / "cut"
    calls, sweep = [0], GibbsSweep.__call__

    def counted_sweep(self, *args):
        calls[0] += 1
        if calls[0] == 17:  # the second chain's fifth sweep: 4 are complete
            raise KeyboardInterrupt
        return sweep(self, *args)

    monkeypatch.setattr(GibbsSweep, "__call__", counted_sweep)
    # Ctrl-C: one line and status 130, with the last complete state saved
    assert main(["fit", *argv, "--checkpoint-every", "5", "--out", str(out),
                 "--no-progress"]) == 130
    err = capsys.readouterr().err.splitlines()  # the uninterrupted fit above may have warned
    assert [line for line in err if not line.startswith("pyromodels: warning: ")] == [
        "pyromodels: interrupted"]
    assert (out / "checkpoint.pt").is_file() and not (out / "index.html").exists()
    saved = json.loads((out / "checkpoint-args.json").read_text())
    assert saved["model"] == "gaussian-mixture" and saved["checkpoint_every"] == 5
    capsys.readouterr()
    calls[0] = 0
    assert main(["fit", "--resume", str(out), "--no-progress"]) == 0
    assert calls[0] == 24 - 16  # only the sweeps after the last complete one are run
    monkeypatch.undo()
    assert capsys.readouterr().out.strip() == f"report: {(out / 'index.html').resolve()}"
    a = az.from_netcdf(str(full / "gaussian-mixture-gibbs" / "gibbs.nc")).posterior
    b = az.from_netcdf(str(out / "gaussian-mixture-gibbs" / "gibbs.nc")).posterior
    assert set(a.data_vars) == set(b.data_vars)
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values)


def test_resume_errors(tmp_path, capsys):
    assert main(["fit", "--resume", str(tmp_path)]) == 2
    assert f"--resume: {tmp_path} holds no checkpointed fit" in _one_error_line(capsys)
    out = tmp_path / "run"
    _fit(["gaussian-mixture", "--method", "em", "--n-init", "1", "--checkpoint-every", "1"],
         tmp_path, "run")
    capsys.readouterr()
    assert main(["fit", "--resume", str(out), "--method", "gibbs"]) == 2
    assert (f"continues with the arguments saved in {out}: give no --method other than the saved"
            in _one_error_line(capsys))
    assert main(["fit", "gaussian-mixture", "--resume", str(out), "--method", "gibbs"]) == 2
    assert "give no --method other than the saved" in _one_error_line(capsys)
    assert main(["fit", "dawid-skene", "--resume", str(out)]) == 2
    assert "give no MODEL other than the saved" in _one_error_line(capsys)
    assert main(["fit", "--resume", str(out), "--seed", "5"]) == 2
    assert "the checkpointed fit has --seed 0, not 5" in _one_error_line(capsys)
    # the saved values given again are accepted
    assert main(["fit", "gaussian-mixture", "--resume", str(out), "--method", "em",
                 "--out", str(out), "--no-progress"]) == 0


# ---------------------------------------------------------------- the clustering models
def _points(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    points = np.concatenate([rng.normal(-4, 1, (25, 2)), rng.normal(4, 1, (25, 2))])
    path = tmp_path / "points.csv"
    np.savetxt(path, points, delimiter=",")
    return path


@pytest.mark.parametrize(("model", "options"), [
    ("ddpm", ["--rounds", "2"]),
    ("truncated-dp-mixture", ["--num-samples", "20", "--num-warmup", "20", "--truncation", "5"]),
])
def test_clustering_fits_write_labels_and_a_scatter_by_cluster(model, options, tmp_path):
    out = _fit([model, "--data", str(_points(tmp_path)), *options], tmp_path)
    labels = pd.read_csv(out / "labels.csv")
    assert labels.columns.tolist()[:2] == ["point", "cluster"]
    assert labels["point"].tolist() == list(range(50))
    metrics = read_metrics(out)[1]
    (name,) = metrics
    method = name.removeprefix(model + "-")
    assert metrics[name][method]["num_clusters"] == labels["cluster"].nunique()
    assert metrics[name][method]["largest_cluster"] == labels["cluster"].value_counts().max()
    # the two blobs, four standard deviations apart, are never put in one cluster
    first, second = labels["cluster"][:25], labels["cluster"][25:]
    assert not set(first) & set(second)
    assert "clusters" in (out / "index.html").read_text()


def test_truncated_gibbs_labels_are_not_shattered_by_label_switching_between_chains(tmp_path):
    """Chains start from their own k-means labelling, so component k of one chain is another
    cluster in the next: plug-in means pooled over chains shatter the clusters. The report
    reads the clusters at the best draw instead, which finds the three planted blobs."""
    rng = np.random.default_rng(1)
    centres = np.array([[-8.0, 0.0], [0.0, 8.0], [8.0, 0.0]])
    points = np.concatenate([rng.normal(c, 1.0, (30, 2)) for c in centres])
    path = tmp_path / "blobs.csv"
    np.savetxt(path, points, delimiter=",")
    out = _fit(["truncated-dp-mixture", "--data", str(path), "--num-chains", "4", "--num-samples", "10",
                "--num-warmup", "10", "--truncation", "6"], tmp_path)
    labels = pd.read_csv(out / "labels.csv")["cluster"].to_numpy()
    truth = np.repeat([0, 1, 2], 30)
    assert adjusted_rand_score(truth, labels) == 1.0


def test_options_of_other_engines_are_not_listed_and_are_one_line_errors(capsys):
    assert main(["fit", "ddpm", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--rounds" in text
    for option in ("--num-steps", "--max-iter", "--num-samples", "--num-chains", "--device"):
        assert option not in text
        assert main(["fit", "ddpm", option, "5"]) == 2
        assert f"{option} does not apply to method 'mcem'" in _one_error_line(capsys)


def test_list_shows_every_declared_model_within_100_columns(capsys):
    registry.load_builtin()
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 100
    rows = {line.split()[0]: line.split()[1] for line in lines[2:] if line[:1].strip()}
    for model in registry.infos():
        methods = [model.default_method + "*"] + [e for e in model.engines
                                                 if e != model.default_method]
        assert rows[model.name] == ",".join(methods)
    assert rows["truncated-dp-mixture"] == "gibbs*,svi"


def test_the_readme_table_and_list_agree_on_every_models_methods():
    registry.load_builtin()
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Models and engines", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) >= 3 and cells[1].startswith("`"):
            table[cells[1].strip("`")] = [m.strip(" `*") for m in cells[2].split(",")]
    for model in registry.infos():
        assert model.name in table, f"{model.name} is not in the README's table"
        assert set(table[model.name]) == set(model.engines), model.name
        assert table[model.name][0] == model.default_method, model.name
    assert set(table) == {m.name for m in registry.infos()}


def test_resume_on_a_data_file_changed_since_the_checkpoint_is_refused(tmp_path, capsys):
    answers, _ = load_crowd("bluebirds")
    path = tmp_path / "answers.csv"
    answers.to_csv(path, index=False)
    out = _fit(["dawid-skene", "--method", "gibbs", "--data", str(path), "--num-samples", "2",
                "--num-warmup", "1", "--num-chains", "1", "--checkpoint-every", "1"],
               tmp_path, "run")
    capsys.readouterr()
    labels = sorted(answers["label"].unique())
    answers.loc[0, "label"] = labels[1] if answers.loc[0, "label"] == labels[0] else labels[0]
    answers.to_csv(path, index=False)  # the same items, workers and classes: one label changed
    assert main(["fit", "--resume", str(out), "--no-progress"]) == 2
    assert "resume: the checkpoint was written for other data" in _one_error_line(capsys)


def test_bhmc_command_clusters_data_alike_in_any_units(tmp_path):
    """``pyromodels fit bhmc`` on a user's CSV takes the data's units by default: the same
    points at 1e-8 times their size give the same leaves, not one cluster."""
    rng = np.random.default_rng(2)
    points = np.concatenate([rng.normal(c, 0.5, (15, 2)) for c in ([-4.0, 0.0], [4.0, 0.0])])
    found = []
    for factor in (1.0, 1e-8):
        path = tmp_path / f"points{factor}.csv"
        np.savetxt(path, points * factor, delimiter=",")
        out = _fit(["bhmc", "--data", str(path), "--num-samples", "30", "--num-warmup", "30",
                    "--num-chains", "1", "--seed", "3"], tmp_path / f"run{factor}")
        paths = pd.read_csv(out / "paths.csv")
        found.append(paths.iloc[:, -1].to_numpy())  # each datum's leaf
    assert len(set(found[0])) > 1
    assert adjusted_rand_score(found[0], found[1]) == 1.0


def test_a_warning_during_a_fit_is_one_line_on_standard_error(tmp_path, capsys):
    """A fit's warnings reach the command line's user as ``pyromodels: warning: ...`` lines, one
    per warning, as its errors do, not as Python's two-line form naming a library line."""
    out = tmp_path / "r"
    assert main(["fit", "gaussian-mixture", "--method", "gibbs", "--num-samples", "10",
                 "--num-warmup", "5", "--out", str(out), "--no-progress"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err, "ten draws per chain must draw a sampling warning"
    assert all(line.startswith("pyromodels: warning: ") for line in err), err
