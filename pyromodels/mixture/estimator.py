"""The scikit-learn facade of the finite Bayesian Gaussian mixture.

:class:`BayesianGaussianMixture` is a scikit-learn estimator (``get_params``, ``set_params``,
``clone``, pipelines and grid search work; it passes
``sklearn.utils.estimator_checks.check_estimator``) around the Pyro model class
:class:`~pyromodels.mixture.GaussianMixtureModel`. It keeps scikit-learn's argument and
attribute names where the two models share a quantity; the model is the same finite mixture
with a Normal-inverse-Wishart prior and Dirichlet weights, fitted by MAP-EM (``method="em"``)
or blocked Gibbs sampling (``method="gibbs"``) instead of scikit-learn's variational
inference.
"""

from __future__ import annotations

import re

import torch

from ..checks import check_bool, check_in, check_int, check_positive
from ..core.estimator import MixtureClusterer
from ..core.parallel import check_n_jobs
from ..diagnostics import relabel
from .densities import component_log_density
from .gaussian import GaussianMixtureModel

__all__ = ["BayesianGaussianMixture"]

#: the engines the facade offers (``method=``)
METHODS = ("em", "gibbs")
#: the model's names of the prior arguments that the facade calls ``<name>_prior``
_PRIOR_NAMES = re.compile(r"\b(weight_concentration|mean_precision|degrees_of_freedom)\b")


class BayesianGaussianMixture(MixtureClusterer):
    """Finite Bayesian Gaussian mixture as a scikit-learn estimator.

    The model (:class:`~pyromodels.mixture.GaussianMixtureModel`): ``weights ~
    Dirichlet(alpha 1_K)``, ``precisions_k ~ Wishart(nu, Psi^-1)``, ``means_k | precisions_k ~
    N(m, (kappa precisions_k)^-1)``, ``x_n ~ sum_k weights_k N(means_k, precisions_k^-1)``.

    Args:
        n_components: ``K >= 1`` (scikit-learn's default, 1).
        weight_concentration_prior: Dirichlet ``alpha``; ``None`` is 1 (uniform on the simplex;
            scikit-learn's default is ``1 / n_components``, which MAP-EM cannot use: EM needs
            ``alpha >= 1``).
        mean_precision_prior: ``kappa`` (``None``: 1).
        mean_prior: ``m``, length ``n_features`` (``None``: the data mean).
        degrees_of_freedom_prior: Wishart ``nu`` (``None``: ``n_features + 2``; EM needs
            ``nu > n_features``).
        covariance_prior: ``Psi``, ``(n_features, n_features)`` (``None``: the empirical
            covariance; with the default ``m`` and ``Psi`` the fit is scale-equivariant).
        method: ``"em"`` (MAP by EM, default) or ``"gibbs"`` (blocked Gibbs sampling; the
            fitted parameters are posterior means after aligning the draws' labels with
            :func:`pyromodels.diagnostics.relabel`).
        max_iter: EM steps per start (``"em"``).
        tol: EM's relative tolerance on the log posterior (``"em"``).
        n_init: EM starts, the best kept (``"em"``).
        num_warmup: discarded sweeps per chain (``"gibbs"``).
        num_samples: kept sweeps per chain (``"gibbs"``).
        num_chains: chains (``"gibbs"``).
        random_state: ``None``, an int, a ``numpy.random.RandomState`` or ``Generator``
            (:func:`~pyromodels.checks.seed_from_random_state`; ``None`` draws a
            fresh seed, recorded as ``seed_``).
        verbose: ``> 0`` shows a progress bar.
        diagnostic_warnings: ``False`` silences the :class:`~pyromodels.core.SamplingWarning`
            of a Gibbs fit (``"gibbs"``) whose diagnostics say the draws are not yet reliable.
        n_jobs: EM starts or Gibbs chains run at once, joblib's meaning (scikit-learn's too:
            ``None`` one at a time unless a ``joblib.parallel_config`` says otherwise, ``-1``
            all cores; see :mod:`pyromodels.core.parallel`); the fit does not depend on it.

    Arguments are stored as given and checked at ``fit`` (scikit-learn's rule).

    Attributes:
        weights_: ``(n_components,)`` mixing proportions.
        means_: ``(n_components, n_features)`` component means.
        precisions_: ``(n_components, n_features, n_features)`` component precisions.
        covariances_: ``(n_components, n_features, n_features)`` their inverses.
        labels_: ``(n_samples,)`` the most probable component of each training point.
        converged_: whether EM converged (``None`` for Gibbs).
        n_iter_: EM steps of the best start (Gibbs: sweeps per chain).
        n_features_in_: the data's number of columns.
        posterior_: the :class:`~pyromodels.core.Posterior` of the fit.
        seed_: the seed the fit used.

    ``score_samples`` is ``log p(x)`` under the fitted parameters and ``score`` its mean over
    the points (scikit-learn's meaning).

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = np.vstack([rng.normal(-3, 1, (50, 2)), rng.normal(3, 1, (50, 2))])
        >>> est = BayesianGaussianMixture(n_components=2, random_state=0).fit(X)
        >>> est.predict_proba(X).shape, len(set(est.labels_[:50])), len(set(est.labels_))
        ((100, 2), 1, 2)
        >>> bool((est.fit_predict(X) == est.predict(X)).all()), est.converged_
        (True, True)
    """

    def __init__(self, n_components=1, *, weight_concentration_prior=None,
                 mean_precision_prior=None, mean_prior=None, degrees_of_freedom_prior=None,
                 covariance_prior=None, method="em", max_iter=100, tol=1e-6, n_init=1,
                 num_warmup=200, num_samples=200, num_chains=1, random_state=None, verbose=0,
                 diagnostic_warnings=True, n_jobs=None):
        self.n_components = n_components
        self.weight_concentration_prior = weight_concentration_prior
        self.mean_precision_prior = mean_precision_prior
        self.mean_prior = mean_prior
        self.degrees_of_freedom_prior = degrees_of_freedom_prior
        self.covariance_prior = covariance_prior
        self.method = method
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.num_warmup = num_warmup
        self.num_samples = num_samples
        self.num_chains = num_chains
        self.random_state = random_state
        self.verbose = verbose
        self.diagnostic_warnings = diagnostic_warnings
        self.n_jobs = n_jobs

    def _engine_options(self) -> dict:
        check_in(self.method, "method", METHODS)
        progress = check_int(self.verbose, "verbose", minimum=0) > 0
        n_jobs = check_n_jobs(self.n_jobs)
        if self.method == "em":
            return {"max_iter": check_int(self.max_iter, "max_iter", minimum=1),
                    "tol": check_positive(self.tol, "tol", strict=False),
                    "n_init": check_int(self.n_init, "n_init", minimum=1), "progress": progress,
                    "n_jobs": n_jobs}
        return {"n_jobs": n_jobs,
                "num_warmup": check_int(self.num_warmup, "num_warmup", minimum=0),
                "num_samples": check_int(self.num_samples, "num_samples", minimum=1),
                "num_chains": check_int(self.num_chains, "num_chains", minimum=1),
                "progress": progress,
                "diagnostic_warnings": check_bool(self.diagnostic_warnings, "diagnostic_warnings")}

    def _fit_mixture(self, x: torch.Tensor, seed: int) -> None:
        options = self._engine_options()
        k = check_int(self.n_components, "n_components", minimum=1)
        if x.shape[0] < k:
            raise ValueError(f"Expected n_samples >= n_components, got n_components = {k}, "
                             f"n_samples = {x.shape[0]}")
        model = GaussianMixtureModel(
            k,
            weight_concentration=self.weight_concentration_prior,
            mean_prior=self.mean_prior,
            mean_precision=self.mean_precision_prior,
            degrees_of_freedom=self.degrees_of_freedom_prior,
            covariance_prior=self.covariance_prior,
        )
        try:
            posterior = model.fit(x, method=self.method, seed=seed, **options)
        except (ValueError, TypeError) as error:  # name the facade's arguments, not the model's
            raise type(error)(_PRIOR_NAMES.sub(lambda m: m[0] + "_prior", str(error))) from error
        if self.method == "em":
            self.converged_ = bool(posterior.diagnostics["converged"])
            self.n_iter_ = int(posterior.diagnostics["n_iter"])
        else:
            posterior = relabel(posterior, component_sites=model.component_sites,
                                num_classes=model.num_components)
            self.converged_ = None
            self.n_iter_ = options["num_warmup"] + options["num_samples"]
        self.posterior_ = posterior
        precisions = posterior.mean("precisions")
        precisions = 0.5 * (precisions + precisions.transpose(-1, -2))
        self.weights_ = posterior.mean("weights").numpy()
        self.means_ = posterior.mean("locs").numpy()
        self.precisions_ = precisions.numpy()
        self.covariances_ = torch.linalg.inv(precisions).numpy()

    def _log_joint(self, x: torch.Tensor) -> torch.Tensor:
        comp = component_log_density(x, torch.as_tensor(self.means_),
                                     torch.as_tensor(self.precisions_))
        return comp + torch.as_tensor(self.weights_).log()
