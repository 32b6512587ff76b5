r"""The networked Dawid-Skene model: crowd labels of items whose true labels form a Potts MRF.

Generative story (ensemble paper, sections 2 and 5: the networked model), with ``N`` items on
an undirected graph, ``M`` workers and ``K`` classes::

    confusion[m, k, :]  ~ Dirichlet(alpha[m, k, :])              m = 1..M, k = 1..K
    y                   ~ Potts:  p(y) ∝ exp(-U(y)),  U(y) = 1/2 sum_{edges} delta_e [y_i != y_j]
    answer_l | y, conf  ~ Categorical(confusion[worker_l, y[item_l], :])   l = 1..L

Sample sites:

==========  ===========================  ===========  ======================================
site        support                      shape        meaning
==========  ===========================  ===========  ======================================
confusion   simplex rows                 (M, K, K)    rows = true class, columns = answer
y           {0, ..., K-1}^N (enumerated)  (N,)         true labels of the items
answers     {0, ..., K-1} (observed)     (L,)         the long table's labels
==========  ===========================  ===========  ======================================

The Potts prior is written as a uniform base measure over labelings
(:class:`~pyromodels.crowd.mrf.exact.UniformLabelings`) times ``pyro.factor("potts", -U(y))``.
Its normaliser depends only on the fixed coupling, so the program is the joint up to a
constant, which is all that scoring, conditionals and enumeration need (forward simulation of
``y`` from the program is not a Potts draw). On tiny graphs (``K^N`` up to
:data:`~pyromodels.crowd.mrf.exact.MAX_STATES`) Pyro enumerates ``y`` over every labeling
jointly, which the tests use to check the hand-written kernels. Pyro's ``infer_discrete``
(and so :func:`~pyromodels.core.sample_discrete`) does not handle an enumerated site with an
event dimension such as ``y``; exact marginals and the MAP labeling of tiny graphs come from
:mod:`~pyromodels.crowd.mrf.exact`.

The paper puts no prior on the confusions; ``confusion_concentration = 1`` (the default)
makes the MAP equal to its maximum-likelihood estimate.

Coupling (``delta``): ``"M"`` (default, the number of workers: the paper's synthetic and
classifier sets), a number ``>= 0``, ``"node"`` (:math:`\delta_n = M_n/2`, the paper's
crowdsourcing sets) or a :class:`~pyromodels.crowd.mrf.energy.PottsCoupling`. A
node-dependent coupling defines only local energies: the ``em`` engine (Alg. 3) uses them as
the paper does, while the program and the ``gibbs`` engine, which need a joint, use the
symmetric per-edge version :math:`\delta_{ij} = (\delta_i + \delta_j)/2`.

Engines:

* ``em``: Alg. 3 (ICM + mode-field E-step + Dawid-Skene M-step) through the EM hooks,
  started from majority vote or from given confusions (Alg. 4 with moment matching); items
  without responses start from their neighbours' labels (``init_unlabelled``). Its
  objective, the mode-field log likelihood plus the log prior, is **not monotone** (ICM moves
  the clamped labels), so the model sets ``em_monotone = False`` and the runner does not report
  decreases as faults. Besides the objective's tolerance, Alg. 3 stops only once ICM changes
  no label (the ``em_converged`` hook).
  :func:`~pyromodels.crowd.mrf.fit.networked_em` is the same engine as a function.
* ``gibbs``: the Bayesian variant: single-site label draws (chromatic by default) and
  Dirichlet draws of the confusions.

With the confusions held fixed, the labels alone are the model
:class:`~pyromodels.crowd.mrf.labels.LabelPosterior`, sampled by the same label sweep.
"""

from __future__ import annotations

import copy
import numbers
from dataclasses import dataclass, replace

import pyro
import pyro.distributions as dist
import torch
from pyro.ops.indexing import Vindex

from ...checks import as_record, check_in, check_int, check_positive
from ...core.model import Model
from ...data.annotations import AnnotationTable
from ...data.graphs import Graph
from ...data.tensors import on_device
from ..emissions import log_emissions
from . import em as em_kernels
from . import gibbs as gibbs_kernels
from .energy import PottsCoupling, check_delta, loop_backend, potts_energy, resolve_coupling
from .exact import UniformLabelings
from .icm import SCHEDULES, check_labels

__all__ = ["NetworkedData", "MRFData", "NetworkedDawidSkene"]

#: what the ``em`` engine records and tests for convergence (see ``NetworkedDawidSkene.fit``)
EM_OBJECTIVES = ("posterior", "likelihood")


@dataclass(frozen=True, eq=False)
class NetworkedData:
    """Crowd labels with the graph over their items.

    Attributes:
        table: the :class:`~pyromodels.data.AnnotationTable`.
        graph: an undirected :class:`~pyromodels.data.Graph` whose node ids are the table's
            item ids in the same order (checked with ``graph.check_matches(table)``).
    """

    table: AnnotationTable
    graph: Graph

    def __post_init__(self):
        if not isinstance(self.table, AnnotationTable):
            raise TypeError(f"table must be a pyromodels.data.AnnotationTable, got "
                            f"{type(self.table).__name__}")
        if not isinstance(self.graph, Graph):
            raise TypeError(f"graph must be a pyromodels.data.Graph, got "
                            f"{type(self.graph).__name__}")
        self.graph.check_matches(self.table)


@dataclass(frozen=True, eq=False)
class MRFData:
    """Prepared data: the table, the graph, the resolved couplings and the Dirichlet prior.

    Attributes:
        table, graph: as in :class:`NetworkedData`, on one device.
        coupling: the coupling as specified (possibly node-dependent), used by Alg. 3.
        program_coupling: its symmetric version, used by the program and Gibbs.
        concentration: ``(M, K, K)`` Dirichlet parameters of the confusion rows.
    """

    table: AnnotationTable
    graph: Graph
    coupling: PottsCoupling
    program_coupling: PottsCoupling
    concentration: torch.Tensor

    @property
    def device(self) -> torch.device:
        return self.table.device

    def label_terms(self, state: dict) -> tuple[torch.Tensor, PottsCoupling]:
        """``(log_b, coupling)`` of the labels' full conditionals given ``state``: the log
        emissions of ``state["confusion"]`` and the symmetric coupling."""
        return log_emissions(self.table, state["confusion"].log()), self.program_coupling


def _rows_of(y: torch.Tensor, item_idx: torch.Tensor) -> torch.Tensor:
    """The label of each table row's item: ``(..., L)`` from labelings ``(..., [1,] N)``.

    ``y`` sits outside the ``labels`` plate, so any batch of labelings (enumerated ones) has
    a size-1 slot for that plate just left of the event dimension; it is dropped here so that
    the plate dimension is the table rows.
    """
    rows = y.index_select(-1, item_idx)
    return rows.squeeze(-2) if y.dim() >= 2 else rows


class NetworkedDawidSkene(Model):
    """Dawid-Skene with a Potts MRF over the true labels on a known graph.

    Args:
        delta: the coupling: ``"M"`` (default), ``"node"``, a number ``>= 0`` or a
            :class:`~pyromodels.crowd.mrf.energy.PottsCoupling` (see the module notes).
        confusion_concentration: Dirichlet parameter of each confusion row: a number ``> 0``
            (default 1, under which MAP = maximum likelihood) or an array broadcastable to
            ``(M, K, K)``. The ``em`` engine needs every entry ``>= 1``.

    Data: a :class:`NetworkedData` or a ``(table, graph)`` tuple.

    Example:
        >>> from pyromodels.data import WorkerPopulation, simulate_networked_annotations
        >>> table, graph, truth = simulate_networked_annotations(
        ...     100, WorkerPopulation(4, labels_per_item=3), 3, mean_degree=3, seed=0)
        >>> post = NetworkedDawidSkene().fit((table, graph), method="em", seed=0,
        ...                                  progress=False)
        >>> post.params["labels"].shape, post.params["confusion"].shape
        (torch.Size([100]), torch.Size([4, 3, 3]))
    """

    discrete_sites = ("y",)
    max_plate_nesting = 1
    engines = ("em", "gibbs")
    em_monotone = False
    em_sites = ("confusion", "y")

    def __init__(self, delta="M", confusion_concentration=1.0):
        self.delta = check_delta(delta)
        if isinstance(confusion_concentration, numbers.Real):
            confusion_concentration = check_positive(confusion_concentration,
                                                     "confusion_concentration")
        self.confusion_concentration = confusion_concentration
        self._options = _fit_options()

    # ----------------------------------------------------------------- data
    def prepare(self, data, device=None) -> MRFData:
        """Validate ``data`` and resolve the couplings and the prior on ``device``."""
        if isinstance(data, MRFData):
            if device is None or data.device == torch.device(device):
                return data
            return replace(data, table=data.table.to(device), graph=data.graph.to(device),
                           coupling=data.coupling.to(device),
                           program_coupling=data.program_coupling.to(device),
                           concentration=data.concentration.to(device))
        data = as_record(data, NetworkedData, ("table", "graph"))
        table = em_kernels.check_table(data.table)
        device = torch.device(device) if device is not None else table.device
        table, graph = on_device(table, device), on_device(data.graph, device)
        coupling = resolve_coupling(graph, self.delta, table)
        coupling = coupling.to(device) if coupling.device != device else coupling
        alpha = em_kernels.check_concentration(self.confusion_concentration, table.num_workers,
                                               table.num_classes, device)
        return MRFData(table, graph, coupling, coupling.symmetrized(), alpha)

    # -------------------------------------------------------------- program
    def model(self, data):
        """The generative story (see the module docstring)."""
        d = data if isinstance(data, MRFData) else self.prepare(data)
        t = d.table
        confusion = pyro.sample("confusion", dist.Dirichlet(d.concentration).to_event(2))
        y = pyro.sample("y", UniformLabelings(t.num_items, t.num_classes, device=d.device),
                        infer={"enumerate": "parallel"})
        pyro.factor("potts", -potts_energy(d.program_coupling, y, confusion.dtype))
        rows = _rows_of(y, t.item_idx)
        with pyro.plate("labels", t.num_labels, dim=-1):
            probs = Vindex(confusion)[..., t.worker_idx, rows, :]
            pyro.sample("answers", dist.Categorical(probs=probs), obs=t.label_idx)

    # --------------------------------------------------------- starting points
    def _start(self, d: MRFData, generator: torch.Generator, smoothing):
        o = self._options
        seed = int(torch.randint(2**31 - 1, (1,), generator=generator, device=generator.device))
        labels = o["init_labels"]
        if labels is not None:  # checked here so that errors name the fit's argument
            labels = check_labels(labels, d.table.num_items, d.table.num_classes, d.device,
                                  "init_labels")
        return em_kernels.initialize(d.table, coupling=d.coupling, confusion=o["init_confusion"],
                                     prior=o["init_prior"], labels=labels,
                                     unlabelled=o["init_unlabelled"], smoothing=smoothing,
                                     floor=o["init_floor"], ties="random", seed=seed)

    def init_state(self, data, generator) -> dict:
        """Gibbs start: the labels of :func:`~pyromodels.crowd.mrf.em.initialize` (majority
        vote by default) with the posterior-mean confusions given them (or the given
        ``init_confusion`` with its MAP-rule labels)."""
        d = self.prepare(data)
        conf, y = self._start(d, generator, d.concentration)  # counts + alpha: posterior mean
        return {"confusion": conf, "y": y}

    # ------------------------------------------------------------------ engines
    def gibbs_sweep(self, data):
        """Labels (one chromatic or sequential sweep) then confusions (Dirichlet)."""
        return gibbs_kernels.sweep(self._options["gibbs_schedule"], self._options["backend"])

    def _smoothing(self, d: MRFData) -> torch.Tensor:
        if bool((d.concentration < 1).any()):
            raise ValueError("the em engine needs confusion_concentration >= 1 everywhere (the "
                             "MAP is on the boundary otherwise); use method='gibbs'")
        return d.concentration - 1

    def em_init(self, data, generator) -> dict:
        d = self.prepare(data)
        conf, y = self._start(d, generator, self._smoothing(d))
        return {"confusion": conf, "y": y}

    def em_step(self, data, params) -> dict:
        """One iteration of Alg. 3 (ICM, mode-field E-step, MAP M-step).

        Besides the new ``confusion`` and ``y``, the result carries the iterations' history:
        ``label_changes`` and ``icm_sweeps``, tuples with the labels each iteration's ICM
        changed and the sweeps it took (``params``' own, if any, extended by this one).
        """
        d = self.prepare(data)
        o = self._options
        conf, y, info = em_kernels.em_step(
            d.table, d.coupling, params["confusion"], params["y"], smoothing=self._smoothing(d),
            schedule=o["icm_schedule"], icm_max_iter=o["icm_max_iter"], backend=o["backend"])
        return {
            "confusion": conf,
            "y": y,
            "label_changes": (*params.get("label_changes", ()), int((y != params["y"]).sum())),
            "icm_sweeps": (*params.get("icm_sweeps", ()), info["icm"].n_iter),
        }

    def em_converged(self, data, old, new) -> bool:
        """Alg. 3's stopping rule beside the objective's tolerance: ICM changed no label."""
        return torch.equal(old["y"], new["y"])

    def em_objective(self, data, params) -> float:
        """Mode-field log likelihood, plus the Dirichlet log prior unless the fit's
        ``objective`` is ``"likelihood"`` (not monotone under Alg. 3)."""
        d = self.prepare(data)
        log_b = log_emissions(d.table, params["confusion"].log())
        value = em_kernels.mode_field_objective(log_b, d.coupling, params["y"])
        if self._options["objective"] == "posterior":
            value = value + dist.Dirichlet(d.concentration).log_prob(params["confusion"]).sum()
        return float(value)

    def em_outputs(self, data, params) -> dict:
        """The mode-field posteriors ``(N, K)`` at the final confusions and labels, the
        labels, and the history of ``label_changes`` and ``icm_sweeps`` as lists."""
        d = self.prepare(data)
        log_b = log_emissions(d.table, params["confusion"].log())
        q = em_kernels.mode_field_posteriors(log_b, d.coupling, params["y"])
        return {"posteriors": q, "labels": params["y"],
                "label_changes": list(params.get("label_changes", ())),
                "icm_sweeps": list(params.get("icm_sweeps", ()))}

    # ------------------------------------------------------------------ fitting
    def fit(self, data, method: str = "em", *, delta=None, init_confusion=None,
            init_prior=None, init_labels=None, init_unlabelled: str = "propagate",
            init_floor: float = 1e-6, icm_schedule: str = "sequential",
            icm_max_iter: int = 100, gibbs_schedule: str = "colored", backend: str = "auto",
            objective: str = "posterior", **kwargs):
        """Fit with ``"em"`` (Alg. 3) or ``"gibbs"`` (Bayesian variant).

        Args:
            data: :class:`NetworkedData` or ``(table, graph)``.
            method: ``"em"`` or ``"gibbs"``.
            delta: overrides the model's coupling for this fit (``"M"``, ``"node"``, a number
                or a coupling).
            init_confusion: starting ``(M, K, K)`` confusions (Alg. 4: from moment matching);
                the labels then start at the MAP rule (eq. 18) with ``init_prior``.
            init_prior: ``(K,)`` class prior for that rule (default uniform).
            init_labels: starting labels instead (default: majority vote, "MV + Alg. 3").
            init_unlabelled: starting labels of the items without responses when they are
                computed (MAP rule or majority vote): ``"propagate"`` (default: spread over
                the graph from the items with responses, with the coupling Alg. 3 uses) or
                ``"prior"`` (the rule's own label); see
                :func:`~pyromodels.crowd.mrf.em.initialize`.
            init_floor: ``init_confusion`` is raised to at least this and renormalised
                (default 1e-6; 0 keeps it as given), since moment-matching estimates can hold
                exact zeros.
            icm_schedule, icm_max_iter: ICM inside each EM iteration.
            gibbs_schedule: ``"colored"`` or ``"sequential"`` label sweeps.
            backend: ``"auto"``, ``"numba"`` or ``"python"`` for sequential sweeps, chosen
                once for the fit.
            objective: what ``em`` records (``losses``) and tests for convergence:
                ``"posterior"`` (default), the mode-field log likelihood plus the Dirichlet log
                prior of the confusions, or ``"likelihood"``, the mode-field log likelihood
                alone (the paper's, which :func:`~pyromodels.crowd.mrf.fit.networked_em`
                reports). Either way the M-step is the MAP one.
            **kwargs: passed to :func:`~pyromodels.core.run_em` or
                :func:`~pyromodels.core.run_gibbs` (``seed``, ``max_iter``, ``num_samples``...).

        Returns:
            A :class:`~pyromodels.core.Posterior`; for ``em`` its ``params`` hold
            ``confusion``, ``y``/``labels`` (final ICM labels), ``posteriors`` and the
            per-iteration ``label_changes`` and ``icm_sweeps``, its ``losses`` the objective at
            the start and after each iteration, and its ``diagnostics`` ``converged`` and
            ``n_iter`` (iterations run).
        """
        check_in(method, "method", self.engines)
        model = copy.copy(self)
        if delta is not None:
            model.delta = check_delta(delta)
        model._options = _fit_options(init_confusion, init_prior, init_labels, init_unlabelled,
                                      init_floor, icm_schedule, icm_max_iter, gibbs_schedule,
                                      backend, objective)
        return Model.fit(model, data, method=method, **kwargs)


def _fit_options(init_confusion=None, init_prior=None, init_labels=None,
                 init_unlabelled="propagate", init_floor=1e-6, icm_schedule="sequential",
                 icm_max_iter=100, gibbs_schedule="colored", backend="auto",
                 objective="posterior") -> dict:
    if init_confusion is not None and init_labels is not None:
        raise ValueError("give at most one of init_confusion and init_labels as the starting "
                         "point")
    if init_prior is not None and init_confusion is None:
        raise ValueError("init_prior is used only with init_confusion (the MAP rule, eq. 18)")
    return {
        "init_confusion": init_confusion,
        "init_prior": init_prior,
        "init_labels": init_labels,
        "init_unlabelled": check_in(init_unlabelled, "init_unlabelled", em_kernels.UNLABELLED),
        "init_floor": check_positive(init_floor, "init_floor", strict=False),
        "icm_schedule": check_in(icm_schedule, "icm_schedule", SCHEDULES),
        "icm_max_iter": check_int(icm_max_iter, "icm_max_iter", minimum=1),
        "gibbs_schedule": check_in(gibbs_schedule, "gibbs_schedule", gibbs_kernels.GIBBS_SCHEDULES),
        "backend": loop_backend(backend),
        "objective": check_in(objective, "objective", EM_OBJECTIVES),
    }
