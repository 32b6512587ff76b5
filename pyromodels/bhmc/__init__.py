"""BHMC and RBHMC: Bayesian hierarchical mixture clustering, and its posterior-regularised
(max-margin) variant.

- :mod:`.prior`: :class:`BHMCPrior`, the paper's presets and the truncation default.
- :mod:`.model`: the generative story as a Pyro program (:func:`bhmc_program`), the model
  class :class:`BHMC`, and :func:`program_values` (a state as the program's site values).
- :mod:`.state`: :class:`BHMCState` (tree, node weights by id, components, labels).
- :mod:`.joint`: closed-form CDL, its marginal over the labels, margin violations and RCDL.
- :mod:`.sampler`: the BHMC Metropolis-within-Gibbs sampler (paths by MH, labels, components,
  weights) and :func:`run_bhmc`.
- :mod:`.regularised`: RBHMC, the sampler with the max-margin pseudo-likelihood (eta by
  MH-corrected Gaussian proposals, lambda by GIG) and :func:`run_rbhmc`.
- :mod:`.fit`: :func:`fit_bhmc` (``BHMC.fit``), chains gathered into a Posterior of
  label-invariant draws with the best tree.
- :mod:`.augmentation`: the hinge factor, the Polson-Scott kernel and its lambda sampler, and
  the Gaussian conditional of a node's discriminant eta and a sampler for it.

The tree parts (nested CRP, HDP weight diffusion, Antoniak table counts) live in
:mod:`pyromodels.bnp`.
"""

from .augmentation import (
    DEFAULT_SWITCH,
    eta_conditional,
    hinge_log_factor,
    lambda_mean,
    lambda_variance,
    polson_scott_log_kernel,
    sample_gaussian_precision,
    sample_lambda,
)
from .fit import fit_bhmc, run_chain
from .joint import (
    cdl,
    complete_log_joint,
    component_log_likelihoods,
    margin_violations,
    marginal_log_joint,
    rcdl,
    structure_log_prior,
)
from .model import BHMC, BHMCSample, bhmc_program, program_values, stick_fractions, stick_weights
from .prior import DEFAULT_NUM_COMPONENTS, PAPER_PRESETS, BHMCPrior
from .regularised import (
    RBHMCChain,
    RBHMCState,
    check_rbhmc_state,
    init_rbhmc_state,
    log_kernels,
    rbhmc_path_step,
    rbhmc_sweep,
    run_rbhmc,
    sample_eta,
    sample_lambdas,
)
from .sampler import (
    BHMCChain,
    child_weights,
    component_conditional,
    init_state,
    label_log_probs,
    path_step,
    run_bhmc,
    sample_components,
    sample_labels,
    sample_paths,
    sample_weights,
    sweep,
)
from .state import BHMCState, check_state, node_arrays

__all__ = [
    "hinge_log_factor",
    "polson_scott_log_kernel",
    "sample_lambda",
    "lambda_mean",
    "lambda_variance",
    "eta_conditional",
    "sample_gaussian_precision",
    "DEFAULT_SWITCH",
    "BHMCPrior",
    "PAPER_PRESETS",
    "DEFAULT_NUM_COMPONENTS",
    "BHMCState",
    "check_state",
    "node_arrays",
    "component_log_likelihoods",
    "structure_log_prior",
    "complete_log_joint",
    "marginal_log_joint",
    "margin_violations",
    "cdl",
    "rcdl",
    "bhmc_program",
    "program_values",
    "stick_weights",
    "stick_fractions",
    "BHMC",
    "BHMCSample",
    "init_state",
    "child_weights",
    "path_step",
    "sample_paths",
    "label_log_probs",
    "sample_labels",
    "component_conditional",
    "sample_components",
    "sample_weights",
    "sweep",
    "run_bhmc",
    "BHMCChain",
    "RBHMCState",
    "check_rbhmc_state",
    "log_kernels",
    "rbhmc_path_step",
    "sample_eta",
    "sample_lambdas",
    "rbhmc_sweep",
    "init_rbhmc_state",
    "run_rbhmc",
    "RBHMCChain",
    "fit_bhmc",
    "run_chain",
]
