"""The abbreviations a report may use, and which of them a piece of text uses.

Every section of a report page ends with the abbreviations found in its text (summary, figure
captions, tables and metrics), each with its meaning, so that a reader meets none undefined.

Example:
    >>> [abbr for abbr, _ in abbreviations_in("CDL per sweep; R-hat and ESS of the NUTS fit")]
    ['CDL', 'ESS', 'NUTS', 'R-hat']
"""

from __future__ import annotations

import re

__all__ = ["ABBREVIATIONS", "abbreviations_in"]

#: abbreviation -> meaning, for every abbreviation the reports use
ABBREVIATIONS = {
    "ACC": "clustering accuracy: the share of points in their cluster's best-matched class",
    "AID": "average inner distance: mean distance between the data of one node of the "
           "hierarchy (lower is better)",
    "AOD": "average outer distance: mean distance between sibling nodes' centroids (higher is "
           "better)",
    "ARI": "adjusted Rand index: agreement of two clusterings, 0 for chance, 1 for identical",
    "BFMI": "Bayesian fraction of missing information: below about 0.3 the NUTS momentum "
            "resampling explores the energy levels poorly",
    "BHMC": "Bayesian hierarchical mixture clustering",
    "CDL": "complete-data log-likelihood: log p(X, c, V | B, Theta), the log density of the "
           "data with the labels c and the tree paths V given the node weights B and the "
           "components Theta",
    "CSV": "comma-separated values (a plain-text table)",
    "DDPM": "deep Dirichlet-process mixture: a DPM on features learnt by a flow",
    "DP": "Dirichlet process",
    "DPM": "Dirichlet-process mixture",
    "EM": "expectation-maximisation",
    "ELBO": "evidence lower bound (SVI maximises it)",
    "ESS": "effective sample size: how many independent draws the correlated draws are worth "
           "(bulk: for means and medians; tail: for the 5% and 95% quantiles)",
    "F1": "F1 score: harmonic mean of precision and recall (macro-F1: its mean over classes)",
    "GMM": "Gaussian mixture model",
    "HMC": "Hamiltonian Monte Carlo",
    "HMM": "hidden Markov model",
    "MAP": "maximum a posteriori",
    "MCEM": "Monte Carlo expectation-maximisation",
    "MCMC": "Markov chain Monte Carlo",
    "MV": "majority vote",
    "NetCDF": "Network Common Data Form, the file format of the ArviZ inference data",
    "NMI": "normalised mutual information between two clusterings",
    "NUTS": "No-U-Turn Sampler (adaptive Hamiltonian Monte Carlo)",
    "PCA": "principal component analysis",
    "PCDL": "the paper's name for RCDL",
    "R-hat": "potential scale reduction factor (rank-normalised split R-hat): about 1 when the "
             "chains agree; above 1.01 they have not mixed",
    "RBHMC": "regularised BHMC: BHMC with a max-margin posterior regularisation",
    "RCDL": "regularised CDL: CDL minus 2C times each datum's worst margin violation "
            "(C: the regularisation constant)",
    "SBM": "stochastic block model",
    "SVI": "stochastic variational inference",
}

_PATTERN = re.compile(
    r"(?<![A-Za-z0-9])(" + "|".join(re.escape(a) for a in sorted(ABBREVIATIONS, key=len,
                                                                       reverse=True))
    + r")(?![A-Za-z0-9])")


def abbreviations_in(text: str) -> list[tuple[str, str]]:
    """``(abbreviation, meaning)`` for each abbreviation of :data:`ABBREVIATIONS` that occurs
    in ``text`` as a word (``RCDL`` does not count as ``CDL``), in alphabetical order."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    found = set(_PATTERN.findall(text))
    return [(abbr, ABBREVIATIONS[abbr]) for abbr in sorted(found, key=str.lower)]
