"""Diagnostics: ArviZ conversion, summaries, label-invariant statistics, relabelling and plots.

* :func:`to_inference_data` builds ``arviz.InferenceData`` from a
  :class:`~pyromodels.core.Posterior` (posterior, sample_stats, marginal log_likelihood,
  observed_data, and, read from the model's own trace where it has no hooks, constant_data,
  prior and predictive groups), storable as NetCDF; :func:`summary` is ArviZ's summary table
  of it; :func:`inference_data_from_trace` does the same for any Pyro program, its arguments
  and draws (from ``pyro.infer.MCMC`` or elsewhere). The first two are
  defined beside the ``Posterior`` (:mod:`pyromodels.core.posterior`, whose methods of the same
  names call them) and offered here with the other diagnostics.
* Label switching: :func:`label_invariant_stats`, :func:`occupied_clusters`,
  :func:`largest_cluster_fraction`, :func:`cluster_sizes`, :func:`coclustering` and
  :func:`coclustering_from_probs` summarise partitions without naming their blocks;
  :func:`relabel` and :func:`hungarian_relabel` align labels draw by draw.
* Plots: :func:`plot_trace`, :func:`plot_rank`, :func:`plot_energy`, :func:`plot_coclustering`,
  :func:`plot_loss` (and :func:`label_trace` for a trace plot drawn with ArviZ directly);
  tables: :func:`compare_engines`.
"""

from ..core.inference_data import SAMPLE_STATS_ALIASES, netcdf_safe_attrs
from ..core.posterior import summary, to_inference_data
from ..core.trace_inference import inference_data_from_trace
from .label_invariant import (
    cluster_sizes,
    coclustering,
    coclustering_from_probs,
    label_invariant_stats,
    largest_cluster_fraction,
    occupied_clusters,
)
from .plots import label_trace, plot_coclustering, plot_energy, plot_loss, plot_rank, plot_trace
from .relabel import hungarian_relabel, permute_components, relabel
from .tables import compare_engines

__all__ = [
    "SAMPLE_STATS_ALIASES",
    "cluster_sizes",
    "coclustering",
    "coclustering_from_probs",
    "compare_engines",
    "hungarian_relabel",
    "inference_data_from_trace",
    "label_invariant_stats",
    "label_trace",
    "largest_cluster_fraction",
    "netcdf_safe_attrs",
    "occupied_clusters",
    "permute_components",
    "plot_coclustering",
    "plot_energy",
    "plot_loss",
    "plot_rank",
    "plot_trace",
    "relabel",
    "summary",
    "to_inference_data",
]
