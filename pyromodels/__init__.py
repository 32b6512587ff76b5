"""pyromodels: a probabilistic-programming model zoo on Pyro.

Each model is written once as a Pyro program and served by several inference engines (EM,
Gibbs, SVI, NUTS) that are tested against the program. Start with
:class:`pyromodels.mixture.GaussianMixtureModel`, the reference model, and
``tutorials/00_write_your_own_model.py``.

The names below load :mod:`pyromodels.core` (and torch) on first use, so ``import
pyromodels`` alone, or a program that only uses the crowd estimators' C path, does not import
torch (see :mod:`pyromodels.lazy`).
"""

from importlib.metadata import PackageNotFoundError, version

from .lazy import lazy_attributes

try:
    __version__ = version("pyromodels")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

_ORIGINS = {
    "GibbsBlock": ".core.gibbs",
    "GibbsSweep": ".core.gibbs",
    "Model": ".core.model",
    "Posterior": ".core.posterior",
    "run_em": ".core.em",
    "run_gibbs": ".core.gibbs",
    "run_nuts": ".core.nuts",
    "run_svi": ".core.svi",
    "sample_discrete": ".core.enumeration",
}

__all__ = [*_ORIGINS, "__version__"]

__getattr__, __dir__ = lazy_attributes(__name__, _ORIGINS)
