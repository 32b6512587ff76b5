"""Hidden Markov models over true labels: crowd labels of items in sequences.

Inference over ragged sequences (:mod:`.inference`: each picks the torch kernel, CPU or CUDA,
or the numba kernel on the CPU): :func:`forward_backward`, :func:`log_likelihood`,
:func:`forward_filter`, :func:`viterbi`, :func:`ffbs_sample`; exact enumeration for tiny
problems: :func:`brute_force`.
Baum-Welch pieces: :func:`e_step`, :func:`m_step`, :func:`baum_welch_step`,
:func:`majority_vote_params`. The model: :class:`SequentialDawidSkene`.
"""

from .baum_welch import baum_welch_step, count_transitions, e_step, m_step, majority_vote_params
from .data import SequentialCrowdData
from .distributions import CrowdResponses, MarkovChain
from .exact import brute_force
from .inference import ForwardBackward, ffbs_sample, forward_backward, forward_filter, log_likelihood, viterbi
from .model import SequentialDawidSkene
from .params import INITIAL_MODES, check_params, stationary_distribution

__all__ = [
    "INITIAL_MODES",
    "CrowdResponses",
    "ForwardBackward",
    "MarkovChain",
    "SequentialCrowdData",
    "SequentialDawidSkene",
    "baum_welch_step",
    "brute_force",
    "check_params",
    "count_transitions",
    "e_step",
    "ffbs_sample",
    "forward_backward",
    "forward_filter",
    "log_likelihood",
    "m_step",
    "majority_vote_params",
    "stationary_distribution",
    "viterbi",
]
