"""The networked crowd model: Dawid-Skene with a Potts MRF over the true labels.

Energies and couplings (:mod:`.energy`), ICM (:mod:`.icm`), the paper's mode-field EM
(Alg. 3 and 4, :mod:`.em`), Gibbs blocks (:mod:`.gibbs`), mean field (:mod:`.mean_field`),
exact enumeration for tiny graphs (:mod:`.exact`), the Pyro models (:mod:`.model`, and
:mod:`.labels` for the labels given fixed confusions) and the functional front ends of their
engines (:mod:`.fit`).
"""

from .em import initialize, mode_field_objective, mode_field_posteriors
from .energy import (
    PottsCoupling,
    conditional_logits,
    local_energies,
    potts_energy,
    resolve_coupling,
    total_energy,
)
from .exact import (
    ExactPosterior,
    UniformLabelings,
    enumerate_labelings,
    exact_collapsed_posterior,
    exact_posterior,
)
from .fit import networked_em, sample_labels
from .gibbs import gibbs_label_sweep
from .icm import ICMResult, icm, label_sweep
from .labels import LabelData, LabelPosterior
from .mean_field import MeanFieldResult, free_energy, mean_field
from .model import MRFData, NetworkedData, NetworkedDawidSkene

__all__ = [
    "PottsCoupling",
    "resolve_coupling",
    "local_energies",
    "conditional_logits",
    "potts_energy",
    "total_energy",
    "ICMResult",
    "icm",
    "label_sweep",
    "initialize",
    "mode_field_posteriors",
    "mode_field_objective",
    "networked_em",
    "gibbs_label_sweep",
    "sample_labels",
    "MeanFieldResult",
    "mean_field",
    "free_energy",
    "ExactPosterior",
    "UniformLabelings",
    "enumerate_labelings",
    "exact_posterior",
    "exact_collapsed_posterior",
    "NetworkedData",
    "MRFData",
    "NetworkedDawidSkene",
    "LabelData",
    "LabelPosterior",
]
