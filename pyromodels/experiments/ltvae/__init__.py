"""Latent tree models from the command line: ``pyromodels fit latent-tree`` (a fixed one-node
tree fitted by EM, :mod:`.tree_entry`) and ``pyromodels fit ltvae`` (the latent tree VAE,
:mod:`.ltvae_entry`); both report one clustering per latent node (:mod:`.facet_report`)."""
