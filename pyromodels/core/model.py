"""The model base class: one Pyro program, optional hooks for each engine.

A subclass writes ``model(data)`` (or ``model(x, y=None)``, any signature) once. Each engine
asks for the hooks it needs:

=========  ====================================================================
engine     hooks
=========  ====================================================================
``svi``    ``model``; optional ``guide(data)``, ``init_values(data, generator)`` and
           ``svi_elbo(num_particles)`` (the model's own objective)
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

from ..checks import check_in
from .bound import takes_one_argument
from .hooks import ModelBase

__all__ = ["Model"]


class Model(ModelBase):
    """Base class for pyromodels models (see :class:`~pyromodels.core.hooks.ModelBase` for
    the attributes and hooks).
    """

    def fit(self, *args, method: str = "svi", **kwargs):
        """Fit with one engine: ``"svi"``, ``"nuts"``, ``"gibbs"`` or ``"em"``.

        ``args`` and the keyword arguments that are not settings of the engine are the
        program's: ``fit(data)`` for ``model(self, data)``, ``fit(x, y=y)`` for
        ``model(self, x, y=None)`` (see :mod:`pyromodels.core.entry` for how settings and
        the model's keyword arguments are told apart). The settings go to the matching runner
        (:func:`~pyromodels.core.run_svi` and so on). A program of one argument gets its data
        in every hook as they are; a program of several gets them as one
        :class:`~pyromodels.core.bound.ModelArgs` (``data.args``, ``data.kwargs``).

        Returns a :class:`~pyromodels.core.Posterior`.
        """
        from . import em, gibbs, nuts, svi

        engine_as_data = len(args) == 2 and isinstance(args[1], str) and args[1] in self.engines
        if engine_as_data and takes_one_argument(self.model):
            raise TypeError(f"fit takes the engine by keyword: fit(data, method={args[1]!r})")
        check_in(method, "method", self.engines)
        runner = {"svi": svi.run_svi, "nuts": nuts.run_nuts, "gibbs": gibbs.run_gibbs, "em": em.run_em}
        return runner[method](self, *args, **kwargs)
