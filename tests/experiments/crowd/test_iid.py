"""The i.i.d. crowd experiment: its accuracy table equals the estimators run directly."""

import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene

from pyromodels.crowd.estimators import DawidSkeneEstimator
from pyromodels.data import load_crowd
from pyromodels.experiments.crowd import iid as crowd_iid

pytestmark = pytest.mark.filterwarnings("ignore:::crowdkit")

TINY = crowd_iid.IidSettings(("bluebirds",), em_max_iter=1000, em_tol=1e-8, gibbs_warmup=50,
                             gibbs_samples=100, gibbs_chains=2)


def _accuracy(labels, gold):
    return float((labels.loc[gold.index] == gold).mean())


def test_accuracy_table_matches_direct_runs():
    table = crowd_iid.ds_accuracy_table(["bluebirds"], settings=TINY)
    assert list(table.columns) == ["n_gold", *crowd_iid.METHODS]
    answers, gold = load_crowd("bluebirds")
    assert table.loc["bluebirds", "n_gold"] == 108
    # EM and crowd-kit do not depend on the task ids, so anonymising them changes nothing
    ck = CrowdKitDawidSkene(n_iter=100, tol=1e-5).fit_predict(answers)
    em = DawidSkeneEstimator(n_iter=1000, tol=1e-8, diagonal=0.0,
                             allow_repeats=True).fit_predict(answers)
    assert table.loc["bluebirds", "crowdkit_ds"] == pytest.approx(_accuracy(ck, gold))
    assert table.loc["bluebirds", "ds_em"] == pytest.approx(_accuracy(em, gold))
    for method in crowd_iid.METHODS:
        assert 0.7 < table.loc["bluebirds", method] <= 1.0


def test_task_ids_are_anonymised_and_mapped_back():
    answers, _ = load_crowd("music_genre")  # ids such as 'blues.00012.mp3' leak the genre
    anon, original = crowd_iid._anonymise(answers, seed=3)
    assert pd.api.types.is_integer_dtype(anon["task"])
    np.testing.assert_array_equal(original[anon["task"].to_numpy()], answers["task"].to_numpy())
    labels = crowd_iid.aggregate(answers, "mv", seed=0, settings=TINY)
    assert set(labels.index) == set(answers["task"]) and labels.name == "mv"


def test_bad_names_and_methods():
    with pytest.raises(ValueError, match="names must be one of"):
        crowd_iid.ds_accuracy_table(["imagenet"])
    with pytest.raises(ValueError, match="methods must be one of"):
        crowd_iid.ds_accuracy_table(["rte"], methods=("mv", "glad"))
    with pytest.raises(ValueError, match="scale must be one of"):
        crowd_iid.reproduce_iid(scale="huge")


@pytest.mark.slow
@pytest.mark.reproduction
def test_reproduce_small_scale():
    result = crowd_iid.reproduce_iid(scale="small", seed=0)
    acc = result.tables["accuracy"]
    assert list(acc.index) == ["rte", "temp", "bluebirds", "face"]
    assert (acc["ds_em"] >= acc["mv"] - 0.01).all()
