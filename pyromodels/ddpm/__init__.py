"""Dirichlet-process mixtures on flow features (DPM and DDPM): the generative story, its
hyperparameters and the paper's presets, closed-form log joints, the baselines (k-means,
G-means), the paper's metric row and the synthetic protocol.

* :mod:`.prior`: :class:`DPMixturePrior`, :class:`PaperSchedule`, the Appendix B presets.
* :mod:`.model`: the Pyro program :func:`dp_mixture_crp` and the model class :class:`DPMixture`.
* :mod:`.joint`: the complete-data log joint (eqs. 16-19) and the new-cluster predictive (eq. 24).
* :mod:`.exact`: the exact posterior over partitions of tiny data sets (a sampler's oracle).
* :mod:`.baselines`: :func:`kmeans`, :func:`gmeans`.
* :mod:`.scores`: :func:`paper_scores` (F score, V score, ARI, ACC*, K).
* :mod:`.synthetic`: :func:`simulate_warped_clusters`.
"""

from .baselines import ClusteringResult, anderson_darling_normal, anderson_darling_pvalue, gmeans, kmeans
from .crp import sample_crp_labels
from .ddpm import DDPM
from .exact import exact_partition_posterior, partition_log_marginal, set_partitions
from .joint import (
    cluster_log_prior,
    complete_log_joint,
    crp_log_eppf,
    gaussian_log_likelihood,
    new_cluster_log_predictive,
)
from .mcem import MCEMSettings, fit_mcem
from .model import DPMixture, DPMixtureSample, canonical_labels, dp_mixture_crp, state_values
from .prior import EMPIRICAL, PAPER_PRESETS, PAPER_SCHEDULES, DPMixturePrior, PaperSchedule
from .scores import PAPER_METRICS, paper_scores
from .synthetic import SyntheticClusters, simulate_warped_clusters

__all__ = [
    "DDPM",
    "MCEMSettings",
    "fit_mcem",
    "DPMixturePrior",
    "PaperSchedule",
    "PAPER_PRESETS",
    "PAPER_SCHEDULES",
    "EMPIRICAL",
    "dp_mixture_crp",
    "state_values",
    "canonical_labels",
    "DPMixture",
    "DPMixtureSample",
    "crp_log_eppf",
    "cluster_log_prior",
    "gaussian_log_likelihood",
    "complete_log_joint",
    "new_cluster_log_predictive",
    "set_partitions",
    "partition_log_marginal",
    "exact_partition_posterior",
    "kmeans",
    "gmeans",
    "anderson_darling_normal",
    "ClusteringResult",
    "anderson_darling_pvalue",
    "sample_crp_labels",
    "paper_scores",
    "PAPER_METRICS",
    "simulate_warped_clusters",
    "SyntheticClusters",
]
