"""The i.i.d. Dawid-Skene model: the story (:mod:`.model`), its prepared data (:mod:`.data`),
the EM and Gibbs hooks (:mod:`.em`, :mod:`.gibbs`), EM on NumPy arrays and the C passes
(:mod:`.array_em`, which needs neither torch nor numba), the brute-force oracle
(:mod:`.exact`) and the compiled CPU kernels (:mod:`.kernels`). Names load on first use."""

from ...lazy import lazy_attributes

_ORIGINS = {
    "DSData": ".data",
    "DawidSkene": ".model",
    "SingleWorkerClassWarning": ".label_checks",
    "SparseWorkerWarning": ".label_checks",
}

__all__ = ["DSData", "DawidSkene", "SingleWorkerClassWarning", "SparseWorkerWarning"]

__getattr__, __dir__ = lazy_attributes(__name__, _ORIGINS)
