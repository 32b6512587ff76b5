r"""Gibbs sampling for the networked crowd model (an alternative the paper names in section 5.1).

Labels: each node is redrawn from its full conditional (eq. 31)

.. math:: p(y_n = k \mid y_{-n}, F, \Gamma) \propto \exp(-U_n(k) + \log b_n(k)),

by the Gumbel-max trick: :math:`y_n = \arg\min_k [U_n(k) - \log b_n(k) - G_{nk}]` with
i.i.d. standard Gumbel :math:`G`, which reuses the ICM sweep
(:func:`~pyromodels.crowd.mrf.icm.label_sweep`) with a noisy cost. ``"colored"`` (default,
vectorised, any device) redraws one colour class at a time (its nodes are conditionally
independent given the rest), ``"sequential"`` one node at a time in code order; both leave the
posterior invariant. A Jacobi schedule is not a Gibbs sampler and is refused.

Confusions (the Bayesian variant, not in the paper): with independent
:math:`\mathrm{Dirichlet}(\alpha_{mk\cdot})` priors on the rows,
:math:`\Gamma_{mk\cdot} \mid y, F \sim \mathrm{Dirichlet}(\alpha_{mk\cdot} + c_{mk\cdot})`
where :math:`c_{mkj}` counts the items with label :math:`k` that worker :math:`m` answered
:math:`j` (:func:`~pyromodels.crowd.emissions.confusion_counts` of the one-hot labels).

The sampler targets a proper joint only for a symmetric coupling; a node-dependent coupling
must be symmetrised first (:meth:`~pyromodels.crowd.mrf.energy.PottsCoupling.symmetrized`).

The blocks are driven by the core's :func:`~pyromodels.core.run_gibbs`: :func:`sweep` is the
sampler of :class:`~pyromodels.crowd.mrf.model.NetworkedDawidSkene` (labels, then
confusions), :func:`labels_sweep` that of
:class:`~pyromodels.crowd.mrf.labels.LabelPosterior` (labels, confusions fixed). One labels
block serves both: it reads the log emissions and the coupling from the prepared data's
``label_terms(state)``.
"""

from __future__ import annotations

from functools import partial

import torch
from torch.distributions import Dirichlet

from ...checks import check_in
from ...conjugate.random import sample_dirichlet
from ...core.gibbs import GibbsBlock, GibbsSweep
from ..emissions import confusion_counts
from .energy import PottsCoupling, loop_backend, total_energy
from .icm import label_sweep

__all__ = [
    "GIBBS_SCHEDULES",
    "check_symmetric",
    "gibbs_label_sweep",
    "confusion_posterior_concentration",
    "labels_block",
    "labels_log_density",
    "confusion_block",
    "confusion_log_density",
    "labels_sweep",
    "sweep",
]

GIBBS_SCHEDULES = ("colored", "sequential")


def check_symmetric(coupling: PottsCoupling) -> None:
    """Raise unless ``coupling`` is symmetric (a pairwise MRF, which Gibbs sampling needs)."""
    if not coupling.is_symmetric:
        raise ValueError("Gibbs sampling needs a symmetric coupling (a proper joint); pass "
                         "coupling.symmetrized() for a node-dependent one")


def gibbs_label_sweep(log_b: torch.Tensor, coupling: PottsCoupling, labels: torch.Tensor,
                      generator: torch.Generator, *, schedule: str = "colored",
                      backend: str = "auto") -> torch.Tensor:
    """One Gibbs sweep over every label with the confusions (through ``log_b``) held fixed.

    Args:
        log_b: ``(N, K)`` log emissions.
        coupling: a symmetric Potts coupling.
        labels: long ``(N,)`` current labels (not modified).
        generator: ``torch.Generator`` on ``log_b``'s device.
        schedule: ``"colored"`` or ``"sequential"``.
        backend: kernel backend for ``"sequential"``.

    Returns:
        The new labels.
    """
    check_in(schedule, "schedule", GIBBS_SCHEDULES)
    u = torch.rand(log_b.shape, dtype=log_b.dtype, device=log_b.device, generator=generator)
    cost = -log_b - (-torch.log(-torch.log(u)))
    return label_sweep(coupling, cost, labels, schedule=schedule, backend=backend)[0]


def confusion_posterior_concentration(table, labels: torch.Tensor, concentration,
                                      dtype: torch.dtype | None = None) -> torch.Tensor:
    """``(M, K, K)``: :math:`\\alpha + c(y)`, the Dirichlet parameters of the rows given labels."""
    dtype = dtype or torch.get_default_dtype()
    q = torch.nn.functional.one_hot(labels, table.num_classes).to(dtype)
    return concentration + confusion_counts(table, q)


# ---------------------------------------------------------------- blocks over prepared data
# ``data`` is prepared data with ``label_terms(state) -> (log_b, symmetric coupling)``: the
# networked model's ``MRFData`` (log emissions of ``state["confusion"]``) or ``LabelData``
# (fixed ones). The confusion block needs ``MRFData``: ``table`` and ``concentration``.

def labels_block(state: dict, data, generator: torch.Generator, schedule: str = "colored",
                 backend: str = "auto") -> dict:
    """One Gibbs sweep over the labels ``y`` given the rest of ``state``."""
    log_b, coupling = data.label_terms(state)
    y = gibbs_label_sweep(log_b, coupling, state["y"], generator, schedule=schedule,
                          backend=backend)
    return {"y": y}


def labels_log_density(values: dict, state: dict, data) -> torch.Tensor:
    """:math:`-E(y) = -U(y) + \\sum_n \\log b_n(y_n)`: the log density of ``y`` given the
    confusions up to a constant free of ``y`` (the Potts normaliser depends on neither); the
    block's single-site draws are this density's full conditionals."""
    log_b, coupling = data.label_terms(state)
    return -total_energy(coupling, log_b, values["y"])


def confusion_block(state: dict, data, generator: torch.Generator) -> dict:
    """Draw every confusion row from its Dirichlet full conditional."""
    conc = confusion_posterior_concentration(data.table, state["y"], data.concentration)
    return {"confusion": sample_dirichlet(conc, generator=generator)}


def confusion_log_density(values: dict, state: dict, data) -> torch.Tensor:
    """The Dirichlet full-conditional log density of the confusions."""
    conc = confusion_posterior_concentration(data.table, state["y"], data.concentration)
    return Dirichlet(conc).log_prob(values["confusion"]).sum()


def _labels(schedule: str, backend: str) -> GibbsBlock:
    check_in(schedule, "schedule", GIBBS_SCHEDULES)
    update = partial(labels_block, schedule=schedule, backend=loop_backend(backend))
    return GibbsBlock("labels", ("y",), update, labels_log_density)


def labels_sweep(schedule: str = "colored", backend: str = "auto") -> GibbsSweep:
    """The sweep over the labels alone, the confusions held fixed (``backend`` is resolved
    once, here)."""
    return GibbsSweep([_labels(schedule, backend)])


def sweep(schedule: str = "colored", backend: str = "auto") -> GibbsSweep:
    """The systematic sweep ``y | confusion`` then ``confusion | y`` (``backend`` is resolved
    once, here)."""
    return GibbsSweep([
        _labels(schedule, backend),
        GibbsBlock("confusion", ("confusion",), confusion_block, confusion_log_density),
    ])
