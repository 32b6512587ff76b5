"""The SCDC objective: Pyro's enumerated ELBO of the local story plus a closed-form term.

:class:`RelationalELBO` is ``TraceEnum_ELBO`` (the sum over each item's cluster done exactly
by the guide's enumeration, one reparameterised ``x`` per cluster) to which it adds a
differentiable term computed from the same arguments: for SCDC the relational term of the
links, :meth:`~pyromodels.scdc.model.SCDC.relational_term` on a minibatch of links, whose
expectation over the guide's cluster posteriors is in closed form. ``pyro.infer.SVI`` and
:func:`~pyromodels.core.run_svi` take it as they take any ELBO; the params the term reads
(the workers' coins) are trained with the others, since ``SVI.step`` collects every param
read while the loss is computed.

:class:`KLWarmup` is an optional deterministic warm-up of the local KL terms (Bowman et al.
2016; Sonderby et al. 2016): the program reads its :attr:`~KLWarmup.weight` and scales the
sites of ``z`` and ``x`` in the model and the guide by it, and :class:`RelationalELBO`
advances it after every gradient step.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from pyro.infer import TraceEnum_ELBO

from ..checks import check_int

__all__ = ["RelationalELBO", "KLWarmup", "check_kl_warmup"]


class KLWarmup:
    """A weight that rises linearly from ``1 / num_steps`` to 1 over ``num_steps`` steps.

    Args:
        num_steps: steps of the warm-up (at least 1); from step ``num_steps - 1`` on the
            weight is 1.

    Attributes:
        steps_done: gradient steps taken so far.
    """

    def __init__(self, num_steps: int):
        if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
            raise ValueError(f"num_steps must be an integer >= 1, got {num_steps!r}")
        self.num_steps = num_steps
        self.steps_done = 0

    @property
    def weight(self) -> float:
        """The weight of the current step, ``min(1, (steps_done + 1) / num_steps)``."""
        return min(1.0, (self.steps_done + 1) / self.num_steps)

    def advance(self) -> None:
        """Count one gradient step."""
        self.steps_done += 1


class RelationalELBO(TraceEnum_ELBO):
    """``TraceEnum_ELBO`` plus ``term(*args, **kwargs)``, a differentiable scalar added to
    the ELBO (so subtracted from the loss) once per step, outside the particles.

    Args:
        term: the extra ELBO term, called with the program's arguments.
        warmup: a :class:`KLWarmup` the program reads, advanced once per
            :meth:`loss_and_grads` (``None``: none).
        **kwargs: ``TraceEnum_ELBO``'s (``max_plate_nesting``, ``num_particles``, ...).
    """

    def __init__(self, term: Callable[..., torch.Tensor], warmup: KLWarmup | None = None,
                 **kwargs):
        if not callable(term):
            raise TypeError(f"term must be callable, got {type(term).__name__}")
        if warmup is not None and not isinstance(warmup, KLWarmup):
            raise TypeError(f"warmup must be a KLWarmup or None, got {type(warmup).__name__}")
        super().__init__(**kwargs)
        self.term = term
        self.warmup = warmup

    def differentiable_loss(self, model, guide, *args, **kwargs):
        """Minus (the enumerated ELBO plus the term)."""
        enumerated = super().differentiable_loss(model, guide, *args, **kwargs)
        return enumerated - self.term(*args, **kwargs)

    def loss(self, model, guide, *args, **kwargs) -> float:
        """The loss as a float, without gradients."""
        enumerated = super().loss(model, guide, *args, **kwargs)
        with torch.no_grad():
            return enumerated - float(self.term(*args, **kwargs))

    def loss_and_grads(self, model, guide, *args, **kwargs) -> float:
        """The loss as a float, with its gradients accumulated in the params (then the
        warm-up, if any, counts the step)."""
        loss = self.differentiable_loss(model, guide, *args, **kwargs)
        if loss.requires_grad:
            loss.backward()
        if self.warmup is not None:
            self.warmup.advance()
        return float(loss.detach())


def check_kl_warmup(kl_warmup_epochs, num_epochs: int, resume) -> int:
    """``kl_warmup_epochs`` checked for a fit of ``num_epochs``: a whole number below
    ``num_epochs``, so that the fit ends on the ELBO itself, and 0 when the fit resumes (the
    warm-up's progress is not part of a checkpoint)."""
    kl_warmup_epochs = check_int(kl_warmup_epochs, "kl_warmup_epochs", minimum=0)
    if kl_warmup_epochs and kl_warmup_epochs >= num_epochs:
        raise ValueError(f"kl_warmup_epochs must be below num_epochs ({num_epochs}) so that "
                         f"the fit ends on the ELBO itself, got {kl_warmup_epochs}")
    if kl_warmup_epochs and resume is not None:
        raise ValueError("kl_warmup_epochs cannot be combined with resume (the warm-up's "
                         "progress is not part of a checkpoint); resume a fit without it")
    return kl_warmup_epochs
