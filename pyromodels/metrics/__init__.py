"""Evaluation metrics: clustering agreement, classification scores, confusion-matrix error.

Every function takes label vectors as lists, numpy arrays, pandas Series or torch tensors and
returns plain Python floats (or numpy / pandas containers where stated).

* Clustering against reference classes: :func:`clustering_accuracy` (one-to-one Hungarian
  matching, :func:`hungarian_mapping`), :func:`majority_accuracy` / :func:`purity`
  (many-to-one), :func:`nmi`, :func:`ami`, :func:`ari`, :func:`v_measure`, :func:`pair_f1`,
  :func:`f_measure` and :func:`f_measure_per_level`, :func:`contingency_matrix`.
* Classification: :func:`macro_f1`, :func:`precision_recall_per_class`.
* Annotator models: :func:`confusion_matrix_error`.
"""

from .classification import confusion_matrix_error, macro_f1, precision_recall_per_class
from .clustering import (
    PairScores,
    ari,
    clustering_accuracy,
    contingency_matrix,
    f_measure,
    f_measure_per_level,
    hungarian_mapping,
    majority_accuracy,
    pair_f1,
    purity,
)
from .information import ami, nmi, v_measure

__all__ = [
    "ami",
    "ari",
    "clustering_accuracy",
    "confusion_matrix_error",
    "contingency_matrix",
    "f_measure",
    "f_measure_per_level",
    "hungarian_mapping",
    "macro_f1",
    "majority_accuracy",
    "nmi",
    "pair_f1",
    "PairScores",
    "precision_recall_per_class",
    "purity",
    "v_measure",
]
