"""Accuracy against gold of Dawid-Skene EM on the ten crowd sets: maximum likelihood
(``diagonal=0``, the estimator's default before it took a diagonal prior), the estimator's
default now (``diagonal=None``: one pseudo-label on each confusion row's true class) and
crowd-kit's ``DawidSkene(n_iter=100, tol=1e-5)`` for reference.

Run from the repository root (about a minute)::

    python scripts/ds_em_default_accuracy.py
"""

import warnings

import pandas as pd

from pyromodels.core import ConvergenceWarning
from pyromodels.crowd.ds.data import SparseWorkerWarning
from pyromodels.crowd.estimators import DawidSkeneEstimator
from pyromodels.data import list_crowd_datasets, load_crowd


def accuracy_table() -> pd.DataFrame:
    from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene

    rows = {}
    for name in list_crowd_datasets():
        answers, gold = load_crowd(name)
        tasks = gold.index.intersection(pd.Index(answers["task"].unique()))

        truth = gold.loc[tasks].to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SparseWorkerWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            ml = DawidSkeneEstimator(diagonal=0.0, allow_repeats=True).fit_predict(answers)
            default = DawidSkeneEstimator(allow_repeats=True).fit_predict(answers)
            ck = CrowdKitDawidSkene(n_iter=100, tol=1e-5).fit_predict(answers)
        rows[name] = {"n_gold": len(tasks)}
        for column, labels in (("em_ml (before)", ml), ("em_default (after)", default),
                               ("crowdkit_ds", ck)):
            rows[name][column] = float((labels.loc[tasks].to_numpy() == truth).mean())
    return pd.DataFrame.from_dict(rows, orient="index")


if __name__ == "__main__":
    pd.set_option("display.width", 120)
    table = accuracy_table()
    print(table.to_string(float_format="{:.4f}".format))
    print("mean accuracy:", table.drop(columns="n_gold").mean().round(4).to_dict())
