"""Compiled CPU kernels of Dawid-Skene EM (numba, cached on disk); they import nothing above
this package. :mod:`.numba_em` is the entry point the dispatchers of
:mod:`pyromodels.crowd.ds.em` call; :mod:`.passes` and :mod:`.unrolled` are the loops,
:mod:`.scaling` and :mod:`.groups` what they share."""
