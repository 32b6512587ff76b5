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
"""

from __future__ import annotations

from functools import partial

import torch
from torch.distributions import Dirichlet

from ...checks import check_in, check_int
from ...conjugate.random import sample_dirichlet
from ...core.gibbs import GibbsBlock, GibbsSweep
from ...core.seeding import make_generator
from ..emissions import confusion_counts, log_emissions
from .energy import PottsCoupling, check_log_emissions, total_energy
from .icm import check_labels, label_sweep

__all__ = [
    "GIBBS_SCHEDULES",
    "gibbs_label_sweep",
    "sample_labels",
    "confusion_posterior_concentration",
    "labels_block",
    "labels_log_density",
    "confusion_block",
    "confusion_log_density",
    "sweep",
]

GIBBS_SCHEDULES = ("colored", "sequential")


def _require_symmetric(coupling: PottsCoupling) -> None:
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


def sample_labels(log_b: torch.Tensor, coupling: PottsCoupling, *, labels=None,
                  num_samples: int = 1000, num_warmup: int = 100, thin: int = 1,
                  schedule: str = "colored", seed: int = 0,
                  backend: str = "auto") -> torch.Tensor:
    """Draws of the labels from :math:`p(y \\mid F, \\Gamma) \\propto e^{-E(y)}` (fixed confusions).

    Args:
        log_b: ``(N, K)`` log emissions of the fixed confusions.
        coupling: a symmetric Potts coupling on ``log_b``'s device.
        labels: starting labels (default :math:`\\arg\\max_k \\log b_n(k)`).
        num_samples: draws kept.
        num_warmup: sweeps discarded first.
        thin: keep every ``thin``-th sweep.
        schedule: ``"colored"`` or ``"sequential"``.
        seed: seed of the chain's generator.
        backend: kernel backend for ``"sequential"``.

    Returns:
        long ``(num_samples, N)``.
    """
    check_log_emissions(log_b, coupling.num_nodes)
    _require_symmetric(coupling)
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    num_warmup = check_int(num_warmup, "num_warmup", minimum=0)
    thin = check_int(thin, "thin", minimum=1)
    y = log_b.argmax(-1) if labels is None else check_labels(
        labels, coupling.num_nodes, log_b.shape[1], log_b.device)
    gen = make_generator(seed, log_b.device)
    draws = []
    for it in range(num_warmup + num_samples * thin):
        y = gibbs_label_sweep(log_b, coupling, y, gen, schedule=schedule, backend=backend)
        if it >= num_warmup and (it - num_warmup) % thin == 0:
            draws.append(y)
    return torch.stack(draws)


def confusion_posterior_concentration(table, labels: torch.Tensor, concentration,
                                      dtype: torch.dtype | None = None) -> torch.Tensor:
    """``(M, K, K)``: :math:`\\alpha + c(y)`, the Dirichlet parameters of the rows given labels."""
    dtype = dtype or torch.get_default_dtype()
    q = torch.nn.functional.one_hot(labels, table.num_classes).to(dtype)
    return concentration + confusion_counts(table, q)


# ---------------------------------------------------------------- blocks over a prepared model
# ``data`` is the model's prepared data: ``table``, ``program_coupling`` (symmetric) and
# ``concentration`` (M, K, K).

def _log_b(state: dict, data) -> torch.Tensor:
    return log_emissions(data.table, state["confusion"].log())


def labels_block(state: dict, data, generator: torch.Generator, schedule: str = "colored",
                 backend: str = "auto") -> dict:
    """One Gibbs sweep over the labels ``y`` given the confusions."""
    y = gibbs_label_sweep(_log_b(state, data), data.program_coupling, state["y"], generator,
                          schedule=schedule, backend=backend)
    return {"y": y}


def labels_log_density(values: dict, state: dict, data) -> torch.Tensor:
    """:math:`-E(y) = -U(y) + \\sum_n \\log b_n(y_n)`: the log density of ``y`` given the
    confusions up to a constant free of ``y`` (the Potts normaliser depends on neither); the
    block's single-site draws are this density's full conditionals."""
    return -total_energy(data.program_coupling, _log_b(state, data), values["y"])


def confusion_block(state: dict, data, generator: torch.Generator) -> dict:
    """Draw every confusion row from its Dirichlet full conditional."""
    conc = confusion_posterior_concentration(data.table, state["y"], data.concentration)
    return {"confusion": sample_dirichlet(conc, generator=generator)}


def confusion_log_density(values: dict, state: dict, data) -> torch.Tensor:
    """The Dirichlet full-conditional log density of the confusions."""
    conc = confusion_posterior_concentration(data.table, state["y"], data.concentration)
    return Dirichlet(conc).log_prob(values["confusion"]).sum()


def sweep(schedule: str = "colored", backend: str = "auto") -> GibbsSweep:
    """The systematic sweep ``y | confusion`` then ``confusion | y``."""
    check_in(schedule, "schedule", GIBBS_SCHEDULES)
    return GibbsSweep([
        GibbsBlock("labels", ("y",), partial(labels_block, schedule=schedule, backend=backend),
                   labels_log_density),
        GibbsBlock("confusion", ("confusion",), confusion_block, confusion_log_density),
    ])
