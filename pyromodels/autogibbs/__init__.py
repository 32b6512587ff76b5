"""Automatic Gibbs sampling of users' own Pyro programs.

:func:`plan` traces the program and gives each latent site an update with its reason: a
plate-vectorised enumeration for a discrete site, one forward-filtering backward-sampling
block for a chain of discrete sites declared with ``pyro.markov``, a conjugate draw read off the
program's log density for a Beta, Gamma, InverseGamma, Normal, Dirichlet or MultivariateNormal
site, one NUTS block for every other continuous site (in unconstrained space, adapted over the
warm-up), or "unsupported" (pass your own :class:`~pyromodels.core.GibbsBlock` in
``overrides``). Each automatic update is verified against the program before it is used.
:func:`fit_gibbs` runs the plan with
:func:`~pyromodels.core.run_gibbs`; :class:`AutoGibbs` is the same as a ``pyro.infer.MCMC``
kernel. See guides/automatic-gibbs.md.

Example:
    >>> import pyro, pyro.distributions as dist, torch
    >>> def coin(k):
    ...     p = pyro.sample("p", dist.Beta(2.0, 2.0))
    ...     pyro.sample("k", dist.Binomial(10, p), obs=k)
    >>> post = fit_gibbs(coin, torch.tensor(7.0), num_samples=50, warmup=10, num_chains=1,
    ...                  seed=0, progress=False, diagnostic_warnings=False)
    >>> post.samples["p"].shape
    torch.Size([1, 50])
"""

from .exponential import NotConjugate, posterior_params
from .fit import AutoGibbs, fit_gibbs
from .plan import Plan, SitePlan, plan

__all__ = ["plan", "Plan", "SitePlan", "fit_gibbs", "AutoGibbs", "posterior_params", "NotConjugate"]
