r"""The i.i.d. Dawid-Skene model of crowd labels (Dawid & Skene 1979; ensemble paper §2.1, §3.1).

Generative story (``N`` items, ``M`` workers, ``K`` classes, ``L`` labels in a long table)::

    prior              ~ Dirichlet(alpha)                         (K,)
    confusion[m, k]    ~ Dirichlet(B[k])          m = 1..M, k = 1..K
    z_n | prior        ~ Categorical(prior)       n = 1..N
    y_l | z, confusion ~ Categorical(confusion[w_l, z_{n_l}])    for each label l of item n_l

``confusion[m, k, j] = P(worker m answers j | true class k)`` (rows = true class; the paper's
``Gamma_m`` is its transpose). Items need not be labelled by every worker: absent labels are
absent rows of the table and contribute nothing (ignorable missingness).

Sample sites:

==========  ==============================  ============  ==================================
site        support                         shape         meaning
==========  ==============================  ============  ==================================
prior       simplex                         (K,)          class prevalences (absent if fixed)
confusion   simplex rows                    (M, K, K)     one confusion matrix per worker
z           {0, ..., K-1} (enumerated)      (N,)          true class of each item
y           {0, ..., K-1} (observed)        (N, S)        labels of item n in slots 0..c_n-1
==========  ==============================  ============  ==================================

**Why the labels sit in item rows and not in a flat plate.** Pyro sums an enumerated site
out *per plate element* only for factors inside the same plate. A flat plate over the ``L``
labels that reads ``z[item_idx]`` lies outside the item plate, so ``TraceEnum_ELBO`` treats
``z`` as one variable shared by every item (in a three-item example it gives -4.014 where
the exact marginal is -2.820). The program therefore observes each item's labels as one masked event
``y[n] = (y_{n,0}, ..., y_{n,S-1})`` inside the item plate, built from the long table (see
:mod:`.data`); the hand-written kernels keep using the flat table.

The global sites carry their axes as event dimensions (``to_event``) and the emission is
indexed with ``Vindex``, so the program broadcasts over an extra batch dimension of draws and
:func:`~pyromodels.core.sample_discrete` restores ``z`` for many draws in one trace.

Engines: ``em`` (ML or MAP, :mod:`.em`), ``gibbs`` (:mod:`.gibbs`), ``svi`` (a
mean-field Dirichlet guide, ``z`` enumerated in the model), ``nuts`` (``z`` summed out).

**Default prior of the Bayesian engines.** The likelihood does not change when the classes
are permuted together with the rows of every confusion matrix, and neither does a flat
``Dirichlet(1)`` prior on the rows. Gibbs, SVI and NUTS then explore every relabelling: on a
small set (40 tasks, 5 workers of about 55% accuracy, 3 classes) the chains switch labels
and the averaged labels score far below majority vote. Left as ``None``, ``diagonal``
therefore resolves per engine (:meth:`DawidSkene.for_engine`): to :data:`BAYES_DIAGONAL`
for ``gibbs``, ``svi`` and ``nuts`` (each row ``Dirichlet(1 + d e_k)``: workers are a priori
better than random, which keeps the labels attached to their classes) and to 0 for ``em``
(maximum likelihood, crowd-kit's estimate).
The engines prepare the data once per fit (:meth:`DawidSkene.prepare`, which also chooses
EM's backend); the engine hooks take those prepared data.
"""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import torch
from pyro.distributions import constraints
from pyro.ops.indexing import Vindex

from ...checks import check_in, check_positive
from ...core.model import Model
from ...data.annotations import AnnotationTable
from ...data.tensors import on_device
from ..emissions import BAYES_DIAGONAL, confusion_counts, for_engine
from ..majority import vote_fractions
from . import em, gibbs
from .data import BACKENDS, DSData, check_num_classes, prepare_ds_data

__all__ = ["DawidSkene", "BAYES_DIAGONAL"]


class DawidSkene(Model):
    """Bayesian Dawid-Skene model with Dirichlet priors on the class prior and confusion rows.

    Args:
        num_classes: ``K >= 2``, or ``None`` to take it from the data's class list.
        prior_concentration: ``alpha`` of the class prior: a positive number or ``(K,)``
            (default 1).
        confusion_concentration: ``beta`` of every confusion row: a positive number or
            ``(K, K)`` (default 1). With ``alpha = beta = 1`` and ``diagonal = 0`` the MAP is
            the maximum-likelihood estimate.
        diagonal: extra pseudo-count ``>= 0`` on each row's true class: a stronger belief
            that workers are better than random; a number, or ``K`` of them (one per true
            class). ``None`` (default) resolves per engine when
            fitting (:meth:`for_engine`): 0 for ``em``, :data:`BAYES_DIAGONAL` (1) for
            ``gibbs``, ``svi`` and ``nuts``, whose flat prior otherwise lets the chains
            switch class labels. With ``diagonal=0`` EM is maximum likelihood, whose
            degenerate optimum lets a class that a single worker uses (or any class with one
            or two items) claim items outright; ``diagonal=1`` rules that out (see
            :mod:`.em`). Methods that prepare the data outside :meth:`fit` (``prepare``, the
            runners called directly) read ``None`` as 0: call them on
            ``model.for_engine(method)``.
        update_prior: learn the class prior (default). ``False`` holds it at ``class_prior``;
            with a uniform one this is the ensemble paper's "equal priors" EM (eq. 9).
        class_prior: the fixed class prior ``(K,)`` (``update_prior=False`` only; default
            uniform).
        allow_unlabelled: accept items without any label (their class follows the prior).
        em_floor: pseudo-count ``>= 0`` that EM's M-step adds to every count so that no
            probability becomes exactly zero (see :mod:`.em`); ignored by other engines.
        backend: EM's E-step: ``"auto"`` (default: for CPU data the C pass built with the
            package, or numba's where it was not built; torch otherwise), ``"c"``, ``"numba"``
            (the compiled passes of :mod:`.kernels.compiled`) or ``"torch"`` (log space, any
            device). All give the same numbers to rounding. Resolved once, when the data are
            prepared.

    Priors left as ``None`` are resolved against the data at fit time; the resolved values
    travel with the prepared data (``posterior.data``).

    Example:
        >>> from pyromodels.data import simulate_annotations
        >>> table, truth = simulate_annotations(200, 5, 3, seed=0)
        >>> post = DawidSkene().fit(table, method="em", seed=0, progress=False)
        >>> post.params["probas"].shape, post.samples["confusion"].shape
        (torch.Size([200, 3]), torch.Size([1, 1, 5, 3, 3]))
    """

    discrete_sites = ("z",)
    max_plate_nesting = 1
    engines = ("em", "gibbs", "svi", "nuts")
    #: names of each site's axes in ArviZ groups (see :func:`~pyromodels.core.to_inference_data`)
    site_dims = {
        "prior": ("class",),
        "confusion": ("worker", "true_class", "label"),
        "z": ("item",),
        "y": ("item", "slot"),
    }

    def __init__(
        self,
        num_classes: int | None = None,
        prior_concentration=None,
        confusion_concentration=None,
        diagonal: float | tuple[float, ...] | None = None,
        update_prior: bool = True,
        class_prior=None,
        allow_unlabelled: bool = False,
        em_floor: float = 1e-10,
        backend: str = "auto",
    ):
        self.num_classes = check_num_classes(num_classes)
        self.prior_concentration = prior_concentration
        self.confusion_concentration = confusion_concentration
        self.diagonal = diagonal
        for name, value in (("update_prior", update_prior), ("allow_unlabelled", allow_unlabelled)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
        if update_prior and class_prior is not None:
            raise ValueError("class_prior fixes the class prior, so it needs update_prior=False")
        self.update_prior = update_prior
        self.class_prior = class_prior
        self.allow_unlabelled = allow_unlabelled
        self.em_floor = check_positive(em_floor, "em_floor", strict=False)
        self.backend = check_in(backend, "backend", BACKENDS)

    def for_engine(self, method: str) -> DawidSkene:
        """This model with ``diagonal`` resolved for ``method`` (one of :attr:`engines`):
        itself when ``diagonal`` is set or ``method`` is ``"em"``, else a copy with
        ``diagonal=BAYES_DIAGONAL``.

        Example:
            >>> DawidSkene().for_engine("gibbs").diagonal, DawidSkene().for_engine("em").diagonal
            (1.0, None)
        """
        return for_engine(self, method)

    def fit(self, data, method: str = "svi", **kwargs):
        """Fit with one engine, the prior resolved for it (:meth:`for_engine`); the returned
        posterior's ``model`` is the resolved model. Arguments as for
        :meth:`pyromodels.core.model.Model.fit`."""
        return Model.fit(self.for_engine(method), data, method=method, **kwargs)

    @property
    def em_sites(self) -> tuple[str, ...]:
        """The sites EM estimates."""
        return ("prior", "confusion") if self.update_prior else ("confusion",)

    # ----------------------------------------------------------------- data
    def prepare(self, data, device=None) -> DSData:
        """Validate ``data`` (an AnnotationTable or a task/worker/label DataFrame), build the
        padded view, resolve the prior and choose EM's backend (see
        :func:`~pyromodels.crowd.ds.data.prepare_ds_data`). Prepared data are moved to
        ``device`` if needed and given this model's backend."""
        if isinstance(data, DSData):
            same = device is None or data.device == torch.device(device)
            return (data if same else data.to(device)).with_backend(self.backend)
        return prepare_ds_data(
            data,
            num_classes=self.num_classes,
            prior_concentration=self.prior_concentration,
            confusion_concentration=self.confusion_concentration,
            diagonal=self.diagonal,
            update_prior=self.update_prior,
            class_prior=self.class_prior,
            allow_unlabelled=self.allow_unlabelled,
            device=device,
            backend=self.backend,
        )

    def _prepared(self, data) -> DSData:
        """``data`` if already prepared, else :meth:`prepare` of it (for the Pyro programs and
        public methods that users call with raw tables)."""
        return data if isinstance(data, DSData) else self.prepare(data)

    def observed_data(self, data) -> dict:
        """``{"y": (N, S) label codes, -1 in unused slots}`` for ArviZ's ``observed_data``."""
        d = self._prepared(data)
        return {"y": torch.where(d.mask, d.label_pad, -1).cpu().numpy()}

    def format_replicates(self, data, values: dict) -> dict:
        """Replicated labels with the unused slots set to ``-1``, as in :meth:`observed_data`."""
        d = self._prepared(data)
        return {k: torch.where(d.mask, v, -1) if k == "y" else v for k, v in values.items()}

    # -------------------------------------------------------------- program
    def model(self, data):
        """The generative story (see the module docstring)."""
        d = self._prepared(data)
        M, K = d.num_workers, d.num_classes
        if d.fixed_prior is None:
            prior = pyro.sample("prior", dist.Dirichlet(d.prior_concentration))
        else:
            prior = d.fixed_prior
        confusion = pyro.sample(
            "confusion", dist.Dirichlet(d.confusion_concentration.expand(M, K, K)).to_event(2)
        )
        with pyro.plate("items", d.num_items, dim=-1):
            z = pyro.sample("z", dist.Categorical(prior), infer={"enumerate": "parallel"})
            # (..., N, S, K): the response law of each slot; the extra axis keeps a batch of
            # draws (left of the item plate) apart from the slot axis.
            probs = Vindex(confusion.unsqueeze(-4))[..., d.worker_pad, z.unsqueeze(-1), :]
            pyro.sample("y", dist.Categorical(probs).mask(d.mask).to_event(1), obs=d.label_pad)

    def guide(self, data):
        """Mean-field Dirichlet guide: ``q(prior) q(confusion)`` with free concentrations.

        Parameters (positive): ``prior_q_concentration`` ``(K,)`` and
        ``confusion_q_concentration`` ``(M, K, K)``, started one conjugate update away from
        the majority-vote fractions. ``z`` stays enumerated in the model (``TraceEnum_ELBO``).
        """
        d = self._prepared(data)
        if d.fixed_prior is None:
            a = pyro.param("prior_q_concentration", lambda: self._vote_concentrations(d)[0],
                           constraint=constraints.positive)
            pyro.sample("prior", dist.Dirichlet(a))
        c = pyro.param("confusion_q_concentration", lambda: self._vote_concentrations(d)[1],
                       constraint=constraints.positive)
        pyro.sample("confusion", dist.Dirichlet(c).to_event(2))

    # --------------------------------------------------------- starting points
    @staticmethod
    def _vote_concentrations(d: DSData) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior concentrations given the majority-vote fractions as soft classes."""
        q = vote_fractions(d.table).to(d.dtype)
        prior = d.prior_concentration + q.sum(0)
        return prior, d.confusion_concentration + confusion_counts(d.table, q, d.num_workers)

    def init_values(self, data: DSData, generator=None) -> dict:
        """Posterior means given the majority-vote fractions (``prior``, ``confusion``)."""
        a, c = self._vote_concentrations(data)
        values = {"confusion": c / c.sum(-1, keepdim=True)}
        if data.fixed_prior is None:
            values["prior"] = a / a.sum()
        return values

    def init_state(self, data: DSData, generator) -> dict:
        """A Gibbs state: :meth:`init_values` and classes drawn from their conditional."""
        values = self.init_values(data)
        return {**values, **gibbs.classes_block(values, data, generator)}

    # ------------------------------------------------------------------ engines
    def gibbs_sweep(self, data: DSData):
        """The blocked sweep ``z | rest``, ``prior | z``, ``confusion | z, labels``."""
        return gibbs.sweep(learn_prior=self.update_prior)

    def em_init(self, data: DSData, generator) -> dict:
        """crowd-kit's start: one M-step from the majority-vote fractions."""
        em.check_em_prior(data)
        return em.majority_start(data, self.em_floor)

    def em_step(self, data: DSData, params) -> dict:
        """One E-step and one M-step on the prepared ``data`` (on ``data.backend``)."""
        return em.em_step(data, params, self.em_floor)

    def em_step_with_objective(self, data: DSData, params) -> tuple[dict, float]:
        """:meth:`em_step` and :meth:`em_objective` of ``params`` from one E-step."""
        new, value = em.em_step_objective(data, em.check_params(data, params), self.em_floor)
        return new, float(value)

    def em_objective(self, data: DSData, params) -> float:
        """The log joint of the labels and ``params`` with ``z`` summed out."""
        return float(em.log_posterior(data, em.check_params(data, params)))

    def em_outputs(self, data: DSData, params) -> dict:
        """Class posteriors, their argmax and the log-likelihood under ``params``."""
        q, labels, log_norm = em.e_step_labels(data, params)
        return {"probas": q, "labels": labels, "log_likelihood": log_norm.sum()}

    # -------------------------------------------------------------- predictions
    def _draws(self, d: DSData, samples: dict) -> tuple[torch.Tensor, torch.Tensor]:
        conf = samples["confusion"]
        lead = conf.shape[:-3]
        prior = samples["prior"] if d.fixed_prior is None else d.fixed_prior.expand(lead + (-1,))
        return prior.reshape(-1, d.num_classes), conf.reshape(-1, *conf.shape[-3:])

    def _per_draw_posteriors(self, d: DSData, samples: dict, table: AnnotationTable):
        """Class posteriors ``(..., N, K)`` and ``log p(labels_n | draw)`` ``(..., N)`` of the
        items of ``table`` under each draw, on the data's backend (the compiled pass on the
        CPU, see :func:`~pyromodels.crowd.ds.em.table_posteriors`)."""
        priors, confs = self._draws(d, samples)
        lead = samples["confusion"].shape[:-3]
        out = [em.table_posteriors(table, p, c, d.backend) for p, c in zip(priors, confs)]
        q = torch.stack([o[0] for o in out]).reshape(lead + (table.num_items, d.num_classes))
        log_norm = torch.stack([o[1] for o in out]).reshape(lead + (table.num_items,))
        return q, log_norm

    def log_likelihood_pointwise(self, data, samples) -> dict:
        """Marginal ``log p(labels of item n | prior, confusion)`` per draw, ``z`` summed out.

        Returns ``{"y": (chain, draw, N)}``.
        """
        d = self._prepared(data)
        return {"y": self._per_draw_posteriors(d, samples, d.table)[1]}

    def predict(self, posterior, new_data) -> torch.Tensor:
        """Class probabilities ``(N_new, K)`` of items labelled by the fitted workers.

        ``new_data`` is an :class:`AnnotationTable` coded with the training table's workers
        and classes (``M`` and ``K`` must match). Each draw's posterior
        ``softmax(log prior + log b)`` is averaged over the draws (one draw for EM), which is
        the Rao-Blackwellised posterior for the training items themselves. On the CPU each
        draw's posterior comes from the compiled pass (see
        :func:`~pyromodels.crowd.ds.em.table_posteriors`).
        """
        d = self.prepare(posterior.data)
        if isinstance(new_data, DSData):
            new_data = new_data.table
        if not isinstance(new_data, AnnotationTable):
            raise TypeError(f"new_data must be an AnnotationTable, got {type(new_data).__name__}")
        if new_data.num_workers != d.num_workers or new_data.num_classes != d.num_classes:
            raise ValueError(
                f"new_data must be coded with the fitted {d.num_workers} workers and "
                f"{d.num_classes} classes, got {new_data.num_workers} and {new_data.num_classes}"
            )
        probs = self._per_draw_posteriors(d, posterior.samples, on_device(new_data, d.device))[0]
        return probs.reshape(-1, new_data.num_items, d.num_classes).mean(0)
