"""Crowd ensembles: Dawid-Skene for i.i.d. items, its HMM extension for items in sequences and
its Potts-MRF extension for items on a graph, with moment matching for starts.

Conventions: ``confusion[m, k, j] = P(worker m answers j | true class k)`` (rows = true class)
and ``transition[i, j] = P(y_t = j | y_{t-1} = i)`` (rows = previous state); the ensemble
paper's matrices are the transposes. Subpackages: :mod:`pyromodels.crowd.hmm` (sequences) and
:mod:`pyromodels.crowd.mrf` (graphs).
"""

from .dawid_skene import DawidSkene
from .ds_data import DSData, SparseWorkerWarning
from .emissions import confusion_counts, log_emissions, normalize_rows
from .estimators import DawidSkeneEstimator, MajorityVote
from .hmm import SequentialDawidSkene
from .majority import majority_vote, vote_fractions
from .mrf import NetworkedData, NetworkedDawidSkene

__all__ = [
    "DSData",
    "DawidSkene",
    "DawidSkeneEstimator",
    "MajorityVote",
    "NetworkedData",
    "NetworkedDawidSkene",
    "SequentialDawidSkene",
    "SparseWorkerWarning",
    "confusion_counts",
    "log_emissions",
    "majority_vote",
    "normalize_rows",
    "vote_fractions",
]
