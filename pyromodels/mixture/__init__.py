"""Mixture models. The finite Bayesian Gaussian mixture is the reference model of the zoo.

* :class:`GaussianMixtureModel`: the Pyro model class (the story, fitted by EM, Gibbs, SVI or
  NUTS; ``fit`` returns a :class:`~pyromodels.core.Posterior`).
* :class:`BayesianGaussianMixture`: the scikit-learn estimator around it (``fit`` returns the
  estimator; ``predict``, ``predict_proba``, ``labels_``, ``score``).
"""

from .estimator import BayesianGaussianMixture
from .gaussian import GaussianMixtureModel
from .prior import MixtureData, MixturePrior, resolve_prior

__all__ = ["BayesianGaussianMixture", "GaussianMixtureModel", "MixtureData", "MixturePrior",
           "resolve_prior"]
