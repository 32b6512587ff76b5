"""Reproduction of the RBHMC paper (*Posterior Regularisation on Bayesian Hierarchical Mixture
Clustering*): what it states (:mod:`.paper_numbers`), its data sets prepared as it describes
(:mod:`.data`), the run settings per protocol and scale (:mod:`.settings`) and the protocols'
bookkeeping around any sampler (:mod:`.protocol`)."""
