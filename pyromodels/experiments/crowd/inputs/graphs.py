r"""Networked tasks of Table II: classifier ensembles on citation graphs, crowd labels on songs.

**Citation graphs (Cora, CiteSeer, Pubmed).** The paper trained :math:`M = 10` MATLAB
classifiers, each on a random subset of 150 (Cora), 100 (CiteSeer) or 300 (Pubmed) labelled
nodes, and let each label every node. We use ten scikit-learn classifiers
(:data:`CLASSIFIERS`); classifier :math:`m` draws its training nodes without replacement with
seed ``derive_seed(seed, name, classifier)``. Training nodes are predicted too (in-sample), as
in the paper. The number of classes is the data's own (Cora 7, CiteSeer 6, Pubmed 3): the
paper's Table II prints 10 and 7 for Cora and CiteSeer, its text 7 and 6.

**Music genre.** 44 Mechanical Turk workers' genre labels of 700 GTZAN songs
(:func:`~pyromodels.data.load_crowd`), and a symmetrised :math:`k`-nearest-neighbour graph on
the songs' 124 standardised Marsyas audio features (the source's ``music_genre_gold.csv.gz``).
With :math:`k = 3` the mean degree is 4.79 (1,677 edges), the paper's 4.8. The song file
names start with the genre, so items are renumbered in a seeded random order and the names are
not kept. (The paper sets the coupling :math:`\delta_n = M_n / 2` for this graph.)
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from ....checks import check_in, check_int
from ....core.seeding import derive_seed
from ....data import AnnotationTable, Graph, load_crowd, load_planetoid
from ....data.paths import ENV_VAR, locate
from .common import CrowdTask, dense_table

__all__ = ["CLASSIFIERS", "PLANETOID_TRAIN_SIZES", "make_classifier", "classifier_responses",
           "build_planetoid", "knn_graph", "load_music_features", "build_music_genre"]

PLANETOID_TRAIN_SIZES = {"cora": 150, "citeseer": 100, "pubmed": 300}
CLASSIFIERS = ("logreg", "linear_svm", "multinomial_nb", "bernoulli_nb", "decision_tree",
               "random_forest", "knn", "ridge", "sgd", "perceptron")
_GRAPH_METRIC = {"scheme": "macro", "average": "pooled", "classes": "present"}


def make_classifier(name: str, seed: int):
    """A fresh scikit-learn classifier of the ensemble (see :data:`CLASSIFIERS`)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import (
        LogisticRegression,
        Perceptron,
        RidgeClassifier,
        SGDClassifier,
    )
    from sklearn.naive_bayes import BernoulliNB, MultinomialNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier

    check_in(name, "name", CLASSIFIERS)
    seed = check_int(seed, "seed", minimum=0) % 2**32
    return {
        "logreg": lambda: LogisticRegression(max_iter=2000),
        "linear_svm": lambda: LinearSVC(random_state=seed),
        "multinomial_nb": lambda: MultinomialNB(),
        "bernoulli_nb": lambda: BernoulliNB(),
        "decision_tree": lambda: DecisionTreeClassifier(random_state=seed),
        "random_forest": lambda: RandomForestClassifier(n_estimators=100, random_state=seed),
        "knn": lambda: KNeighborsClassifier(n_neighbors=5, metric="cosine"),
        "ridge": lambda: RidgeClassifier(),
        "sgd": lambda: SGDClassifier(random_state=seed),
        "perceptron": lambda: Perceptron(random_state=seed),
    }[name]()


def classifier_responses(features, labels: np.ndarray, pool: np.ndarray, num_train: int,
                         seed: int, names=CLASSIFIERS) -> tuple[np.ndarray, list[np.ndarray]]:
    r"""Train each classifier on its own random subset of ``pool`` and predict every row.

    Args:
        features: ``(R, D)`` array or sparse matrix.
        labels: ``(R,)`` int class codes (only rows in ``pool`` are read).
        pool: row indices eligible for training.
        num_train: training rows per classifier, drawn without replacement.
        seed: base seed; classifier ``name`` uses ``derive_seed(seed, name)``.
        names: classifier names from :data:`CLASSIFIERS`.

    Returns:
        ``(responses, train_rows)``: int ``(R, M)`` predicted codes and each classifier's
        training rows. The fits run with one BLAS thread.
    """
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency

    pool = np.asarray(pool)
    num_train = check_int(num_train, "num_train", minimum=2, maximum=len(pool))
    out = np.empty((features.shape[0], len(names)), dtype=np.int64)
    train_rows = []
    with threadpool_limits(limits=1):  # small fits: BLAS threads only add overhead
        for m, name in enumerate(names):
            child = derive_seed(seed, name)
            rows = np.sort(np.random.default_rng(child).choice(pool, size=num_train,
                                                               replace=False))
            model = make_classifier(name, child).fit(features[rows], labels[rows])
            out[:, m] = model.predict(features)
            train_rows.append(rows)
    return out, train_rows


def build_planetoid(name: str, seed: int = 0, path=None, num_train: int | None = None
                    ) -> CrowdTask:
    """Cora, CiteSeer or Pubmed as in Table II: ten classifiers label the nodes of the graph.

    Node sets (what each task holds):

    * ``cora``: all 2,708 nodes, 5,278 edges.
    * ``citeseer``: the 3,312 papers of the paper's :math:`N`; the Planetoid file's 15
      placeholder nodes (no features, no label) and their 16 edges are removed. Item ids are
      the Planetoid node codes.
    * ``pubmed``: all 19,717 nodes and 44,324 edges, but features exist for only 1,060 nodes
      (the Planetoid train and test nodes; see the data's PROVENANCE). Classifiers train on
      and label only those nodes; the other 18,657 nodes have no response and can get a
      label only through the graph. ``eval_mask`` selects the 1,060 nodes, so that every
      method is scored where the learners speak. In-sample predictions weigh more than in
      the paper (300 of 1,060 nodes are some classifier's training nodes, against 300 of
      19,717).

    Args:
        name: ``"cora"``, ``"citeseer"`` or ``"pubmed"``.
        seed: seed of the training subsets and of the randomised classifiers.
        path: the data set's folder (default ``$PYROMODELS_DATA/<name>``).
        num_train: training nodes per classifier (default the paper's 150 / 100 / 300).

    Returns:
        :class:`CrowdTask` with a graph; scored by pooled macro-F1 (eq. 37 over all scored
        nodes), as in Table II.
    """
    check_in(name, "name", tuple(PLANETOID_TRAIN_SIZES))
    seed = check_int(seed, "seed", minimum=0)
    num_train = PLANETOID_TRAIN_SIZES[name] if num_train is None else num_train
    start = time.perf_counter()
    data = load_planetoid(name, path=path)
    keep = data.labels >= 0
    nodes = np.flatnonzero(keep)
    code = np.full(len(keep), -1)
    code[nodes] = np.arange(len(nodes))
    edges = data.graph.edges.numpy()
    edges = code[edges[(keep[edges[:, 0]] & keep[edges[:, 1]])]]
    labels = data.labels[nodes]
    featured = data.feature_available[nodes]
    rows = np.flatnonzero(featured)
    predicted, train_rows = classifier_responses(
        data.features[nodes[rows]], labels[rows], np.arange(len(rows)), num_train,
        derive_seed(seed, name))
    responses = np.full((len(nodes), len(CLASSIFIERS)), -1, dtype=np.int64)
    responses[rows] = predicted
    classes = [str(k) for k in range(data.num_classes)]
    table = dense_table(responses, CLASSIFIERS, classes, items=nodes)
    graph = Graph.from_edges(edges, num_nodes=len(nodes), nodes=pd.Index(nodes))
    eval_mask = None
    notes = (f"{name}: {len(nodes)} nodes, {len(edges)} edges, K = {data.num_classes} (the data's "
             f"own classes); ten scikit-learn classifiers, each trained on {num_train} random "
             "labelled nodes, label every node with features.")
    dropped = int((~keep).sum())
    if dropped:
        notes += (f" {dropped} placeholder nodes without features or label and their "
                  f"{data.graph.num_edges - len(edges)} edges were removed.")
    if not featured.all():
        eval_mask = torch.from_numpy(featured.copy())
        notes += (f" Features exist for {len(rows)} of {len(nodes)} nodes only: the others have "
                  "no response (labels reach them only through the graph) and eval_mask "
                  "restricts scoring to the featured nodes. In the paper every node had "
                  "features and responses.")
    info = {"seconds": time.perf_counter() - start, "num_train": num_train, "seed": seed,
            "train_items": [nodes[rows[r]].tolist() for r in train_rows],
            "mean_degree": graph.mean_degree}
    return CrowdTask(name, table, torch.from_numpy(labels.astype(np.int64)), classes,
                     graph=graph, notes=notes, metric=dict(_GRAPH_METRIC),
                     eval_mask=eval_mask, info=info)


def knn_graph(features: np.ndarray, k: int) -> Graph:
    r"""Symmetrised :math:`k`-nearest-neighbour graph: :math:`\{i, j\}` is an edge when
    :math:`j` is among the :math:`k` nearest rows of :math:`i` or :math:`i` among those of
    :math:`j` (Euclidean distance), each edge listed once.

    Args:
        features: ``(N, D)`` float array; standardise it first if the scales differ.
        k: neighbours per node, ``1 <= k < N``.
    """
    from sklearn.neighbors import NearestNeighbors

    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2 or not np.isfinite(x).all():
        raise ValueError(f"features must be a finite (N, D) array, got shape {x.shape}")
    k = check_int(k, "k", minimum=1, maximum=x.shape[0] - 1)
    _, idx = NearestNeighbors(n_neighbors=k + 1).fit(x).kneighbors(x)
    # a row's own index is its nearest neighbour unless an exact duplicate comes first
    others = np.array([[j for j in row if j != i][:k] for i, row in enumerate(idx)])
    pairs = np.stack([np.repeat(np.arange(len(x)), k), others.ravel()], axis=1)
    pairs = np.unique(np.sort(pairs, axis=1), axis=0)
    return Graph.from_edges(pairs, num_nodes=len(x))


def load_music_features(path=None) -> pd.DataFrame:
    """The 124 Marsyas features of the 700 songs, indexed by song file name (gold dropped).

    Reads ``music_genre/source/music_genre_gold.csv.gz`` from ``path`` (the ``music_genre``
    folder) or ``$PYROMODELS_DATA``.
    """
    file = "source/music_genre_gold.csv.gz"
    found = locate([file], path=path, subdir="music_genre", what="music genre audio features",
                   how_to_get=(f"Set {ENV_VAR} to a folder holding music_genre/{file} (the "
                               "music_genre_gold.csv of Rodrigues et al.'s mturk-datasets), "
                               "or pass path= that folder."))
    frame = pd.read_csv(found)
    columns = [f"feature{i}" for i in range(124)]
    missing = [c for c in ["id"] + columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{found} lacks column(s) {missing[:5]}")
    features = frame.set_index("id")[columns].astype(np.float64)
    if not np.isfinite(features.to_numpy()).all():
        raise ValueError(f"{found} holds missing or infinite feature values")
    return features


def build_music_genre(k: int = 3, seed: int = 0, path=None) -> CrowdTask:
    r"""Music Genre as in Table II: crowd labels of 700 songs and a :math:`k`-NN feature graph.

    Args:
        k: neighbours of the symmetrised kNN graph (``3`` gives the paper's mean degree 4.8;
            the paper does not state its :math:`k`).
        seed: seed of the random order of the items.
        path: the ``music_genre`` folder for the features (default
            ``$PYROMODELS_DATA/music_genre``).

    Returns:
        :class:`CrowdTask` over items ``0 .. 699`` (song names are not kept: they hold the
        genre), scored by pooled macro-F1 over the classes present.
    """
    seed = check_int(seed, "seed", minimum=0)
    start = time.perf_counter()
    answers, gold = load_crowd("music_genre")
    features = load_music_features(path)
    songs = np.asarray(sorted(gold.index))
    lacking = sorted(set(songs) - set(features.index))
    if lacking:
        raise ValueError(f"{len(lacking)} songs have no features, e.g. {lacking[:3]}")
    order = np.random.default_rng(derive_seed(seed, "music_genre")).permutation(len(songs))
    new_id = pd.Series(np.arange(len(songs)), index=songs[order])
    frame = answers.assign(task=new_id.reindex(answers["task"]).to_numpy())
    if frame["task"].isna().any():
        raise ValueError("music_genre answers label songs that have no gold")
    classes = sorted(gold.unique())
    table = AnnotationTable.from_dataframe(frame, classes=classes,
                                           items=pd.RangeIndex(len(songs)))
    x = features.loc[new_id.index].to_numpy()
    std = x.std(axis=0)
    if (std == 0).any():
        raise ValueError("music features with zero variance cannot be standardised")
    graph = knn_graph((x - x.mean(axis=0)) / std, k)
    gold_codes = table.encode_classes(gold.loc[new_id.index].to_numpy())
    notes = (f"44 MTurk workers, 700 songs, K = 10; symmetrised {k}-NN graph on the 124 "
             "standardised Marsyas features of the songs (Euclidean), as the paper describes "
             "without giving k. The paper sets delta_n = M_n / 2 for this graph. Song names "
             "carry the genre and are dropped; items are renumbered in a seeded random order.")
    info = {"seconds": time.perf_counter() - start, "k": k, "seed": seed,
            "mean_degree": graph.mean_degree}
    return CrowdTask("music_genre", table, gold_codes.long(), [str(c) for c in classes],
                     graph=graph, notes=notes, metric=dict(_GRAPH_METRIC), info=info)
