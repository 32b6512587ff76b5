"""The built-in models: importing this module registers each of them.

:func:`pyromodels.registry.load_builtin` imports it. Each line imports one registering module
of an experiment package (its paper reproduction, or its models as ``fit`` choices), whose
import adds its :class:`~pyromodels.registry.ModelEntry` objects; a new paper adds a line.
"""

from .experiments.bhmc import reproduction as _bhmc  # noqa: F401 - registers "bhmc"
from .experiments.crowd import fit_entries as _crowd_models  # noqa: F401 - the crowd models
from .experiments.crowd import reproduction as _crowd  # noqa: F401 - registers "crowd"
from .experiments.ddpm import reproduction as _ddpm  # noqa: F401 - registers "ddpm"
from .experiments.reference_mixture import reproduction as _mixture  # noqa: F401 - "gaussian-mixture"
