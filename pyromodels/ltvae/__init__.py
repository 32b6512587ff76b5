"""The latent tree VAE family (Li et al. 2019, LTVAE) and its baselines.

* :class:`LTVAE` (:mod:`.model`): the latent tree VAE, a VAE whose prior on ``z`` is a latent
  tree model (:class:`TreePrior`, :mod:`.tree_prior`), fitted by alternating Adam steps of the
  networks, stepwise EM of the tree's parameters and an optional structure search; its
  facets are the clusterings of the tree's latent nodes.
* :func:`structure_search` (:mod:`.search`): the fit's structure search, PLTM-EAST's
  hill-climbing (:func:`~pyromodels.trees.learn_structure`) continued from the current tree.
* :class:`VAE` (:mod:`.vae`): a variational autoencoder with a pluggable prior on ``z``
  (``N(0, I)``, any distribution, or a callable log density such as a latent tree's), fitted by
  SVI on the ELBO (the VAE baseline) or the IWAE bound (the IWAE baseline).
* :mod:`.bounds`: importance weights of a Pyro program and its guide, the IWAE bound as a Pyro
  loss (:class:`IWAEBound`) and the importance-sampled test log-likelihood
  (:func:`importance_log_likelihood`, Table 1's :math:`\\mathcal{L}_{5000}`).
* :mod:`.baselines`: the two-stage clustering baselines AE+GMM and VAE+GMM
  (:func:`ae_gmm`, :func:`vae_gmm`, :func:`gmm_clusters`) and their accuracies.

Names load on first use (:mod:`pyromodels.lazy`).
"""

from ..lazy import lazy_attributes

__all__ = [
    "LTVAE",
    "TreePrior",
    "VAE",
    "VAEData",
    "IWAEBound",
    "ImportanceEstimate",
    "importance_log_likelihood",
    "importance_log_weights",
    "ClusteringResult",
    "ae_gmm",
    "vae_gmm",
    "gmm_clusters",
    "StructureSearch",
    "structure_search",
]

__getattr__, __dir__ = lazy_attributes(__name__, {
    "LTVAE": ".model",
    "TreePrior": ".tree_prior",
    "VAE": ".vae",
    "VAEData": ".vae",
    "IWAEBound": ".bounds",
    "ImportanceEstimate": ".bounds",
    "importance_log_likelihood": ".bounds",
    "importance_log_weights": ".bounds",
    "ClusteringResult": ".baselines",
    "ae_gmm": ".baselines",
    "vae_gmm": ".baselines",
    "gmm_clusters": ".baselines",
    "StructureSearch": ".search",
    "structure_search": ".search",
})
