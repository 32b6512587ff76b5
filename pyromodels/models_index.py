"""The built-in models: :data:`MODELS`, the declarations that `registry.load_builtin` declares.

The declarations are plain data (:mod:`pyromodels.experiments.catalogue`): importing this
module loads no model family. Each declaration names the experiment module whose import
registers the model's callables; :func:`pyromodels.registry.get` imports it when the model is
first used. A new model adds its declaration to the catalogue.
"""

from .experiments.catalogue import MODELS

__all__ = ["MODELS"]
