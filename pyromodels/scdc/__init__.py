"""Semi-crowdsourced clustering (SCDC and BayesSCDC) and the two-coin pairwise worker model.

Items are clustered from their features and from crowd workers' pairwise judgements (must link
/ cannot link), each worker with a sensitivity ``alpha`` (says "same" when the items share a
cluster) and a specificity ``beta`` (says "different" when they do not).

* :mod:`.links`: the two-coin link likelihood every engine of the family shares (its closed-form
  expectation under independent cluster posteriors, the mean-field messages and the workers'
  sufficient statistics).
* :class:`ObservedBayesSCDC` (:mod:`.observed_model`): BayesSCDC's conjugate sub-model with the
  features observed (a Bayesian Gaussian mixture plus the two-coin workers), fitted by the
  reference Gibbs sampler of :mod:`.observed_gibbs`; :func:`label_invariant_draws`,
  :func:`label_invariant_summary` and :func:`coclustering_probabilities` read its fit without
  the clusters' names.
"""

from .observed_model import (
    ObservedBayesSCDC,
    coclustering_probabilities,
    label_invariant_draws,
    label_invariant_summary,
)

__all__: list[str] = ["ObservedBayesSCDC", "coclustering_probabilities", "label_invariant_draws",
                      "label_invariant_summary"]
