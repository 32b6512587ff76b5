r"""EM (ML or MAP) for the i.i.d. Dawid-Skene model.

With ``q[n, k] = P(z_n = k | labels, theta)`` the class posteriors, one iteration is

* **E-step** (the ensemble paper's eq. 9, with the class prior):
  :math:`\log q_{nk} = \log \pi_k + \sum_{l:\, n_l = n} \log \Gamma_{w_l, k, y_l} - \log Z_n`,
  computed by :func:`~pyromodels.crowd.emissions.log_emissions`;
* **M-step** (eq. 11, plus the Dirichlet priors): with expected counts
  :math:`C_{mkj} = \sum_{l:\, w_l = m,\, y_l = j} q_{n_l k}` (from
  :func:`~pyromodels.crowd.emissions.confusion_counts`),

  .. math::
      \Gamma_{mkj} = \frac{C_{mkj} + B_{kj} - 1 + \epsilon}
                          {\sum_{j'} (C_{mkj'} + B_{kj'} - 1 + \epsilon)},\qquad
      \pi_k = \frac{\sum_n q_{nk} + \alpha_k - 1 + \epsilon}
                   {\sum_{k'} (\sum_n q_{nk'} + \alpha_{k'} - 1 + \epsilon)},

  the mode of the Dirichlet posteriors. With every concentration equal to 1 this is maximum
  likelihood (Dawid & Skene 1979). Without the prior update the class prior stays fixed (the
  paper's "equal priors" when it is uniform).

**The floor** ``epsilon`` (``em_floor``, default ``1e-10``): maximum likelihood sets a
confusion entry to exactly zero when a worker never gave a label to items believed to be of a
class, and an exact zero can never recover (every later E-step gives that class probability
zero for the items the worker labelled that way). crowd-kit clips the observed cells of its
count matrices at ``1e-10`` for the same reason (see ``gotchas.md``). Adding ``epsilon`` to
every count is the exact MAP step for concentrations ``B + epsilon`` and ``alpha + epsilon``,
so EM stays a monotone algorithm; its objective, the program's log joint at concentrations
``B`` and ``alpha``, differs from that by at most ``epsilon * sum |log theta|``. ``em_floor=0``
gives the exact ML/MAP step.

**A degenerate optimum of maximum likelihood.** Every worker's row ``Gamma[m, k]`` is fitted
to the items believed to be of class ``k``. A class that holds one item (or two) therefore
gets rows that reproduce that item's labels exactly, and the item's likelihood under it is
``pi_k ~ 1/N``; under the class its other workers agree on it is about ``1/N`` times the
product of their accuracies, always smaller. So ML EM can turn any sparsely supported class
into a class of its own. A label that a single worker uses makes one (worker ``u`` answers
``j`` on item ``n`` only): the majority-vote start gives item ``n`` mass ``1/M`` on class
``j``, the first M-step fits every worker's row of class ``j`` to item ``n`` alone, and the
item ends in class ``j`` with probability one however many workers agree on another class.
Tiny tables (a few items per class) do the same with ordinary labels. It is the objective's
doing, not the start's or the floor's: the degenerate point has the higher likelihood, with
``em_floor=0`` too (the floor only keeps a class that starts empty from reviving). A
``diagonal`` pseudo-count ``d`` on each row's true class costs such a class a factor
``1/(1 + d)`` per worker whose label it must reproduce, so ``d = 1`` removes it whenever
workers are right more often than not in a table where every worker labels every item. Only
classes whose confusion rows rest on fewer labels than they have free probabilities need it:
:class:`~pyromodels.crowd.estimators.DawidSkeneEstimator`'s EM default puts
``d_k = max(0, K - 1 - L_k / M)`` on the rows of class ``k`` (``L_k`` labels ``k`` from ``M``
workers; :func:`~pyromodels.crowd.estimators.dawid_skene.em_diagonal`) and none on classes
with enough labels, where EM stays maximum likelihood. Preparing data where a class is used
by a single worker warns (:class:`~pyromodels.crowd.ds.data.SingleWorkerClassWarning`).

**Objective** (never decreases):
:math:`\log p(\text{labels}, \pi, \Gamma) = \log \mathrm{Dir}(\pi; \alpha) + \sum_{m,k} \log
\mathrm{Dir}(\Gamma_{mk}; B_k) + \sum_n \log \sum_k \pi_k \prod_{l:\, n_l=n} \Gamma_{w_l k y_l}`,
the Pyro program's log joint with ``z`` summed out.

**Backends.** :func:`e_step`, :func:`m_step`, :func:`em_step_objective` (and :func:`em_step`)
and :func:`log_marginal` are the one dispatcher of their computation: each runs a compiled
CPU pass of :mod:`.kernels.compiled` (``"c"``, built with the package, or ``"numba"``) or the
torch path (the sparse products of :mod:`pyromodels.crowd.emissions`, any device, the GPU
path), on the backend chosen when the data were prepared (``data.backend``) unless a
``backend`` is passed explicitly (then resolved by
:func:`~pyromodels.crowd.ds.data.resolve_ds_backend`). A compiled pass that meets an item
impossible under every class hands the step back to the torch path.

Example:
    >>> from pyromodels.crowd.ds.model import DawidSkene
    >>> from pyromodels.data import simulate_annotations
    >>> table, truth = simulate_annotations(100, 4, 2, seed=0)
    >>> data = DawidSkene().prepare(table)
    >>> params = majority_start(data)
    >>> new = em_step(data, params)
    >>> bool(log_posterior(data, new) >= log_posterior(data, params))
    True
"""

from __future__ import annotations

import math

import torch

from ...conjugate import log_multivariate_beta
from ..emissions import confusion_counts, log_emissions, normalize_rows
from ..majority import vote_fractions
from . import array_em
from .data import DSData, check_stochastic, resolve_ds_backend
from .kernels import compiled

__all__ = [
    "table_logits",
    "class_logits",
    "table_posteriors",
    "e_step",
    "e_step_labels",
    "m_step",
    "em_step",
    "em_step_objective",
    "log_marginal",
    "log_posterior",
    "log_prior",
    "majority_start",
    "check_params",
    "check_em_prior",
    "MStepParams",
]


def _prior(data: DSData, params: dict) -> torch.Tensor:
    return data.fixed_prior if data.fixed_prior is not None else params["prior"]


def _backend(data: DSData, backend: str | None, *tensors: torch.Tensor) -> str:
    """The data's backend (chosen when they were prepared), or ``backend`` resolved for
    ``tensors`` when one is given explicitly."""
    return data.backend if backend is None else resolve_ds_backend(backend, *tensors)


def table_logits(table, prior: torch.Tensor, confusion: torch.Tensor) -> torch.Tensor:
    """Unnormalised ``(N, K)`` log posterior ``log pi_k + log b[n, k]`` of the items of
    ``table`` (an AnnotationTable) given ``prior`` ``(K,)`` and ``confusion`` ``(M, K, K)``."""
    return prior.log() + log_emissions(table, confusion.log())


def class_logits(data: DSData, params: dict) -> torch.Tensor:
    """:func:`table_logits` of the prepared data with ``params`` (``prior`` unless fixed)."""
    return table_logits(data.table, _prior(data, params), params["confusion"])


def e_step(data: DSData, params: dict,
           backend: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Class posteriors ``q`` ``(N, K)`` and ``log p(labels_n | theta)`` ``(N,)``.

    ``backend``: ``None`` (default: the one the data were prepared with, ``data.backend``),
    ``"torch"`` (log space, any device), ``"c"`` or ``"numba"`` (the compiled CPU passes of
    :mod:`.kernels.compiled`) or ``"auto"`` (see
    :func:`~pyromodels.crowd.ds.data.resolve_ds_backend`).
    """
    prior, confusion = _prior(data, params), params["confusion"]
    return table_posteriors(data.table, prior, confusion,
                            _backend(data, backend, prior, confusion))


def table_posteriors(table, prior: torch.Tensor, confusion: torch.Tensor,
                     backend: str = "torch") -> tuple[torch.Tensor, torch.Tensor]:
    """Class posteriors ``(N, K)`` and ``log p(labels_n | theta)`` ``(N,)`` of the items of
    ``table`` (an AnnotationTable) given ``prior`` ``(K,)`` and ``confusion`` ``(M, K, K)``.

    The one dispatcher of this computation: ``backend="c"`` or ``"numba"`` runs the compiled
    pass of :mod:`.kernels.compiled` (CPU tensors; an item impossible under every class hands
    the whole call back to the torch path), ``"torch"`` the sparse product of
    :func:`table_logits` and a softmax (any device). All agree to rounding.
    """
    if backend in compiled.BACKENDS:
        q, log_norm = compiled.posteriors(table, prior, confusion, backend)
        if bool(torch.isfinite(log_norm).all()):
            return q, log_norm
    logits = table_logits(table, prior, confusion)
    log_norm = torch.logsumexp(logits, -1)
    return torch.exp(logits - log_norm.unsqueeze(-1)), log_norm


def e_step_labels(data: DSData, params: dict,
                  backend: str | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`e_step` and each item's most probable class: ``(q, q.argmax(-1), log_norm)``
    (the C pass picks the class in its loop, where an argmax over 5 classes in torch costs as
    much as the whole E-step)."""
    prior, confusion = _prior(data, params), params["confusion"]
    chosen = _backend(data, backend, prior, confusion)
    if chosen == "c":
        q, log_norm, best = compiled.posteriors(data.table, prior, confusion, "c", best=True)
        if bool(torch.isfinite(log_norm).all()):
            return q, best, log_norm
        chosen = "torch"  # an item impossible under every class: not the C pass again
    q, log_norm = table_posteriors(data.table, prior, confusion, chosen)
    return q, q.argmax(-1), log_norm


class MStepParams(dict):
    """``{"prior", "confusion"}`` made by the M-step: stochastic by construction (rows with
    no mass become uniform), so :func:`check_params` checks only their shapes, dtype and
    device, not every value again on each EM iteration."""


def _map_params(data: DSData, counts: torch.Tensor, class_totals: torch.Tensor,
                floor: float) -> MStepParams:
    """The Dirichlet posterior modes given the expected counts (see the module doc)."""
    confusion = normalize_rows(counts + data.confusion_concentration - 1, floor)
    if data.fixed_prior is not None:
        prior = data.fixed_prior
    else:
        prior = normalize_rows(class_totals + data.prior_concentration - 1, floor)
    return MStepParams(prior=prior, confusion=confusion)


def _made_for(data: DSData, params) -> bool:
    """Whether ``params`` came from an M-step on data of ``data``'s sizes, dtype and device."""
    if not isinstance(params, MStepParams):
        return False
    M, K = data.num_workers, data.num_classes
    return all(
        isinstance(t, torch.Tensor) and t.shape == shape and t.dtype == data.dtype
        and t.device == data.device
        for t, shape in ((params.get("confusion"), (M, K, K)), (params.get("prior"), (K,)))
    )


def m_step(data: DSData, q: torch.Tensor, floor: float = 0.0,
           backend: str | None = None, extra_counts: torch.Tensor | None = None) -> dict:
    """The MAP parameters given class posteriors ``q`` ``(N, K)`` (see the module doc).

    Returns ``{"prior": (K,), "confusion": (M, K, K)}``; ``prior`` is the fixed one when the
    model holds it fixed. ``backend`` as in :func:`e_step` (for the counts).
    ``extra_counts`` ``(M, K, K)`` (rows = true class), when given, are added to the expected
    counts: labels of each worker counted elsewhere (a history of answers on known classes).
    """
    q = q.to(data.dtype)
    chosen = _backend(data, backend, q)
    if chosen in compiled.BACKENDS:
        counts = compiled.confusion_counts(data.table, q, data.num_workers, chosen)
        counts = counts.to(data.dtype)
    else:
        counts = confusion_counts(data.table, q, data.num_workers)
    if extra_counts is not None:
        counts = counts + extra_counts.to(counts)
    return _map_params(data, counts, q.sum(0), floor)


def _array_prior(data: DSData) -> array_em.ArrayPrior:
    """The data's priors as NumPy arrays (for the M-step after a compiled E-step)."""
    fixed = None if data.fixed_prior is None else data.fixed_prior.numpy()
    return array_em.ArrayPrior(data.prior_concentration.numpy(),
                               data.confusion_concentration.numpy(), fixed)


def _from_arrays(data: DSData, params: tuple) -> MStepParams:
    prior, confusion = params
    prior = data.fixed_prior if data.fixed_prior is not None else torch.from_numpy(prior)
    return MStepParams(prior=prior, confusion=torch.from_numpy(confusion))


def _em_pass(data: DSData, params: dict, floor: float, backend: str | None,
             objective: bool = True):
    """``(em_step(params), log_posterior(params))`` from one E-step (the objective ``None``
    when not asked for). After a compiled E-step the M-step and the objective are those of
    :mod:`.array_em` (the arithmetic of the array path, so both give the same numbers)."""
    prior, confusion = _prior(data, params), params["confusion"]
    chosen = _backend(data, backend, prior, confusion)
    if chosen in compiled.BACKENDS:
        counts, totals, loglik = compiled.em_counts(data.table, prior, confusion,
                                                    data.num_workers, chosen)
        if math.isfinite(loglik):
            spec = _array_prior(data)
            new = _from_arrays(data, array_em.map_params(spec, counts.numpy(), totals.numpy(),
                                                         floor))
            if not objective:
                return new, None
            value = array_em.objective(spec, loglik, prior.numpy(), confusion.numpy())
            return new, torch.tensor(value, dtype=data.dtype)
    q, log_norm = e_step(data, params, "torch")
    new = m_step(data, q, floor, "torch")
    return new, (log_norm.sum() + log_prior(data, params)) if objective else None


def em_step_objective(data: DSData, params: dict, floor: float = 0.0,
                      backend: str | None = None) -> tuple[dict, torch.Tensor]:
    """One E-step and one M-step, and the objective :func:`log_posterior` of ``params`` (the
    E-step's normalisers give it for free). ``backend`` as in :func:`e_step`; the compiled
    passes never form ``q``."""
    return _em_pass(data, params, floor, backend)


def em_step(data: DSData, params: dict, floor: float = 0.0,
            backend: str | None = None) -> dict:
    """One E-step followed by one M-step (``backend`` as in :func:`e_step`)."""
    return _em_pass(data, params, floor, backend, objective=False)[0]


def log_marginal(data: DSData, params: dict, backend: str | None = None) -> torch.Tensor:
    """``log p(labels | pi, Gamma)`` with ``z`` summed out (a scalar); ``backend`` as in
    :func:`e_step`."""
    prior, confusion = _prior(data, params), params["confusion"]
    chosen = _backend(data, backend, prior, confusion)
    if chosen in compiled.BACKENDS:
        value = compiled.log_marginal(data.table, prior, confusion, chosen)
        if math.isfinite(value):
            return torch.tensor(value, dtype=data.dtype)
    return e_step(data, params, "torch")[1].sum()


def _dirichlet_log_density(concentration: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """``log Dirichlet(value | concentration)`` summed over every row (the density of
    :class:`torch.distributions.Dirichlet` without its per-call validation: EM evaluates it
    once per iteration)."""
    return (torch.xlogy(concentration - 1, value).sum(-1)
            - log_multivariate_beta(concentration)).sum()


def log_prior(data: DSData, params: dict) -> torch.Tensor:
    """``log Dir(prior; alpha) + sum log Dir(confusion rows; B)``: the objective's prior term
    (without the class prior's when it is held fixed)."""
    out = _dirichlet_log_density(data.confusion_concentration, params["confusion"])
    if data.fixed_prior is None:
        out = out + _dirichlet_log_density(data.prior_concentration, params["prior"])
    return out


def log_posterior(data: DSData, params: dict, backend: str | None = None) -> torch.Tensor:
    """The EM objective: ``log p(labels, pi, Gamma)`` with ``z`` summed out (a scalar)."""
    return log_marginal(data, params, backend) + log_prior(data, params)


def majority_start(data: DSData, floor: float = 0.0, backend: str | None = None) -> dict:
    """crowd-kit's start: one M-step from the majority-vote fractions of each item (on the C
    backend the fractions are formed inside the counting pass)."""
    if _backend(data, backend, data.confusion_concentration) == "c":
        counts, totals = compiled.vote_counts(data.table, data.num_workers)
        return _from_arrays(data, array_em.map_params(_array_prior(data), counts.numpy(),
                                                      totals.numpy(), floor))
    return m_step(data, vote_fractions(data.table), floor, backend)


def check_params(data: DSData, params: dict, name: str = "params") -> dict:
    """Raise unless ``params`` holds a valid ``confusion`` ``(M, K, K)`` (and ``prior`` ``(K,)``
    when the prior is learned); return them as tensors of the data's dtype and device."""
    if _made_for(data, params) and (data.fixed_prior is None
                                    or params["prior"] is data.fixed_prior):
        return params
    if not isinstance(params, dict) or "confusion" not in params:
        raise ValueError(f"{name} must be a dict with a 'confusion' entry of shape (M, K, K)")
    M, K = data.num_workers, data.num_classes
    out = dict(params)
    out["confusion"] = check_stochastic(
        params["confusion"], f"{name}['confusion']", (M, K, K), data.dtype, data.device
    )
    if data.fixed_prior is None:
        if "prior" not in params:
            raise ValueError(
                f"{name} must hold a 'prior' of shape ({K},) when the prior is learned"
            )
        out["prior"] = check_stochastic(params["prior"], f"{name}['prior']", (K,), data.dtype,
                                        data.device)
    else:
        out["prior"] = data.fixed_prior
    return out


def check_em_prior(data: DSData) -> None:
    """Raise if a concentration is below 1 (the MAP then sits on the simplex's boundary)."""
    for name, conc in (("confusion_concentration", data.confusion_concentration),
                       ("prior_concentration", data.prior_concentration)):
        if name == "prior_concentration" and data.fixed_prior is not None:
            continue
        if float(conc.min()) < 1:
            raise ValueError(
                f"{name} must be >= 1 for EM (the posterior mode is on the boundary of the "
                f"simplex otherwise), got a minimum of {float(conc.min()):.3g}; use "
                "method='gibbs', 'svi' or 'nuts'"
            )
