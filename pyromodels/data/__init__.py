"""Data contracts, simulators and loaders.

Contracts hold integer codes in torch tensors and the user's ids in pandas indexes:
:class:`AnnotationTable` (long item/worker/label crowd labels), :class:`Sequences` (ragged
sequences), :class:`Graph` (edge list with sparse views) and :class:`PairwiseAnnotations`
(must-link / cannot-link judgements). Simulators return a contract and the truth: crowd labels
(:mod:`.simulate_crowd`), pairwise judgements of two-coin workers (:mod:`.simulate_pairs`) and
feature data (:mod:`.simulate`: Gaussian mixtures, the pinwheel, the LTVAE paper's two-facet
data). :func:`check_numeric_table`
checks a table of continuous features (:mod:`.tables`). Loaders
read real data sets without downloading anything. Every name loads its module on first use
(:mod:`pyromodels.lazy`); :mod:`.columns` codes DataFrame columns without torch.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

#: the loaders' names (``loaders.__all__``), re-exported here
LOADERS = (
    "list_crowd_datasets",
    "load_crowd",
    "load_ducks_species",
    "load_animals",
    "load_sklearn",
    "load_pltm_uci",
    "PLTMData",
    "PLTM_UCI_SETS",
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
)

_ORIGINS = {
    "AnnotationTable": ".annotations",
    "Sequences": ".sequences",
    "Graph": ".graphs",
    "node_ids": ".graphs",
    "PairwiseAnnotations": ".pairwise",
    "simulate_gaussian_mixture": ".simulate",
    "simulate_pinwheel": ".simulate",
    "simulate_two_facets": ".simulate",
    "simulate_random_pairs": ".simulate_pairs",
    "simulate_block_pairs": ".simulate_pairs",
    "simulate_stratified_pairs": ".simulate_pairs",
    "simulate_hit_partitions": ".simulate_pairs",
    "two_coin_rates": ".simulate_pairs",
    "two_coin_links": ".simulate_pairs",
    "partition_rates": ".simulate_pairs",
    "simulate_annotations": ".simulate_crowd",
    "WorkerPopulation": ".simulate_crowd",
    "random_confusions": ".simulate_crowd",
    "random_transitions": ".simulate_crowd",
    "simulate_sequential_annotations": ".simulate_crowd",
    "sbm_graph": ".simulate_crowd",
    "simulate_networked_annotations": ".simulate_crowd",
    "check_numeric_table": ".tables",
    **{name: ".loaders" for name in LOADERS},
}

__all__ = [*_ORIGINS]

__getattr__, __dir__ = lazy_attributes(__name__, {**_ORIGINS, "loaders": ".loaders"})
