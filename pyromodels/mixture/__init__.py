"""Mixture models. The finite Bayesian Gaussian mixture is the reference model of the zoo.

* :class:`GaussianMixtureModel`: the Pyro model class (the story, fitted by EM, Gibbs, SVI or
  NUTS; ``fit`` returns a :class:`~pyromodels.core.Posterior`).
* :class:`BayesianGaussianMixture`: the scikit-learn estimator around it (``fit`` returns the
  estimator; ``predict``, ``predict_proba``, ``labels_``, ``score``), loaded on first use
  (it imports scikit-learn, which importing the family does not).
"""

from ..lazy import lazy_attributes
from .gaussian import GaussianMixtureModel
from .prior import MixtureData, MixturePrior, resolve_prior

__all__ = ["BayesianGaussianMixture", "GaussianMixtureModel", "MixtureData", "MixturePrior",
           "resolve_prior"]


__getattr__, __dir__ = lazy_attributes(__name__, {"BayesianGaussianMixture": ".estimator"})
