"""Dirichlet-process mixtures on flow features (DPM and DDPM): the generative story, its
hyperparameters and the paper's presets, closed-form log joints, the baselines (k-means,
G-means), the paper's metric row and the synthetic protocol.

* :mod:`.prior`: :class:`DPMixturePrior`, :class:`PaperSchedule`, the Appendix B presets,
  :func:`default_prior` (the prior of ``prior=None``, in the data's units).
* :mod:`.model`: the Pyro program :func:`dp_mixture_crp` and the model class :class:`DPMixture`.
* :mod:`.joint`: the complete-data log joint (eqs. 16-19).
* :mod:`.baselines`: :func:`kmeans`, :func:`gmeans`.
* :mod:`.scores`: :func:`paper_scores` (F score, V score, ARI, ACC*, K).
* :mod:`.synthetic`: :func:`simulate_warped_clusters`.
* :mod:`.gibbs`: :func:`fit_gibbs`, Gibbs sampling of :class:`DPMixture` (Algorithms 2, 3, blocked).
* :mod:`.mcem`: Monte Carlo EM (Algorithm 1); :mod:`.ddpm`: :class:`DDPM`, the model with its NICE
  flow built for the data.
* :mod:`.truncated`: :class:`TruncatedDPMixture`, the truncated stick-breaking form fitted by SVI
  (``c`` enumerated) or blocked Gibbs.
* :mod:`.estimators`: the scikit-learn estimators :class:`DPGaussianMixture` (``DPMixture`` by
  Gibbs) and :class:`TruncatedDPGaussianMixture` (``TruncatedDPMixture`` by blocked Gibbs),
  loaded on first use (they import scikit-learn, which importing the family does not).
"""

from ..lazy import lazy_attributes
from .baselines import ClusteringResult, anderson_darling_normal, anderson_darling_pvalue, gmeans, kmeans
from .ddpm import DDPM
from .gibbs import fit_gibbs
from .joint import cluster_log_prior, complete_log_joint, gaussian_log_likelihood
from .mcem import MCEMSettings, fit_mcem
from .model import DPMixture, DPMixtureSample, dp_mixture_crp, state_values
from .prior import (
    EMPIRICAL,
    PAPER_PRESETS,
    PAPER_SCHEDULES,
    DPMixturePrior,
    PaperSchedule,
    default_prior,
)
from .scores import PAPER_METRICS, paper_scores
from .synthetic import SyntheticClusters, simulate_warped_clusters
from .truncated import TruncatedAssignment, TruncatedDPMixture

__all__ = [
    "DDPM",
    "DPGaussianMixture",
    "TruncatedDPGaussianMixture",
    "MCEMSettings",
    "fit_mcem",
    "fit_gibbs",
    "DPMixturePrior",
    "PaperSchedule",
    "PAPER_PRESETS",
    "PAPER_SCHEDULES",
    "EMPIRICAL",
    "default_prior",
    "dp_mixture_crp",
    "state_values",
    "DPMixture",
    "DPMixtureSample",
    "cluster_log_prior",
    "gaussian_log_likelihood",
    "complete_log_joint",
    "kmeans",
    "gmeans",
    "anderson_darling_normal",
    "ClusteringResult",
    "anderson_darling_pvalue",
    "paper_scores",
    "PAPER_METRICS",
    "simulate_warped_clusters",
    "SyntheticClusters",
    "TruncatedDPMixture",
    "TruncatedAssignment",
]


__getattr__, __dir__ = lazy_attributes(__name__, {"DPGaussianMixture": ".estimators",
                                                  "TruncatedDPGaussianMixture": ".estimators"})
