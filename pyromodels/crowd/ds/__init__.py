"""The i.i.d. Dawid-Skene model: the story (:mod:`.model`), its prepared data (:mod:`.data`),
the EM and Gibbs hooks (:mod:`.em`, :mod:`.gibbs`), the brute-force oracle (:mod:`.exact`) and
the compiled CPU kernels (:mod:`.kernels`)."""

from .data import DSData, SingleWorkerClassWarning, SparseWorkerWarning
from .model import DawidSkene

__all__ = ["DSData", "DawidSkene", "SingleWorkerClassWarning", "SparseWorkerWarning"]
