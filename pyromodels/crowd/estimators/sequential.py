"""The facade of the sequential model: judgements on items in sequences, as one DataFrame.

Each row is one judgement: the sequence it belongs to, the item's position in that sequence,
the worker and the label. Every distinct ``(sequence, position)`` pair is one item; positions
only order the items of a sequence (any sortable values), so the chain runs over the labelled
positions of each sequence in sorted order.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sequence": ["s1"] * 6 + ["s2"] * 6,
    ...                    "position": [0, 0, 1, 1, 2, 2] * 2,
    ...                    "worker": ["u", "v"] * 6,
    ...                    "label": list("AABBBB") + list("BBAAAB")})
    >>> est = SequentialDawidSkeneEstimator().fit(df)
    >>> est.labels_.index.names, len(est.labels_)
    (FrozenList(['sequence', 'position']), 6)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data.annotations import AnnotationTable, check_columns
from ...data.sequences import Sequences
from ..hmm import SequentialDawidSkene
from ..hmm.params import stationary_distribution
from .base import CrowdAggregator, draw_frequencies

__all__ = ["SequentialDawidSkeneEstimator"]

METHODS = ("em", "gibbs")
_CODE = "__position_code__"  # the item code column of the table built from the user's rows


class SequentialDawidSkeneEstimator(CrowdAggregator):
    """Sequential Dawid-Skene (:class:`~pyromodels.crowd.SequentialDawidSkene`) over a
    DataFrame with a sequence column and a position column.

    Args:
        n_iter, tol: EM's iteration cap and relative tolerance (``method="em"``).
        method: ``"em"`` (Baum-Welch, MAP with the Dirichlet priors) or ``"gibbs"``
            (forward-filtering backward-sampling of the labels and Dirichlet draws).
        seed: the fit's seed.
        random_state: scikit-learn's name for the seed; when it is not ``None`` it wins over
            ``seed`` (see :class:`DawidSkeneEstimator`).
        initial, initial_concentration, transition_concentration, confusion_concentration:
            the model's arguments (see :class:`~pyromodels.crowd.SequentialDawidSkene`).
        diagnostic_warnings: after a sampling fit (``method="gibbs"``), emit a
            :class:`~pyromodels.core.SamplingWarning` when its diagnostics say the draws are
            not yet reliable; ``False`` silences it.
        num_samples, num_warmup, num_chains: Gibbs draws kept per chain, warm-up sweeps and
            chains.
        sequence, position, worker, label: column names of the DataFrame.
        classes, allow_repeats: as :class:`MajorityVote`.
        progress: show progress bars.
        device: ``"cpu"``, ``"cuda"`` or ``None``.

    Attributes:
        labels_: Series indexed by ``(sequence, position)``: for EM the most probable labelling
            of each sequence (Viterbi), which can differ at a few positions from the argmax of
            ``probas_``; for Gibbs the most frequent label of each position over the draws.
        probas_: DataFrame ``(sequence, position)`` x classes: the posterior marginal of each
            position's label (forward-backward for EM, draw frequencies for Gibbs).
        errors_, confusions_: the worker confusion matrices in crowd-kit's layout and in the
            model's (see :class:`DawidSkeneEstimator`).
        transitions_: DataFrame previous label x next label of transition probabilities.
        initial_: Series, the law of each sequence's first label.
        loss_history_, n_iter_, converged_, posterior_, model_, table_: as
            :class:`DawidSkeneEstimator` (``table_``'s items are the position codes in order).
    """

    _fitted = ("labels_", "probas_", "table_", "errors_", "confusions_", "transitions_",
               "initial_", "loss_history_", "n_iter_", "converged_", "posterior_", "model_")
    _method_params = {"n_iter": ("em",), "tol": ("em",), "num_samples": ("gibbs",),
                      "num_warmup": ("gibbs",), "num_chains": ("gibbs",),
                      "diagnostic_warnings": ("gibbs",)}

    def __init__(self, n_iter: int = 100, tol: float = 1e-5, method: str = "em",
                 seed: int | None = 0, *, random_state=None, initial: str = "learned",
                 initial_concentration=1.0, transition_concentration=1.0,
                 confusion_concentration=1.0, num_samples: int = 500, num_warmup: int = 300,
                 num_chains: int = 2, sequence: str = "sequence", position: str = "position",
                 worker: str = "worker", label: str = "label", classes=None,
                 allow_repeats: bool = False, progress: bool = False, device=None,
                 diagnostic_warnings: bool = True):
        self.n_iter = n_iter
        self.tol = tol
        self.method = method
        self.seed = seed
        self.random_state = random_state
        self.initial = initial
        self.initial_concentration = initial_concentration
        self.transition_concentration = transition_concentration
        self.confusion_concentration = confusion_concentration
        self.num_samples = num_samples
        self.num_warmup = num_warmup
        self.num_chains = num_chains
        self.sequence = sequence
        self.position = position
        self.worker = worker
        self.label = label
        self.classes = classes
        self.allow_repeats = allow_repeats
        self.progress = progress
        self.device = device
        self.diagnostic_warnings = diagnostic_warnings

    def _columns(self) -> dict[str, str]:
        return {"sequence": self.sequence, "position": self.position, "worker": self.worker,
                "label": self.label}

    def _item_name(self) -> None:
        return None  # the items are (sequence, position) pairs: a two-level index

    def _sequences(self, df) -> tuple[Sequences, pd.MultiIndex]:
        """The model's data and the ``(sequence, position)`` id of every item code."""
        self._check_columns()
        check_columns(df, self._columns())
        keys = df[[self.sequence, self.position]]
        for col in keys.columns:
            if keys[col].isna().any():
                raise ValueError(f"df[{col!r}] holds missing values (NaN or None)")
        try:
            items = pd.MultiIndex.from_frame(keys).unique().sort_values()
        except TypeError as err:
            raise TypeError(
                f"df[{self.sequence!r}] and df[{self.position!r}] must each hold values that sort "
                f"together (not mixed types): {err}"
            ) from err
        rows = pd.DataFrame({_CODE: items.get_indexer(pd.MultiIndex.from_frame(keys)),
                             self.worker: df[self.worker].to_numpy(),
                             self.label: df[self.label].array})  # keeps a categorical
        table = AnnotationTable.from_dataframe(
            rows, item=_CODE, worker=self.worker, label=self.label, classes=self.classes,
            items=pd.RangeIndex(len(items)), allow_repeats=self.allow_repeats)
        self._check_memory(table)
        lengths = np.bincount(pd.factorize(items.get_level_values(0))[0])
        return Sequences(table, lengths), items

    def fit(self, df) -> SequentialDawidSkeneEstimator:
        """Fit the model to ``df`` (one row per judgement)."""
        options = self._engine_options(METHODS)
        seqs, items = self._sequences(df)
        model = SequentialDawidSkene(
            initial=self.initial, initial_concentration=self.initial_concentration,
            transition_concentration=self.transition_concentration,
            confusion_concentration=self.confusion_concentration)
        post = model.fit(seqs, method=self.method, **options)
        table = post.data.table
        K = table.num_classes
        if post.method == "em":
            probas, labels = post.params["posterior"], post.params["labels"]
        else:
            probas = draw_frequencies(post.samples["z"], K)
            labels = probas.argmax(-1)
        self._store(table, probas, labels)
        self.probas_.index = items
        self.labels_.index = items
        self.model_, self.posterior_ = model, post
        self._store_confusions(table, post.mean("confusion"))
        transition = post.mean("transition").cpu()
        self.transitions_ = pd.DataFrame(
            transition.numpy(), index=pd.Index(table.classes, name="previous"),
            columns=pd.Index(table.classes, name="next"))
        if "initial" in post.samples:
            initial = post.mean("initial").cpu()
        elif post.data.initial_probs is not None:
            initial = post.data.initial_probs.cpu()
        else:
            initial = stationary_distribution(transition)
        self.initial_ = pd.Series(initial.numpy(), index=table.classes, name="initial")
        self._record_run(post)
        return self
