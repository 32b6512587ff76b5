"""The built-in models: importing this module registers each of them.

:func:`pyromodels.registry.load_builtin` imports it. Each line imports one model module, whose
import registers its :class:`~pyromodels.registry.ModelEntry`; a new model adds one line.
"""

from .experiments import (
    crowd,  # noqa: F401 - registers "crowd"
    reference_mixture,  # noqa: F401 - registers "gaussian-mixture"
)
