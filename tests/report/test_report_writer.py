"""The report writer: page content and escaping, metrics.json, NetCDF files, figure handling."""

from __future__ import annotations

import base64
import io
import json
import re
import warnings

import arviz as az
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from pyromodels.core import Posterior  # noqa: E402
from pyromodels.report import (  # noqa: E402
    DemoResult,
    final_values,
    flatten_metrics,
    read_metrics,
    result_from_posterior,
    scalar_diagnostics,
    write_report,
)


def _figure(width=3.0, height=2.0):
    fig, ax = plt.subplots(figsize=(width, height))
    ax.plot([0.0, 1.0, 2.0], [1.0, 0.0, 1.0])
    return fig


def _draws(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(2, 50))


def _two_results():
    hostile = DemoResult(
        name="hostile",
        summary="<script>alert(1)</script> & friends\n\nSecond paragraph.",
        metrics={"svi": {"elbo": -12.5, "converged": True}, "note": "<b>bold</b>"},
        tables={"cells <i>": pd.DataFrame({"col<x>": ["<td>", "a&b"], "value": [0.125, 2.5]})},
        figures={"curve & caption": _figure()},
        inference_data={"svi": az.from_dict(posterior={"a": _draws(0)})},
    )
    plain = DemoResult(
        name="plain",
        summary="Plain.",
        metrics={"nuts": {"ess": np.float32(812.5), "rhat": float("nan")}},
        inference_data={
            "nuts": az.from_dict(posterior={"b": _draws(1)}),
            "gibbs": az.from_dict(posterior={"b": _draws(2)}),
        },
    )
    return [hostile, plain]


def _embedded_pngs(html: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', html)]


def test_report_files_and_round_trips(tmp_path):
    results = _two_results()
    figure = results[0].figures["curve & caption"]
    index = write_report(results, tmp_path / "out", "Toy <report>")
    out = tmp_path / "out"
    assert index == (out / "index.html").resolve()
    html = index.read_text(encoding="utf-8")

    # metrics.json holds every result's metrics; numpy scalars become plain numbers, and NaN
    # becomes null (strict JSON, readable by any JSON parser).
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert list(metrics) == ["hostile", "plain", "_report"]  # the run record last
    assert metrics["hostile"] == {"svi": {"elbo": -12.5, "converged": True}, "note": "<b>bold</b>"}
    assert metrics["plain"]["nuts"]["ess"] == 812.5
    assert metrics["plain"]["nuts"]["rhat"] is None

    # Each InferenceData comes back bit for bit from its NetCDF file.
    for name, engine, seed in [("hostile", "svi", 0), ("plain", "nuts", 1), ("plain", "gibbs", 2)]:
        back = az.from_netcdf(str(out / name / f"{engine}.nc"))
        variable = "a" if name == "hostile" else "b"
        np.testing.assert_array_equal(back.posterior[variable].values, _draws(seed))
        assert f'href="{name}/{engine}.nc"' in html

    # The figure is embedded as a decodable PNG of the figure's size (3 x 2 inches at 100 dpi,
    # give or take the tight bounding box), and the figure has been closed.
    (png,) = _embedded_pngs(html)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    image = plt.imread(io.BytesIO(png))
    assert abs(image.shape[1] - 300) < 60 and abs(image.shape[0] - 200) < 60
    assert not plt.fignum_exists(figure.number)

    # Title, captions, versions and sections are all there.
    assert "<title>Toy &lt;report&gt;</title>" in html
    assert "<figcaption>curve &amp; caption</figcaption>" in html
    assert "<figcaption>cells &lt;i&gt;</figcaption>" in html
    assert re.search(r"<td[^>]*>pyro-ppl</td><td>\d", html)
    assert '<section id="hostile">' in html and '<section id="plain">' in html
    assert "<p>Second paragraph.</p>" in html


def test_all_text_is_escaped(tmp_path):
    html = write_report(_two_results(), tmp_path, "t").read_text(encoding="utf-8")
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; friends" in html
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "col&lt;x&gt;" in html and "&lt;td&gt;" in html and "a&amp;b" in html
    # Table numbers are printed with four significant digits.
    assert ">0.125<" in html and ">2.5<" in html


@pytest.mark.parametrize(
    ("results", "error", "message"),
    [
        ([], ValueError, "results must hold at least one DemoResult"),
        ("abc", TypeError, "results must be a list of DemoResult, got str"),
        ([{"name": "x"}], TypeError, r"results\[0\] must be a DemoResult, got dict"),
        ([DemoResult("x"), DemoResult("x")], ValueError, "'x' appears twice"),
    ],
)
def test_bad_results_are_rejected(tmp_path, results, error, message):
    with pytest.raises(error, match=message):
        write_report(results, tmp_path, "t")
    assert not (tmp_path / "index.html").exists()


def test_bad_destination_is_rejected_and_figures_still_closed(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    result = DemoResult("r", figures={"f": _figure()})
    with pytest.raises(ValueError, match="out_dir must be a directory, but .*a-file is a file"):
        write_report([result], target, "t")
    assert not plt.fignum_exists(result.figures["f"].number)
    with pytest.raises(TypeError, match="out_dir must be a path"):
        write_report([DemoResult("r")], 3, "t")
    with pytest.raises(TypeError, match="title must be a string, got NoneType"):
        write_report([DemoResult("r")], tmp_path, None)


def test_read_metrics(tmp_path):
    write_report([DemoResult("r", metrics={"em": {"ll": -3.25}})], tmp_path, "t")
    index, metrics = read_metrics(tmp_path)
    assert index == (tmp_path / "index.html").resolve()
    assert metrics == {"r": {"em": {"ll": -3.25}}}
    (tmp_path / "metrics.json").unlink()
    with pytest.raises(FileNotFoundError, match="metrics.json not found"):
        read_metrics(tmp_path)
    with pytest.raises(FileNotFoundError, match="index.html not found"):
        read_metrics(tmp_path / "missing")


def test_flatten_metrics_keeps_order_and_paths():
    rows = flatten_metrics({"b": {"y": 1, "x": {"deep": 2.0}}, "a": "s"})
    assert rows == [("b / y", 1), ("b / x / deep", 2.0), ("a", "s")]


def test_final_values_and_scalar_diagnostics():
    nan = float("nan")
    assert final_values(torch.tensor([5.0, 4.0, 3.5])) == 3.5
    assert final_values(torch.tensor([[3.0, 2.0, nan], [4.0, 1.5, 1.0], [nan, nan, nan]])) == [
        2.0,
        1.0,
        None,
    ]
    with pytest.raises(ValueError, match=r"losses must be \(iter,\) or \(restart, iter\)"):
        final_values(torch.zeros(2, 2, 2))
    diagnostics = {
        "converged": True,
        "n_iter": 12,
        "lp": torch.tensor(-3.5),
        "trace": torch.ones(3),
    }
    assert scalar_diagnostics(diagnostics) == {"converged": True, "n_iter": 12, "lp": -3.5}


def test_result_from_posterior(tmp_path):
    gen = torch.Generator().manual_seed(0)
    draws = torch.randn(2, 40, dtype=torch.float64, generator=gen)
    posterior = Posterior(
        samples={"mu": draws},
        method="svi",
        losses=torch.linspace(10.0, 2.0, 25, dtype=torch.float64),
        diagnostics={"converged": True},
        attrs={"seed": 7, "wall_time_s": 0.5},
    )
    with warnings.catch_warnings():
        # R-hat and ESS are not SVI diagnostics: the report neither computes nor prints them
        warnings.simplefilter("error")
        result = result_from_posterior(posterior, "toy-svi")
    assert result.metrics == {
        "svi": {
            "num_chains": 2,
            "num_draws": 40,
            "seed": 7,
            "wall_time_s": 0.5,
            "final_objective": 2.0,
            "converged": True,
        }
    }
    table = result.tables["posterior summary"]
    # ArviZ rounds the summary's mean to two decimals, hence the 0.005 tolerance.
    assert table.loc["mu", "mean"] == pytest.approx(float(draws.mean()), abs=0.005)
    np.testing.assert_array_equal(result.inference_data["svi"].posterior["mu"].values, draws)
    assert list(result.figures) == ["optimisation trace"]
    assert not {"r_hat", "ess_bulk", "ess_tail"} & set(table.columns)
    first, note = result.summary.split("\n\n")
    assert "toy-svi fitted with svi: 2 chain(s) of 40 draw(s), seed 7 in 0.50 s." == first
    assert "R-hat and ESS say nothing about an SVI fit" in note
    index = write_report([result], tmp_path, "fit")
    assert len(_embedded_pngs(index.read_text(encoding="utf-8"))) == 1
    with pytest.raises(ValueError, match="name must start with a letter or digit"):
        result_from_posterior(posterior, "bad name")


def test_a_point_estimate_gets_its_values_not_a_summary_of_one_draw():
    weights = torch.tensor([0.25, 0.75], dtype=torch.float64)
    posterior = Posterior(
        samples={"weights": weights.reshape(1, 1, 2), "scale": torch.tensor([[2.5]]),
                 "z": torch.tensor([[[0, 1, 1]]])},
        method="em",
        losses=torch.tensor([-3.0, -2.0]),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no R-hat warning, no degrees-of-freedom warning
        result = result_from_posterior(posterior, "toy-em")
    table = result.tables["point estimate"]
    assert list(table.index) == ["weights[0]", "weights[1]", "scale"]  # the labels z are left out
    assert table["estimate"].tolist() == [0.25, 0.75, 2.5]
