"""Closed-form conjugate families in pure torch.

Priors (each an exponential family with natural parameters, expected sufficient statistics,
log normaliser and closed-form KL):

- :class:`DirichletCategorical`: ``p ~ Dir(alpha)``, categorical observations.
- :class:`BetaBernoulli`: ``p ~ Beta(alpha, beta)``, Bernoulli observations.
- :class:`NormalGamma`: isotropic Gaussian observations with unknown mean and precision.
- :class:`NormalWishart`: Gaussian observations with unknown mean and precision matrix; the
  Normal-inverse-Wishart parametrisation ``(m, kappa, S, nu)`` converts to and from it
  (:func:`niw_to_normal_wishart`, :func:`normal_wishart_to_niw`, :func:`niw_expected_stats`).

:class:`GaussianNatural` is a Gaussian in natural parameters ``(h, J)`` (mean, covariance,
expected statistics, reparameterised draws, KL through the Cholesky factor of ``P = -2 J``).
Each prior's ``observation_stats`` gives the data's statistics in the coordinates of its
natural parameters, what a natural-gradient step (:func:`pyromodels.core.run_natgrad`) adds.

Generator-driven samplers (:mod:`pyromodels.conjugate.random`) make Gibbs blocks
reproducible from a ``torch.Generator``; :class:`SufficientStats` keeps additive per-component
statistics with ``add``/``remove`` for collapsed samplers. :func:`data_units` gives the
centre and spread in which data-dependent default priors are written.
"""

from . import random
from .beta_bernoulli import BetaBernoulli
from .dirichlet_categorical import DirichletCategorical, log_multivariate_beta
from .gaussian import GaussianNatural, GaussianStats
from .niw import (
    NIWParams,
    NIWStats,
    niw_expected_stats,
    niw_from_natural,
    niw_natural_params,
    niw_stats,
    niw_to_normal_wishart,
    normal_wishart_to_niw,
)
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
    "GaussianNatural",
    "GaussianStats",
    "NIWParams",
    "NIWStats",
    "niw_to_normal_wishart",
    "normal_wishart_to_niw",
    "niw_natural_params",
    "niw_from_natural",
    "niw_stats",
    "niw_expected_stats",
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
