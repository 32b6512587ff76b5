"""Accuracy against gold of Dawid-Skene EM on the ten bundled crowd sets, one row per set:

* ``em_ml``: maximum likelihood (``diagonal=0``), crowd-kit's estimate, with the facade's
  stopping rule (``n_iter=100, tol=1e-5``);
* ``em_ml_converged``: the same run to convergence (``n_iter=5000, tol=1e-12``);
* ``em_diag1 (before)``: the facade's earlier default, one pseudo-label on each confusion
  row's true class (``diagonal=1``);
* ``em_default (after)``: the facade's default now (``diagonal=None``: the share ``d`` of the
  task x worker grid that holds a label, see
  :func:`pyromodels.crowd.estimators.dawid_skene.em_diagonal`; ``d`` is listed too);
* ``crowdkit_ds``: crowd-kit's ``DawidSkene(n_iter=100, tol=1e-5)``, when crowd-kit is
  installed (the ``peers`` extra).

``gained`` counts the gold tasks the default now labels right minus those it labels wrong, set
against ``em_ml`` and against ``em_diag1``. Run from the repository root (about a minute)::

    python scripts/ds_em_default_accuracy.py
"""

import warnings

import pandas as pd

from pyromodels.core import ConvergenceWarning
from pyromodels.crowd.ds.data import SingleWorkerClassWarning, SparseWorkerWarning
from pyromodels.crowd.estimators import DawidSkeneEstimator
from pyromodels.crowd.estimators.dawid_skene import em_diagonal
from pyromodels.data import list_crowd_datasets, load_crowd

RUNS = {
    "em_ml": {"diagonal": 0.0},
    "em_ml_converged": {"diagonal": 0.0, "n_iter": 5000, "tol": 1e-12},
    "em_diag1 (before)": {"diagonal": 1.0},
    "em_default (after)": {},
}


def _crowdkit():
    try:
        from crowdkit.aggregation import DawidSkene
    except ImportError:
        return None
    return DawidSkene


def accuracy_table() -> pd.DataFrame:
    crowdkit = _crowdkit()
    rows = {}
    for name in list_crowd_datasets():
        answers, gold = load_crowd(name)
        tasks = gold.index.intersection(pd.Index(answers["task"].unique()))
        truth = gold.loc[tasks].to_numpy()
        row = rows[name] = {"n_gold": len(tasks)}
        with warnings.catch_warnings():
            for category in (SparseWorkerWarning, SingleWorkerClassWarning, ConvergenceWarning):
                warnings.simplefilter("ignore", category)
            for column, options in RUNS.items():
                est = DawidSkeneEstimator(allow_repeats=True, **options).fit(answers)
                row[column] = float((est.labels_.loc[tasks].to_numpy() == truth).mean())
                if not options:
                    row["d"] = em_diagonal(est.table_)
            if crowdkit is not None:
                labels = crowdkit(n_iter=100, tol=1e-5).fit_predict(answers)
                row["crowdkit_ds"] = float((labels.loc[tasks].to_numpy() == truth).mean())
        for base in ("em_ml", "em_diag1 (before)"):
            row[f"gained vs {base.split()[0]}"] = round((row["em_default (after)"] - row[base])
                                                        * len(tasks))
    return pd.DataFrame.from_dict(rows, orient="index")


if __name__ == "__main__":
    pd.set_option("display.width", 160)
    table = accuracy_table()
    print(table.to_string(float_format="{:.4f}".format))
    accuracy = [c for c in table.columns if c.startswith(("em_", "crowdkit"))]
    print("mean accuracy:", table[accuracy].mean().round(4).to_dict())
