"""The facade of the networked model: judgements as one DataFrame, the graph as an edge list.

``fit(df, edges)``: ``df`` has one row per judgement (task, worker, label) and ``edges`` one
row per undirected edge between two tasks (columns ``source`` and ``target``, each edge listed
once). Tasks that appear only in ``edges`` are items without judgements: their labels follow
from their neighbours.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"task": ["a", "a", "b", "b", "c", "c"],
    ...                    "worker": ["u", "v"] * 3,
    ...                    "label": ["x", "x", "x", "y", "y", "y"]})
    >>> edges = pd.DataFrame({"source": ["a", "b"], "target": ["b", "d"]})
    >>> est = NetworkedDawidSkeneEstimator().fit(df, edges)
    >>> list(est.labels_.index)
    ['a', 'b', 'c', 'd']
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data.graphs import Graph, node_ids
from ..mrf import NetworkedDawidSkene
from .base import CrowdAggregator, check_edges, draw_frequencies

__all__ = ["NetworkedDawidSkeneEstimator"]

METHODS = ("em", "gibbs")


class NetworkedDawidSkeneEstimator(CrowdAggregator):
    """Networked Dawid-Skene (:class:`~pyromodels.crowd.NetworkedDawidSkene`: a Potts MRF over
    the true labels on a known graph) over a DataFrame of judgements and an edge list.

    Args:
        n_iter, tol: EM's iteration cap and relative tolerance (``method="em"``).
        method: ``"em"`` (the paper's Alg. 3: ICM, mode-field E-step, MAP M-step) or
            ``"gibbs"`` (single-site label draws and Dirichlet draws of the confusions).
        seed: the fit's seed.
        random_state: scikit-learn's name for the seed; when it is not ``None`` it wins over
            ``seed`` (see :class:`DawidSkeneEstimator`).
        delta, confusion_concentration: the model's arguments (see
            :class:`~pyromodels.crowd.NetworkedDawidSkene`).
        diagnostic_warnings: after a sampling fit (``method="gibbs"``), emit a
            :class:`~pyromodels.core.SamplingWarning` when its diagnostics say the draws are
            not yet reliable; ``False`` silences it.
        num_samples, num_warmup, num_chains: Gibbs draws kept per chain, warm-up sweeps and
            chains.
        task, worker, label: column names of ``df``.
        source, target: column names of ``edges``.
        classes, allow_repeats: as :class:`MajorityVote`.
        progress: show progress bars.
        device: ``"cpu"``, ``"cuda"`` or ``None``.

    Attributes:
        labels_: Series indexed by task (every task of ``df`` and ``edges``, sorted): for EM
            the final ICM labels (Alg. 3's answer), for Gibbs the most frequent label of each
            task over the draws.
        probas_: DataFrame tasks x classes: EM's mode-field posteriors, or Gibbs' draw
            frequencies.
        errors_, confusions_, loss_history_, n_iter_, converged_, posterior_, model_, table_:
            as :class:`DawidSkeneEstimator`.
        graph_: the :class:`~pyromodels.data.Graph` built from ``edges``.
    """

    _fitted = ("labels_", "probas_", "table_", "graph_", "errors_", "confusions_",
               "loss_history_", "n_iter_", "converged_", "posterior_", "model_")
    _method_params = {"n_iter": ("em",), "tol": ("em",), "num_samples": ("gibbs",),
                      "num_warmup": ("gibbs",), "num_chains": ("gibbs",),
                      "diagnostic_warnings": ("gibbs",)}

    def __init__(self, n_iter: int = 100, tol: float = 1e-5, method: str = "em",
                 seed: int | None = 0, *, random_state=None, delta="M",
                 confusion_concentration=1.0, num_samples: int = 500, num_warmup: int = 300,
                 num_chains: int = 2, task: str = "task", worker: str = "worker",
                 label: str = "label", source: str = "source", target: str = "target",
                 classes=None, allow_repeats: bool = False, progress: bool = False,
                 device=None, diagnostic_warnings: bool = True):
        self.n_iter = n_iter
        self.tol = tol
        self.method = method
        self.seed = seed
        self.random_state = random_state
        self.delta = delta
        self.confusion_concentration = confusion_concentration
        self.num_samples = num_samples
        self.num_warmup = num_warmup
        self.num_chains = num_chains
        self.task = task
        self.worker = worker
        self.label = label
        self.source = source
        self.target = target
        self.classes = classes
        self.allow_repeats = allow_repeats
        self.progress = progress
        self.device = device
        self.diagnostic_warnings = diagnostic_warnings

    def _graph(self, df, edges):
        """The table over every task of ``df`` and ``edges``, and the graph on those tasks."""
        for name in ("source", "target"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a column name (str), got {getattr(self, name)!r}")
        edges = check_edges(edges, self.source, self.target)
        self._check_columns()
        if not isinstance(df, pd.DataFrame) or self.task not in df.columns:
            return self._table(df), None  # the table's own checks name the problem
        items = node_ids({f"df[{self.task!r}]": df[self.task],
                          f"edges[{self.source!r}]": edges[self.source],
                          f"edges[{self.target!r}]": edges[self.target]})
        table = self._table(df, items=items)
        codes = np.stack([items.get_indexer(edges[self.source]),
                          items.get_indexer(edges[self.target])], axis=1).astype(np.int64)
        return table, Graph(codes.reshape(-1, 2), num_nodes=len(items), nodes=items)

    def fit(self, df, edges=None) -> NetworkedDawidSkeneEstimator:
        """Fit the model to ``df`` (one row per judgement) on the graph ``edges``."""
        if edges is None:
            raise TypeError(
                f"edges is required: a DataFrame with columns {self.source!r} and "
                f"{self.target!r}, one row per edge between two tasks"
            )
        options = self._engine_options(METHODS)
        table, graph = self._graph(df, edges)
        model = NetworkedDawidSkene(delta=self.delta,
                                    confusion_concentration=self.confusion_concentration)
        post = model.fit((table, graph), method=self.method, **options)
        table = post.data.table if hasattr(post.data, "table") else table
        if post.method == "em":
            probas, labels = post.params["posteriors"], post.params["labels"]
        else:
            probas = draw_frequencies(post.samples["y"], table.num_classes)
            labels = probas.argmax(-1)
        self._store(table, probas, labels)
        self.graph_, self.model_, self.posterior_ = graph, model, post
        self._store_confusions(table, post.mean("confusion"))
        self._record_run(post)
        return self
