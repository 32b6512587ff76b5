r"""BayesSCDC's start of the global factors from the data (``global_init="data"``).

The paper draws the initial components' means from :math:`N(0, 3^2 I)` and lets the globals
move from there; on the Pinwheel toy the outcome then depends much on the draw (its "good"
and "bad" initialisations): with the globals held during the warm-up, the recognition network
learns to put the items on the few drawn components that lie near the data, and the sparse
Dirichlet later merges those few. Starting the globals from the data instead, once the
networks have learnt (at the end of the warm-up), removes that dependence:

1. the recognition network's potentials :math:`(h^r_i, \lambda^r_i)` of every item are
   computed and held fixed; the *encoded items* are the means :math:`E[x_i]` of the local
   factors found by message passing at the current globals (not the potentials' own means
   :math:`h^r_i / \lambda^r_i`, which are arbitrary, and can be far out, along directions
   where the network gives almost no precision);
2. ``K`` centres are chosen among the encoded points by k-means++ seeding (the first
   uniformly, each next one with probability proportional to the squared distance to the
   nearest centre chosen), and the components' NIW means are put there (the other NIW
   parameters and the weights keep their initial values);
3. ``iterations`` full-data coordinate-ascent (CAVI) sweeps of the conjugate model on those
   fixed potentials follow: message passing over every item (and every link) at the current
   globals, then every global set to its prior plus the full-data expected statistics (a
   natural-gradient step of size 1).

The last of those sweeps is returned as statistics with step size 1, so the engine itself
performs it (:class:`~pyromodels.core.conjugate_factors.LocalStep` ``step_sizes``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..conjugate.niw import niw_to_normal_wishart
from ..core.conjugate_factors import LocalStep, fields_of, like
from ..core.kmeanspp import kmeanspp_indices

__all__ = ["kmeanspp_centres", "seeded_components", "cavi_start", "GLOBAL_INITS"]

#: how :class:`~pyromodels.scdc.BayesSCDC` starts its global factors
GLOBAL_INITS = ("data", "prior-draws")


def kmeanspp_centres(points: torch.Tensor, num_centres: int,
                     generator: torch.Generator) -> torch.Tensor:
    """``(K, d)`` centres chosen among ``points`` ``(N, d)`` by k-means++ seeding (D^2
    sampling). With fewer distinct points than centres, the remaining centres repeat points."""
    return points[kmeanspp_indices(points, num_centres, generator)]


def seeded_components(components, centres: torch.Tensor):
    """The Normal-Wishart ``components`` with their NIW means replaced by ``centres``
    ``(K, d)`` (``kappa``, ``S`` and ``nu`` kept; read as attributes, so a stand-in that
    forwards them, as the engine's eq. 17 views do, serves too)."""
    return niw_to_normal_wishart(centres.to(components.loc.dtype), components.kappa,
                                 components.inv_scale(), components.nu)


def cavi_start(globals_: dict, priors: dict, points: torch.Tensor,
               sweep: Callable[[dict], dict], iterations: int,
               generator: torch.Generator) -> LocalStep:
    """The data start (module docstring) as a :class:`LocalStep` of step size 1.

    Args:
        globals_: the current factors (name -> factor); the components' means are reseeded.
        priors: the prior factors (the CAVI update is ``eta_0 + stats``).
        points: ``(N, d)`` the encoded points (k-means++ seeding).
        sweep: ``f(factors) -> stats``: full-data message passing at ``factors`` on the fixed
            potentials, the expected statistics of every global at weight 1.
        iterations: CAVI sweeps, at least 1; the last is the returned step.
        generator: for the seeding.
    """
    factors = dict(globals_)
    centres = kmeanspp_centres(points, factors["components"].loc.shape[0], generator)
    factors["components"] = seeded_components(factors["components"], centres)
    for _ in range(iterations - 1):
        stats = sweep(factors)
        factors = {name: _cavi(priors[name], stats[name]) if name in stats else f
                   for name, f in factors.items()}
    stats = sweep(factors)
    return LocalStep(stats=stats, scales=dict.fromkeys(stats, 1.0),
                     step_sizes=dict.fromkeys(stats, 1.0))


def _cavi(prior, stats):
    """``prior`` updated by full-data ``stats``: ``eta_0 + stats``."""
    eta0 = prior.natural_params()
    return type(prior).from_natural(like(eta0, (a + b for a, b in zip(
        fields_of(eta0), fields_of(stats), strict=True))))
