"""Compiled CPU kernels of Dawid-Skene EM; they import nothing above this package.
:mod:`.compiled` is the entry point the dispatchers of :mod:`pyromodels.crowd.ds.em` call; it
runs the C passes of ``_cpass.c`` (built with the package, :mod:`.native`) or the numba passes
of :mod:`.passes` and :mod:`.unrolled` (cached on disk, imported only when used), which share
:mod:`.scaling`; :mod:`.groups` groups the labels by item for both."""
