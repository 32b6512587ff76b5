"""The truncated stick-breaking DP mixture as a ``pyromodels fit`` choice.

:class:`~pyromodels.ddpm.TruncatedDPMixture` is the DP mixture of isotropic Gaussians cut at
``T`` components and observed directly (no flow), fitted by blocked Gibbs sampling or by SVI
with the labels summed out. ``pyromodels fit truncated-dp-mixture`` reads a numeric CSV (by
default the synthetic warped set that ``fit ddpm`` fits, so the two can be compared) and
reports each point's cluster (``labels.csv``, with its probability) and a scatter of the data
by cluster. The clusters are read at the posterior means of an SVI fit and at the draw of
highest log joint of a Gibbs fit: means over Gibbs draws would mix components whose labels
switched between draws or chains, shattering the clusters.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from ...ddpm import TruncatedDPMixture
from ...registry import register
from ..catalogue import TRUNCATED_DP_MIXTURE
from .reproduction import SYNTHETIC_PRIOR
from .reproduction import loader as ddpm_loader

__all__ = ["ENTRY", "best_draw", "default_model", "describe"]


def default_model(truncation: int = 20, **prior) -> TruncatedDPMixture:
    """The registered model: ``truncation`` components (default 20) and the synthetic set's
    prior, each field of which ``prior`` may replace (``mu0``, ``kappa0``, ``alpha0``,
    ``beta0``, ``alpha``)."""
    return TruncatedDPMixture(replace(SYNTHETIC_PRIOR, **prior), truncation)


def best_draw(posterior):
    """``posterior`` cut to its draw of highest log joint (``sample_stats["lp"]``) for a Gibbs
    fit, where the plug-in means over draws mix label-switched components; unchanged otherwise."""
    lp = posterior.sample_stats.get("lp")
    if posterior.method != "gibbs" or lp is None:
        return posterior
    chain, draw = divmod(int(torch.argmax(lp.reshape(-1))), lp.shape[1])
    one = {name: value[chain:chain + 1, draw:draw + 1] for name, value in posterior.samples.items()}
    stats = {name: value[chain:chain + 1, draw:draw + 1] for name, value in posterior.sample_stats.items()}
    return replace(posterior, samples=one, sample_stats=stats)


def describe(posterior, data, *, name: str):
    """The report of one fit: the generic one, ``labels.csv`` (each point's most probable
    component and its probability, from :meth:`~pyromodels.ddpm.TruncatedDPMixture.predict` at
    the posterior means, or at the best draw of a Gibbs fit: :func:`best_draw`) and a scatter
    by cluster."""
    from .fit_report import cluster_report

    responsibilities, labels = posterior.model.predict(best_draw(posterior), data)
    return cluster_report(posterior, data, labels.cpu().numpy(), name=name,
                          probabilities=responsibilities.max(-1).values.cpu().numpy())


ENTRY = register(TRUNCATED_DP_MIXTURE.entry(factory=default_model, loader=ddpm_loader,
                                            describe=describe))
