"""Table 1 as transcribed, and the DDPM-minus-DPM table derived from it (paper notes 7.1)."""

import pandas as pd
import pytest

from pyromodels.experiments.ddpm.paper_numbers import (
    BOLD,
    DATASETS,
    METHODS,
    METRICS,
    TABLE_1,
    ddpm_minus_dpm,
    table_1_frame,
)


def test_table_is_complete():
    frame = table_1_frame()
    assert len(frame) == len(DATASETS) * len(METRICS) * len(METHODS) == 140
    assert not frame.value.isna().any()
    assert frame.bold.sum() == len(BOLD) == 6


@pytest.mark.parametrize(
    "dataset, metric, method, value",
    [
        ("HAR", "F score", "KMeans^dp", 0.4831),
        ("HAR", "K", "GMeans", 234),
        ("MNIST", "ARI", "DDPM", 0.6106),
        ("MNIST", "K", "DDPM", 81),
        ("STL-10", "ACC*", "DEC^ddp", 0.69),
        ("STL-10", "V score", "DEC^ddp", 0.6607),
        ("REU-10K", "V score", "DPM", 0.3138),
        ("REU-10K", "K", "GMeans", 252),
    ],
)
def test_cells(dataset, metric, method, value):
    assert TABLE_1[dataset][metric][method] == value


def test_k_columns_follow_their_source():
    # KMeans^dp and DEC^dp use DPM's K; the ddp columns use DDPM's K
    for ds in DATASETS:
        k = TABLE_1[ds]["K"]
        assert k["KMeans^dp"] == k["DEC^dp"] == k["DPM"]
        assert k["KMeans^ddp"] == k["DEC^ddp"] == k["DDPM"]


def test_ddpm_minus_dpm_matches_the_notes():
    notes = pd.DataFrame(
        [[0.1153, 0.1058, 0.1289, 0.0116], [0.1749, 0.0573, 0.1799, 0.0479],
         [-0.0021, -0.0119, -0.0027, -0.0285], [0.1207, 0.0605, 0.1590, 0.0055]],
        index=list(DATASETS), columns=list(METRICS[:-1]),
    )
    diff = ddpm_minus_dpm()
    assert list(diff.columns) == list(METRICS[:-1]) and list(diff.index) == list(DATASETS)
    assert (diff - notes).abs().to_numpy().max() < 1e-9


def test_bold_cells_are_row_maxima():
    # every cell the text kept bold is the best of its row
    for ds, metric, method in BOLD:
        assert TABLE_1[ds][metric][method] == max(TABLE_1[ds][metric].values())
