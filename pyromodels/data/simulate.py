r"""Seeded simulators that return the data contracts together with the truth.

Every simulator draws from a ``torch.Generator`` made from ``seed`` (and, where torch has no
seeded sampler, from a numpy ``Generator`` on a seed derived from it), never from the global
RNG, in float64, so the same seed gives the same data on every run.
"""

from __future__ import annotations

import numpy as np
import torch

from ..core.seeding import derive_seed, make_generator
from ..core.validation import as_float_tensor, check_int, check_positive, check_probability
from .annotations import AnnotationTable

__all__ = ["simulate_gaussian_mixture", "simulate_annotations"]

_DTYPE = torch.float64


def _check_simplex(x, name: str, size: int | None = None) -> torch.Tensor:
    p = as_float_tensor(x, name, ndim=1, dtype=_DTYPE)
    if size is not None and p.shape[0] != size:
        raise ValueError(f"{name} must have {size} entries, got {p.shape[0]}")
    if bool((p < 0).any()) or abs(float(p.sum()) - 1.0) > 1e-8:
        raise ValueError(f"{name} must be non-negative and sum to 1, got sum {float(p.sum())}")
    return p


def simulate_gaussian_mixture(n: int, weights, means, covs, seed: int):
    r"""Draw ``n`` points from a Gaussian mixture.

    .. math:: z_i \sim \mathrm{Categorical}(w), \qquad x_i \mid z_i = k \sim
              \mathcal N(\mu_k, \Sigma_k).

    Args:
        n: number of points.
        weights: ``(K,)`` mixture weights on the simplex.
        means: ``(K, D)`` component means.
        covs: ``(K, D, D)`` symmetric positive-definite covariances.
        seed: integer seed.

    Returns:
        ``(X, truth)``: ``X`` float64 ``(n, D)`` and ``truth = {"z": long (n,), "weights",
        "means", "covs"}``.

    Example:
        >>> X, truth = simulate_gaussian_mixture(5, [0.5, 0.5], [[0.0], [3.0]],
        ...                                      [[[1.0]], [[1.0]]], seed=0)
        >>> X.shape, truth["z"].shape
        (torch.Size([5, 1]), torch.Size([5]))
    """
    n = check_int(n, "n", minimum=1)
    w = _check_simplex(weights, "weights")
    k = w.shape[0]
    mu = as_float_tensor(means, "means", ndim=2, dtype=_DTYPE)
    if mu.shape[0] != k:
        raise ValueError(f"means must have {k} rows (one per weight), got shape {tuple(mu.shape)}")
    d = mu.shape[1]
    cov = as_float_tensor(covs, "covs", ndim=3, dtype=_DTYPE)
    if tuple(cov.shape) != (k, d, d):
        raise ValueError(f"covs must have shape ({k}, {d}, {d}), got {tuple(cov.shape)}")
    if not torch.allclose(cov, cov.transpose(-1, -2), atol=1e-10, rtol=0):
        raise ValueError("covs must be symmetric matrices")
    chol, info = torch.linalg.cholesky_ex(cov)
    if bool((info != 0).any()):
        bad = int(torch.nonzero(info).flatten()[0])
        raise ValueError(f"covs[{bad}] must be positive definite")
    gen = make_generator(check_int(seed, "seed", minimum=0))
    z = torch.multinomial(w, n, replacement=True, generator=gen)
    eps = torch.randn(n, d, generator=gen, dtype=_DTYPE)
    x = mu[z] + torch.einsum("nij,nj->ni", chol[z], eps)
    return x, {"z": z, "weights": w, "means": mu, "covs": cov}


def simulate_annotations(
    num_items: int,
    num_workers: int,
    num_classes: int,
    *,
    dominance: float = 0.7,
    concentration: float = 10.0,
    labels_per_item: int | None = None,
    missing_rate: float | None = None,
    class_prior=None,
    seed: int,
):
    r"""Crowd labels from the Dawid–Skene model with random confusion matrices.

    .. math::
        z_n \sim \mathrm{Categorical}(\pi), \qquad
        \Gamma_{m,k,\cdot} \sim \mathrm{Dirichlet}(c\,a_k), \qquad
        y_{nm} \mid z_n = k \sim \mathrm{Categorical}(\Gamma_{m,k,\cdot}),

    with :math:`a_{k k} = \rho` (``dominance``) and :math:`a_{k j} = (1-\rho)/(K-1)` for
    :math:`j \ne k`, so the expected diagonal mass of each confusion row is :math:`\rho` and
    :math:`c` (``concentration``) sets how much workers vary around it. Rows of
    ``confusion`` index the true class, columns the label given.

    Who labels what: by default every worker labels every item. ``labels_per_item = r``
    gives each item ``r`` distinct workers drawn uniformly; ``missing_rate = p`` drops each
    (item, worker) label independently with probability ``p`` (items may end up unlabelled;
    they stay in the table). Give at most one of the two.

    Args:
        num_items, num_workers, num_classes: ``N``, ``M``, ``K`` (``K >= 2``).
        dominance: :math:`\rho \in (0, 1)`.
        concentration: :math:`c > 0`.
        labels_per_item: ``r`` in ``[1, M]``.
        missing_rate: ``p`` in ``[0, 1)``.
        class_prior: :math:`\pi`, ``(K,)``; default uniform.
        seed: integer seed.

    Returns:
        ``(table, truth)`` with ``truth = {"z": long (N,), "confusion": (M, K, K), "prior":
        (K,)}``; the table's ids are ``0 .. n - 1``.

    Example:
        >>> table, truth = simulate_annotations(20, 5, 3, labels_per_item=3, seed=1)
        >>> table.counts_per_item().unique().tolist(), truth["confusion"].shape
        ([3], torch.Size([5, 3, 3]))
    """
    n = check_int(num_items, "num_items", minimum=1)
    m = check_int(num_workers, "num_workers", minimum=1)
    k = check_int(num_classes, "num_classes", minimum=2)
    rho = check_probability(dominance, "dominance")
    if rho in (0.0, 1.0):
        raise ValueError(f"dominance must lie strictly between 0 and 1, got {rho}")
    conc = check_positive(concentration, "concentration")
    if labels_per_item is not None and missing_rate is not None:
        raise ValueError("give at most one of labels_per_item and missing_rate")
    prior = (torch.full((k,), 1.0 / k, dtype=_DTYPE) if class_prior is None
             else _check_simplex(class_prior, "class_prior", k))
    seed = check_int(seed, "seed", minimum=0)
    gen = make_generator(seed)
    z = torch.multinomial(prior, n, replacement=True, generator=gen)
    alpha = torch.full((k, k), conc * (1 - rho) / (k - 1), dtype=_DTYPE)
    alpha.fill_diagonal_(conc * rho)
    # Dirichlet rows as normalised Gamma draws; numpy draws them (torch's Gamma sampler takes
    # no generator), on a seed derived from ``seed``
    rng = np.random.default_rng(derive_seed(seed, "confusion"))
    gamma = torch.from_numpy(rng.standard_gamma(np.broadcast_to(alpha.numpy(), (m, k, k))))
    confusion = gamma / gamma.sum(-1, keepdim=True)
    # who labels what
    if labels_per_item is not None:
        r = check_int(labels_per_item, "labels_per_item", minimum=1, maximum=m)
        keys = torch.rand(n, m, generator=gen, dtype=_DTYPE)
        chosen = torch.argsort(keys, dim=1)[:, :r]
        items = torch.arange(n).repeat_interleave(r)
        workers = chosen.reshape(-1)
    else:
        grid_items = torch.arange(n).repeat_interleave(m)
        grid_workers = torch.arange(m).repeat(n)
        if missing_rate is not None:
            p = check_probability(missing_rate, "missing_rate")
            if p == 1.0:
                raise ValueError("missing_rate must be < 1, got 1.0")
            keep = torch.rand(n * m, generator=gen, dtype=_DTYPE) >= p
            if not bool(keep.any()):
                raise ValueError("missing_rate removed every label; lower it or raise the sizes")
            grid_items, grid_workers = grid_items[keep], grid_workers[keep]
        items, workers = grid_items, grid_workers
    probs = confusion[workers, z[items]]
    labels = torch.multinomial(probs, 1, generator=gen).squeeze(1)
    table = AnnotationTable.from_arrays(items, workers, labels, num_items=n, num_workers=m,
                                        num_classes=k)
    return table, {"z": z, "confusion": confusion, "prior": prior}
