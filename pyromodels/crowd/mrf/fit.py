"""Functional front ends of the networked model's engines.

:func:`networked_em` runs the paper's Alg. 3 / Alg. 4 (the ``em`` engine of
:class:`~pyromodels.crowd.mrf.model.NetworkedDawidSkene`, driven by the core's
:func:`~pyromodels.core.run_em`) from the paper's arguments; :func:`sample_labels` draws the
labels given fixed confusions (the ``gibbs`` engine of
:class:`~pyromodels.crowd.mrf.labels.LabelPosterior`, driven by
:func:`~pyromodels.core.run_gibbs`). Both return a :class:`~pyromodels.core.Posterior`.
"""

from __future__ import annotations

from ...checks import check_in
from ...core.posterior import Posterior
from .em import check_smoothing, check_table, initialize
from .icm import SCHEDULES, check_labels
from .labels import LabelData, LabelPosterior
from .model import NetworkedDawidSkene

__all__ = ["networked_em", "sample_labels"]


def networked_em(table, graph, delta="M", *, confusion=None, prior=None, labels=None,
                 unlabelled: str = "propagate", max_iter: int = 100, tol: float = 1e-8,
                 icm_max_iter: int = 100, schedule: str = "sequential", smoothing=0.0,
                 init_floor: float = 1e-6, ties: str = "random", seed: int = 0,
                 backend: str = "auto", warn_not_converged: bool = True) -> Posterior:
    """Alg. 3 (with Alg. 4's start when ``confusion`` comes from moment matching).

    The ``em`` engine of :class:`~pyromodels.crowd.mrf.model.NetworkedDawidSkene` with the
    confusion prior ``Dirichlet(1 + smoothing)`` (so the M-step adds ``smoothing``) and the
    paper's objective, the mode-field log likelihood (``objective="likelihood"``), started
    from :func:`~pyromodels.crowd.mrf.em.initialize` with these arguments.

    Args:
        table: :class:`~pyromodels.data.AnnotationTable` of the crowd labels.
        graph: undirected :class:`~pyromodels.data.Graph` whose nodes are the table's items
            (checked with ``graph.check_matches(table)``).
        delta: ``"M"``, ``"node"``, a number ``>= 0`` or a coupling (see
            :func:`~pyromodels.crowd.mrf.energy.resolve_coupling`).
        confusion, prior, labels: the starting point (see
            :func:`~pyromodels.crowd.mrf.em.initialize`); default majority vote
            ("MV + Alg. 3").
        unlabelled: starting labels of the items without responses: ``"propagate"``
            (default: spread over the graph from the items with responses) or ``"prior"``
            (the MAP rule's or majority vote's own label); see
            :func:`~pyromodels.crowd.mrf.em.initialize`.
        max_iter: outer iterations at most.
        tol: relative tolerance on the objective; iterations stop once ICM changes no label
            and the objective moves by less than ``tol * max(1, |objective|)``.
        icm_max_iter: ICM sweeps per iteration at most (:math:`T_{max}`).
        schedule: ICM schedule (``"sequential"``, ``"colored"``, ``"jacobi"``).
        smoothing: M-step pseudo-count ``>= 0`` (0: the paper's maximum likelihood).
        init_floor: floor of given starting confusions (see
            :func:`~pyromodels.crowd.mrf.em.initialize`).
        ties, seed: majority vote's tie rule and seed (the seed is also the fit's, recorded
            in ``attrs``).
        backend: ICM backend for the sequential schedule.
        warn_not_converged: warn with ``ConvergenceWarning`` when ``max_iter`` is reached.

    Returns:
        A :class:`~pyromodels.core.Posterior` (``method="em"``): ``params["labels"]`` the final
        ICM labels (the paper's output; also ``samples["y"]``), ``params["confusion"]``
        ``(M, K, K)`` (rows = true class), ``params["posteriors"]`` ``(N, K)`` the mode-field
        posteriors at the final confusions and labels, ``params["label_changes"]`` and
        ``params["icm_sweeps"]`` per iteration; ``losses`` the mode-field log likelihood at the
        start and after each iteration; ``diagnostics["converged"]`` and
        ``diagnostics["n_iter"]`` (iterations run).

    Example:
        >>> from pyromodels.data import WorkerPopulation, simulate_networked_annotations
        >>> table, graph, truth = simulate_networked_annotations(
        ...     200, WorkerPopulation(5, labels_per_item=3), 3, mean_degree=4, seed=0)
        >>> fit = networked_em(table, graph)
        >>> fit.params["labels"].shape, fit.params["confusion"].shape
        (torch.Size([200]), torch.Size([5, 3, 3]))
    """
    check_table(table)
    smoothing = check_smoothing(smoothing)
    check_in(schedule, "schedule", SCHEDULES)
    model = NetworkedDawidSkene(delta, confusion_concentration=1 + smoothing)
    data = model.prepare((table, graph))
    conf, y = initialize(data.table, coupling=data.coupling, confusion=confusion, prior=prior,
                         labels=labels, unlabelled=unlabelled, smoothing=smoothing,
                         floor=init_floor, ties=ties, seed=seed)
    return model.fit(data, method="em", init={"confusion": conf, "y": y},
                     objective="likelihood", icm_schedule=schedule, icm_max_iter=icm_max_iter,
                     backend=backend, max_iter=max_iter, tol=tol, seed=seed, progress=False,
                     warn_not_converged=warn_not_converged)


def sample_labels(log_b, coupling, *, labels=None, num_samples: int = 1000,
                  num_warmup: int = 100, thin: int = 1, num_chains: int = 1,
                  schedule: str = "colored", seed: int = 0, backend: str = "auto",
                  diagnostic_warnings: bool = True) -> Posterior:
    r"""Gibbs draws of the labels from :math:`p(y \mid F, \Gamma) \propto e^{-E(y)}` (fixed
    confusions).

    The ``gibbs`` engine of :class:`~pyromodels.crowd.mrf.labels.LabelPosterior`.

    Args:
        log_b: ``(N, K)`` log emissions of the fixed confusions.
        coupling: a symmetric Potts coupling on ``log_b``'s device.
        labels: starting labels of every chain (default :math:`\arg\max_k \log b_n(k)`).
        num_samples: draws kept per chain.
        num_warmup: sweeps discarded first.
        thin: keep every ``thin``-th sweep.
        num_chains: chains, each with its own seed derived from ``seed``.
        schedule: ``"colored"`` or ``"sequential"``.
        seed: the fit's seed.
        backend: kernel backend for ``"sequential"``.
        diagnostic_warnings: after the chains, emit a
            :class:`~pyromodels.core.SamplingWarning` when R-hat or the effective sample size
            of their log joint (the labels themselves are categorical) says the draws are not
            yet reliable; ``False`` silences it.

    Returns:
        A :class:`~pyromodels.core.Posterior` whose ``samples["y"]`` is long
        ``(num_chains, num_samples, N)``, with the log joint of each draw in
        ``sample_stats["lp"]``.

    Example:
        >>> import torch
        >>> from pyromodels.data import Graph
        >>> from pyromodels.crowd.mrf.energy import PottsCoupling
        >>> c = PottsCoupling.constant(Graph.from_edges([[0, 1], [1, 2]], num_nodes=3), 2.0)
        >>> log_b = torch.tensor([[0.0, -1.0], [-1.0, 0.0], [0.0, -1.0]])
        >>> sample_labels(log_b, c, num_samples=200, num_chains=2).samples["y"].shape
        torch.Size([2, 200, 3])
    """
    data = LabelData(log_b, coupling)
    if labels is not None:  # checked here so that errors name this function's argument
        labels = check_labels(labels, data.coupling.num_nodes, data.log_b.shape[1],
                              data.log_b.device)
    return LabelPosterior().fit(data, init_labels=labels,
                                schedule=schedule, backend=backend, num_samples=num_samples,
                                num_warmup=num_warmup, thin=thin, num_chains=num_chains,
                                seed=seed, progress=False,
                                diagnostic_warnings=diagnostic_warnings)
