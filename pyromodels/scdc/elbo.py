"""The SCDC objective: Pyro's enumerated ELBO of the local story plus a closed-form term.

:class:`RelationalELBO` is ``TraceEnum_ELBO`` (the sum over each item's cluster done exactly
by the guide's enumeration, one reparameterised ``x`` per cluster) to which it adds a
differentiable term computed from the same arguments: for SCDC the relational term of the
links, :meth:`~pyromodels.scdc.model.SCDC.relational_term` on a minibatch of links, whose
expectation over the guide's cluster posteriors is in closed form. ``pyro.infer.SVI`` and
:func:`~pyromodels.core.run_svi` take it as they take any ELBO; the params the term reads
(the workers' coins) are trained with the others, since ``SVI.step`` collects every param
read while the loss is computed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from pyro.infer import TraceEnum_ELBO

__all__ = ["RelationalELBO"]


class RelationalELBO(TraceEnum_ELBO):
    """``TraceEnum_ELBO`` plus ``term(*args, **kwargs)``, a differentiable scalar added to
    the ELBO (so subtracted from the loss) once per step, outside the particles.

    Args:
        term: the extra ELBO term, called with the program's arguments.
        **kwargs: ``TraceEnum_ELBO``'s (``max_plate_nesting``, ``num_particles``, ...).
    """

    def __init__(self, term: Callable[..., torch.Tensor], **kwargs):
        if not callable(term):
            raise TypeError(f"term must be callable, got {type(term).__name__}")
        super().__init__(**kwargs)
        self.term = term

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
        """The loss as a float, with its gradients accumulated in the params."""
        loss = self.differentiable_loss(model, guide, *args, **kwargs)
        if loss.requires_grad:
            loss.backward()
        return float(loss.detach())
