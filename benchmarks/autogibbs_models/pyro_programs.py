"""The benchmark's models as Pyro programs, run by automatic Gibbs and by Pyro's NUTS.

The programs are plain Pyro in float64. For NUTS every discrete site is summed out by
enumeration (:func:`pyro.infer.config_enumerate`, parallel, with the programs' plate nesting).
"""

from __future__ import annotations

import numpy as np
import pyro
import pyro.distributions as dist
import torch

__all__ = ["PROGRAMS", "PLATE_NESTING", "program_args", "run_autogibbs", "run_pyro_nuts"]

F64 = torch.float64


def _t(value):
    return torch.tensor(value, dtype=F64)


def mixture(x, K):
    """One-dimensional Gaussian mixture of unit scale with its assignments ``z``."""
    w = pyro.sample("w", dist.Dirichlet(torch.ones(K, dtype=F64)))
    with pyro.plate("components", K):
        mu = pyro.sample("mu", dist.Normal(_t(0.0), 10.0))
    with pyro.plate("data", x.shape[0]):
        z = pyro.sample("z", dist.Categorical(w))
        pyro.sample("x", dist.Normal(mu[z], 1.0), obs=x)


def dawid_skene(y, K):
    """Dawid-Skene on a complete ``(items, workers)`` label matrix ``y``."""
    items, workers = y.shape
    pi = pyro.sample("pi", dist.Dirichlet(torch.ones(K, dtype=F64)))
    with pyro.plate("workers", workers, dim=-2), pyro.plate("true", K, dim=-1):
        conf = pyro.sample("conf", dist.Dirichlet(1.0 + torch.eye(K, dtype=F64)))
    with pyro.plate("items", items, dim=-2):
        z = pyro.sample("z", dist.Categorical(pi))
        with pyro.plate("labels", workers, dim=-1):
            pyro.sample("y", dist.Categorical(conf[torch.arange(workers), z]), obs=y)


def changepoint(c):
    """Poisson counts whose rate changes from ``l1`` to ``l2`` at ``tau``."""
    T = c.shape[0]
    l1 = pyro.sample("l1", dist.Gamma(_t(2.0), 1.0))
    l2 = pyro.sample("l2", dist.Gamma(_t(2.0), 1.0))
    tau = pyro.sample("tau", dist.Categorical(torch.full((T,), 1.0 / T, dtype=F64)))
    rate = torch.where(torch.arange(T) < tau, l1, l2)
    with pyro.plate("time", T):
        pyro.sample("c", dist.Poisson(rate), obs=c)


def lda(w, K, V):
    """Latent Dirichlet allocation on a ``(documents, words)`` matrix of word ids."""
    D, L = w.shape
    with pyro.plate("topics", K):
        phi = pyro.sample("phi", dist.Dirichlet(torch.full((V,), 0.5, dtype=F64)))
    with pyro.plate("docs", D, dim=-2):
        theta = pyro.sample("theta", dist.Dirichlet(torch.full((K,), 0.5, dtype=F64)))
        with pyro.plate("words", L, dim=-1):
            z = pyro.sample("z", dist.Categorical(theta))
            pyro.sample("w", dist.Categorical(phi[z]), obs=w)


def eight_schools(y, sigma):
    """The non-centred eight-schools model."""
    mu = pyro.sample("mu", dist.Normal(_t(0.0), 5.0))
    tau = pyro.sample("tau", dist.HalfCauchy(_t(5.0)))
    with pyro.plate("schools", y.shape[0]):
        theta_t = pyro.sample("theta_t", dist.Normal(_t(0.0), 1.0))
        pyro.sample("y", dist.Normal(mu + tau * theta_t, sigma), obs=y)


def beta_binomial(n, y):
    """Binomial counts with Beta success rates of mean ``phi`` and concentration ``kappa``."""
    phi = pyro.sample("phi", dist.Beta(_t(1.0), 1.0))
    kappa = pyro.sample("kappa", dist.Pareto(_t(1.0), 1.5))
    with pyro.plate("groups", y.shape[0]):
        theta = pyro.sample("theta", dist.Beta(phi * kappa, (1.0 - phi) * kappa))
        pyro.sample("y", dist.Binomial(n, theta), obs=y)


PROGRAMS = {"mixture": mixture, "dawid_skene": dawid_skene, "changepoint": changepoint,
            "lda": lda, "eight_schools": eight_schools, "beta_binomial": beta_binomial}
PLATE_NESTING = {"mixture": 1, "dawid_skene": 2, "changepoint": 1, "lda": 2,
                 "eight_schools": 1, "beta_binomial": 1}


def program_args(model: str, data: dict) -> tuple:
    """The program's positional arguments from the numpy data of :func:`.data.make_data`."""
    if model == "mixture":
        return torch.as_tensor(data["x"], dtype=F64), int(data["K"])
    if model == "dawid_skene":
        return torch.as_tensor(data["y"], dtype=torch.long), int(data["K"])
    if model == "changepoint":
        return (torch.as_tensor(data["c"], dtype=F64),)
    if model == "lda":
        return torch.as_tensor(data["w"], dtype=torch.long), int(data["K"]), int(data["V"])
    if model == "eight_schools":
        return torch.as_tensor(data["y"], dtype=F64), torch.as_tensor(data["sigma"], dtype=F64)
    return torch.as_tensor(data["n"], dtype=F64), torch.as_tensor(data["y"], dtype=F64)


def _raw(model: str, draws: dict) -> dict:
    from .data import RAW

    out = {name: np.asarray(draws[name].detach().cpu().numpy(), dtype=np.float64) for name in RAW[model]}
    if model == "lda":
        out["theta"] = out["theta"].reshape(out["theta"].shape[0], -1, out["theta"].shape[-1])
    return out


def run_autogibbs(model: str, data: dict, num_samples: int, warmup: int, seed: int) -> dict:
    """One chain of :func:`pyromodels.autogibbs.fit_gibbs`; the raw draws."""
    from pyromodels.autogibbs import fit_gibbs

    post = fit_gibbs(PROGRAMS[model], *program_args(model, data), num_samples=num_samples,
                     warmup=warmup, num_chains=1, seed=seed, progress=False,
                     diagnostic_warnings=False)
    return _raw(model, {k: v[0] for k, v in post.samples.items()})


def run_pyro_nuts(model: str, data: dict, num_samples: int, warmup: int, seed: int) -> dict:
    """One chain of Pyro's NUTS with the discrete sites enumerated; the raw draws."""
    from pyro.infer import MCMC, NUTS, config_enumerate

    pyro.set_rng_seed(seed)
    kernel = NUTS(config_enumerate(PROGRAMS[model]), max_plate_nesting=PLATE_NESTING[model])
    mcmc = MCMC(kernel, num_samples=num_samples, warmup_steps=warmup, num_chains=1,
                disable_progbar=True)
    mcmc.run(*program_args(model, data))
    return _raw(model, mcmc.get_samples())
