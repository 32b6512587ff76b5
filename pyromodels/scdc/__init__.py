"""Semi-crowdsourced clustering (SCDC and BayesSCDC) and the two-coin pairwise worker model.

Items are clustered from their features and from crowd workers' pairwise judgements (must link
/ cannot link), each worker with a sensitivity ``alpha`` (says "same" when the items share a
cluster) and a specificity ``beta`` (says "different" when they do not).

* :mod:`.links`: the two-coin link likelihood every engine of the family shares (its closed-form
  expectation under independent cluster posteriors, the mean-field messages and the workers'
  sufficient statistics).
"""

__all__: list[str] = []
