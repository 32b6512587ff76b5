"""The paper's transcribed tables: internal consistency checks that catch transcription slips."""

from __future__ import annotations

import pytest

from pyromodels.experiments.crowd.paper_numbers import (
    BOLD,
    PAPER_ERRORS,
    SUBSET_SCORES,
    TABLE_I,
    TABLE_I_METHODS,
    TABLE_II,
    TABLE_II_METHODS,
    table_i_frame,
    table_ii_frame,
)

# the two Table I entries the paper got wrong (see PAPER_ERRORS)
KNOWN_BAD = {("ner", "alg2"), ("ner", "single_best")}


def test_f_is_the_harmonic_mean_of_p_and_r_for_ner_and_bioie():
    """NER and Biomedical F = 2PR / (P + R) up to the printed two decimals (|error| <= 0.01),
    except the two known errors, which are far off; the per-sentence macro POS row is not."""
    for name in ("ner", "bioie"):
        scores = TABLE_I[name]["scores"]
        for method in TABLE_I_METHODS:
            p, r = scores["precision"][method], scores["recall"][method]
            gap = abs(scores["f_score"][method] - 2 * p * r / (p + r))
            assert (gap > 0.1) if (name, method) in KNOWN_BAD else (gap <= 0.01), (name, method)
    pos = TABLE_I["pos"]["scores"]
    gaps = [abs(pos["f_score"][m] - 2 * pos["precision"][m] * pos["recall"][m]
                / (pos["precision"][m] + pos["recall"][m])) for m in TABLE_I_METHODS]
    assert max(gaps) > 0.005
    assert any("0.89" in e for e in PAPER_ERRORS) and any("impossible" in e for e in PAPER_ERRORS)


def test_bold_marks_the_best_non_oracle_method():
    """Bold = the row's maximum over methods other than the single best learner, except the
    NER recall row, where the erroneous Alg. 2 recall (0.89) exceeds the bold 0.69."""
    for (name, metric), method in BOLD.items():
        if name in TABLE_I:
            row = TABLE_I[name]["scores"][metric]
        else:
            row = TABLE_II[name]["f_score"]
        rivals = {m: v for m, v in row.items() if m != "single_best"}
        if (name, metric) == ("ner", "recall"):
            assert max(rivals, key=rivals.get) == "alg2" and method == "alg2_alg1"
        else:
            assert max(rivals, key=rivals.get) == method, (name, metric)


def test_alg4_minus_ds_matches_the_spec():
    expected = {"cora": 0.2184, "citeseer": 0.0795, "pubmed": 0.0230, "music_genre": 0.2903,
                "sentence_polarity": 0.0024, "bu_bil": 0.001}
    frame = table_ii_frame()
    for name, diff in expected.items():
        assert frame.loc[name, "alg4"] - frame.loc[name, "ds"] == pytest.approx(diff, abs=1e-9)


def test_frames_and_sizes():
    assert list(table_i_frame("recall").columns) == list(TABLE_I_METHODS)
    assert table_i_frame("precision").loc["bioie", "mv"] == 0.89
    assert list(table_ii_frame().columns) == list(TABLE_II_METHODS)
    assert [TABLE_I[n]["N"] for n in ("pos", "ner", "bioie")] == [100_676, 78_107, 7_880_254]
    assert [TABLE_II[n]["N"] for n in TABLE_II] == [2708, 3312, 19717, 700, 5000, 28181]
    assert all(method == "single_best" for _, method in SUBSET_SCORES)
    with pytest.raises(ValueError, match="metric must be one of"):
        table_i_frame("accuracy")
