"""The built-in models: importing this module registers each of them.

:func:`pyromodels.registry.load_builtin` imports it. Each line imports one experiment package's
registering module, whose import adds its :class:`~pyromodels.registry.ModelEntry`; a new
paper adds one line.
"""

from .experiments.crowd import reproduction as _crowd  # noqa: F401 - registers "crowd"
from .experiments.reference_mixture import reproduction as _mixture  # noqa: F401 - "gaussian-mixture"
