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

Every name loads its module on first use (:mod:`pyromodels.lazy`): ``from pyromodels.crowd
import DawidSkeneEstimator`` and an EM fit on the CPU's C passes import neither torch nor
Pyro; the other models and methods load them when they are used.
"""

from ..lazy import lazy_attributes

_ORIGINS = {
    "DSData": ".ds.data",
    "SingleWorkerClassWarning": ".ds.label_checks",
    "SparseWorkerWarning": ".ds.label_checks",
    "DawidSkene": ".ds.model",
    "confusion_counts": ".emissions",
    "log_emissions": ".emissions",
    "normalize_rows": ".emissions",
    "DawidSkeneEstimator": ".estimators.dawid_skene",
    "MajorityVote": ".estimators.majority_vote",
    "NetworkedDawidSkeneEstimator": ".estimators.networked",
    "SequentialDawidSkeneEstimator": ".estimators.sequential",
    "SequentialDawidSkene": ".hmm",
    "majority_vote": ".majority",
    "vote_fractions": ".majority",
    "MomentEstimate": ".moments.fit",
    "fit_moments": ".moments.fit",
    "moment_labels": ".moments.fit",
    "moment_posterior": ".moments.fit",
    "SequentialMomentEstimate": ".moments.sequential",
    "fit_sequential_moments": ".moments.sequential",
    "population_moments": ".moments.statistics",
    "sample_moments": ".moments.statistics",
    "simulate_label_frame": ".simulate",
    "NetworkedData": ".mrf",
    "NetworkedDawidSkene": ".mrf",
}
# the subpackages, reachable as attributes without an import of their own
_SUBPACKAGES = {name: f".{name}" for name in ("ds", "estimators", "hmm", "moments", "mrf")}

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
    "simulate_label_frame",
    "vote_fractions",
]

__getattr__, __dir__ = lazy_attributes(__name__, {**_ORIGINS, **_SUBPACKAGES})
