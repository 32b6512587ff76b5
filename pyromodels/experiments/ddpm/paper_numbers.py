"""The numbers the DDPM paper reports (Table 1), transcribed for comparison with our runs.

Every method clusters the full data set with the hyperparameters of Appendix B
(:data:`pyromodels.ddpm.PAPER_PRESETS`). Methods: ``KMeans^dp`` / ``KMeans^ddp`` (k-means with
``K`` from DPM / DDPM), ``DEC^dp`` / ``DEC^ddp`` (DEC with that ``K``), ``GMeans``, ``DPM`` (the
DP mixture on the autoencoder features) and ``DDPM``. Metrics: ``F score`` (pair F1), ``V score``
(V-measure), ``ARI``, ``ACC*`` (purity) and ``K``, as in :func:`pyromodels.ddpm.paper_scores`.

The caption sets the best value of each row in bold; the text kept bold only for the cells in
:data:`BOLD` (the HAR and MNIST bolding is lost). The paper's classes are 6 for HAR (stated as
10), 10 for MNIST and STL-10 and 4 for REU-10K (:data:`TRUE_CLASS_COUNTS`).

Example:
    >>> TABLE_1["MNIST"]["F score"]["DDPM"]
    0.6388
    >>> table_1_frame().query("dataset == 'HAR' and metric == 'K' and method == 'GMeans'").value.item()
    234.0
    >>> round(float(ddpm_minus_dpm().loc["MNIST", "ARI"]), 4)
    0.1799
"""

from __future__ import annotations

import pandas as pd

__all__ = ["DATASETS", "METRICS", "METHODS", "TABLE_1", "BOLD", "TRUE_CLASS_COUNTS", "table_1_frame",
           "ddpm_minus_dpm"]

DATASETS = ("HAR", "MNIST", "STL-10", "REU-10K")
METRICS = ("F score", "V score", "ARI", "ACC*", "K")
METHODS = ("KMeans^dp", "KMeans^ddp", "DEC^dp", "DEC^ddp", "GMeans", "DPM", "DDPM")

#: true number of classes of each data set (HAR: 6 activities, though the text says 10)
TRUE_CLASS_COUNTS = {"HAR": 6, "MNIST": 10, "STL-10": 10, "REU-10K": 4}


def _row(*values) -> dict:
    return dict(zip(METHODS, values, strict=True))


#: Table 1 as printed: ``TABLE_1[dataset][metric][method]``
TABLE_1 = {
    "HAR": {
        "F score": _row(0.4831, 0.5832, 0.5221, 0.605, 0.1146, 0.5894, 0.7047),
        "V score": _row(0.5976, 0.6493, 0.6069, 0.6517, 0.4358, 0.6312, 0.7370),
        "ARI": _row(0.4099, 0.5117, 0.4499, 0.5315, 0.0904, 0.5050, 0.6339),
        "ACC*": _row(0.7740, 0.7947, 0.7906, 0.7897, 0.8542, 0.7325, 0.7441),
        "K": _row(11, 8, 11, 8, 234, 11, 8),
    },
    "MNIST": {
        "F score": _row(0.3070, 0.2335, 0.3604, 0.2985, 0.1255, 0.4639, 0.6388),
        "V score": _row(0.6510, 0.6253, 0.6855, 0.6582, 0.5314, 0.6619, 0.7192),
        "ARI": _row(0.2822, 0.2132, 0.3348, 0.2754, 0.1126, 0.4307, 0.6106),
        "ACC*": _row(0.9440, 0.9527, 0.9628, 0.9637, 0.9257, 0.8909, 0.9388),
        "K": _row(56, 81, 56, 81, 440, 56, 81),
    },
    "STL-10": {
        "F score": _row(0.4565, 0.4695, 0.506, 0.519, 0.2512, 0.4315, 0.4294),
        "V score": _row(0.6003, 0.5939, 0.6469, 0.6607, 0.4830, 0.5631, 0.5512),
        "ARI": _row(0.4162, 0.4248, 0.4438, 0.4564, 0.2140, 0.3715, 0.3688),
        "ACC*": _row(0.8058, 0.8003, 0.6875, 0.69, 0.7455, 0.7188, 0.6903),
        "K": _row(32, 31, 32, 31, 115, 32, 31),
    },
    "REU-10K": {
        "F score": _row(0.2268, 0.3244, 0.241, 0.3767, 0.0933, 0.4126, 0.5333),
        "V score": _row(0.3956, 0.4332, 0.4374, 0.4632, 0.3147, 0.3138, 0.3743),
        "ARI": _row(0.1523, 0.2282, 0.1676, 0.2759, 0.0581, 0.1211, 0.2801),
        "ACC*": _row(0.8704, 0.8719, 0.9029, 0.8854, 0.8951, 0.6902, 0.6957),
        "K": _row(26, 17, 26, 17, 252, 26, 17),
    },
}

#: cells printed in bold in the text as extracted: ``(dataset, metric, method)``
BOLD = (
    ("STL-10", "F score", "DEC^ddp"), ("STL-10", "V score", "DEC^ddp"), ("STL-10", "ARI", "DEC^ddp"),
    ("REU-10K", "F score", "DDPM"), ("REU-10K", "V score", "DEC^ddp"), ("REU-10K", "ARI", "DDPM"),
)


def table_1_frame() -> pd.DataFrame:
    """Table 1 as a tidy frame, one row per cell: columns ``dataset``, ``metric``, ``method``,
    ``value`` (float; ``K`` too) and ``bold``, in the paper's order."""
    bold = set(BOLD)
    rows = [
        {"dataset": ds, "metric": metric, "method": method, "value": float(value),
         "bold": (ds, metric, method) in bold}
        for ds in DATASETS for metric in METRICS for method, value in TABLE_1[ds][metric].items()
    ]
    return pd.DataFrame(rows)


def ddpm_minus_dpm() -> pd.DataFrame:
    """DDPM's score minus DPM's, data sets by the four scores (no ``K``), derived from Table 1."""
    return pd.DataFrame(
        {metric: [TABLE_1[ds][metric]["DDPM"] - TABLE_1[ds][metric]["DPM"] for ds in DATASETS]
         for metric in METRICS[:-1]},
        index=pd.Index(DATASETS, name="dataset"),
    )
