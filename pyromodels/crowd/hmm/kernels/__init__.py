"""HMM kernels over ragged sequences: log-space parallel scans in torch (:mod:`.parallel`,
:mod:`.viterbi`, :mod:`.sampling`) and scaled recursions in numba (:mod:`.scaled`), with
their input checks (:mod:`.inputs`) and result type (:mod:`.result`). They import nothing
above this package; :mod:`pyromodels.crowd.hmm.inference` chooses between them."""
