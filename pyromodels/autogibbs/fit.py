"""Running the plan: :func:`fit_gibbs` (through :func:`~pyromodels.core.run_gibbs`) and
:class:`AutoGibbs` (a ``pyro.infer.MCMC`` kernel)."""

from __future__ import annotations

from ..core.gibbs import run_gibbs
from ..core.kernel import GibbsKernel
from .discrete import DiscreteUpdate
from .plan import Plan, plan

__all__ = ["fit_gibbs", "AutoGibbs"]


def fit_gibbs(model, *args, overrides: dict | None = None, verify: bool = True, nuts_steps: int = 1,
              joint_nuts: bool | None = None, tables: bool = True, num_samples: int = 500,
              warmup: int = 500, num_chains: int = 2,
              seed: int | None = None, progress: bool = True, model_kwargs: dict | None = None,
              **run_options):
    """Automatic Gibbs sampling of a Pyro program: :func:`~.plan.plan`, then
    :func:`~pyromodels.core.run_gibbs` with the plan's sweep.

    Args:
        model: the Pyro program, called as ``model(*args, **model_kwargs)``.
        *args: its positional arguments.
        overrides: ``{site: GibbsBlock}`` for sites the plan cannot update (or to replace one).
        verify: check every automatic update against the program first (see :mod:`.plan`).
        nuts_steps: NUTS transitions per sweep for the sites updated by NUTS.
        joint_nuts: whether conjugate sites join the NUTS block (default: in programs with no
            discrete latent site; see :mod:`.plan`).
        tables: read conjugate coefficients and discrete logits from statistics tables where
            they apply (see :mod:`.tables`); ``False`` reads the program every sweep.
        num_samples: kept draws per chain.
        warmup: discarded sweeps per chain.
        num_chains: chains, each seeded from ``seed``.
        seed: the fit's seed (``None``: drawn and recorded in the result's ``attrs``).
        progress: show a progress bar.
        model_kwargs: the program's keyword arguments.
        **run_options: other settings of :func:`~pyromodels.core.run_gibbs` (``thin``,
            ``checkpoint``, ``n_jobs``, ...).

    Returns:
        A :class:`~pyromodels.core.Posterior`; its ``attrs["plan"]`` is the printed plan. Its
        ``to_inference_data()`` log-likelihood sums the plate-vectorised discrete sites out
        (``log p(y_i | theta) = log sum_k p(z_i = k | theta) p(y_i | z_i = k, theta)``, what
        ``arviz.loo`` needs); the other discrete sites are conditioned on their draws.

    Raises:
        ValueError: a site without an update and no override (naming it), a model without
            latent sites.
    """
    model_kwargs = {} if model_kwargs is None else dict(model_kwargs)
    chosen = plan(model, *args, overrides=overrides, verify=verify, nuts_steps=nuts_steps,
                  joint_nuts=joint_nuts, tables=tables, seed=0 if seed is None else seed, **model_kwargs)
    post = run_gibbs(model, chosen.sweep(), *args, num_samples=num_samples, num_warmup=warmup,
                     num_chains=num_chains, seed=seed, progress=progress,
                     model_kwargs=model_kwargs, **run_options)
    post.attrs["plan"] = str(chosen)
    # the plate-vectorised discrete sites are summed out of the pointwise log-likelihood (the
    # marginal that arviz.loo needs); their elements are independent given the rest, so each
    # point's likelihood is a sum over its own site's values
    summed = tuple(s.site for s in chosen.sites if s.update == "discrete"
                   and isinstance(s.block.update, DiscreteUpdate) and s.block.update.vectorised)
    post.model.discrete_sites = tuple(dict.fromkeys(tuple(post.model.discrete_sites) + summed))
    return post


class AutoGibbs(GibbsKernel):
    """Automatic Gibbs as a ``pyro.infer.mcmc.MCMCKernel``.

    The plan is made from the arguments given here, which must be the ones later passed to
    ``MCMC.run``; ``print(kernel.plan)`` shows it.

    Args:
        model: the Pyro program.
        *args: its positional arguments.
        overrides: ``{site: GibbsBlock}`` (see :func:`~.plan.plan`).
        verify: check every automatic update first.
        nuts_steps: NUTS transitions per sweep for the sites updated by NUTS (their step size
            and mass matrix adapt over ``warmup_steps`` of ``MCMC``).
        joint_nuts: whether conjugate sites join the NUTS block (see :mod:`.plan`).
        tables: use statistics tables where they apply (see :mod:`.tables`).
        seed: the kernel's seed (see :class:`~pyromodels.core.GibbsKernel`).
        lp: report the log joint in the progress bar.
        num_threads: torch's threads during each sweep (see
            :class:`~pyromodels.core.GibbsKernel`; ``None``: the engines' rule for the data).
        model_kwargs: the program's keyword arguments.

    Example:
        >>> from pyro.infer import MCMC                                      # doctest: +SKIP
        >>> kernel = AutoGibbs(mixture, x, seed=0)                           # doctest: +SKIP
        >>> print(kernel.plan)                                               # doctest: +SKIP
        >>> MCMC(kernel, num_samples=200, warmup_steps=100).run(x)           # doctest: +SKIP
    """

    def __init__(self, model, *args, overrides: dict | None = None, verify: bool = True,
                 nuts_steps: int = 1, joint_nuts: bool | None = None, tables: bool = True,
                 seed: int | None = None, lp: bool = False, num_threads: int | None = None,
                 model_kwargs: dict | None = None):
        self.plan: Plan = plan(model, *args, overrides=overrides, verify=verify, nuts_steps=nuts_steps,
                               joint_nuts=joint_nuts, tables=tables,
                               seed=0 if seed is None else seed, **(model_kwargs or {}))
        super().__init__(model, self.plan.sweep(), seed=seed, lp=lp, num_threads=num_threads)
