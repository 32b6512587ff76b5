"""Real-data inputs of the ensemble paper's Tables I and II: the task contract
(:mod:`.common`), text tasks (:mod:`.builders`), POS taggers (:mod:`.pos`) and the networked
tasks (:mod:`.graphs`)."""
