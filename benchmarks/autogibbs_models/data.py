"""Data of the benchmark's models and the label-invariant quantities whose ESS is measured.

Every model's data are made once here (:func:`make_data`, numpy, fixed seed) and handed to
every engine, through a ``.npz`` file for the fresh processes. Sizes (full / quick):

* ``mixture``: ``N = 1000`` / ``60`` points of a three-component Gaussian mixture in one
  dimension (means -4, 0, 4, unit scale, weights 0.3, 0.3, 0.4); the model has ``K = 3``
  components of unit scale, means ``N(0, 10^2)`` and weights ``Dirichlet(1, 1, 1)``.
* ``dawid_skene``: the vendored *bluebirds* crowd set (Welinder et al. 2010: 108 images, 39
  workers, every worker labels every image, two classes); quick: its first 20 images and
  6 workers. Class prior ``Dirichlet(1, 1)``, each worker's confusion rows
  ``Dirichlet(1 + identity)`` (a prior that leans to the diagonal, which fixes the labels).
* ``changepoint``: ``T = 100`` / ``30`` Poisson counts with rate 3 before ``0.4 T`` and 1
  after; ``tau`` uniform on ``0..T-1``, both rates ``Gamma(2, 1)``.
* ``lda``: ``D = 20`` / ``5`` documents of ``L = 25`` / ``8`` words over ``V = 30`` / ``10``
  words and ``K = 3`` topics, drawn from the model with ``alpha = beta = 0.5``.
* ``eight_schools``: the eight-schools estimates (Rubin 1981), non-centred: ``mu ~ N(0, 5^2)``,
  ``tau ~ HalfCauchy(5)``, ``theta_tilde ~ N(0, 1)``, ``y ~ N(mu + tau theta_tilde, sigma)``.
* ``beta_binomial``: ``J = 50`` / ``8`` groups with ``n_j`` in ``20..59`` trials and success
  rates drawn from ``Beta(2, 8)``; ``phi ~ Beta(1, 1)``, ``kappa ~ Pareto(1, 1.5)``,
  ``theta_j ~ Beta(phi kappa, (1 - phi) kappa)``, ``y_j ~ Binomial(n_j, theta_j)``.
"""

from __future__ import annotations

import numpy as np

from pyromodels.core.seeding import derive_seed

__all__ = ["SEED", "RAW", "make_data", "quantities"]

SEED = 20261128
#: the raw draws each engine returns, by model
RAW = {
    "mixture": ("w", "mu"),
    "dawid_skene": ("pi", "conf"),
    "changepoint": ("l1", "l2"),
    "lda": ("theta", "phi"),
    "eight_schools": ("mu", "tau", "theta_t"),
    "beta_binomial": ("phi", "kappa", "theta"),
}
EIGHT_Y = (28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0)
EIGHT_SIGMA = (15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0)


def _rng(model: str, quick: bool) -> np.random.Generator:
    return np.random.default_rng(derive_seed(SEED, "autogibbs-data", model, quick) % 2**63)


def _mixture(rng, quick):
    n = 60 if quick else 1000
    z = rng.choice(3, size=n, p=[0.3, 0.3, 0.4])
    return {"x": np.array([-4.0, 0.0, 4.0])[z] + rng.standard_normal(n), "K": np.array(3)}


def _dawid_skene(rng, quick):
    from pyromodels.data.crowd_sets import load_crowd

    answers, _ = load_crowd("bluebirds")
    table = answers.pivot(index="task", columns="worker", values="label")
    if table.isna().any().any():
        raise ValueError("the bluebirds table must be complete (every worker labels every item)")
    if quick:
        table = table.iloc[:20, :6]
    return {"y": np.array(table.to_numpy(dtype=np.int64)), "K": np.array(2)}


def _changepoint(rng, quick):
    t = 30 if quick else 100
    rate = np.where(np.arange(t) < int(0.4 * t), 3.0, 1.0)
    return {"c": rng.poisson(rate).astype(np.float64)}


def _lda(rng, quick):
    d, length, v, k = (5, 8, 10, 3) if quick else (20, 25, 30, 3)
    theta = rng.dirichlet(np.full(k, 0.5), size=d)
    phi = rng.dirichlet(np.full(v, 0.5), size=k)
    z = np.stack([rng.choice(k, size=length, p=row) for row in theta])
    words = np.stack([[rng.choice(v, p=phi[topic]) for topic in row] for row in z])
    return {"w": words.astype(np.int64), "K": np.array(k), "V": np.array(v)}


def _eight_schools(rng, quick):
    return {"y": np.array(EIGHT_Y), "sigma": np.array(EIGHT_SIGMA)}


def _beta_binomial(rng, quick):
    j = 8 if quick else 50
    n = rng.integers(20, 60, size=j)
    return {"n": n.astype(np.float64), "y": rng.binomial(n, rng.beta(2.0, 8.0, size=j)).astype(np.float64)}


_MAKERS = {"mixture": _mixture, "dawid_skene": _dawid_skene, "changepoint": _changepoint,
           "lda": _lda, "eight_schools": _eight_schools, "beta_binomial": _beta_binomial}


def make_data(model: str, quick: bool) -> dict:
    """The model's data as numpy arrays (the same on every call).

    Example:
        >>> make_data("changepoint", quick=True)["c"].shape
        (30,)
    """
    if model not in _MAKERS:
        raise ValueError(f"model must be one of {sorted(_MAKERS)}, got {model!r}")
    return _MAKERS[model](_rng(model, quick), quick)


def _changepoint_tau_mean(l1, l2, c):
    """``E[tau | l1, l2, c]`` per draw (tau uniform on ``0..T-1``): the Rao-Blackwellised
    change point, the same function of the rates for engines that draw tau and those that
    sum it out."""
    inc = c[None, :] * (np.log(l1) - np.log(l2))[:, None] - (l1 - l2)[:, None]
    logp = np.concatenate([np.zeros((len(l1), 1)), np.cumsum(inc, axis=1)[:, :-1]], axis=1)
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p @ np.arange(c.shape[0], dtype=np.float64)


def quantities(model: str, raw: dict, data: dict) -> dict:
    """The label-invariant quantities of interest, ``{name: array (draws,)}``.

    mixture: the sorted means and the weights in that order; dawid_skene: the class prior and
    every worker's accuracy per class (the confusion diagonal); changepoint: both rates and
    ``E[tau | rates]``; lda: each document's topic concentration ``sum_k theta_dk^2`` and each
    word's ``sum_k phi_kw^2`` (both invariant to relabelling the topics); eight_schools:
    ``mu``, ``tau`` and ``theta = mu + tau theta_tilde``; beta_binomial: ``phi``,
    ``log kappa`` and every ``theta_j``.
    """
    raw = {k: np.asarray(v, dtype=np.float64) for k, v in raw.items()}
    out = {}
    if model == "mixture":
        order = np.argsort(raw["mu"], axis=1)
        mu, w = (np.take_along_axis(raw[k], order, axis=1) for k in ("mu", "w"))
        out.update({f"mu_sorted[{k}]": mu[:, k] for k in range(mu.shape[1])})
        out.update({f"w_by_mu[{k}]": w[:, k] for k in range(w.shape[1])})
    elif model == "dawid_skene":
        out.update({f"pi[{k}]": raw["pi"][:, k] for k in range(raw["pi"].shape[1])})
        diag = np.diagonal(raw["conf"], axis1=2, axis2=3)  # (draws, workers, K)
        out.update({f"accuracy[{j},{k}]": diag[:, j, k]
                    for j in range(diag.shape[1]) for k in range(diag.shape[2])})
    elif model == "changepoint":
        out.update({"l1": raw["l1"], "l2": raw["l2"],
                    "E[tau]": _changepoint_tau_mean(raw["l1"], raw["l2"], np.asarray(data["c"]))})
    elif model == "lda":
        purity = (raw["theta"] ** 2).sum(axis=2)
        word = (raw["phi"] ** 2).sum(axis=1)
        out.update({f"theta_purity[{d}]": purity[:, d] for d in range(purity.shape[1])})
        out.update({f"phi_word[{v}]": word[:, v] for v in range(word.shape[1])})
    elif model == "eight_schools":
        theta = raw["mu"][:, None] + raw["tau"][:, None] * raw["theta_t"]
        out.update({"mu": raw["mu"], "tau": raw["tau"]})
        out.update({f"theta[{j}]": theta[:, j] for j in range(theta.shape[1])})
    elif model == "beta_binomial":
        out.update({"phi": raw["phi"], "log_kappa": np.log(raw["kappa"])})
        out.update({f"theta[{j}]": raw["theta"][:, j] for j in range(raw["theta"].shape[1])})
    else:
        raise ValueError(f"model must be one of {sorted(RAW)}, got {model!r}")
    return out
