"""Accuracy against gold of Dawid-Skene EM on the ten bundled crowd sets, one row per set:

* ``em_ml``: maximum likelihood (``diagonal=0``), crowd-kit's estimate, with the facade's
  stopping rule (``n_iter=100, tol=1e-5``);
* ``em_ml_converged``: the same run to convergence (``n_iter=5000, tol=1e-12``);
* ``em_diag1``: the facade's first default, one pseudo-label on each confusion row's true
  class (``diagonal=1``);
* ``em_share``: its second, the share ``s`` of the task x worker grid that holds a label, on
  every class (``s`` is listed too);
* ``em_default``: the default now (``diagonal=None``): ``max(0, K - 1 - L_k / M)`` on the rows
  of class ``k`` only (see :mod:`pyromodels.crowd.estimators.em_prior`); ``thin`` lists the
  classes it acts on;
* ``crowdkit_ds``: crowd-kit's ``DawidSkene(n_iter=100, tol=1e-5)``, when crowd-kit is
  installed (the ``peers`` extra).

``gained vs ...`` counts the gold tasks the default labels right minus those the other run
labels right. EM works in torch's default dtype: float32, or float64 with ``--float64`` (the
dtype of the tests; the stopping rule then stops elsewhere on a few sets, which moves some
tasks under every prior). Run from the repository root (about half a minute)::

    python scripts/ds_em_default_accuracy.py [--float64]
"""

import argparse
import warnings

import pandas as pd
import torch

from pyromodels.core import ConvergenceWarning
from pyromodels.crowd.ds.data import SingleWorkerClassWarning, SparseWorkerWarning
from pyromodels.crowd.estimators import DawidSkeneEstimator
from pyromodels.data import list_crowd_datasets, load_crowd
from pyromodels.data.columns import labelled_cells

RUNS = {
    "em_ml": {"diagonal": 0.0},
    "em_ml_converged": {"diagonal": 0.0, "n_iter": 5000, "tol": 1e-12},
    "em_diag1": {"diagonal": 1.0},
    "em_share": None,  # the share of the grid, computed per set
    "em_default": {},
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
        right = {}
        with warnings.catch_warnings():
            for category in (SparseWorkerWarning, SingleWorkerClassWarning, ConvergenceWarning):
                warnings.simplefilter("ignore", category)
            for column, options in RUNS.items():
                if options is None:
                    options = {"diagonal": row["s"]}
                est = DawidSkeneEstimator(allow_repeats=True, **options).fit(answers)
                right[column] = int((est.labels_.loc[tasks].to_numpy() == truth).sum())
                if column == "em_ml":
                    table = est.table_
                    row["s"] = labelled_cells(table) / (table.num_items * table.num_workers)
                if column == "em_default":
                    row["thin"] = sum(d > 0 for d in est.model_.diagonal)
            if crowdkit is not None:
                labels = crowdkit(n_iter=100, tol=1e-5).fit_predict(answers)
                right["crowdkit_ds"] = int((labels.loc[tasks].to_numpy() == truth).sum())
        row.update({column: count / len(tasks) for column, count in right.items()})
        for base in right:
            if base not in ("em_default", "em_ml_converged"):
                row[f"gained vs {base}"] = right["em_default"] - right[base]
    return pd.DataFrame.from_dict(rows, orient="index")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--float64", action="store_true", help="run EM in float64")
    if parser.parse_args().float64:
        torch.set_default_dtype(torch.float64)
    pd.set_option("display.width", 200)
    table = accuracy_table()
    print(table.to_string(float_format="{:.4f}".format))
    accuracy = [c for c in table.columns if c.startswith(("em_", "crowdkit"))]
    print("mean accuracy:", table[accuracy].mean().round(4).to_dict())
    gained = [c for c in table.columns if c.startswith("gained")]
    print("tasks won / lost by the default:",
          {c: (int(table[c].clip(lower=0).sum()), int(table[c].clip(upper=0).sum()))
           for c in gained})
