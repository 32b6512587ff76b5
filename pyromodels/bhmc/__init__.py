"""BHMC and RBHMC: Bayesian hierarchical mixture clustering, and its posterior-regularised
(max-margin) variant.

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

__all__ = [
    "hinge_log_factor",
    "polson_scott_log_kernel",
    "sample_lambda",
    "lambda_mean",
    "lambda_variance",
    "eta_conditional",
    "sample_gaussian_precision",
    "DEFAULT_SWITCH",
]
