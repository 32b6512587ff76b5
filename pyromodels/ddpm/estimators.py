"""scikit-learn facades of the DP mixtures: :class:`DPGaussianMixture` (the Chinese-restaurant
form, :class:`~pyromodels.ddpm.DPMixture`, sampled by collapsed Gibbs) and
:class:`TruncatedDPGaussianMixture` (the truncated stick-breaking form,
:class:`~pyromodels.ddpm.TruncatedDPMixture`, sampled by blocked Gibbs).

The names end in ``GaussianMixture`` like scikit-learn's estimators and differ from the model
classes (``DPMixture``, ``TruncatedDPMixture``), whose ``fit`` returns a
:class:`~pyromodels.core.Posterior`. Both facades pass
``sklearn.utils.estimator_checks.check_estimator``.

A fitted facade is a finite mixture of isotropic Gaussians read off the posterior (a plug-in
point estimate): ``weights_`` ``(K,)``, ``means_`` ``(K, d)``, ``precisions_`` ``(K,)``
(``lam_k``, the inverse variance of every coordinate) and ``covariances_`` ``(K,)`` (their
inverses). Only the components that are the most probable component of at least one training
point are kept (the others hold no data: prior-like and of small weight), their weights
renormalised, so the labels ``0..K-1`` of ``labels_`` are all used and ``n_components_ = K``
counts the clusters found.
"""

from __future__ import annotations

import dataclasses

import torch

from ..bnp import component_posterior, stick_log_weights
from ..checks import check_bool, check_in, check_int, check_positive
from ..core.estimator import MixtureClusterer
from .gibbs import GIBBS_ALGORITHMS
from .joint import isotropic_log_densities
from .model import DPMixture
from .prior import DPMixturePrior, resolve_prior
from .truncated import TruncatedDPMixture

__all__ = ["DPGaussianMixture", "TruncatedDPGaussianMixture"]


class _IsotropicMixture(MixtureClusterer):
    """What both facades share: the prior of a fit and the fitted isotropic mixture."""

    def _resolved_prior(self, x: torch.Tensor) -> DPMixturePrior:
        if self.prior is not None and not isinstance(self.prior, DPMixturePrior):
            raise TypeError(f"prior must be a DPMixturePrior or None, got {type(self.prior).__name__}")
        prior = resolve_prior(self.prior, x)
        if self.weight_concentration_prior is None:
            return prior
        alpha = check_positive(self.weight_concentration_prior, "weight_concentration_prior")
        return dataclasses.replace(prior, alpha=alpha)

    def _gibbs_options(self) -> dict:
        return {"num_warmup": check_int(self.num_warmup, "num_warmup", minimum=0),
                "num_samples": check_int(self.num_samples, "num_samples", minimum=1),
                "num_chains": check_int(self.num_chains, "num_chains", minimum=1),
                "progress": check_int(self.verbose, "verbose", minimum=0) > 0,
                "diagnostic_warnings": check_bool(self.diagnostic_warnings, "diagnostic_warnings")}

    def _set_mixture(self, x, weights, means, precisions) -> None:
        """Keep the components that hold a training point; set the fitted attributes."""
        log_joint = isotropic_log_densities(x, means, precisions) + weights.log()
        kept = torch.unique(log_joint.argmax(-1))
        weights = weights[kept]
        self.weights_ = (weights / weights.sum()).numpy()
        self.means_ = means[kept].numpy()
        self.precisions_ = precisions[kept].numpy()
        self.covariances_ = (1.0 / precisions[kept]).numpy()
        self.n_components_ = int(kept.shape[0])

    def _log_joint(self, x: torch.Tensor) -> torch.Tensor:
        return (isotropic_log_densities(x, torch.as_tensor(self.means_), torch.as_tensor(self.precisions_))
                + torch.as_tensor(self.weights_).log())


class DPGaussianMixture(_IsotropicMixture):
    """Dirichlet-process mixture of isotropic Gaussians as a scikit-learn estimator.

    The model (:class:`~pyromodels.ddpm.DPMixture` without a flow): a CRP with concentration
    ``alpha`` over the partition, ``lam_k ~ Gamma(alpha0, rate beta0)``, ``mu_k | lam_k ~
    N(mu0, (kappa0 lam_k)^-1 I)``, ``x_i ~ N(mu_{c_i}, lam_{c_i}^-1 I)``. The number of
    clusters is inferred. ``fit`` runs ``DPMixture.fit(method="gibbs")``
    (:func:`~pyromodels.ddpm.fit_gibbs`) and takes as point estimate the kept draw of the
    partition with the highest collapsed log joint ``log p(x, c)``; the fitted mixture has
    weights ``n_k / N`` and the posterior means of ``(mu_k, lam_k)`` given that partition
    (module docstring).

    Args:
        weight_concentration_prior: the DP concentration ``alpha`` (scikit-learn's name for
            it); ``None`` keeps the prior's (1 with ``prior=None``).
        prior: a :class:`~pyromodels.ddpm.DPMixturePrior` for the base measure; ``None``
            (default) is :func:`~pyromodels.ddpm.default_prior` of the data (the fit does not
            depend on the data's units).
        algorithm: the Gibbs sampler: ``3`` (collapsed, default), ``2`` or ``"blocked"``.
        num_warmup: discarded sweeps per chain.
        num_samples: kept sweeps per chain.
        num_chains: chains.
        random_state: ``None``, an int, a ``numpy.random.RandomState`` or ``Generator``.
        verbose: ``> 0`` shows a progress bar.
        diagnostic_warnings: ``False`` silences the :class:`~pyromodels.core.SamplingWarning`
            that the Gibbs chains raise when their diagnostics say the draws are not yet
            reliable.

    Attributes:
        weights_, means_, precisions_, covariances_, n_components_: the fitted mixture
            (module docstring).
        labels_: ``(n_samples,)`` the most probable cluster of each training point.
        n_iter_: sweeps per chain.
        n_features_in_: the data's number of columns.
        posterior_: the :class:`~pyromodels.core.Posterior` of the Gibbs run.
        seed_: the seed the fit used.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = np.vstack([rng.normal(-4, 1, (40, 2)), rng.normal(4, 1, (40, 2))])
        >>> est = DPGaussianMixture(num_warmup=10, num_samples=10, random_state=0).fit(X)
        >>> est.n_components_, len(set(est.labels_[:40])), est.predict_proba(X).shape
        (2, 1, (80, 2))
    """

    def __init__(self, weight_concentration_prior=None, *, prior=None, algorithm=3,
                 num_warmup=100, num_samples=100, num_chains=1, random_state=None, verbose=0,
                 diagnostic_warnings=True):
        self.weight_concentration_prior = weight_concentration_prior
        self.prior = prior
        self.algorithm = algorithm
        self.num_warmup = num_warmup
        self.num_samples = num_samples
        self.num_chains = num_chains
        self.random_state = random_state
        self.verbose = verbose
        self.diagnostic_warnings = diagnostic_warnings

    def _fit_mixture(self, x: torch.Tensor, seed: int) -> None:
        check_in(self.algorithm, "algorithm", tuple(GIBBS_ALGORITHMS))
        options = self._gibbs_options()
        prior = self._resolved_prior(x)
        posterior = DPMixture(prior).fit(x, method="gibbs", algorithm=self.algorithm, seed=seed,
                                         **options)
        best = int(posterior.sample_stats["lp"].reshape(-1).argmax())
        labels = posterior["c"].reshape(-1, x.shape[0])[best]
        k = int(labels.max()) + 1
        mu, lam = component_posterior(x, labels, prior.normal_gamma(x.shape[1], data=x), k).mean()
        counts = torch.bincount(labels, minlength=k).to(x.dtype)
        self.posterior_ = posterior
        self.n_iter_ = options["num_warmup"] + options["num_samples"]
        self._set_mixture(x, counts / counts.sum(), mu.to(x.dtype), lam.to(x.dtype))


class TruncatedDPGaussianMixture(_IsotropicMixture):
    """Truncated stick-breaking DP mixture of isotropic Gaussians as a scikit-learn estimator.

    The model (:class:`~pyromodels.ddpm.TruncatedDPMixture`): ``v_k ~ Beta(1, alpha)`` for
    ``k < T - 1``, ``pi_k = v_k prod_{j<k} (1 - v_j)``, the same Normal-Gamma base measure as
    :class:`DPGaussianMixture`, ``c_i ~ Categorical(pi)``. ``fit`` runs the blocked Gibbs
    sampler (``TruncatedDPMixture.fit(method="gibbs")``); the fitted mixture is the kept draw
    of ``(v, mu, lam)`` with the highest log joint (``sample_stats["lp"]``; means over draws
    would mix components whose labels switched between draws or chains), restricted to the
    components that hold a training point.

    Args:
        n_components: the truncation ``T`` (an upper bound on the clusters; scikit-learn's
            name for it).
        weight_concentration_prior: the DP concentration ``alpha``; ``None`` keeps the
            prior's (1 with ``prior=None``).
        prior: a :class:`~pyromodels.ddpm.DPMixturePrior`, or ``None`` (the data's units).
        num_warmup: discarded sweeps per chain.
        num_samples: kept sweeps per chain.
        num_chains: chains.
        random_state: ``None``, an int, a ``numpy.random.RandomState`` or ``Generator``.
        verbose: ``> 0`` shows a progress bar.
        diagnostic_warnings: ``False`` silences the :class:`~pyromodels.core.SamplingWarning`
            that the Gibbs chains raise when their diagnostics say the draws are not yet
            reliable.

    Attributes:
        weights_, means_, precisions_, covariances_, n_components_: the fitted mixture
            (module docstring); ``n_components_ <= n_components``.
        labels_, n_iter_, n_features_in_, posterior_, seed_: as :class:`DPGaussianMixture`.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = np.vstack([rng.normal(-4, 1, (40, 2)), rng.normal(4, 1, (40, 2))])
        >>> est = TruncatedDPGaussianMixture(5, num_warmup=20, num_samples=20, random_state=0)
        >>> est.fit(X).n_components_, len(set(est.labels_[:40])), round(float(est.weights_.sum()), 6)
        (2, 1, 1.0)
    """

    def __init__(self, n_components=10, *, weight_concentration_prior=None, prior=None,
                 num_warmup=100, num_samples=100, num_chains=1, random_state=None, verbose=0,
                 diagnostic_warnings=True):
        self.n_components = n_components
        self.weight_concentration_prior = weight_concentration_prior
        self.prior = prior
        self.num_warmup = num_warmup
        self.num_samples = num_samples
        self.num_chains = num_chains
        self.random_state = random_state
        self.verbose = verbose
        self.diagnostic_warnings = diagnostic_warnings

    def _fit_mixture(self, x: torch.Tensor, seed: int) -> None:
        truncation = check_int(self.n_components, "n_components", minimum=1)
        options = self._gibbs_options()
        model = TruncatedDPMixture(self._resolved_prior(x), truncation=truncation)
        posterior = model.fit(x, method="gibbs", seed=seed, **options)
        best = int(posterior.sample_stats["lp"].reshape(-1).argmax())

        def at_best(site):
            value = posterior[site]
            return value.reshape((-1,) + tuple(value.shape[2:]))[best]

        mu, lam = at_best("mu"), at_best("lam")
        if truncation > 1:
            v = at_best("v")
            weights = stick_log_weights(torch.cat([v, v.new_ones(1)])).exp()
        else:
            weights = lam.new_ones(1)
        self.posterior_ = posterior
        self.n_iter_ = options["num_warmup"] + options["num_samples"]
        self._set_mixture(x, weights, mu, lam)
