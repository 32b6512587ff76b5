"""HMM kernels over ragged sequences (log-space scans in torch, scaled recursions in numba);
they import nothing above this package."""
