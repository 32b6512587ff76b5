"""AnnotationTable ids that look alike: mixed kinds are refused, padded strings are named,
a categorical label column keeps its declared classes."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from pyromodels.data import AnnotationTable


def frame(**columns):
    df = pd.DataFrame({"task": ["a", "a", "b", "b"], "worker": ["u", "v", "u", "v"],
                       "label": ["x", "y", "x", "x"]})
    for name, values in columns.items():
        df[name] = pd.Series(values, dtype=object)
    return df


@pytest.mark.parametrize("column, values, shown", [
    ("label", ["1", 1, "2", 2], r"'1' \(str\) and 1 \(int\), '2' \(str\) and 2 \(int\)"),
    ("label", ["cat", 2.5, "cat", "dog"], r"'cat' \(str\) and 2.5 \(float\)"),
    ("worker", ["7", 7, "7", 7], r"'7' \(str\) and 7 \(int\)"),
    ("task", ["a", "a", 3, 3], r"'a' \(str\) and 3 \(int\)"),
])
def test_a_column_mixing_strings_and_numbers_is_refused(column, values, shown):
    df = frame(**{column: values})
    with pytest.raises(ValueError, match=rf"df\['{column}'\] mixes strings and non-strings, "
                                         rf"which would be different ids: {shown}\. Convert"):
        AnnotationTable.from_dataframe(df)


def test_mixed_kinds_are_refused_with_declared_classes_and_in_categories():
    with pytest.raises(ValueError, match=r"df\['label'\] mixes strings and non-strings"):
        AnnotationTable.from_dataframe(frame(label=["1", 1, "1", 1]), classes=["1", 1])
    mixed = pd.Categorical(["1", 1, "1", 1])
    with pytest.raises(ValueError, match=r"df\['label'\] mixes strings and non-strings"):
        AnnotationTable.from_dataframe(frame().assign(label=mixed))


def test_integers_and_equal_floats_are_one_class():
    # 1 and 1.0 are the same value to pandas: one class, nothing to refuse
    table = AnnotationTable.from_dataframe(frame(label=[1, 1.0, 2, 2.0]))
    assert table.num_classes == 2


@pytest.mark.parametrize("dtype", [object, "str"])
@pytest.mark.parametrize("column, values, pair, ids", [
    ("label", ["cat ", "cat", "dog", "dog"], "'cat' and 'cat '", ["cat", "cat ", "dog"]),
    ("worker", [" u", "u", " u", "u"], "' u' and 'u'", [" u", "u"]),
])
def test_strings_differing_only_by_whitespace_are_named_and_kept_apart(dtype, column, values,
                                                                        pair, ids):
    df = frame()
    df[column] = pd.Series(values).astype(dtype)
    with pytest.warns(UserWarning, match=rf"df\['{column}'\] holds values that differ only by "
                                         rf"surrounding whitespace, kept apart: {pair}\. Strip"):
        table = AnnotationTable.from_dataframe(df)
    assert list(getattr(table, "classes" if column == "label" else "workers")) == ids


def test_clean_string_ids_raise_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AnnotationTable.from_dataframe(frame(label=["cat", "cat", "dog", "cat dog"]))


def test_a_categorical_label_column_keeps_its_unused_categories_in_order():
    labels = pd.Categorical(["x", "y", "x", "x"], categories=["z", "x", "y", "w"])
    table = AnnotationTable.from_dataframe(frame().assign(label=labels))
    assert list(table.classes) == ["z", "x", "y", "w"]
    assert table.label_idx.tolist() == [1, 2, 1, 1]
    assert list(table.to_frame()["label"]) == ["x", "y", "x", "x"]
    # declared classes still win over the categories
    chosen = AnnotationTable.from_dataframe(frame().assign(label=labels), classes=["y", "x"])
    assert list(chosen.classes) == ["y", "x"] and chosen.label_idx.tolist() == [1, 0, 1, 1]
