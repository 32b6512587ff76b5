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
- :mod:`.operators`: the seven structure-search operators of PLTM-EAST (SI, SD, NI, ND, NR,
  PO, UP) as immutable move records with ``apply`` and ``describe``, their enumeration
  (:func:`candidate_moves`, :data:`OPERATORS`, :data:`PHASES`) and the restricted moves
  tried after an accepted one (:func:`follow_up_moves`).
- :func:`extend_params` (:mod:`.carry_over`): parameters for a move's tree, started from the
  current ones.
- :func:`learn_structure` (:mod:`.learner`): PLTM-EAST's BIC hill-climbing over the operators
  through :func:`~pyromodels.core.run_search`, giving a :class:`StructureResult`; its
  candidates are screened by local EM (:mod:`.local_em`: only the parameters a move
  changed are re-estimated).
- :class:`LatentTreeClustering` (:mod:`.clustering`): learn a tree on a table and cluster its
  rows along every latent variable (facet).
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
    "Move",
    "StateIntroduction",
    "StateDeletion",
    "NodeIntroduction",
    "NodeDeletion",
    "NodeRelocation",
    "Pouching",
    "Unpouching",
    "state_introductions",
    "state_deletions",
    "node_introductions",
    "node_deletions",
    "node_relocations",
    "pouchings",
    "unpouchings",
    "OPERATORS",
    "PHASES",
    "candidate_moves",
    "follow_up_moves",
    "extend_params",
    "latent_marginals",
    "latent_conditional",
    "LatentTreeModel",
    "free_parameters",
    "tree_bic",
    "learn_structure",
    "StructureResult",
    "LatentTreeClustering",
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
    "Move": ".moves",
    "StateIntroduction": ".moves",
    "StateDeletion": ".moves",
    "NodeIntroduction": ".moves",
    "NodeDeletion": ".moves",
    "NodeRelocation": ".moves",
    "Pouching": ".moves",
    "Unpouching": ".moves",
    "state_introductions": ".operators",
    "state_deletions": ".operators",
    "node_introductions": ".operators",
    "node_deletions": ".operators",
    "node_relocations": ".operators",
    "pouchings": ".operators",
    "unpouchings": ".operators",
    "OPERATORS": ".operators",
    "PHASES": ".operators",
    "candidate_moves": ".operators",
    "follow_up_moves": ".operators",
    "extend_params": ".carry_over",
    "latent_marginals": ".carry_over",
    "latent_conditional": ".carry_over",
    "LatentTreeModel": ".model",
    "free_parameters": ".bic",
    "tree_bic": ".bic",
    "learn_structure": ".learner",
    "StructureResult": ".learner",
    "LatentTreeClustering": ".clustering",
})
