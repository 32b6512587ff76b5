"""Closed-form conjugate families in pure torch.

Priors (each an exponential family with natural parameters, expected sufficient statistics,
log normaliser and closed-form KL):

- :class:`DirichletCategorical`: ``p ~ Dir(alpha)``, categorical observations.
- :class:`BetaBernoulli`: ``p ~ Beta(alpha, beta)``, Bernoulli observations.
- :class:`NormalGamma`: isotropic Gaussian observations with unknown mean and precision.
- :class:`NormalWishart`: Gaussian observations with unknown mean and precision matrix.

Generator-driven samplers (:mod:`pyromodels.conjugate.random`) make Gibbs blocks
reproducible from a ``torch.Generator``; :class:`SufficientStats` keeps additive per-component
statistics with ``add``/``remove`` for collapsed samplers. :func:`data_units` gives the
centre and spread in which data-dependent default priors are written.
"""

from . import random
from .beta_bernoulli import BetaBernoulli
from .dirichlet_categorical import DirichletCategorical, log_multivariate_beta
from .normal_gamma import NormalGamma, NormalGammaStats
from .normal_wishart import NormalWishart, NormalWishartStats
from .random import *  # noqa: F403 - re-exports exactly random.__all__
from .suffstats import (
    SufficientStats,
    categorical_stats,
    gaussian_features,
    gaussian_stats,
    isotropic_gaussian_features,
)
from .units import data_scale, data_units

__all__ = [
    "DirichletCategorical",
    "BetaBernoulli",
    "NormalGamma",
    "NormalGammaStats",
    "NormalWishart",
    "NormalWishartStats",
    "log_multivariate_beta",
    "SufficientStats",
    "gaussian_stats",
    "categorical_stats",
    "gaussian_features",
    "isotropic_gaussian_features",
    "data_scale",
    "data_units",
]
__all__ += random.__all__
