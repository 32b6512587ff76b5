"""Semi-crowdsourced clustering (SCDC and BayesSCDC) and the two-coin pairwise worker model.

Items are clustered from their features and from crowd workers' pairwise judgements (must link
/ cannot link), each worker with a sensitivity ``alpha`` (says "same" when the items share a
cluster) and a specificity ``beta`` (says "different" when they do not).

* :mod:`.links`: the two-coin link likelihood every engine of the family shares (its closed-form
  expectation under independent cluster posteriors, the mean-field messages and the workers'
  sufficient statistics).
* :class:`PairwiseDawidSkene` (:mod:`.pairwise_model`): the pairwise worker model on its own,
  items clustered from links alone, fitted by mean-field coordinate ascent
  (:mod:`.pairwise_cavi`, over the sparse pair graph of :mod:`.pair_graph`);
  :class:`PairwiseDawidSkeneEstimator` (:mod:`.pairwise_estimator`) is its DataFrame facade;
  :mod:`.exact` enumerates tiny problems.

Every name loads its module on first use (:mod:`pyromodels.lazy`).
"""

from ..lazy import lazy_attributes

_ORIGINS = {
    "PairwiseDawidSkene": ".pairwise_model",
    "PairwiseDawidSkeneEstimator": ".pairwise_estimator",
}

__all__ = ["PairwiseDawidSkene", "PairwiseDawidSkeneEstimator"]

__getattr__, __dir__ = lazy_attributes(__name__, _ORIGINS)
