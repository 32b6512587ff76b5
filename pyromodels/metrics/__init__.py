"""Evaluation metrics: clustering agreement, classification scores, confusion-matrix error.

Every function takes label vectors as lists, numpy arrays, pandas Series or torch tensors and
returns plain Python floats (or numpy / pandas containers where stated).

* Clustering against reference classes: :func:`clustering_accuracy` (one-to-one Hungarian
  matching, :func:`hungarian_mapping`), :func:`majority_accuracy` / :func:`purity`
  (many-to-one), :func:`nmi` (:func:`soft_nmi` from cluster probabilities), :func:`ami`,
  :func:`ari`, :func:`v_measure`, :func:`pair_f1`,
  :func:`f_measure` and :func:`f_measure_per_level`, :func:`contingency_matrix`.
* Hierarchies over data points: :func:`aid` and :func:`aod` (average inner and outer squared
  distances of a tree's nodes), :func:`f_measure_by_level`, :func:`node_statistics`.
* Classification: :func:`macro_f1`, :func:`precision_recall_per_class`.
* Annotator models: :func:`confusion_matrix_error`.
* Matching: :func:`optimal_assignment`, the Hungarian step behind the accuracies and the
  alignment of confusion matrices.

Scores that ``sklearn.metrics`` provides (contingency table, pair counts, ARI, NMI, AMI,
V-measure, precision, recall, F1) are computed by it; this package adds the input checks, the
conventions for ratios that read 0/0, and what scikit-learn lacks (accuracies under a map from
clusters to classes, the F-measure per level, the confusion-matrix error). It imports nothing
of this project but :mod:`pyromodels.checks`.
"""

from .classification import confusion_matrix_error, macro_f1, precision_recall_per_class
from .clustering import PairScores, ari, contingency_matrix, f_measure, f_measure_per_level, pair_f1
from .hierarchy import (
    HierarchyMetricWarning,
    NodeStatistics,
    aid,
    aod,
    f_measure_by_level,
    node_statistics,
)
from .information import ami, nmi, soft_nmi, v_measure
from .matching import (
    clustering_accuracy,
    hungarian_mapping,
    majority_accuracy,
    optimal_assignment,
    purity,
)

__all__ = [
    "aid",
    "ami",
    "aod",
    "ari",
    "clustering_accuracy",
    "confusion_matrix_error",
    "contingency_matrix",
    "f_measure",
    "f_measure_by_level",
    "f_measure_per_level",
    "HierarchyMetricWarning",
    "hungarian_mapping",
    "macro_f1",
    "majority_accuracy",
    "nmi",
    "node_statistics",
    "NodeStatistics",
    "optimal_assignment",
    "pair_f1",
    "PairScores",
    "precision_recall_per_class",
    "purity",
    "soft_nmi",
    "v_measure",
]
