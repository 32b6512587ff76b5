"""Bayesian nonparametric parts: the Chinese restaurant process, set partitions, and Gibbs
samplers for a Dirichlet-process mixture of isotropic Gaussians with a Normal-Gamma base
measure (Neal's Algorithms 2 and 3, and a blocked sampler of the truncated model), as used by
the DDPM family.

- :mod:`.crp`: CRP partition probability, expected number of clusters, sequential sampler,
  Escobar-West concentration update.
- :mod:`.partitions`: canonical labelings, enumeration of set partitions, chain frequencies.
- :mod:`.ng_predictive`: the base measure's prior predictive (eq. 24, corrected).
- :mod:`.dp_state`: chain state with stable cluster ids; the parameter block (eq. 22).
- :mod:`.dp_conditional`: single-site assignment conditionals; the torch reference pass.
- :mod:`.dp_kernels`: compiled (numba) assignment passes.
- :mod:`.dp_sweep`: one dispatcher per sweep (``backend="auto" | "numba" | "torch"``),
  chains checked once at their start, and the sequential-allocation start.
- :mod:`.dp_joint`: instantiated and collapsed log joints, label-invariant statistics.
- :mod:`.blocked`, :mod:`.blocked_model`, :mod:`.blocked_assign`: the truncated stick-breaking
  model and its blocked Gibbs sampler (Ishwaran and James), vectorised in torch for CPU and GPU.
- :mod:`.exact`: the exact posterior over the partitions of a tiny data set (a sampler's oracle).
- :mod:`.tree`, :mod:`.tree_paths`, :mod:`.tree_collapse`: a fixed-depth tree with stable node
  ids and per-datum paths (BHMC's hierarchy), the checks of its path arrays, and its display
  form with sibling-less nodes merged.
- :mod:`.ncrp`: the nested CRP: path probability, sampler, the per-datum path proposal and
  its exact conditional.
- :mod:`.tree_plot`: a dendrogram-like figure of a tree with the data's names at the leaves.
- :mod:`.antoniak`: the number of tables of a CRP (Antoniak): log pmf, sampler, moments.
- :mod:`.hdp`: finite HDP weight diffusion down a tree: prior draw, log density, Gibbs update
  by auxiliary table counts.
"""

from .antoniak import (
    antoniak_log_prob,
    antoniak_mean,
    antoniak_variance,
    log_stirling1_table,
    sample_tables,
)
from .blocked import (
    BlockedState,
    assignment_logits,
    blocked_chain,
    blocked_init,
    blocked_labels,
    blocked_log_joint,
    blocked_sweep,
    component_posterior,
    draw_blocked_labels,
    draw_blocked_parameters,
    stick_log_weights,
    stick_posterior,
    truncated_dp_mixture,
)
from .crp import crp_expected_clusters, crp_log_prob, resample_concentration, sample_crp
from .dp_conditional import AssignmentConditional, assignment_log_probs
from .dp_joint import StateStatistics, collapsed_log_joint, log_joint, state_statistics
from .dp_state import DPState, init_state, resample_params
from .dp_sweep import ChainResult, chain_sweeps, run_chain, sequential_init, sweep
from .exact import exact_partition_posterior
from .hdp import (
    resample_tree_weights,
    sample_table_counts,
    sample_tree_weights,
    sample_weights_given_tables,
    tree_levels,
    tree_weights_log_prob,
)
from .ncrp import (
    PathProposal,
    ncrp_log_prob,
    path_conditional_log_probs,
    path_proposal,
    sample_ncrp_paths,
)
from .ng_predictive import new_cluster_log_predictive
from .partitions import (
    canonical_labels,
    partition_frequencies,
    partition_key,
    set_partitions,
    total_variation,
)
from .tree import NEW, CollapsedTree, PathEdit, Tree
from .tree_plot import plot_tree

__all__ = [
    "crp_log_prob",
    "crp_expected_clusters",
    "sample_crp",
    "resample_concentration",
    "canonical_labels",
    "set_partitions",
    "partition_key",
    "partition_frequencies",
    "total_variation",
    "new_cluster_log_predictive",
    "DPState",
    "init_state",
    "resample_params",
    "sweep",
    "run_chain",
    "chain_sweeps",
    "sequential_init",
    "ChainResult",
    "log_joint",
    "collapsed_log_joint",
    "exact_partition_posterior",
    "assignment_log_probs",
    "AssignmentConditional",
    "state_statistics",
    "StateStatistics",
    "BlockedState",
    "assignment_logits",
    "blocked_init",
    "blocked_labels",
    "blocked_log_joint",
    "blocked_sweep",
    "blocked_chain",
    "draw_blocked_parameters",
    "draw_blocked_labels",
    "component_posterior",
    "stick_log_weights",
    "stick_posterior",
    "truncated_dp_mixture",
    "NEW",
    "Tree",
    "PathEdit",
    "CollapsedTree",
    "ncrp_log_prob",
    "sample_ncrp_paths",
    "path_proposal",
    "path_conditional_log_probs",
    "PathProposal",
    "plot_tree",
    "log_stirling1_table",
    "antoniak_log_prob",
    "sample_tables",
    "antoniak_mean",
    "antoniak_variance",
    "tree_levels",
    "sample_tree_weights",
    "tree_weights_log_prob",
    "sample_table_counts",
    "sample_weights_given_tables",
    "resample_tree_weights",
]
