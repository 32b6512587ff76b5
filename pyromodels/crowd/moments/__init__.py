"""Moment matching for crowd labels (ensemble paper §3.2 and §4.2): sample and population
moments (:mod:`.statistics`), the simplex-constrained PARAFAC fit of eq. 17 (:mod:`.fit`, built
on :mod:`.blocks` and :mod:`.simplex`) and Alg. 2 for labels in sequences (:mod:`.sequential`).
Moment matching estimates parameters; it is a start for EM, not a model of its own."""

from .fit import MomentEstimate, fit_moments, moment_labels, moment_posterior
from .sequential import SequentialMomentEstimate, fit_sequential_moments
from .statistics import population_moments, sample_moments

__all__ = [
    "MomentEstimate",
    "SequentialMomentEstimate",
    "fit_moments",
    "fit_sequential_moments",
    "moment_labels",
    "moment_posterior",
    "population_moments",
    "sample_moments",
]
