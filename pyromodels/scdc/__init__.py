"""Semi-crowdsourced clustering (SCDC and BayesSCDC) and the two-coin pairwise worker model.

Items are clustered from their features and from crowd workers' pairwise judgements (must link
/ cannot link), each worker with a sensitivity ``alpha`` (says "same" when the items share a
cluster) and a specificity ``beta`` (says "different" when they do not).

* :mod:`.links`: the two-coin link likelihood every engine of the family shares (its closed-form
  expectation under independent cluster posteriors, the mean-field messages and the workers'
  sufficient statistics).
* :class:`SCDC`: semi-crowdsourced deep clustering (:mod:`.model`), fitted by amortised SVI
  with the cluster enumerated and the links' term in closed form; its data
  (:class:`SCDCData`, :func:`prepare_scdc`) and objective (:class:`RelationalELBO`).
* :class:`BayesSCDC` (:mod:`.bayes`): the fully Bayesian model, conjugate globals fitted by
  natural-gradient SVI around local message passing on a recognition network's potentials
  (:mod:`.vmp`, :mod:`.bayes_elbo`).
* :class:`ObservedBayesSCDC` (:mod:`.observed_model`): BayesSCDC's conjugate sub-model with the
  features observed (a Bayesian Gaussian mixture plus the two-coin workers), fitted by the
  reference Gibbs sampler of :mod:`.observed_gibbs`; :func:`label_invariant_draws`,
  :func:`label_invariant_summary` and :func:`coclustering_probabilities` read its fit without
  the clusters' names.
* :class:`PairwiseDawidSkene` (:mod:`.pairwise_model`): the pairwise worker model on its own,
  items clustered from links alone, fitted by mean-field coordinate ascent
  (:mod:`.pairwise_cavi`, over the sparse pair graph of :mod:`.pair_graph`) from starts
  read off the links' spectrum (:mod:`.pairwise_start`);
  :class:`PairwiseDawidSkeneEstimator` (:mod:`.pairwise_estimator`) is its DataFrame facade;
  :mod:`.exact` enumerates tiny problems.

Names load on first use (:mod:`pyromodels.lazy`).
"""

from ..lazy import lazy_attributes

__all__ = [
    "RelationalELBO",
    "SCDC",
    "SCDCData",
    "prepare_scdc",
    "BayesSCDC",
    "ObservedBayesSCDC",
    "coclustering_probabilities",
    "label_invariant_draws",
    "label_invariant_summary",
    "PairwiseDawidSkene",
    "PairwiseDawidSkeneEstimator",
]

__getattr__, __dir__ = lazy_attributes(__name__, {
    "RelationalELBO": ".elbo",
    "SCDC": ".model",
    "SCDCData": ".data",
    "prepare_scdc": ".data",
    "BayesSCDC": ".bayes",
    "ObservedBayesSCDC": ".observed_model",
    "coclustering_probabilities": ".observed_model",
    "label_invariant_draws": ".observed_model",
    "label_invariant_summary": ".observed_model",
    "PairwiseDawidSkene": ".pairwise_model",
    "PairwiseDawidSkeneEstimator": ".pairwise_estimator",
})
