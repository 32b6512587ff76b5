"""Latent tree models with Gaussian "pouch" leaves (the LTVAE family's prior over ``z``).

These parts know no model: a family builds its story from them.

- :class:`LatentTree` (:mod:`.structure`): the immutable structure (discrete latent nodes with
  their cardinalities, one tree; pouch leaves, each a block of coordinates of ``z``), checks,
  JSON-ready ``to_dict``/``from_dict`` and ``draw``.
- :class:`TreeParams` (:mod:`.params`): root prior, CPTs, per-pouch means and Cholesky
  factors; random start, dtype and device movement.
- :mod:`.message_passing`: batched, log-space, differentiable exact inference:
  :func:`tree_log_likelihood`, :func:`tree_posterior` (node and pairwise marginals, a
  :class:`TreePosterior`), :func:`tree_map` (max-product).
- :func:`sample_tree` (:mod:`.sampling`): forward sampling, and generation given chosen
  latent states.
- :mod:`.pyro_model`: the same model as a Pyro program with enumerated latent sites
  (:func:`tree_model`) and its :func:`pyro_log_likelihood` by ``TraceEnum_ELBO``.
- :class:`LatentTreeModel` (:mod:`.model`): fitting the parameters of a fixed structure by
  batch EM (:func:`~pyromodels.core.run_em`) or stepwise EM
  (:func:`~pyromodels.core.run_stepwise_em`); the statistics and M-step are in :mod:`.em`.
- :func:`tree_bic` and :func:`free_parameters` (:mod:`.bic`): the BIC score.
- :mod:`.exact`: brute-force enumeration over every joint state (the tests' oracle).
"""

from ..lazy import lazy_attributes

__all__ = [
    "LatentTree",
    "TreeParams",
    "TreePosterior",
    "prepare_points",
    "leaf_log_densities",
    "tree_log_likelihood",
    "tree_posterior",
    "tree_map",
    "sample_tree",
    "tree_model",
    "empty_guide",
    "pyro_log_likelihood",
    "brute_force",
    "BruteForce",
    "LatentTreeModel",
    "free_parameters",
    "tree_bic",
]

__getattr__, __dir__ = lazy_attributes(__name__, {
    "LatentTree": ".structure",
    "TreeParams": ".params",
    "TreePosterior": ".message_passing",
    "prepare_points": ".message_passing",
    "leaf_log_densities": ".message_passing",
    "tree_log_likelihood": ".message_passing",
    "tree_posterior": ".message_passing",
    "tree_map": ".message_passing",
    "sample_tree": ".sampling",
    "tree_model": ".pyro_model",
    "empty_guide": ".pyro_model",
    "pyro_log_likelihood": ".pyro_model",
    "brute_force": ".exact",
    "BruteForce": ".exact",
    "LatentTreeModel": ".model",
    "free_parameters": ".bic",
    "tree_bic": ".bic",
})
