from typing import Any, Tuple

import pandas as pd
import pytest
from pandas.testing import assert_series_equal

from .adapter import MajorityVote
from .data_mv import simple_skills_result_mv  # noqa F401


def test_majority_vote_with_skills(
    simple_answers_df: pd.DataFrame,
    simple_skills_result_mv: "pd.Series[Any]",  # noqa F811
) -> None:
    mv = MajorityVote()
    mv.fit_predict(simple_answers_df, skills=simple_skills_result_mv)
    assert mv.skills_ is not None, "no skills_"
    assert_series_equal(mv.skills_, simple_skills_result_mv)


def test_majority_vote_with_missing_skills_value(
    simple_answers_df: pd.DataFrame,
    simple_skills_result_mv: "pd.Series[Any]",  # noqa F811
) -> None:
    mv = MajorityVote(on_missing_skill="value", default_skill=1000000)
    simple_skills_result_mv = simple_skills_result_mv.drop(
        "0c3eb7d5fcc414db137c4180a654c06e"
    )
    mv.fit_predict(simple_answers_df, skills=simple_skills_result_mv)

    frauded_tasks = simple_answers_df[
        simple_answers_df["worker"] == "0c3eb7d5fcc414db137c4180a654c06e"
    ]["task"]
    for task in frauded_tasks:
        assert mv.labels_[task] == "parrot"  # type: ignore


def test_majority_vote_with_missing_skills_error(
    simple_answers_df: pd.DataFrame,
    simple_skills_result_mv: "pd.Series[Any]",  # noqa F811
) -> None:
    mv = MajorityVote(on_missing_skill="error")
    simple_skills_result_mv = simple_skills_result_mv.drop(
        "0c3eb7d5fcc414db137c4180a654c06e"
    )
    with pytest.raises(ValueError):
        mv.fit_predict(simple_answers_df, skills=simple_skills_result_mv)


def test_majority_vote_with_missing_skills_ignore(
    simple_answers_df: pd.DataFrame,
    simple_skills_result_mv: "pd.Series[Any]",  # noqa F811
) -> None:
    mv = MajorityVote(on_missing_skill="ignore")
    simple_skills_result_mv = simple_skills_result_mv.drop(
        "0c3eb7d5fcc414db137c4180a654c06e"
    )
    mv.fit_predict(simple_answers_df, skills=simple_skills_result_mv)
    assert "0c3eb7d5fcc414db137c4180a654c06e" not in mv.skills_.index  # type: ignore


def test_majority_vote_with_missing_skills_ignore_all(
    simple_answers_df: pd.DataFrame,
    simple_skills_result_mv: "pd.Series[Any]",  # noqa F811
) -> None:
    mv = MajorityVote(on_missing_skill="ignore")
    with pytest.raises(ValueError):
        mv.fit_predict(simple_answers_df, skills=pd.Series([], dtype=float))
