"""crowd-kit / scikit-learn style aggregators over a DataFrame of judgements.

Each estimator takes a long DataFrame with one row per judgement, ``fit(df)`` returns the
estimator, and results come back as pandas objects indexed by the user's own ids, with the
user's own class values:

* ``labels_``: Series ``task -> label`` (name ``agg_label``, as crowd-kit);
* ``probas_``: DataFrame tasks x classes of class probabilities (float64);
* for :class:`MajorityVote` also ``skills_`` (each worker's agreement with ``labels_``);
* for the Dawid-Skene family also ``errors_`` (crowd-kit's layout: rows
  ``(worker, label given)``, the true labels as columns), ``confusions_`` (rows
  ``(worker, true label)``, the labels given as columns: the models' ``confusion`` site),
  ``loss_history_``, ``n_iter_``, ``converged_``, ``posterior_`` (the
  :class:`~pyromodels.core.Posterior`) and ``model_``.

The facades:

* :class:`MajorityVote` and :class:`DawidSkeneEstimator` (``method`` ``"em"``, ``"gibbs"``,
  ``"svi"`` or ``"nuts"``): columns ``task``, ``worker``, ``label``; they take crowd-kit's
  argument names too (``fit(df, skills=...)``, ``on_missing_skill``, ``default_skill``;
  ``fit(df, true_labels=..., initial_error=...)``, ``initial_error_strategy``, ``n_iter=0``,
  ``tol=0``), and crowd-kit's own tests of its ``MajorityVote`` and ``DawidSkene`` pass
  against them, down to the empty results of a table without rows (with a warning), the row
  order of ``errors_`` and EM's ``probas_`` (those its last M-step was fitted to);
* :class:`SequentialDawidSkeneEstimator`: items in sequences, columns ``sequence``,
  ``position``, ``worker``, ``label`` (each (sequence, position) pair is one item);
* :class:`NetworkedDawidSkeneEstimator`: items on a graph, ``fit(df, edges)`` with an edge
  list DataFrame (columns ``source`` and ``target`` holding task ids).

scikit-learn conventions: every parameter is a constructor argument, so ``get_params``,
``set_params`` and ``sklearn.base.clone`` work; ``random_state`` is accepted beside ``seed``
(``random_state`` wins when it is not ``None``); a parameter that only other methods read
(``num_chains`` with ``method="em"``, ``n_iter`` with ``"gibbs"``) must stay at its default,
or ``fit`` raises a ``ValueError`` naming it (the constructor accepts anything, so ``clone``
and grid searches work); ``fit`` also refuses, before allocating, data whose confusion
matrices or kept draws would not fit in memory; using a result before ``fit`` raises
:class:`~pyromodels.core.NotFittedError`, a subclass of scikit-learn's; fitted estimators
pickle. The model classes themselves (:class:`~pyromodels.crowd.DawidSkene`, ...) are not
scikit-learn estimators: they hold model arguments only, ``fit`` returns a ``Posterior``
rather than the model, and they have no ``get_params``, so ``clone`` refuses them; to copy
one, build it again from its arguments or use ``copy.deepcopy``, or wrap it in a facade.

Each facade's module has a runnable example (:mod:`.majority_vote`, :mod:`.dawid_skene`).

The facades load on first use (:mod:`pyromodels.lazy`).
"""

from ...lazy import lazy_attributes

_ORIGINS = {
    "DawidSkeneEstimator": ".dawid_skene",
    "MajorityVote": ".majority_vote",
    "NetworkedDawidSkeneEstimator": ".networked",
    "SequentialDawidSkeneEstimator": ".sequential",
}

__all__ = list(_ORIGINS)

__getattr__, __dir__ = lazy_attributes(__name__, _ORIGINS)
