"""
Simplest aggregation algorythms tests on different datasets
Testing all boundary conditions and asserts
"""

from typing import Any, Callable, Type

import pandas as pd
import pytest

# from sklearn.exceptions import NotFittedError
from .adapter import DawidSkene, MajorityVote

# less field in all crowd datasets


@pytest.fixture
def answers_no_task() -> pd.DataFrame:
    return pd.DataFrame({"worker": ["w1"], "label": ["no"]})


@pytest.fixture
def answers_no_label() -> pd.DataFrame:
    return pd.DataFrame({"worker": ["w1"], "task": ["t1"]})


@pytest.fixture
def answers_no_worker() -> pd.DataFrame:
    return pd.DataFrame({"task": ["t1"], "label": ["no"]})


@pytest.mark.parametrize(
    "agg_class, predict_method, exception, answers_dataset",
    [
        (MajorityVote, "fit_predict", KeyError, "answers_no_task"),
        (MajorityVote, "fit_predict", KeyError, "answers_no_label"),
        (MajorityVote, "fit_predict", KeyError, "answers_no_worker"),
        (MajorityVote, "fit_predict_proba", KeyError, "answers_no_task"),
        (MajorityVote, "fit_predict_proba", KeyError, "answers_no_label"),
        (MajorityVote, "fit_predict_proba", KeyError, "answers_no_worker"),
    ],
    ids=[
        'Majority Vote predict raises on no "task"',
        'Majority Vote predict raises on no "label"',
        'Majority Vote predict raises on no "worker"',
        'Majority Vote predict_proba raises on no "task"',
        'Majority Vote predict_proba raises on no "label"',
        'Majority Vote predict_proba raises on no "worker"',
    ],
)
def test_agg_raise_on_less_columns(
    request: Any,
    agg_class: Any,
    predict_method: str,
    exception: Type[Exception],
    answers_dataset: str,
) -> None:
    """
    Tests all aggregation methods raises basik exceptions
    """
    answers = request.getfixturevalue(answers_dataset)
    aggregator = agg_class()
    with pytest.raises(exception):
        getattr(aggregator, predict_method)(answers)


@pytest.mark.parametrize("agg_class", [DawidSkene])
def test_zero_iter(
    agg_class: Any,
    simple_answers_df: pd.DataFrame,
    simple_ground_truth: "pd.Series[Any]",
) -> None:
    aggregator = agg_class(n_iter=0)
    answers = aggregator.fit_predict(simple_answers_df)
    assert len(answers.index.difference(simple_ground_truth.index)) == 0
