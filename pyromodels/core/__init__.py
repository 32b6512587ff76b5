"""The inference core: engines, the result type, Gibbs blocks, seeding and checks."""

from .device import resolve_device, resolve_dtype
from .em import run_em
from .enumeration import first_available_dim, marginal_log_joint, sample_discrete
from .errors import ConvergenceWarning, DeviceFallbackWarning, ModelSpecError
from .gibbs import GibbsBlock, GibbsSweep, run_gibbs
from .kernel import GibbsKernel, posterior_from_mcmc
from .model import Model
from .monitor import ConvergenceMonitor
from .nuts import run_nuts
from .posterior import Posterior
from .seeding import derive_seed, make_generator, resolve_seed, seeded
from .svi import default_guide, run_svi
from .trace_inference import inference_data_from_trace
from .transforms import VechToPositiveDefinite, register_positive_definite_transform

register_positive_definite_transform()

__all__ = [
    "ConvergenceMonitor",
    "ConvergenceWarning",
    "DeviceFallbackWarning",
    "GibbsBlock",
    "GibbsKernel",
    "GibbsSweep",
    "Model",
    "ModelSpecError",
    "NotFittedError",
    "Posterior",
    "VechToPositiveDefinite",
    "default_guide",
    "derive_seed",
    "first_available_dim",
    "inference_data_from_trace",
    "make_generator",
    "register_positive_definite_transform",
    "marginal_log_joint",
    "posterior_from_mcmc",
    "resolve_device",
    "resolve_dtype",
    "resolve_seed",
    "run_em",
    "run_gibbs",
    "run_nuts",
    "run_svi",
    "sample_discrete",
    "seeded",
]


def __getattr__(name: str):
    # NotFittedError imports scikit-learn, so it is loaded on first use (see core.errors)
    if name == "NotFittedError":
        from .not_fitted import NotFittedError

        return NotFittedError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
