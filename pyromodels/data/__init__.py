"""Data contracts, simulators and loaders.

Contracts hold integer codes in torch tensors and the user's ids in pandas indexes:
:class:`AnnotationTable` (long item/worker/label crowd labels), :class:`Sequences` (ragged
sequences), :class:`Graph` (edge list with sparse views) and :class:`PairwiseAnnotations`
(must-link / cannot-link judgements). Simulators return a contract and the truth. Loaders
read real data sets without downloading anything.
"""

from __future__ import annotations

from .annotations import AnnotationTable
from .graphs import Graph
from .loaders import (
    CrowdTokenData,
    PlanetoidData,
    SpanAnnotations,
    TaggedCorpus,
    list_crowd_datasets,
    load_animals,
    load_conll_ner_crowd,
    load_crowd,
    load_ducks_species,
    load_fashion_mnist,
    load_mnist_5k,
    load_nltk_brown,
    load_nltk_treebank,
    load_pico,
    load_planetoid,
    load_sklearn,
    load_universal_tagset_map,
    read_idx,
    spans_to_tokens,
)
from .pairwise import PairwiseAnnotations
from .sequences import Sequences
from .simulate import simulate_annotations, simulate_gaussian_mixture

__all__ = [
    "AnnotationTable",
    "Sequences",
    "Graph",
    "PairwiseAnnotations",
    "simulate_gaussian_mixture",
    "simulate_annotations",
    "list_crowd_datasets",
    "load_crowd",
    "load_ducks_species",
    "load_animals",
    "load_sklearn",
    "load_mnist_5k",
    "load_fashion_mnist",
    "read_idx",
    "load_planetoid",
    "PlanetoidData",
    "load_conll_ner_crowd",
    "load_pico",
    "spans_to_tokens",
    "CrowdTokenData",
    "SpanAnnotations",
    "load_nltk_treebank",
    "load_nltk_brown",
    "load_universal_tagset_map",
    "TaggedCorpus",
]
