"""The model base class: one Pyro program, optional hooks for each engine.

A subclass writes ``model(data)`` once. Each engine asks for the hooks it needs:

=========  ====================================================================
engine     hooks
=========  ====================================================================
``svi``    ``model``; optional ``guide(data)`` and ``init_values(data, generator)``
``nuts``   ``model`` (discrete sites marked for enumeration); ``init_values``
``gibbs``  ``init_state(data, generator)`` and ``gibbs_sweep(data)``
``em``     ``em_init(data, generator)``, ``em_step(data, params)``,
           ``em_objective(data, params)``; optional ``em_outputs(data, params)``,
           ``em_step_with_objective(data, params)`` and ``em_converged(data, old, new)``
           (a stopping rule beside the objective's tolerance, such as "no label changed";
           see :func:`~pyromodels.core.run_em`)
=========  ====================================================================

Every hook is a second description of something the program already defines; the tests of a
model check each hook against the program (see :mod:`pyromodels.testing`).
"""

from __future__ import annotations

import torch
from pyro import poutine
from pyro.poutine.util import site_is_subsample

from ..checks import check_in
from . import transforms  # noqa: F401 - registers the positive-definite transform
from .errors import ModelSpecError

__all__ = ["Model"]


class Model:
    """Base class for pyromodels models.

    Attributes:
        discrete_sites: names of the discrete latent sites the program marks for enumeration.
        max_plate_nesting: how many plates the program nests at most.
        engines: the fit methods this model supports.
        em_monotone: whether ``em_objective`` can never decrease under ``em_step``.
    """

    discrete_sites: tuple[str, ...] = ()
    max_plate_nesting: int = 1
    engines: tuple[str, ...] = ("svi", "nuts")
    #: whether the EM objective can never decrease (False for ICM-based or approximate EM)
    em_monotone: bool = True

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

    def fit(self, data, method: str = "svi", **kwargs):
        """Fit with one engine: ``"svi"``, ``"nuts"``, ``"gibbs"`` or ``"em"``.

        Keyword arguments go to the matching runner (:func:`~pyromodels.core.run_svi` and so on).
        Returns a :class:`~pyromodels.core.Posterior`.
        """
        from . import em, gibbs, nuts, svi

        check_in(method, "method", self.engines)
        runner = {"svi": svi.run_svi, "nuts": nuts.run_nuts, "gibbs": gibbs.run_gibbs, "em": em.run_em}
        return runner[method](self, data, **kwargs)

    def _require(self, *hooks: str, engine: str) -> None:
        for hook in hooks:
            if not callable(getattr(self, hook, None)):
                raise ModelSpecError(
                    f"{type(self).__name__} does not define {hook}(), which the {engine!r} engine needs"
                )
