"""The hooks every engine reads from a model, without the fitting entry point.

:class:`~pyromodels.core.Model` adds ``fit``; :class:`~pyromodels.core.bound.CallableModel`
wraps a plain Pyro program; both are a :class:`ModelBase`, which is how the engines tell a
model object from a plain callable.
"""

from __future__ import annotations

import torch
from pyro import poutine
from pyro.poutine.util import site_is_subsample

from . import transforms  # noqa: F401 - registers the positive-definite transform
from .errors import ModelSpecError

__all__ = ["ModelBase"]


class ModelBase:
    """What the engines read from a model: its program, attributes and hooks.

    Attributes:
        discrete_sites: names of the discrete latent sites the program marks for enumeration.
        max_plate_nesting: how many plates the program nests at most.
        engines: the fit methods this model supports.
        em_monotone: whether ``em_objective`` can never decrease under ``em_step``.
        label_switched_sites: the sites whose component axis the posterior's symmetry
            permutes (a mixture's weights, component parameters and labels): the engines
            record them in a fit's ``attrs`` and the sampling warnings leave them out (see
            :mod:`pyromodels.core.diagnostic_warnings`).
    """

    discrete_sites: tuple[str, ...] = ()
    max_plate_nesting: int = 1
    engines: tuple[str, ...] = ("svi", "nuts")
    #: whether the EM objective can never decrease (False for ICM-based or approximate EM)
    em_monotone: bool = True
    #: sites whose components can swap names between draws and chains (label switching)
    label_switched_sites: tuple[str, ...] = ()

    def model(self, data):  # pragma: no cover - abstract
        """The generative story as a Pyro program."""
        raise NotImplementedError

    def prepare(self, data, device=None):
        """Validate ``data`` and move it to ``device``; the default returns it unchanged."""
        return data

    def log_joint(self, data, values: dict[str, torch.Tensor]) -> torch.Tensor:
        """``log p(data, values)`` from the program; ``values`` must fix every latent site."""
        cond = poutine.condition(self.model, data=values)
        with torch.no_grad():
            tr = poutine.trace(cond).get_trace(data)
        missing = [
            name
            for name, site in tr.nodes.items()
            if site["type"] == "sample" and not site["is_observed"] and not site_is_subsample(site)
        ]
        if missing:
            raise ValueError(f"values must fix every latent site; missing {missing}")
        return tr.log_prob_sum()

    def _require(self, *hooks: str, engine: str) -> None:
        for hook in hooks:
            if not callable(getattr(self, hook, None)):
                raise ModelSpecError(
                    f"{type(self).__name__} does not define {hook}(), which the {engine!r} engine needs"
                )
