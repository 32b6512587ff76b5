"""The reference Gaussian mixture on real data (wine): the registered entry and demo
(:mod:`.reproduction`), its measurements (:mod:`.analysis`), figures (:mod:`.figures`) and
written summary (:mod:`.summary`)."""
