"""Mixture models. The finite Bayesian Gaussian mixture is the reference model of the zoo."""

from .gaussian import BayesianGaussianMixture
from .prior import MixtureData, MixturePrior, resolve_prior

__all__ = ["BayesianGaussianMixture", "MixtureData", "MixturePrior", "resolve_prior"]
