"""The benchmark's models as NumPyro programs (float64: ``jax_enable_x64``).

``run_numpyro``: ``DiscreteHMCGibbs`` around NUTS for the models with discrete latent sites
(the discrete sites drawn by Gibbs from their conditionals, the others by NUTS), NUTS for the
others. ``run_numpyro_enum``: NUTS with the discrete sites summed out by enumeration, which
NumPyro does only through ``funsor``; without it the cell is recorded as skipped.
"""

from __future__ import annotations

import numpy as np

from . import DISCRETE
from .data import RAW

__all__ = ["run_numpyro", "run_numpyro_enum", "Unsupported"]


class Unsupported(Exception):
    """The engine cannot run this model (the message says why)."""


def _programs(enumerate_discrete: bool):
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    infer = {"enumerate": "parallel"} if enumerate_discrete else {}

    def mixture(x, K):
        w = numpyro.sample("w", dist.Dirichlet(jnp.ones(K)))
        with numpyro.plate("components", K):
            mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        with numpyro.plate("data", x.shape[0]):
            z = numpyro.sample("z", dist.Categorical(w), infer=infer)
            numpyro.sample("x", dist.Normal(mu[z], 1.0), obs=x)

    def dawid_skene(y, K):
        items, workers = y.shape
        pi = numpyro.sample("pi", dist.Dirichlet(jnp.ones(K)))
        with numpyro.plate("workers", workers, dim=-2), numpyro.plate("true", K, dim=-1):
            conf = numpyro.sample("conf", dist.Dirichlet(1.0 + jnp.eye(K)))
        with numpyro.plate("items", items, dim=-2):
            z = numpyro.sample("z", dist.Categorical(pi), infer=infer)
            with numpyro.plate("labels", workers, dim=-1):
                numpyro.sample("y", dist.Categorical(conf[jnp.arange(workers), z]), obs=y)

    def changepoint(c):
        T = c.shape[0]
        l1 = numpyro.sample("l1", dist.Gamma(2.0, 1.0))
        l2 = numpyro.sample("l2", dist.Gamma(2.0, 1.0))
        tau = numpyro.sample("tau", dist.Categorical(jnp.full((T,), 1.0 / T)), infer=infer)
        rate = jnp.where(jnp.arange(T) < tau, l1, l2)
        with numpyro.plate("time", T):
            numpyro.sample("c", dist.Poisson(rate), obs=c)

    def lda(w, K, V):
        D, L = w.shape
        with numpyro.plate("topics", K):
            phi = numpyro.sample("phi", dist.Dirichlet(jnp.full((V,), 0.5)))
        with numpyro.plate("docs", D, dim=-2):
            theta = numpyro.sample("theta", dist.Dirichlet(jnp.full((K,), 0.5)))
            with numpyro.plate("words", L, dim=-1):
                z = numpyro.sample("z", dist.Categorical(theta), infer=infer)
                numpyro.sample("w", dist.Categorical(phi[z]), obs=w)

    def eight_schools(y, sigma):
        mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
        tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
        with numpyro.plate("schools", y.shape[0]):
            theta_t = numpyro.sample("theta_t", dist.Normal(0.0, 1.0))
            numpyro.sample("y", dist.Normal(mu + tau * theta_t, sigma), obs=y)

    def beta_binomial(n, y):
        phi = numpyro.sample("phi", dist.Beta(1.0, 1.0))
        kappa = numpyro.sample("kappa", dist.Pareto(1.0, 1.5))
        with numpyro.plate("groups", y.shape[0]):
            theta = numpyro.sample("theta", dist.Beta(phi * kappa, (1.0 - phi) * kappa))
            numpyro.sample("y", dist.Binomial(n, theta), obs=y)

    return {"mixture": mixture, "dawid_skene": dawid_skene, "changepoint": changepoint,
            "lda": lda, "eight_schools": eight_schools, "beta_binomial": beta_binomial}


def _args(model: str, data: dict) -> tuple:
    import jax.numpy as jnp

    if model == "mixture":
        return jnp.asarray(data["x"]), int(data["K"])
    if model == "dawid_skene":
        return jnp.asarray(data["y"]), int(data["K"])
    if model == "changepoint":
        return (jnp.asarray(data["c"]),)
    if model == "lda":
        return jnp.asarray(data["w"]), int(data["K"]), int(data["V"])
    if model == "eight_schools":
        return jnp.asarray(data["y"]), jnp.asarray(data["sigma"])
    return jnp.asarray(data["n"]), jnp.asarray(data["y"])


def _run(model, data, num_samples, warmup, seed, enumerate_discrete: bool) -> dict:
    import jax
    from numpyro.infer import MCMC, NUTS, DiscreteHMCGibbs

    jax.config.update("jax_enable_x64", True)
    program = _programs(enumerate_discrete)[model]
    kernel = NUTS(program)
    if model in DISCRETE and not enumerate_discrete:
        kernel = DiscreteHMCGibbs(kernel)
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=num_samples, num_chains=1,
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), *_args(model, data))
    draws = mcmc.get_samples()
    out = {name: np.asarray(draws[name], dtype=np.float64) for name in RAW[model]}
    if model == "lda":
        out["theta"] = out["theta"].reshape(out["theta"].shape[0], -1, out["theta"].shape[-1])
    return out


def run_numpyro(model: str, data: dict, num_samples: int, warmup: int, seed: int) -> dict:
    """One chain of ``DiscreteHMCGibbs(NUTS)`` (discrete models) or NUTS; the raw draws."""
    return _run(model, data, num_samples, warmup, seed, enumerate_discrete=False)


def run_numpyro_enum(model: str, data: dict, num_samples: int, warmup: int, seed: int) -> dict:
    """One chain of NUTS with the discrete sites enumerated; the raw draws.

    Raises:
        Unsupported: the model has no discrete site (the plain NUTS cell covers it).
        ModuleNotFoundError: ``funsor`` is not installed (NumPyro enumerates through it).
    """
    if model not in DISCRETE:
        raise Unsupported("no discrete latent site to enumerate (see the numpyro cell)")
    import funsor  # noqa: F401  (NumPyro's enumeration needs it; its absence skips the cell)

    return _run(model, data, num_samples, warmup, seed, enumerate_discrete=True)
