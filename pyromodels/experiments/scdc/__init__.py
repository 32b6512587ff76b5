"""Semi-crowdsourced clustering: ``pyromodels fit scdc`` and ``fit observed-bayes-scdc``
(:mod:`.fit_entries`), and the paper's protocols registered for ``pyromodels reproduce scdc``
(:mod:`.reproduction`)."""
