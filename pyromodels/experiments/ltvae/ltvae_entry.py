"""``pyromodels fit ltvae``: the latent tree VAE on a numeric table.

The model is :class:`~pyromodels.ltvae.LTVAE` with its default tree (one latent node ``Y`` of
``cardinality`` states over every coordinate of ``z``) and ``likelihood="auto"``: a Bernoulli
decoder when every value of the data is 0 or 1, else a Normal one. Its networks have
``hidden_layers`` layers of ``hidden_width`` units; the defaults are small (two of 64,
``latent_dim = 4``, 60 epochs at Adam step 0.01) so that a fit on the default data takes
well under a minute on a laptop CPU; the paper's networks (``500-500-2000``, ``latent_dim =
10``) are a matter of the arguments.

The tree stays one node unless ``--search east`` learns its structure during the fit
(``LTVAE.fit(search="east", search_every=...)``): PLTM-EAST's BIC hill-climbing from the
current tree on the encoder means of all the data, every ``--search-every`` epochs (default
5, the paper's E; never after the last epoch). A searched tree may have several latent
nodes, each a clustering of its own (a facet).

Without ``--data`` it fits 500 points of :func:`~pyromodels.data.simulate_two_facets` (100
columns in [0, 1] made from two binary facets through a random network; seed 0). The report
holds the generic one, ``labels.csv`` (one column per latent node: each point's most probable
state given its encoder mean) and the fitted tree drawn.

The entry's demo is :mod:`.demo` (``pyromodels demo``) and its reproduction of the paper's
tables :mod:`.ltvae_reproduction` (``pyromodels reproduce ltvae``).
"""

from __future__ import annotations

import numpy as np

from ...registry import register
from ..catalogue import LTVAE_INFO
from .demo import demo
from .facet_report import facet_report
from .ltvae_reproduction import reproduce
from .tables import read_points

__all__ = ["DEFAULT_POINTS", "DEFAULT_EPOCHS", "LR", "loader", "ltvae_factory", "fit_ltvae",
           "describe_ltvae", "with_tree_draw", "ENTRY"]

#: the size of the default data set
DEFAULT_POINTS = 500
#: epochs of a fit without ``--epochs`` and the networks' Adam step without ``--lr`` (the
#: paper's 1e-3 barely moves the networks in the 240 steps of a default fit)
DEFAULT_EPOCHS = 60
LR = 0.01


def loader(path: str | None) -> np.ndarray:
    """The ``(N, D)`` points of the numeric CSV ``path``, or by default
    :data:`DEFAULT_POINTS` points of the two-facet simulation (seed 0)."""
    if path is None:
        from ...data import simulate_two_facets

        x, _ = simulate_two_facets(DEFAULT_POINTS, seed=0)
        return x.numpy().astype(np.float64)
    return read_points(path)


def ltvae_factory(cardinality: int = 4, latent_dim: int = 4, hidden_width: int = 64,
                  hidden_layers: int = 2, **tree_settings):
    """The registered :class:`~pyromodels.ltvae.LTVAE`: ``cardinality`` states of the default
    tree's node, ``latent_dim`` coordinates of ``z``, encoder and decoder of ``hidden_layers``
    layers of ``hidden_width`` units; ``tree_settings`` may set ``alpha`` (the scale of the
    tree's fixed covariances) and ``floor``."""
    from ...ltvae import LTVAE

    return LTVAE(latent_dim, hidden=(hidden_width,) * hidden_layers, cardinality=cardinality,
                 **tree_settings)


def fit_ltvae(model, data: np.ndarray, *, method: str, seed: int, progress: bool,
              num_epochs: int = DEFAULT_EPOCHS, lr: float = LR, **options):
    """``pyromodels fit ltvae``: Algorithm 1's alternation of Adam steps and stepwise EM;
    ``options`` holds what the command line gave (``batch_size``, ``search`` and
    ``search_every``, ``device`` and the checkpointing, whose ``checkpoint_every`` counts
    epochs); ``method`` is ``"svi"``."""
    posterior = model.fit(data, num_epochs=num_epochs, lr=lr, seed=seed, progress=progress, **options)
    return with_tree_draw(posterior)


def with_tree_draw(posterior):
    """``posterior`` with the fitted tree's parameters as its one draw (the sites of a
    :class:`~pyromodels.trees.LatentTreeModel` fit: ``root_probs``, ``cpts.<node>``,
    ``means.<pouch>``, ``scale_tril.<pouch>``), so that the generic report summarises them:
    the fit itself keeps point estimates only."""
    from dataclasses import replace

    from ...trees.em import params_to_dict

    params = params_to_dict(posterior.model.tree_params(posterior))
    return replace(posterior, samples={k: v.detach()[None, None] for k, v in params.items()})


def describe_ltvae(posterior, data: np.ndarray, *, name: str):
    """The report of a fit: ``labels.csv`` (one column per facet), the tree."""
    from ...trees import LatentTree

    model = posterior.model
    tree = LatentTree.from_dict(posterior.attrs["tree"])
    note = (f"The decoder's likelihood is {posterior.data.likelihood} (Bernoulli for 0/1 "
            "data, else Normal).")
    searches = posterior.diagnostics["searches"]
    if searches:
        epochs = ", ".join(str(s["epoch"]) for s in searches)
        note += (f" The tree's structure was learned by {len(searches)} structure search(es), "
                 f"before epoch(s) {epochs}.")
    return facet_report(posterior, data, model.facets(posterior, data), tree, name=name,
                        note=note)


ENTRY = register(LTVAE_INFO.entry(factory=ltvae_factory, loader=loader, fit=fit_ltvae,
                                  describe=describe_ltvae, demo=demo, reproduce=reproduce))
