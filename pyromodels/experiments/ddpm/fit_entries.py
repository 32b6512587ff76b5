"""The truncated stick-breaking DP mixture as a ``pyromodels fit`` choice.

:class:`~pyromodels.ddpm.TruncatedDPMixture` is the DP mixture of isotropic Gaussians cut at
``T`` components and observed directly (no flow), fitted by blocked Gibbs sampling or by SVI
with the labels summed out. ``pyromodels fit truncated-dp-mixture`` reads a numeric CSV (by
default the synthetic warped set that ``fit ddpm`` fits, so the two can be compared) and
reports each point's cluster at the posterior means (``labels.csv``, with its probability)
and a scatter of the data by cluster.
"""

from __future__ import annotations

from dataclasses import replace

from ...ddpm import TruncatedDPMixture
from ...registry import register
from ..catalogue import TRUNCATED_DP_MIXTURE
from .reproduction import SYNTHETIC_PRIOR
from .reproduction import loader as ddpm_loader

__all__ = ["ENTRY", "default_model", "describe"]


def default_model(truncation: int = 20, **prior) -> TruncatedDPMixture:
    """The registered model: ``truncation`` components (default 20) and the synthetic set's
    prior, each field of which ``prior`` may replace (``mu0``, ``kappa0``, ``alpha0``,
    ``beta0``, ``alpha``)."""
    return TruncatedDPMixture(replace(SYNTHETIC_PRIOR, **prior), truncation)


def describe(posterior, data, *, name: str):
    """The report of one fit: the generic one, ``labels.csv`` (each point's most probable
    component at the posterior means and its probability, from
    :meth:`~pyromodels.ddpm.TruncatedDPMixture.predict`) and a scatter by cluster."""
    from .fit_report import cluster_report

    responsibilities, labels = posterior.model.predict(posterior, data)
    return cluster_report(posterior, data, labels.cpu().numpy(), name=name,
                          probabilities=responsibilities.max(-1).values.cpu().numpy())


ENTRY = register(TRUNCATED_DP_MIXTURE.entry(factory=default_model, loader=ddpm_loader,
                                            describe=describe))
