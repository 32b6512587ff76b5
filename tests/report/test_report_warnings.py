"""A report says when a fit may have failed: bad R-hat, ESS or divergences, near-uniform worker
confusions, accuracy on gold below majority vote; and it defines its abbreviations."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from pyromodels.core import Posterior  # noqa: E402
from pyromodels.data import AnnotationTable  # noqa: E402
from pyromodels.report import DemoResult, render_page, result_from_posterior  # noqa: E402
from pyromodels.report.crowd import crowd_outputs, with_crowd_outputs  # noqa: E402
from pyromodels.report.fit_warnings import (  # noqa: E402
    ESS_PER_CHAIN,
    RHAT_LIMIT,
    WARNING_PREFIX,
    near_uniform_workers,
)
from pyromodels.report.glossary import abbreviations_in  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    matplotlib.pyplot.close("all")


def _posterior(shift: float, num_draws: int = 400, diverging=None, method="nuts") -> Posterior:
    """Two chains of independent N(0, 1) draws of ``mu``, the second moved by ``shift``."""
    g = torch.Generator().manual_seed(1)
    mu = torch.randn(2, num_draws, generator=g, dtype=torch.float64)
    mu[1] += shift
    stats = {"lp": torch.randn(2, num_draws, generator=g, dtype=torch.float64)}
    if diverging is not None:
        stats["diverging"] = diverging
    return Posterior(samples={"mu": mu}, method=method, sample_stats=stats,
                     attrs={"seed": 0, "wall_time_s": 1.0})


def _warnings(result) -> list[str]:
    return [p for p in result.summary.split("\n\n") if p.startswith(WARNING_PREFIX)]


def test_mixed_chains_give_no_warning():
    # 800 independent draws: R-hat about 1 (sd of split R-hat ~ 0.003) and ESS about 800
    result = result_from_posterior(_posterior(0.0), "fine")
    assert _warnings(result) == []
    assert "warnings" not in result.metrics["nuts"]


def test_chains_apart_warn_about_r_hat():
    # chains 3 sd apart: split R-hat is about sqrt(1 + 9/4) = 1.8, far above 1.01
    result = result_from_posterior(_posterior(3.0), "apart")
    (line,) = [w for w in _warnings(result) if "R-hat" in w]
    assert "at mu" in line and f"above {RHAT_LIMIT}" in line
    assert result.metrics["nuts"]["warnings"][0] == line[len(WARNING_PREFIX):]


def test_few_draws_warn_about_ess():
    # 40 independent draws per chain: ESS about 80, below 100 per chain = 200
    result = result_from_posterior(_posterior(0.0, num_draws=40), "short")
    lines = [w for w in _warnings(result) if "effective sample size" in w]
    assert len(lines) == 2  # bulk and tail
    assert f"below {2 * ESS_PER_CHAIN}" in lines[0]


def test_divergences_warn():
    diverging = torch.zeros(2, 400, dtype=torch.bool)
    diverging[0, :3] = True
    result = result_from_posterior(_posterior(0.0, diverging=diverging), "divergent")
    (line,) = [w for w in _warnings(result) if "diverged" in w]
    assert line.startswith(WARNING_PREFIX + "3 of 800 transitions diverged")


@pytest.mark.parametrize("active", [0, 1])
def test_a_fit_without_active_latent_units_warns_of_posterior_collapse(active):
    fit = Posterior(samples={"pi": torch.full((1, 1, 2), 0.5, dtype=torch.float64)},
                    method="svi", losses=torch.linspace(3.0, 1.0, 5, dtype=torch.float64),
                    diagnostics={"active_units": active, "latent_dim": 4},
                    attrs={"seed": 0, "wall_time_s": 1.0})
    lines = [w for w in _warnings(result_from_posterior(fit, "vae")) if "collapse" in w]
    if active:
        assert lines == []
    else:
        (line,) = lines
        assert line.startswith(WARNING_PREFIX + "posterior collapse: 0 of 4 latent units")


def test_one_chain_has_no_rank_plot_but_two_do():
    one = Posterior(samples={"mu": torch.randn(1, 50, dtype=torch.float64)}, method="gibbs",
                    attrs={"seed": 0})
    assert not [c for c in result_from_posterior(one, "one").figures if "rank" in c]
    assert [c for c in result_from_posterior(_posterior(0.0), "two").figures if "rank" in c]
    from pyromodels.diagnostics import plot_rank

    with pytest.raises(ValueError, match="needs at least two"):
        plot_rank(one, var_names=["mu"])


@pytest.mark.parametrize("num_chains", [1, 3])
def test_trace_plot_legend_has_one_entry_per_chain(num_chains):
    from pyromodels.diagnostics import plot_trace

    g = torch.Generator().manual_seed(0)
    post = Posterior(samples={"z": torch.randint(0, 3, (num_chains, 30, 8), generator=g)},
                     method="gibbs",
                     sample_stats={"lp": torch.randn(num_chains, 30, generator=g)})
    fig = plot_trace(post)
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1
    texts = [t.get_text() for t in legends[0].get_texts()]
    assert texts == [f"chain {c}" for c in range(num_chains)]
    # the legend's line styles are those of the chains' lines in the trace axis
    lp_trace = next(ax for ax in fig.axes if ax.get_ylabel() == "lp" and ax.get_lines())
    drawn = [line.get_linestyle() for line in lp_trace.get_lines()]
    shown = [line.get_linestyle() for line in legends[0].get_lines()]
    assert drawn == shown


@pytest.fixture
def table():
    # 6 tasks, 3 workers, 2 classes; majority vote gets tasks 0-4 right (gold below)
    rows = [(t, w, lab) for t, labs in enumerate(
        [("x", "x", "y"), ("x", "x", "x"), ("y", "y", "x"), ("y", "y", "y"), ("x", "y", "x"),
         ("y", "x", "x")]) for w, lab in zip(("u", "v", "w"), labs)]
    return AnnotationTable.from_dataframe(pd.DataFrame(rows, columns=["task", "worker", "label"]))


def _gold():
    return pd.Series(["x", "x", "y", "y", "x", "y"], index=range(6))


def test_report_prints_the_majority_vote_baseline_and_warns_when_below(table):
    gold, majority = _gold(), table.vote_counts().argmax(-1)
    assert (table.decode_classes(majority) == gold.to_numpy()).sum() == 5
    good = torch.eye(2, dtype=torch.float64).expand(3, 2, 2) * 0.6 + 0.2
    wrong = torch.tensor([[0.0, 1.0]] * 6, dtype=torch.float64)  # every task "y": 3 of 6 right
    base = DemoResult("crowd-fit", "Fitted.", {"gibbs": {"num_chains": 2}})
    out = crowd_outputs(table, wrong, good, gold=gold, majority=majority)
    assert out.metrics["majority_vote"]["accuracy"] == pytest.approx(5 / 6)
    result = with_crowd_outputs(base, out, "gibbs")
    assert "Majority vote (the baseline) on the same tasks: accuracy 0.833" in result.summary
    assert result.tables["scores against gold"].index.tolist() == [
        "gibbs", "majority vote (baseline)"]
    (line,) = _warnings(result)
    assert "accuracy on gold (0.500) is below majority vote's (0.833)" in line
    # the fit that matches majority vote gets the baseline line and no warning
    right = torch.nn.functional.one_hot(majority, 2).double()
    fine = with_crowd_outputs(base, crowd_outputs(table, right, good, gold=gold,
                                                  majority=majority), "gibbs")
    assert "Majority vote (the baseline)" in fine.summary and _warnings(fine) == []
    with pytest.raises(ValueError, match="majority must hold one integer class code per task"):
        crowd_outputs(table, right, good, gold=gold, majority=majority[:3])


def test_near_uniform_worker_confusions_warn(table):
    probs = torch.full((6, 2), 0.5, dtype=torch.float64)
    clear = torch.tensor([[0.9, 0.1], [0.2, 0.8]], dtype=torch.float64)
    flat = torch.tensor([[0.55, 0.45], [0.48, 0.52]], dtype=torch.float64)  # TV 0.05, 0.02
    one = crowd_outputs(table, probs, torch.stack([clear, clear, flat]))
    (line,) = one.warnings
    assert line.startswith("1 of 3 worker confusion matrices are near uniform")
    assert "workers w)" in line and "failed" not in line
    most = crowd_outputs(table, probs, torch.stack([flat, clear, flat]))
    assert "the fit has most likely failed" in most.warnings[0]
    assert crowd_outputs(table, probs, torch.stack([clear] * 3)).warnings == []
    # every row must be near uniform: one row 0.12 away (total variation) is enough to count
    assert near_uniform_workers(np.array([[[0.62, 0.38], [0.5, 0.5]],
                                          [[0.58, 0.42], [0.5, 0.5]]])).tolist() == [False, True]


def test_warnings_stay_after_the_crowd_text(table):
    base = result_from_posterior(_posterior(3.0, method="gibbs"), "crowd-fit")
    probs = torch.full((6, 2), 0.5, dtype=torch.float64)
    conf = torch.tensor([[0.9, 0.1], [0.2, 0.8]], dtype=torch.float64).expand(3, 2, 2)
    result = with_crowd_outputs(base, crowd_outputs(table, probs, conf), "gibbs")
    paragraphs = result.summary.split("\n\n")
    first_warning = next(i for i, p in enumerate(paragraphs) if p.startswith(WARNING_PREFIX))
    assert all(p.startswith(WARNING_PREFIX) for p in paragraphs[first_warning:])
    assert "labels.csv" in " ".join(paragraphs[:first_warning])


def test_page_highlights_warnings_and_defines_abbreviations():
    result = DemoResult("bhmc-fit", "BHMC fitted.\n\nWarning: R-hat reaches 1.3.",
                        {"gibbs": {"criterion": "cdl"}})
    result.tables["CDL per chain"] = pd.DataFrame({"CDL": [1.0]})
    page = render_page([result], "t", "now", {}, {"bhmc-fit": {"gibbs": "x.nc"}})
    assert '<p class="warning">Warning: R-hat reaches 1.3.</p>' in page
    defined = page[page.index("<h3>Abbreviations</h3>"):]
    for abbr in ("CDL", "R-hat", "NetCDF", "BHMC"):
        assert f"<dt>{abbr}</dt>" in defined
    assert "<dt>RCDL</dt>" not in defined  # not used in this section


def test_glossary_matches_whole_words_only():
    assert [a for a, _ in abbreviations_in("RCDL and DDPM, macro-F1")] == ["DDPM", "F1", "RCDL"]
    assert abbreviations_in("EMBER, MVP and nothing else") == []


def test_pairwise_worker_warning_names_workers_at_or_below_chance():
    from pyromodels.report.fit_warnings import pairwise_worker_warnings

    assert pairwise_worker_warnings(["a", "b"], [4.4, 0.1]) == []
    lines = pairwise_worker_warnings(["a", "b", "c"], [4.4, 0.0, -2.0])
    assert len(lines) == 1 and lines[0].startswith("2 of 3 workers") and "(b, c)" in lines[0]


def test_a_clustering_fit_whose_code_says_less_than_a_bit_warns_of_posterior_collapse():
    """Three active units but the ``collapsed`` flag of a code below one bit (0.096 nats, the
    figure of a collapsed BayesSCDC fit on the digits): the report says so."""
    fit = Posterior(samples={"pi": torch.full((1, 1, 2), 0.5, dtype=torch.float64)},
                    method="natgrad", losses=torch.linspace(3.0, 1.0, 5, dtype=torch.float64),
                    diagnostics={"active_units": 3, "latent_dim": 8, "code_information": 0.096,
                                 "collapsed": True},
                    attrs={"seed": 0, "wall_time_s": 1.0})
    (line,) = [w for w in _warnings(result_from_posterior(fit, "bayes")) if "collapse" in w]
    assert line.startswith(WARNING_PREFIX + "posterior collapse: the items' latent posteriors "
                                            "carry at most 0.096 nats")
