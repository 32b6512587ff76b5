"""An ``arviz.InferenceData`` for a point estimate, which ``arviz.loo`` and ``arviz.waic`` refuse.

An EM fit is stored as one chain of one draw. ArviZ's information criteria average the
pointwise likelihood over posterior draws, and with one draw their Pareto smoothing fails deep
inside with an ``IndexError`` that says nothing about the cause. This subclass has no
``log_likelihood`` group, and asking for it raises a ``ValueError`` that says why; ArviZ asks
for it first, so ``az.loo(idata)`` and ``az.waic(idata)`` stop there. Everything else
(``az.summary``, plots, ``to_netcdf``) works as on any ``InferenceData``; the root attribute
``point_estimate = 1`` survives a NetCDF round trip.

This module imports ArviZ; :mod:`pyromodels.core.inference_data` imports it only when it
builds such an object.
"""

from __future__ import annotations

import arviz as az

__all__ = ["PointEstimateInferenceData", "POINT_ESTIMATE_REASON"]

#: why ``arviz.loo`` / ``arviz.waic`` refuse a point estimate
POINT_ESTIMATE_REASON = (
    "this InferenceData holds a point estimate (one chain of one draw, for example an EM fit): "
    "loo and waic average the pointwise likelihood over posterior draws, so they are undefined "
    "for it. Fit with a sampler (gibbs or nuts) for loo/waic, or call the model's "
    "log_likelihood_pointwise(data, posterior.samples) for the point estimate's pointwise "
    "log-likelihood"
)


class PointEstimateInferenceData(az.InferenceData):
    """``InferenceData`` of a one-draw point estimate: no ``log_likelihood`` group."""

    @property
    def log_likelihood(self):
        """Always raises: a point estimate has no posterior to average the likelihood over."""
        raise ValueError(POINT_ESTIMATE_REASON)
