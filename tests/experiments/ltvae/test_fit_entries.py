"""``pyromodels fit latent-tree`` and ``fit ltvae``: what they read (a checked numeric CSV)
and what they write (labels.csv with one column per latent node, the BIC, the tree)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from pyromodels.cli import main
from pyromodels.data import load_pltm_uci
from pyromodels.experiments.ltvae.tables import read_points
from pyromodels.experiments.ltvae.tree_entry import loader as tree_loader


def _two_groups(seed: int = 0) -> np.ndarray:
    """20 + 20 points in 3 columns, the groups 16 standard deviations apart in column 0."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1.0, (40, 3))
    x[20:, 0] += 16.0
    return x


def _fit(argv: list[str], capsys) -> None:
    status = main(["fit", *argv, "--no-progress"])
    assert status == 0, capsys.readouterr().err


def _metrics(out, model: str, method: str) -> dict:
    return json.loads((out / "metrics.json").read_text())[f"{model}-{method}"][method]


def test_latent_tree_writes_labels_bic_and_tree(tmp_path, capsys):
    x = _two_groups()
    pd.DataFrame(x, columns=["a", "b", "c"]).to_csv(tmp_path / "x.csv", index=False)
    out = tmp_path / "report"
    _fit(["latent-tree", "--data", str(tmp_path / "x.csv"), "--cardinality", "2",
          "--n-init", "3", "--out", str(out)], capsys)
    labels = pd.read_csv(out / "labels.csv")
    assert labels.columns.tolist() == ["point", "Y"]
    assert labels["point"].tolist() == list(range(40))
    y = labels["Y"].to_numpy()
    assert len(set(y[:20])) == 1 and len(set(y[20:])) == 1 and y[0] != y[20]
    metrics = _metrics(out, "latent-tree", "em")
    # one node of 2 states over 3 leaves: 1 weight, 2 x 3 means, 2 x 3 variances
    assert metrics["bic"] == pytest.approx(metrics["log_likelihood"] - 0.5 * 13 * math.log(40))
    assert metrics["num_clusters.Y"] == 2
    html = (out / "index.html").read_text()
    assert 'alt="tree"' in html and 'alt="clusters"' in html


def test_latent_tree_standardises_the_columns(tmp_path, capsys):
    """Rescaling a column changes nothing: the tree sees standardised columns."""
    x = _two_groups(seed=1)
    x[:, 0] *= 0.001  # without standardising, this column would fall under the variance floor
    np.savetxt(tmp_path / "x.csv", x, delimiter=",")
    np.savetxt(tmp_path / "scaled.csv", x * [1000.0, 1.0, 50.0], delimiter=",")
    found = []
    for name in ("x", "scaled"):
        out = tmp_path / name
        _fit(["latent-tree", "--data", str(tmp_path / f"{name}.csv"), "--cardinality", "2",
              "--out", str(out)], capsys)
        found.append((pd.read_csv(out / "labels.csv")["Y"].to_numpy(),
                      _metrics(out, "latent-tree", "em")["log_likelihood"]))
    (y, ll), (y_scaled, ll_scaled) = found
    assert np.array_equal(y, y_scaled) and ll == pytest.approx(ll_scaled)
    assert len(set(y[:20])) == 1 and y[0] != y[20]


def test_latent_tree_default_data_is_iris(tmp_path, capsys):
    assert tree_loader(None).shape == (150, 4)
    out = tmp_path / "iris"
    _fit(["latent-tree", "--out", str(out)], capsys)
    labels = pd.read_csv(out / "labels.csv")
    assert labels.shape == (150, 2) and labels["Y"].between(0, 2).all()
    # the setosa flowers, far from the others in the petal columns, form a cluster of their own
    species = load_pltm_uci("iris").classes.to_numpy()
    setosa = labels["Y"].to_numpy()[species == "Iris-setosa"]
    assert len(set(setosa)) == 1
    assert (labels["Y"].to_numpy() == setosa[0]).sum() == 50


def test_ltvae_writes_one_column_per_facet_and_the_tree(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x = (rng.random((60, 6)) < np.where(np.arange(60)[:, None] < 30, 0.9, 0.1)).astype(int)
    np.savetxt(tmp_path / "x.csv", x, delimiter=",", fmt="%d")
    out = tmp_path / "report"
    _fit(["ltvae", "--data", str(tmp_path / "x.csv"), "--epochs", "2", "--batch-size", "20",
          "--latent-dim", "2", "--cardinality", "3", "--hidden-width", "8",
          "--hidden-layers", "1", "--lr", "0.01", "--out", str(out)], capsys)
    labels = pd.read_csv(out / "labels.csv")
    assert labels.columns.tolist() == ["point", "Y"]
    assert labels["point"].tolist() == list(range(60)) and labels["Y"].between(0, 2).all()
    html = (out / "index.html").read_text()
    assert "likelihood is bernoulli" in html  # 0/1 data: a Bernoulli decoder
    assert 'alt="tree"' in html
    assert _metrics(out, "ltvae", "svi")["num_facets"] == 1


def test_ltvae_default_data(tmp_path, capsys):
    out = tmp_path / "default"
    _fit(["ltvae", "--epochs", "1", "--hidden-width", "8", "--out", str(out)], capsys)
    labels = pd.read_csv(out / "labels.csv")
    assert labels.columns.tolist() == ["point", "Y"] and len(labels) == 500
    assert "likelihood is normal" in (out / "index.html").read_text()


def test_ltvae_search_east_learns_the_structure_between_epochs(tmp_path, capsys):
    """``--search east --search-every 1`` searches before epochs 1 and 2 of 3; the report's
    facets are the searched tree's nodes, and it says the searches ran."""
    from pyromodels.data import simulate_two_facets

    x, _ = simulate_two_facets(200, seed=0)
    np.savetxt(tmp_path / "x.csv", x.numpy(), delimiter=",")
    out = tmp_path / "report"
    _fit(["ltvae", "--data", str(tmp_path / "x.csv"), "--epochs", "3", "--batch-size", "50",
          "--latent-dim", "4", "--cardinality", "2", "--hidden-width", "16",
          "--search", "east", "--search-every", "1", "--out", str(out)], capsys)
    html = (out / "index.html").read_text()
    assert "learned by 2 structure search(es), before epoch(s) 1, 2" in html
    labels = pd.read_csv(out / "labels.csv")
    assert labels.columns[0] == "point" and len(labels) == 200
    assert _metrics(out, "ltvae", "svi")["num_facets"] == labels.shape[1] - 1


def test_ltvae_without_search_runs_none(tmp_path, capsys):
    out = tmp_path / "plain"
    _fit(["ltvae", "--epochs", "1", "--hidden-width", "8", "--out", str(out)], capsys)
    assert "structure search" not in (out / "index.html").read_text()


@pytest.mark.parametrize(("argv", "message"), [
    (["--search", "bic"], "expected one of east, got 'bic'"),
    (["--search-every", "2"], "--search-every sets how often the structure search runs: it "
                              "needs --search NAME"),
    (["--search", "east", "--search-every", "0"], "expected an integer >= 1"),
])
def test_ltvae_search_usage_errors(argv, message, capsys):
    assert main(["fit", "ltvae", *argv, "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def test_the_command_lines_searches_are_the_models():
    from pyromodels.cli.parser import SEARCHES as CLI_SEARCHES
    from pyromodels.ltvae.search import SEARCHES

    assert CLI_SEARCHES == SEARCHES


def test_search_options_do_not_apply_to_other_models(capsys):
    assert main(["fit", "latent-tree", "--search", "east", "--no-progress"]) == 2
    assert "--search does not apply to model 'latent-tree'" in capsys.readouterr().err


BAD_TABLES = {
    "text": ("a,b\n1,x\n2,3\n3,4\n", "'x' is not a number"),
    "nan": ("a,b\n1,nan\n2,3\n3,4\n", "'nan' is not finite"),
    "constant": ("a,b\n1,5\n2,5\n3,5\n", "constant column(s) 'b'"),
}


@pytest.mark.parametrize("model", ["latent-tree", "ltvae"])
@pytest.mark.parametrize("case", sorted(BAD_TABLES))
def test_bad_data_is_a_command_line_error(model, case, tmp_path, capsys):
    text, expected = BAD_TABLES[case]
    path = tmp_path / "bad.csv"
    path.write_text(text)
    assert main(["fit", model, "--data", str(path), "--no-progress",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"cannot load data for '{model}'" in err and expected in err
    assert not (tmp_path / "out" / "labels.csv").exists()


def test_a_headerless_constant_column_is_named_by_its_number(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("1,5\n2,5\n3,5\n")
    with pytest.raises(ValueError, match=r"constant column\(s\) '2'"):
        read_points(path)
