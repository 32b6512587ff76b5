"""The twelve PLTM-EAST ARFF tables (counts from their PROVENANCE.md) and the numeric-table
check at the latent-tree learner's boundary."""

from __future__ import annotations

import csv
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from pyromodels.data import PLTM_UCI_SETS, check_numeric_table, load_pltm_uci

# From PROVENANCE.md's table: rows, attributes excluding the class, class attribute, number of
# declared classes, and the class counts (by value where the table names the values, else
# as a multiset).
EXPECTED = {
    "glass": (214, 9, "Type", 7, [76, 70, 29, 17, 13, 9]),
    "ionosphere-a2removed": (351, 33, "class", 2, {"g": 225, "b": 126}),
    "iris": (150, 4, "class", 3, [50, 50, 50]),
    "nba_doug": (441, 18, "PS", 6,
                 {"PG": 96, "SF": 90, "PF": 88, "C": 85, "SG": 81, "NA": 1}),
    "segmentation.count-removed": (2310, 18, "class", 7, [330] * 7),
    "sonar": (208, 60, "Class", 2, {"Mine": 111, "Rock": 97}),
    "synY1-0.6": (1000, 9, "Y1", 3, [326, 323, 351]),
    "vechicle": (846, 18, "class", 4, {"bus": 218, "opel": 212, "saab": 217, "van": 199}),
    "wdbc": (569, 30, "diagnosis", 2, {"M": 212, "B": 357}),
    "wine-reordered": (178, 13, "class", 3, [59, 71, 48]),
    "yeast": (1484, 8, "class", 10,
              {"CYT": 463, "NUC": 429, "MIT": 244, "ME3": 163, "ME2": 51, "ME1": 44,
               "EXC": 35, "VAC": 30, "POX": 20, "ERL": 5}),
    "zernike": (2000, 47, "class", 10, [200] * 10),
}


def _plain_arff(path):
    """An independent reading of these simple files: attribute names and the data rows as
    comma-separated cells (class values may be single-quoted)."""
    names, rows, in_data = [], [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("%"):
            continue
        if in_data:
            rows.append(line)
        elif line.lower().startswith("@attribute"):
            names.append(line.split()[1].strip("'"))
        elif line.lower() == "@data":
            in_data = True
    return names, list(csv.reader(rows, quotechar="'"))


def test_the_names_are_the_twelve_files(shared_data):
    assert set(PLTM_UCI_SETS) == set(EXPECTED)
    on_disk = {p.stem for p in (shared_data / "pltm_uci").glob("*.arff")}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_set_matches_provenance_counts(use_shared_data, name):
    rows, n_features, class_attribute, n_declared, counts = EXPECTED[name]
    data = load_pltm_uci(name)
    assert data.name == name
    assert data.features.shape == (rows, n_features)
    assert (data.features.dtypes == np.float64).all()
    assert class_attribute not in data.features.columns
    assert data.classes.name == class_attribute and len(data.classes) == rows
    assert isinstance(data.classes.dtype, pd.CategoricalDtype)
    assert len(data.classes.cat.categories) == n_declared
    present = data.classes.value_counts()
    present = present[present > 0]
    if isinstance(counts, dict):
        assert present.to_dict() == counts
    else:
        assert sorted(present.tolist()) == sorted(counts)
    assert f"`{name}.arff`" in data.provenance and "no licence file" in data.provenance


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_set_equals_an_independent_reading(use_shared_data, name):
    names, cells = _plain_arff(use_shared_data / "pltm_uci" / f"{name}.arff")
    data = load_pltm_uci(name)
    assert list(data.features.columns) == names[:-1]
    expected = np.array([[float(c) for c in row[:-1]] for row in cells])
    np.testing.assert_array_equal(data.features.to_numpy(), expected)
    assert data.classes.astype(str).tolist() == [row[-1] for row in cells]


def test_glass_declares_a_type_that_never_occurs(use_shared_data):
    classes = load_pltm_uci("glass").classes
    assert classes.value_counts()["vehic wind non-float"] == 0


def test_single_letter_quoted_attribute_loses_its_quotes(use_shared_data):
    # glass.arff declares @attribute 'K' real; scipy keeps the quotes of one-letter names
    assert list(load_pltm_uci("glass").features.columns)[5] == "K"


def test_attribute_named_twice_is_refused(tmp_path):
    text = "@relation t\n@attribute 'K' numeric\n@attribute K numeric\n@attribute class {p}\n"
    (tmp_path / "iris.arff").write_text(text + "@data\n1,2,p\n3,4,p\n")
    with pytest.raises(ValueError, match=r"names an attribute twice"):
        load_pltm_uci("iris", path=tmp_path)


def test_nba_position_na_is_a_class_not_missing(use_shared_data):
    classes = load_pltm_uci("nba_doug").classes
    assert classes.isna().sum() == 0 and (classes == "NA").sum() == 1


def test_relation_keeps_the_weka_filter_history(use_shared_data):
    assert "Remove-R2" in load_pltm_uci("ionosphere-a2removed").relation


def test_unknown_name_lists_the_known_ones(use_shared_data):
    with pytest.raises(ValueError, match=r"name must be one of \['glass', .*'zernike'\], "
                                         r"got 'vehicle'"):
        load_pltm_uci("vehicle")


def test_missing_file_says_where_it_looked(no_data_env):
    with pytest.raises(FileNotFoundError, match=r"looked for iris\.arff in "
                                                r"\$PYROMODELS_DATA/pltm_uci: .*pltm_uci"):
        load_pltm_uci("iris")


def test_path_may_be_the_folder_or_the_file(shared_data, no_data_env):
    folder = shared_data / "pltm_uci"
    by_folder = load_pltm_uci("wine-reordered", path=folder)
    by_file = load_pltm_uci("wine-reordered", path=folder / "wine-reordered.arff")
    pd.testing.assert_frame_equal(by_folder.features, by_file.features)


def test_without_provenance_file_says_so(shared_data, tmp_path):
    (tmp_path / "iris.arff").write_bytes((shared_data / "pltm_uci" / "iris.arff").read_bytes())
    data = load_pltm_uci("iris", path=tmp_path)
    assert "no PROVENANCE.md beside" in data.provenance


_HEADER = "@relation t\n@attribute a numeric\n@attribute b {x,y}\n@attribute class {p,q}\n"


def test_non_numeric_attribute_other_than_the_class_is_refused(tmp_path):
    (tmp_path / "iris.arff").write_text(_HEADER + "@data\n1,x,p\n2,y,q\n")
    with pytest.raises(ValueError, match=r"every attribute but the class 'class' must be "
                                         r"numeric; not numeric: 'b' \(nominal\)"):
        load_pltm_uci("iris", path=tmp_path)


def test_class_value_outside_the_declared_ones_is_refused(tmp_path):
    text = "@relation t\n@attribute a numeric\n@attribute class {p,q}\n@data\n1,p\n2,?\n"
    (tmp_path / "iris.arff").write_text(text)
    with pytest.raises(ValueError, match=r"class attribute 'class' has 1 row\(s\) with "
                                         r"value\(s\) \['\?'\] outside its declared values"):
        load_pltm_uci("iris", path=tmp_path)


def test_missing_feature_value_is_refused(tmp_path):
    text = "@relation t\n@attribute a numeric\n@attribute class {p,q}\n@data\n1,p\n?,q\n3,q\n"
    (tmp_path / "iris.arff").write_text(text)
    with pytest.raises(ValueError, match=r"iris\.arff \(features\) must be finite: NaN or "
                                         r"infinite values in column\(s\) 'a' \(1 of 3 rows\)"):
        load_pltm_uci("iris", path=tmp_path)


def test_file_without_the_class_attribute_is_refused(tmp_path):
    (tmp_path / "iris.arff").write_text("@relation t\n@attribute a numeric\n@data\n1\n2\n")
    with pytest.raises(ValueError, match=r"has no attribute 'class', the class of 'iris'"):
        load_pltm_uci("iris", path=tmp_path)


def test_a_set_without_a_class_keeps_every_attribute(tmp_path, monkeypatch):
    import pyromodels.data.pltm_uci as module

    monkeypatch.setitem(module._CLASS_ATTRIBUTE, "iris", None)
    text = "@relation t\n@attribute a numeric\n@attribute b numeric\n@data\n1,5\n2,4\n"
    (tmp_path / "iris.arff").write_text(text)
    data = load_pltm_uci("iris", path=tmp_path)
    assert data.classes is None and list(data.features.columns) == ["a", "b"]


# check_numeric_table


def test_round_trip_from_a_dataframe():
    df = pd.DataFrame({"x": [1.5, -2.0, 3.25], "n": np.array([1, 2, 4], dtype=np.int32),
                       "m": pd.array([0.5, 1.0, 2.0], dtype="Float64")})
    values, names = check_numeric_table(df)
    assert names == ["x", "n", "m"] and values.dtype == np.float64
    assert values.flags.c_contiguous
    pd.testing.assert_frame_equal(pd.DataFrame(values, columns=names), df.astype(np.float64))


def test_values_are_a_copy_not_a_view():
    arr = np.array([[1.0, 2.0], [3.0, 5.0]])
    values, names = check_numeric_table(arr, name="x")
    values[0, 0] = 99.0
    assert arr[0, 0] == 1.0 and names == ["0", "1"]


def test_loaded_set_passes_the_check_unchanged(use_shared_data):
    features = load_pltm_uci("yeast").features
    values, names = check_numeric_table(features, name="yeast")
    np.testing.assert_array_equal(values, features.to_numpy())
    assert names == list(features.columns)


@pytest.mark.parametrize(
    "table, error, match",
    [
        (pd.DataFrame({"a": [1.0, 2.0], "label": ["p", "q"]}), TypeError,
         r"data must hold only integer or floating columns; not numeric: 'label' \((str|object)\)"),
        (pd.DataFrame({"a": [1.0, 2.0], "c": pd.Categorical(["p", "q"])}), TypeError,
         r"not numeric: 'c' \(category\)"),
        (pd.DataFrame({"a": [1.0, 2.0], "flag": [True, False]}), TypeError,
         r"not numeric: 'flag' \(bool\)"),
        (np.array([["1", "2"], ["3", "4"]]), TypeError,
         r"data must hold integer or floating numbers, got an array of dtype <U1"),
        (np.array([[1 + 1j, 2], [3, 4]]), TypeError, r"got an array of dtype complex128"),
        (np.array([1.0, 2.0, 3.0]), ValueError,
         r"data must be 2-dimensional \(rows x columns\), got shape \(3,\); a single column"),
        (pd.DataFrame({"a": [1.0, np.nan, np.inf, 4.0], "b": [1.0, 2.0, 3.0, np.nan],
                       "c": [1.0, 2.0, 3.0, 4.0]}), ValueError,
         r"data must be finite: NaN or infinite values in column\(s\) 'a' \(2 of 4 rows\), "
         r"'b' \(1 of 4 rows\)\. Remove"),
        (pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64")}), ValueError,
         r"column\(s\) 'a' \(1 of 3 rows\)"),
        (pd.DataFrame({"a": [1.0, 2.0, 3.0], "k": [7.0, 7.0, 7.0], "z": [0, 0, 0]}), ValueError,
         r"data has constant column\(s\) 'k', 'z': a Gaussian over a single value has no "
         r"density"),
        (pd.DataFrame({"a": [1.0]}), ValueError,
         r"data has 1 row; at least 2 rows are needed"),
        (pd.DataFrame({"a": []}, dtype=float), ValueError,
         r"data is empty: it has 0 row\(s\) and 1 column\(s\)"),
        (pd.DataFrame(index=range(3)), ValueError, r"data is empty: it has 3 row\(s\) and 0"),
        (np.empty((0, 0)), ValueError, r"data is empty"),
        (pd.DataFrame([[1.0, 2.0], [3.0, 4.0]], columns=["a", "a"]), ValueError,
         r"data has more than one column named 'a'"),
        (pd.DataFrame({"Unnamed: 0": [0, 1, 2], "a": [1.0, 2.0, 5.0]}), ValueError,
         r"data: its first column \('Unnamed: 0'\) is a saved pandas index"),
        (object(), ValueError, r"data must be 2-dimensional"),
    ],
)
def test_check_numeric_table_errors(table, error, match):
    with pytest.raises(error, match=match):
        check_numeric_table(table, name="data")


def test_long_lists_of_bad_columns_are_shortened():
    df = pd.DataFrame({f"c{j}": [1.0, 1.0] for j in range(13)})
    with pytest.raises(ValueError, match=r"'c9' and 3 more: a Gaussian"):
        check_numeric_table(df)


def test_class_values_are_the_declared_categories_in_order(use_shared_data):
    classes = load_pltm_uci("nba_doug").classes
    assert list(classes.cat.categories) == ["SG", "C", "PF", "PG", "SF", "NA"]
    assert Counter(classes.tolist())["PG"] == 96
