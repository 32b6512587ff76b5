"""The paper's recorded settings, claims and Table 1, against the paper and the vendored data."""

from collections import Counter

import pytest

from pyromodels.data import load_animals
from pyromodels.experiments.bhmc.paper_numbers import (
    ANIMAL_CLASS_NAMES,
    ANIMAL_CLASSES,
    C_VALUES_MENTIONED,
    FIGURES,
    HYPERPARAMETERS,
)
from pyromodels.experiments.bhmc.settings import (
    DATASETS,
    PROTOCOLS,
    SCALES,
    protocol_settings,
)


def test_table_1_names_are_the_vendored_rows():
    names = [n for n, _ in ANIMAL_CLASSES]
    assert len(names) == 33 == len(set(names))
    assert set(names) == set(load_animals().index)
    assert Counter(c for _, c in ANIMAL_CLASSES) == {
        "land mammals": 9, "predators": 5, "birds": 5, "water animals": 4, "insects": 4,
        "mouse": 2, "fish": 2, "amphibians": 2}
    assert sorted(ANIMAL_CLASS_NAMES) == sorted({c for _, c in ANIMAL_CLASSES})


def test_hyperparameters_as_stated():
    a, f = HYPERPARAMETERS["animals"], HYPERPARAMETERS["fashion_mnist"]
    assert (a.alpha, a.gamma, a.gamma0, a.depth, a.nu0, a.pca_dim, a.num_points) == (
        0.4, 1.0, 0.85, 3, 1.0, 7, 33)
    assert (f.alpha, f.gamma, f.gamma0, f.depth, f.nu0, f.pca_dim, f.num_points) == (
        0.2, 1.5, 0.85, 4, 1.0, 10, 100)
    assert C_VALUES_MENTIONED == (0.001, 0.01, 0.1, 1.0)


def test_every_figure_has_claims_and_its_protocol():
    assert list(FIGURES) == [f"fig{i}" for i in range(3, 11)]
    for fig in FIGURES.values():
        assert fig.dataset in ("animals", "fashion_mnist") and fig.protocol in PROTOCOLS
        assert fig.claims and all(isinstance(c, str) and c.endswith(".") for c in fig.claims)
    assert (FIGURES["fig4"].repeats, FIGURES["fig4"].draws) == (50, 15000)
    assert (FIGURES["fig8"].repeats, FIGURES["fig8"].draws) == (50, 20000)
    assert (FIGURES["fig5"].chains, FIGURES["fig5"].burn_in, FIGURES["fig5"].draws) == (5, 5000, 10000)
    assert (FIGURES["fig7"].chains, FIGURES["fig7"].draws) == (5, 15000)


@pytest.mark.parametrize("dataset", DATASETS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_scaled_runs_are_no_longer_than_the_paper(dataset, protocol):
    paper = protocol_settings(dataset, protocol, "paper")
    previous = 0
    for scale in SCALES[:-1]:
        run = protocol_settings(dataset, protocol, scale)
        cost = run.chains * run.repeats * (run.burn_in + run.draws) * (1 + len(run.settings))
        assert previous <= cost <= paper.chains * paper.repeats * (paper.burn_in + paper.draws) * (
            1 + len(paper.settings))
        assert not run.paper and run.protocol == protocol
        previous = cost


def test_paper_scale_values():
    fig6 = protocol_settings("animals", "f_measure", "paper")
    assert (fig6.chains, fig6.burn_in, fig6.draws, fig6.settings, fig6.paper) == (
        10, 5000, 10000, ((0.1, 1.0),), True)
    fig10 = protocol_settings("fashion_mnist", "f_measure", "paper")
    assert fig10.settings == ((0.1, 1.0),) and not fig10.paper  # unstated: Fig. 6's
    fig8 = protocol_settings("fashion_mnist", "sensitivity", "paper")
    assert (fig8.repeats, fig8.draws, fig8.selection) == (50, 20000, "last")
    assert (1.0, 1.0) in fig8.settings and (0.001, 1.0) in fig8.settings
    fig9 = protocol_settings("fashion_mnist", "case_study", "paper")
    assert (fig9.chains, fig9.burn_in, fig9.draws, fig9.paper) == (4, 5000, 10000, False)
    assert not protocol_settings("planted", "f_measure", "paper").paper


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("mnist", "f_measure", "small"), r"dataset must be one of \['animals', 'fashion_mnist'"),
        (("animals", "trees", "small"), r"protocol must be one of \['convergence'"),
        (("animals", "f_measure", "huge"), r"scale must be one of \['smoke', 'small'"),
    ],
)
def test_settings_bad_names(args, match):
    with pytest.raises(ValueError, match=match):
        protocol_settings(*args)
