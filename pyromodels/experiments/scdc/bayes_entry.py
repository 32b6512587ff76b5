"""``pyromodels fit bayes-scdc``: BayesSCDC by natural-gradient SVI.

It reads what ``pyromodels fit scdc`` reads (:func:`.fit_entries.loader`: the features and,
with ``--pairs``, the links; without ``--data`` the paper's pinwheel and its 980 links) and
writes the same report: ``labels.csv`` (each point's cluster, ``argmax q*(z)``, and its
probability) and, with links, ``workers.csv`` (each worker's posterior mean ``alpha``,
``beta`` and weight ``logit alpha + logit beta``).

The fit follows the settings under which BayesSCDC separates the pinwheel (see
:mod:`pyromodels.scdc.bayes`): features that are not all 0/1 are standardised first (each
column centred, all divided by one overall standard deviation), the globals are held for the
first two thirds of the epochs while the networks learn (``warmup_epochs``), restart from
the data (the fit's default ``global_init="data"``: k-means++ means on the encoded items and
one full-data CAVI step), then move by natural-gradient steps of size 0.01; the networks'
Adam steps default to :meth:`BayesSCDC.schedule_lr <pyromodels.scdc.BayesSCDC.schedule_lr>`:
0.01 for networks of at most 64 units a layer (the default 2 x 40), the paper's 1e-3 (the
library's default) for wider ones, which collapse at 0.01.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...registry import register
from ..catalogue import BAYES_SCDC
from .fit_entries import DEFAULT_CLUSTERS, _with_workers, _worker_frame, loader

__all__ = ["bayes_factory", "standardised", "bayes_settings", "fit_bayes",
           "describe_bayes",
           "ENTRY", "DEFAULT_EPOCHS", "WARMUP_FRACTION", "STEP_SIZE"]

#: epochs of a fit without ``--epochs``, of which :data:`WARMUP_FRACTION` hold the globals
DEFAULT_EPOCHS = 60
WARMUP_FRACTION = 2 / 3
#: the globals' natural-gradient step (the networks' Adam step: the model's ``schedule_lr()``)
STEP_SIZE = 0.01


def bayes_factory(n_clusters: int = DEFAULT_CLUSTERS, latent_dim: int = 2,
                  hidden_width: int = 40, hidden_layers: int = 2, **prior):
    """The registered :class:`~pyromodels.scdc.BayesSCDC`: ``K`` clusters, ``d``-dimensional
    latents, networks of ``hidden_layers`` layers of ``hidden_width`` units; ``prior`` may
    set ``weight_concentration``, ``mean_precision``, ``degrees_of_freedom`` and
    ``covariance_scale``."""
    from ...scdc import BayesSCDC

    return BayesSCDC(n_clusters, latent_dim, hidden=(hidden_width,) * hidden_layers, **prior)


def standardised(x: np.ndarray) -> np.ndarray:
    """``x`` as BayesSCDC fits it: 0/1 features (a Bernoulli decoder) unchanged, any other
    centred per column and divided by one overall standard deviation (the shape kept)."""
    x = np.asarray(x, dtype=np.float64)
    if np.isin(x, (0.0, 1.0)).all():
        return x
    centred = x - x.mean(0)
    scale = centred.std()
    return centred / scale if scale > 0 else centred


def bayes_settings(num_epochs: int) -> dict:
    """The schedule of a ``num_epochs`` fit: ``warmup_epochs`` (two thirds, rounded) and
    ``step_size``."""
    return {"num_epochs": num_epochs, "warmup_epochs": round(WARMUP_FRACTION * num_epochs),
            "step_size": STEP_SIZE}


def fit_bayes(model, data, *, method: str, seed: int, progress: bool,
              num_epochs: int = DEFAULT_EPOCHS, lr: float | None = None, **options):
    """``pyromodels fit bayes-scdc``: ``options`` holds what the command line gave
    (``batch_size``, ``device`` and the checkpointing, whose ``checkpoint_every`` counts
    epochs); ``method`` is ``"natgrad"``, the only one. Without ``--lr`` the networks take
    ``model.schedule_lr()`` (0.01 up to 64 units a layer, else 1e-3)."""
    lr = model.schedule_lr() if lr is None else lr
    return model.fit(standardised(data.x), data.pairs, seed=seed, progress=progress, lr=lr,
                     **bayes_settings(num_epochs), **options)


def describe_bayes(posterior, data, *, name: str):
    """The report of a fit: ``labels.csv`` with each point's most probable cluster under
    ``q*(z)`` and its probability, ``workers.csv`` with the workers' posterior means."""
    from ..ddpm.fit_report import cluster_report

    probabilities = posterior.params["cluster_probs"]
    output = cluster_report(posterior, data.x, probabilities.argmax(-1).cpu().numpy(),
                            name=name, probabilities=probabilities.max(-1).values.cpu().numpy())
    summary = (" The features were standardised before the fit and the globals held for its "
               "first two thirds, then restarted from the encoded points.")
    output = replace(output, result=replace(output.result,
                                            summary=output.result.summary + summary))
    if data.pairs is None:
        return output
    table = posterior.model.worker_table(posterior)
    return _with_workers(output, posterior.method, _worker_frame(table))


ENTRY = register(BAYES_SCDC.entry(factory=bayes_factory, loader=loader, fit=fit_bayes,
                                  describe=describe_bayes))
