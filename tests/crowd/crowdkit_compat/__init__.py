"""crowd-kit's own tests of ``DawidSkene`` and ``MajorityVote``, run against pyromodels'
facades through :mod:`.adapter` (see ``PROVENANCE.md``)."""
