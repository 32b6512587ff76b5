"""The numbers the ensemble paper reports for real data (Traganitis & Giannakis, Tables I, II).

Plain data transcribed from the paper, for side-by-side comparison with our reproductions, plus
the paper's known errors that bear on these tables. Method keys:

* Table I: ``single_best``, ``mv`` (majority vote), ``ds`` (Dawid-Skene EM initialised by
  moment matching), ``alg2`` (moment matching + transition estimate + Viterbi), ``alg2_alg1``
  (Alg. 2 refined by Baum-Welch; the paper's column "Alg. 1 + Alg. 2"), ``mv_alg1``
  (Baum-Welch started from majority vote).
* Table II: ``single_best``, ``mv``, ``ds``, ``alg4`` (moment matching + Alg. 3),
  ``mv_alg3`` (Alg. 3 started from majority vote).

Values marked with an asterisk in the paper (scored on the subset a single learner labelled)
are listed in ``SUBSET_SCORES``; bold entries (the best of a row) in ``BOLD``.

Example:
    >>> TABLE_I["pos"]["scores"]["f_score"]["alg2_alg1"]
    0.24735
    >>> float(table_ii_frame().loc["cora", "alg4"])
    0.6412
"""

from __future__ import annotations

import pandas as pd

from ...checks import check_in

__all__ = ["TABLE_I_METHODS", "TABLE_II_METHODS", "METHOD_LABELS", "TABLE_I", "TABLE_II",
           "SUBSET_SCORES", "BOLD", "PAPER_ERRORS", "DATA_DIFFERENCES", "table_i_frame",
           "table_ii_frame"]

TABLE_I_METHODS = ("single_best", "mv", "ds", "alg2", "alg2_alg1", "mv_alg1")
TABLE_II_METHODS = ("single_best", "mv", "ds", "alg4", "mv_alg3")
METHOD_LABELS = {"single_best": "Single best", "mv": "MV", "ds": "DS", "alg2": "Alg. 2",
                 "alg2_alg1": "Alg. 1 + Alg. 2", "mv_alg1": "MV + Alg. 1", "alg4": "Alg. 4",
                 "mv_alg3": "MV + Alg. 3"}


def _row(methods: tuple[str, ...], *values: float) -> dict:
    """``{method: value}``, one value per method in the order of ``methods``."""
    return dict(zip(methods, values, strict=True))


#: Table I, sequential real data: K, M, N as printed, then precision / recall / F per method.
TABLE_I = {
    "pos": {"K": 12, "M": 10, "N": 100_676, "scores": {
        "precision": _row(TABLE_I_METHODS, 0.2316, 0.22916, 0.23406, 0.24785, 0.25856, 0.22972),
        "recall": _row(TABLE_I_METHODS, 0.2573, 0.23518, 0.25629, 0.24396, 0.26638, 0.24497),
        "f_score": _row(TABLE_I_METHODS, 0.2356, 0.22598, 0.22264, 0.23352, 0.24735, 0.23007)}},
    "ner": {"K": 9, "M": 47, "N": 78_107, "scores": {
        "precision": _row(TABLE_I_METHODS, 0.9, 0.79, 0.77, 0.74, 0.77, 0.75),
        "recall": _row(TABLE_I_METHODS, 0.24, 0.59, 0.66, 0.89, 0.69, 0.66),
        "f_score": _row(TABLE_I_METHODS, 0.89, 0.68, 0.71, 0.62, 0.72, 0.70)}},
    "bioie": {"K": 2, "M": 120, "N": 7_880_254, "scores": {
        "precision": _row(TABLE_I_METHODS, 0.94, 0.89, 0.81, 0.75, 0.69, 0.62),
        "recall": _row(TABLE_I_METHODS, 0.76, 0.45, 0.57, 0.60, 0.68, 0.74),
        "f_score": _row(TABLE_I_METHODS, 0.84, 0.6, 0.66, 0.67, 0.68, 0.67)}},
}

#: Table II, networked real data (F-score only): K, M, N and mean degree as printed.
TABLE_II = {
    "cora": {"K": 10, "M": 10, "N": 2_708, "mean_degree": 3.9,
             "f_score": _row(TABLE_II_METHODS, 0.51, 0.2785, 0.4228, 0.6412, 0.336)},
    "citeseer": {"K": 7, "M": 10, "N": 3_312, "mean_degree": 2.77,
                 "f_score": _row(TABLE_II_METHODS, 0.45, 0.4257, 0.4449, 0.5244, 0.5224)},
    "pubmed": {"K": 3, "M": 10, "N": 19_717, "mean_degree": 4.49,
               "f_score": _row(TABLE_II_METHODS, 0.717, 0.6968, 0.7437, 0.7667, 0.7595)},
    "music_genre": {"K": 10, "M": 44, "N": 700, "mean_degree": 4.8,
                    "f_score": _row(TABLE_II_METHODS, 1.0, 0.7046, 0.4746, 0.7649, 0.8029)},
    "sentence_polarity": {"K": 2, "M": 203, "N": 5_000, "mean_degree": 1.8,
                          "f_score": _row(TABLE_II_METHODS, 1.0, 0.8895, 0.9129, 0.9153, 0.9139)},
    "bu_bil": {"K": 2, "M": 7, "N": 28_181, "mean_degree": 7.1,
               "f_score": _row(TABLE_II_METHODS, 0.851, 0.861, 0.859, 0.86, 0.863)},
}

#: Entries marked "*" (scored only on the items the single best learner labelled).
SUBSET_SCORES = (
    ("ner", "single_best"), ("bioie", "single_best"),
    ("music_genre", "single_best"), ("sentence_polarity", "single_best"),
)

#: Bold entries: ``(data set, metric) -> method``.
BOLD = {
    ("pos", "precision"): "alg2_alg1", ("pos", "recall"): "alg2_alg1",
    ("pos", "f_score"): "alg2_alg1",
    ("ner", "precision"): "mv", ("ner", "recall"): "alg2_alg1", ("ner", "f_score"): "alg2_alg1",
    ("bioie", "precision"): "mv", ("bioie", "recall"): "mv_alg1",
    ("bioie", "f_score"): "alg2_alg1",
    ("cora", "f_score"): "alg4", ("citeseer", "f_score"): "alg4", ("pubmed", "f_score"): "alg4",
    ("music_genre", "f_score"): "mv_alg3", ("sentence_polarity", "f_score"): "alg4",
    ("bu_bil", "f_score"): "mv_alg3",
}

#: Errors and inconsistencies of the paper that bear on these tables.
PAPER_ERRORS = (
    "Table I, NER, Alg. 2: recall 0.89 contradicts the text (Alg. 1 + Alg. 2 has the best "
    "recall, 0.69) and the row's F = 0.62; with P = 0.74, F = 0.62 implies R = 0.53.",
    "Table I, NER, single best: P = 0.9, R = 0.24, F = 0.89 is impossible (F <= (P + R) / 2 = "
    "0.57); the recall is probably 0.88.",
    "Table I, Biomedical IE: the printed recall, #words in a predicted span / #words in a gold "
    "span, is not a recall and can exceed 1; the numerator must be #true-positive words.",
    "Table I, Biomedical IE: N = 7,880,254 'words' for 5,000 abstracts is about 1,600 words "
    "per abstract; the PICO abstracts hold about 1.5 million tokens, so N is nearer the number "
    "of token labels (9.0 million for all 312 workers).",
    "Eq. (37) is the mean of per-class F1 although the text calls F 'the harmonic mean of "
    "precision and recall'; classes absent from a sequence (0/0) are not addressed. The NER "
    "and Biomedical rows satisfy F = 2PR / (P + R) (up to rounding), the POS row does not.",
    "Table II: Cora K = 10 and CiteSeer K = 7, but the text (and the data) have 7 and 6.",
    "Text: 'Alg. 4 and MV + Alg. 3 consistently outperform the single best classifier' is "
    "false for Cora MV + Alg. 3 (0.336 < 0.51).",
    "Table II, BU-BIL: 35 images of 25 x 24 pixels are 21,000 pixels, not N = 28,181, and an "
    "8-neighbour 25 x 24 grid has mean degree 7.52, not 7.1.",
    "Table II, Music Genre and Sentence Polarity single best = 1 are scored on 10 and 6 items.",
)

#: Where the data available to us differ from the paper's description.
DATA_DIFFERENCES = (
    "NER: the crowd release has 5,985 annotated sentences (79,901 tokens), the paper 5,916 "
    "sentences (78,107 words).",
    "Pubmed: node features exist for 1,060 of 19,717 nodes only, so classifiers label only "
    "those nodes (the paper: every node) and F is scored on them; the other nodes enter "
    "through the graph only, starting from the labels of their nearest labelled neighbours.",
    "CiteSeer: the Planetoid file holds 3,327 nodes; the 15 placeholder nodes without features "
    "or label are removed, leaving the paper's 3,312.",
    "POS: the paper's taggers and Brown subset sizes are not stated; ours are our own choice.",
    "Sentence Polarity and BU-BIL MRI: no data available here; those rows are not reproduced.",
)


def table_i_frame(metric: str = "f_score") -> pd.DataFrame:
    """Table I for one metric (``"precision"``, ``"recall"`` or ``"f_score"``): data sets x
    methods."""
    check_in(metric, "metric", ("precision", "recall", "f_score"))
    return pd.DataFrame({name: row["scores"][metric] for name, row in TABLE_I.items()}).T[
        list(TABLE_I_METHODS)]


def table_ii_frame() -> pd.DataFrame:
    """Table II's F-scores: data sets x methods."""
    return pd.DataFrame({name: row["f_score"] for name, row in TABLE_II.items()}).T[
        list(TABLE_II_METHODS)]
