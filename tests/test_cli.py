"""The ``pyromodels`` command, driven through ``main(argv)`` against a fake registered model."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import arviz as az
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from pyromodels import registry  # noqa: E402
from pyromodels.cli import main  # noqa: E402
from pyromodels.core import Posterior  # noqa: E402
from pyromodels.registry import ModelEntry  # noqa: E402
from pyromodels.report import DemoResult, read_metrics  # noqa: E402

FAKE_METRICS = {"fake": {"accuracy": 0.875, "iterations": 12}, "note": "smoke"}


def _fake_draws() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(2, 50))


def _fake_demo(*, smoke: bool, progress: bool, seed: int) -> DemoResult:
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [seed, seed + 1])
    table = pd.DataFrame({"engine": ["fake"], "accuracy": [0.875]})
    metrics = json.loads(json.dumps(FAKE_METRICS))
    metrics["fake"]["smoke"] = smoke
    return DemoResult(
        name="fake-model",
        summary="A fake model for the command-line tests.",
        metrics=metrics,
        tables={"scores": table},
        figures={"line": fig},
        inference_data={"fake": az.from_dict(posterior={"a": _fake_draws()})},
    )


def _fake_reproduce(*, scale: str, progress: bool, seed: int) -> DemoResult:
    return DemoResult(name="fake-paper", metrics={"scale": scale, "seed": seed})


class _FakeModel:
    """Returns a posterior whose draws are a known function of the seed and the data."""

    def fit(self, data, method, seed, progress, **options):
        gen = torch.Generator().manual_seed(seed)
        num_samples = options.get("num_samples", 30)
        draws = data + torch.randn(2, num_samples, dtype=torch.float64, generator=gen)
        return Posterior(
            samples={"mu": draws}, method=method, attrs={"seed": seed, "wall_time_s": 0.01}
        )


def _fake_loader(path):
    if path is None:
        return 1.5
    text = Path(path).read_text().strip()
    return float(text)  # a ValueError on a malformed file


@pytest.fixture
def fake_registry(monkeypatch):
    """A registry holding only the fake models (the built-in index is not loaded)."""
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_DECLARED", {})
    monkeypatch.setattr(registry, "load_builtin", lambda: None)
    registry.register(
        ModelEntry(
            name="fake-model",
            title="Fake model",
            paper="Nobody (2024)",
            engines=("nuts", "em"),
            factory=_FakeModel,
            demo=_fake_demo,
            reproduce=_fake_reproduce,
            loader=_fake_loader,
        )
    )
    registry.register(
        ModelEntry(
            name="bare-model", title="Bare", paper="reference", engines=("svi",), factory=dict
        )
    )
    yield
    registry.unregister("fake-model")
    registry.unregister("bare-model")


def _report_path(stdout: str) -> Path:
    lines = stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("report: "), stdout
    return Path(lines[0].removeprefix("report: "))


def test_demo_writes_a_complete_report(fake_registry, tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--no-progress"]) == 0
    index = _report_path(capsys.readouterr().out)
    assert index.is_absolute() and index.is_file()
    assert index == (tmp_path / "index.html").resolve()
    html = index.read_text(encoding="utf-8")
    assert '<img src="data:image/png;base64,' in html
    assert "<figcaption>scores</figcaption>" in html and "<th>accuracy</th>" in html
    assert "<td>0.875</td>" in html
    _, metrics = read_metrics(tmp_path)  # metrics.json less its run record, checked whole
    assert metrics == {
        "fake-model": {**FAKE_METRICS, "fake": {**FAKE_METRICS["fake"], "smoke": False}}
    }
    idata = az.from_netcdf(str(tmp_path / "fake-model" / "fake.nc"))
    np.testing.assert_array_equal(idata.posterior["a"].values, _fake_draws())


def test_demo_options_reach_the_demo(fake_registry, tmp_path, capsys):
    argv = ["demo", "--out", str(tmp_path), "--smoke", "--seed", "4", "--only", "fake-model"]
    assert main(argv + ["--no-progress"]) == 0
    capsys.readouterr()
    assert (
        json.loads((tmp_path / "metrics.json").read_text())["fake-model"]["fake"]["smoke"] is True
    )
    assert "pyromodels demo (smoke)" in (tmp_path / "index.html").read_text()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--only", "nope"], "unknown model 'nope'; known models: bare-model, fake-model"),
        (["demo", "--only", "bare-model"], "model 'bare-model' has no demo"),
        (
            ["fit", "nope", "--method", "nuts"],
            "unknown model 'nope'; known models: bare-model, fake",
        ),
        (["fit", "fake-model", "--method", "svi"], "has no method 'svi'; its methods: nuts, em"),
        (["fit", "bare-model", "--method", "svi"], "'bare-model' has no data loader"),
        (["fit", "fake-model", "--method", "em", "--data", "/no/such/file"], "data file not found"),
        (["fit", "fake-model", "--method", "em", "--num-samples", "5"], "--num-samples does not"),
        (["reproduce", "bare-model"], "model 'bare-model' has no paper reproduction"),
        (["reproduce", "nope"], "unknown model 'nope'"),
    ],
)
def test_user_errors_exit_2_with_one_line(fake_registry, capsys, argv, message):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pyromodels: error: ")
    assert message in lines[0]


def test_malformed_data_file_exits_2(fake_registry, tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("not a number")
    assert main(["fit", "fake-model", "--method", "nuts", "--data", str(bad)]) == 2
    assert (
        f"cannot load data for 'fake-model' from {bad}: could not convert"
        in capsys.readouterr().err
    )


def test_argument_errors_return_2_instead_of_exiting(fake_registry, capsys):
    assert main(["reproduce", "fake-model", "--scale", "huge"]) == 2
    assert "invalid choice: 'huge'" in capsys.readouterr().err
    assert main(["fit", "fake-model", "--method", "nuts", "--num-samples", "0"]) == 2
    assert "expected an integer >= 1, got '0'" in capsys.readouterr().err
    assert main([]) == 2
    assert main(["--help"]) == 0


def test_list_shows_the_registered_models(fake_registry, capsys):
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split() for line in lines[:6]] == [
        ["NAME", "METHODS", "TITLE"], ["paper"],
        ["bare-model", "svi*", "Bare"], ["reference"],
        ["fake-model", "nuts*,em", "Fake", "model"], ["Nobody", "(2024)"]]
    assert "* the default method" in lines[7]


def test_fit_writes_the_report_of_one_fit(fake_registry, tmp_path, capsys):
    data = tmp_path / "data.txt"
    data.write_text("10.0\n")
    argv = ["fit", "fake-model", "--method", "nuts", "--data", str(data), "--seed", "3"]
    assert main(argv + ["--num-samples", "20", "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    index = _report_path(capsys.readouterr().out)
    assert index == (tmp_path / "r" / "index.html").resolve()
    # The stored draws are exactly what the fake model draws from this seed and data.
    expected = 10.0 + torch.randn(
        2, 20, dtype=torch.float64, generator=torch.Generator().manual_seed(3)
    )
    idata = az.from_netcdf(str(tmp_path / "r" / "fake-model-nuts" / "nuts.nc"))
    np.testing.assert_array_equal(idata.posterior["mu"].values, expected.numpy())
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert metrics["fake-model-nuts"]["nuts"]["num_draws"] == 20
    assert metrics["fake-model-nuts"]["nuts"]["seed"] == 3
    assert "posterior summary" in index.read_text()


def test_reproduce_and_report(fake_registry, tmp_path, capsys):
    out = tmp_path / "rep"
    argv = ["reproduce", "fake-model", "--scale", "medium", "--seed", "9", "--out", str(out)]
    assert main(argv + ["--no-progress"]) == 0
    index = _report_path(capsys.readouterr().out)
    assert read_metrics(out)[1] == {"fake-paper": {"scale": "medium", "seed": 9}}
    assert main(["report", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"report: {index}",
        "fake-paper",
        "  scale: medium",
        "  seed: 9",
    ]


def test_reproduce_all_runs_every_registered_reproduction(fake_registry, tmp_path, capsys):
    out = tmp_path / "all"
    assert main(["reproduce", "all", "--seed", "4", "--out", str(out), "--no-progress"]) == 0
    _report_path(capsys.readouterr().out)
    # bare-model has no reproduction, so only the fake model's result is in the report
    assert read_metrics(out)[1] == {"fake-paper": {"scale": "small", "seed": 4}}


def test_reproduce_at_an_unsupported_scale_exits_2(fake_registry, monkeypatch, tmp_path, capsys):
    entry = registry.get("fake-model")
    monkeypatch.setitem(registry._REGISTRY, "fake-model", replace(entry, scales=("small",)))
    assert main(["reproduce", "fake-model", "--scale", "paper", "--out", str(tmp_path)]) == 2
    assert "reproduces at scales ['small'], not 'paper'" in capsys.readouterr().err


def test_report_of_a_missing_directory_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert (
        err.strip()
        == f"pyromodels: error: no report in {tmp_path / 'missing'}: index.html not found"
    )


def test_module_entry_point_lists_models():
    done = subprocess.run(
        [sys.executable, "-m", "pyromodels", "list"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
