"""Reproduction of the ensemble paper (Traganitis & Giannakis, *Unsupervised Ensemble
Classification with Sequential and Networked Data*): the registered entry and its protocol
(:mod:`.reproduction`), the methods and Tables I-II (:mod:`.tables`), the synthetic figures
(:mod:`.synthetic`, :mod:`.figures`), the ten i.i.d. crowd sets (:mod:`.iid`), the real-data
inputs (:mod:`.inputs`), the paper's scoring (:mod:`.scores`) and its numbers
(:mod:`.paper_numbers`)."""
