"""Crowd ensembles: Dawid-Skene for i.i.d. items, its HMM extension for items in sequences and
its Potts-MRF extension for items on a graph, with moment matching for starts.

Conventions: ``confusion[m, k, j] = P(worker m answers j | true class k)`` (rows = true class)
and ``transition[i, j] = P(y_t = j | y_{t-1} = i)`` (rows = previous state); the ensemble
paper's matrices are the transposes. Subpackages: :mod:`pyromodels.crowd.hmm` (sequences) and
:mod:`pyromodels.crowd.mrf` (graphs).

DataFrame facades in crowd-kit's and scikit-learn's style (:mod:`pyromodels.crowd.estimators`):
:class:`MajorityVote`, :class:`DawidSkeneEstimator`, :class:`SequentialDawidSkeneEstimator`
and :class:`NetworkedDawidSkeneEstimator`; their ``errors_`` follow crowd-kit's layout (rows
``(worker, label given)``, true labels as columns) and ``confusions_`` the models' (rows
``(worker, true label)``). ``sklearn.base.clone`` works on the facades. It does not apply to
the model classes (:class:`DawidSkene`, ...): they are not estimators, as ``fit`` returns a
:class:`~pyromodels.core.Posterior` and the model object holds no fitted state, so there is
nothing to reset; build a new one from the same arguments (or ``copy.deepcopy`` it).
"""

from .ds.data import DSData, SingleWorkerClassWarning, SparseWorkerWarning
from .ds.model import DawidSkene
from .emissions import confusion_counts, log_emissions, normalize_rows
from .estimators import (
    DawidSkeneEstimator,
    MajorityVote,
    NetworkedDawidSkeneEstimator,
    SequentialDawidSkeneEstimator,
)
from .hmm import SequentialDawidSkene
from .majority import majority_vote, vote_fractions
from .moments.fit import MomentEstimate, fit_moments, moment_labels, moment_posterior
from .moments.sequential import SequentialMomentEstimate, fit_sequential_moments
from .moments.statistics import population_moments, sample_moments
from .mrf import NetworkedData, NetworkedDawidSkene

__all__ = [
    "DSData",
    "DawidSkene",
    "DawidSkeneEstimator",
    "MajorityVote",
    "MomentEstimate",
    "NetworkedData",
    "NetworkedDawidSkene",
    "NetworkedDawidSkeneEstimator",
    "SequentialDawidSkene",
    "SequentialDawidSkeneEstimator",
    "SequentialMomentEstimate",
    "SingleWorkerClassWarning",
    "SparseWorkerWarning",
    "confusion_counts",
    "fit_moments",
    "fit_sequential_moments",
    "log_emissions",
    "majority_vote",
    "moment_labels",
    "moment_posterior",
    "normalize_rows",
    "population_moments",
    "sample_moments",
    "vote_fractions",
]
