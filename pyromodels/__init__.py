"""pyromodels: a probabilistic-programming model zoo on Pyro.

Each model is written once as a Pyro program and served by several inference engines (EM,
Gibbs, SVI, NUTS) that are tested against the program. Start with
:class:`pyromodels.mixture.BayesianGaussianMixture`, the reference model, and
``tutorials/00_write_your_own_model.py``.

The engines and :class:`Posterior` are imported from :mod:`pyromodels.core` when first used
(``pyromodels.run_em``, ``from pyromodels import Posterior``): importing the package alone
loads neither torch nor Pyro, so the ``pyromodels`` command answers ``--help``, ``list`` and
usage errors at once.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pyromodels")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

#: the names this package serves from :mod:`pyromodels.core`
_CORE_NAMES = (
    "GibbsBlock",
    "GibbsSweep",
    "Model",
    "Posterior",
    "run_em",
    "run_gibbs",
    "run_nuts",
    "run_svi",
    "sample_discrete",
)

__all__ = [*_CORE_NAMES, "__version__"]


def __getattr__(name: str):
    """``pyromodels.Posterior`` and the other core names, imported on first use."""
    if name in _CORE_NAMES:
        value = getattr(import_module(".core", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_CORE_NAMES])
