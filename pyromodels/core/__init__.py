"""The inference core: engines, the result type, Gibbs blocks, seeding and checks.

Each name loads its module (and torch) on first use (see :mod:`pyromodels.lazy`), so a
program that needs one light module of the core (:mod:`.monitor`, :mod:`.errors`) does not
import torch and Pyro.
"""

from ..lazy import lazy_attributes

_ORIGINS = {
    "CallableModel": ".bound",
    "ConjugateFactor": ".conjugate_factors",
    "ConvergenceMonitor": ".monitor",
    "ConvergenceWarning": ".errors",
    "DeviceFallbackWarning": ".errors",
    "GibbsBlock": ".gibbs",
    "GibbsKernel": ".kernel",
    "GibbsSweep": ".gibbs",
    "LocalStep": ".conjugate_factors",
    "Minibatch": ".conjugate_factors",
    "Model": ".model",
    "ModelArgs": ".bound",
    "ModelSpecError": ".errors",
    # NotFittedError subclasses scikit-learn's, whose import costs about a second
    "NotFittedError": ".not_fitted",
    "natural_gradient": ".conjugate_factors",
    "Phase": ".search_types",
    "Posterior": ".posterior",
    "PosteriorCollapseWarning": ".latent_activity",
    "active_units": ".latent_activity",
    "VechToPositiveDefinite": ".transforms",
    "default_guide": ".svi",
    "derive_seed": ".seeding",
    "first_available_dim": ".enumeration",
    "inference_data_from_trace": ".trace_inference",
    "make_generator": ".seeding",
    "register_positive_definite_transform": ".transforms",
    "marginal_log_joint": ".enumeration",
    "posterior_from_mcmc": ".kernel",
    "RobbinsMonro": ".conjugate_factors",
    "resolve_device": ".device",
    "resolve_dtype": ".device",
    "resolve_seed": ".seeding",
    "run_em": ".em",
    "run_gibbs": ".gibbs",
    "run_natgrad": ".natgrad",
    "run_nuts": ".nuts",
    "run_search": ".search",
    "run_stepwise_em": ".stepwise_em",
    "run_svi": ".svi",
    "SamplingWarning": ".diagnostic_warnings",
    "SweepInfo": ".gibbs",
    "SearchCandidate": ".search_types",
    "SearchResult": ".search_types",
    "SearchStep": ".search_types",
    "sampling_findings": ".diagnostic_warnings",
    "sample_discrete": ".enumeration",
    "seeded": ".seeding",
}

__all__ = list(_ORIGINS)

__getattr__, __dir__ = lazy_attributes(__name__, _ORIGINS)
