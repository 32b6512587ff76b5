"""The benchmark's models in PyMC, sampled by ``pm.sample`` with the step methods it assigns
(NUTS for the continuous variables; ``CategoricalGibbsMetropolis`` for categorical ones,
``Metropolis`` for the discrete-uniform change point), one chain, float64."""

from __future__ import annotations

import numpy as np

from .data import RAW

__all__ = ["run_pymc", "build"]


def build(model: str, data: dict):
    """The PyMC model of ``model`` on ``data``."""
    import pymc as pm

    with pm.Model() as m:
        if model == "mixture":
            x, K = data["x"], int(data["K"])
            w = pm.Dirichlet("w", a=np.ones(K))
            mu = pm.Normal("mu", 0.0, 10.0, shape=K)
            z = pm.Categorical("z", p=w, shape=x.shape[0])
            pm.Normal("x", mu[z], 1.0, observed=x)
        elif model == "dawid_skene":
            y, K = data["y"], int(data["K"])
            items, workers = y.shape
            pi = pm.Dirichlet("pi", a=np.ones(K))
            conf = pm.Dirichlet("conf", a=np.broadcast_to(1.0 + np.eye(K), (workers, K, K)).copy(),
                                shape=(workers, K, K))
            z = pm.Categorical("z", p=pi, shape=items)
            pm.Categorical("y", p=conf[np.arange(workers)[None, :], z[:, None]], observed=y)
        elif model == "changepoint":
            c = data["c"]
            T = c.shape[0]
            l1 = pm.Gamma("l1", 2.0, 1.0)
            l2 = pm.Gamma("l2", 2.0, 1.0)
            tau = pm.DiscreteUniform("tau", 0, T - 1)
            pm.Poisson("c", pm.math.switch(np.arange(T) < tau, l1, l2), observed=c)
        elif model == "lda":
            w, K, V = data["w"], int(data["K"]), int(data["V"])
            D, L = w.shape
            phi = pm.Dirichlet("phi", a=np.full((K, V), 0.5), shape=(K, V))
            theta = pm.Dirichlet("theta", a=np.full((D, K), 0.5), shape=(D, K))
            z = pm.Categorical("z", p=theta[:, None, :], shape=(D, L))
            pm.Categorical("w", p=phi[z], observed=w)
        elif model == "eight_schools":
            y, sigma = data["y"], data["sigma"]
            mu = pm.Normal("mu", 0.0, 5.0)
            tau = pm.HalfCauchy("tau", 5.0)
            theta_t = pm.Normal("theta_t", 0.0, 1.0, shape=y.shape[0])
            pm.Normal("y", mu + tau * theta_t, sigma, observed=y)
        elif model == "beta_binomial":
            n, y = data["n"], data["y"]
            phi = pm.Beta("phi", 1.0, 1.0)
            kappa = pm.Pareto("kappa", alpha=1.5, m=1.0)
            theta = pm.Beta("theta", phi * kappa, (1.0 - phi) * kappa, shape=y.shape[0])
            pm.Binomial("y", n.astype(np.int64), theta, observed=y.astype(np.int64))
        else:
            raise ValueError(f"unknown model {model!r}")
    return m


def run_pymc(model: str, data: dict, num_samples: int, warmup: int, seed: int) -> dict:
    """One chain of ``pm.sample`` (its default step assignment); the raw draws."""
    import pymc as pm

    with build(model, data):
        idata = pm.sample(draws=num_samples, tune=warmup, chains=1, cores=1, random_seed=seed,
                          progressbar=False, compute_convergence_checks=False)
    post = idata.posterior
    return {name: np.asarray(post[name].values[0], dtype=np.float64) for name in RAW[model]}
