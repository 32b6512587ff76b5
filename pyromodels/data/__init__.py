"""Data contracts, simulators and loaders.

Contracts hold integer codes in torch tensors and the user's ids in pandas indexes:
:class:`AnnotationTable` (long item/worker/label crowd labels), :class:`Sequences` (ragged
sequences), :class:`Graph` (edge list with sparse views) and :class:`PairwiseAnnotations`
(must-link / cannot-link judgements). Simulators return a contract and the truth. Loaders
read real data sets without downloading anything.
"""

from __future__ import annotations

from . import loaders
from .annotations import AnnotationTable
from .graphs import Graph, node_ids
from .loaders import *  # noqa: F403 - re-exports exactly loaders.__all__
from .pairwise import PairwiseAnnotations
from .sequences import Sequences
from .simulate import simulate_gaussian_mixture
from .simulate_crowd import (
    WorkerPopulation,
    random_confusions,
    random_transitions,
    sbm_graph,
    simulate_annotations,
    simulate_networked_annotations,
    simulate_sequential_annotations,
)

__all__ = [
    "AnnotationTable",
    "Sequences",
    "Graph",
    "node_ids",
    "PairwiseAnnotations",
    "simulate_gaussian_mixture",
    "simulate_annotations",
    "WorkerPopulation",
    "random_confusions",
    "random_transitions",
    "simulate_sequential_annotations",
    "sbm_graph",
    "simulate_networked_annotations",
]
__all__ += loaders.__all__
