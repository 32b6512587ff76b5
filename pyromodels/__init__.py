"""pyromodels: a probabilistic-programming model zoo on Pyro.

Each model is written once as a Pyro program and served by several inference engines (EM,
Gibbs, SVI, NUTS) that are tested against the program. Start with
:class:`pyromodels.mixture.GaussianMixtureModel`, the reference model, and
``tutorials/00_write_your_own_model.py``.
"""

from importlib.metadata import PackageNotFoundError, version

from .core import (
    GibbsBlock,
    GibbsSweep,
    Model,
    Posterior,
    run_em,
    run_gibbs,
    run_nuts,
    run_svi,
    sample_discrete,
)

try:
    __version__ = version("pyromodels")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = [
    "GibbsBlock",
    "GibbsSweep",
    "Model",
    "Posterior",
    "__version__",
    "run_em",
    "run_gibbs",
    "run_nuts",
    "run_svi",
    "sample_discrete",
]
