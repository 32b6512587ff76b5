r"""Seeded simulators that return the data contracts together with the truth.

Every simulator draws from a ``torch.Generator`` made from ``seed`` (and, where torch has no
seeded sampler, from a numpy ``Generator`` on a seed derived from it), never from the global
RNG, in float64, so the same seed gives the same data on every run.
"""

from __future__ import annotations

import math

import torch

from ..checks import as_float_tensor, check_int, check_positive, check_stochastic
from ..core.seeding import make_generator

__all__ = ["simulate_gaussian_mixture", "simulate_pinwheel", "simulate_two_facets", "DTYPE"]

DTYPE = torch.float64


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
    w = check_stochastic(weights, "weights", ndim=1, dtype=DTYPE)
    k = w.shape[0]
    mu = as_float_tensor(means, "means", ndim=2, dtype=DTYPE)
    if mu.shape[0] != k:
        raise ValueError(f"means must have {k} rows (one per weight), got shape {tuple(mu.shape)}")
    d = mu.shape[1]
    cov = as_float_tensor(covs, "covs", ndim=3, dtype=DTYPE)
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
    eps = torch.randn(n, d, generator=gen, dtype=DTYPE)
    x = mu[z] + torch.einsum("nij,nj->ni", chol[z], eps)
    return x, {"z": z, "weights": w, "means": mu, "covs": cov}


def simulate_pinwheel(num_clusters: int = 5, points_per_cluster: int = 100, *,
                      radial_std: float = 0.3, tangential_std: float = 0.05, rate: float = 0.25,
                      seed: int):
    r"""Points on the arms of a pinwheel in 2-D (Johnson et al., 2016; the semi-crowdsourced
    clustering paper's Pinwheel toy: 5 clusters of 100 points with the default arguments).

    Point :math:`n` of arm :math:`k` starts at :math:`f_n = (1 + \epsilon_1, \epsilon_2)` with
    :math:`\epsilon_1 \sim \mathcal N(0, \sigma_r^2)`, :math:`\epsilon_2 \sim
    \mathcal N(0, \sigma_t^2)` and is rotated by the angle :math:`\theta_n = 2 \pi k / K +
    \rho\, e^{f_{n,1}}` (farther points turn more):

    .. math:: x_n = 10\, R(\theta_n)^\top f_n, \qquad
              R(\theta) = \begin{pmatrix} \cos\theta & -\sin\theta \\
                                          \sin\theta & \cos\theta \end{pmatrix}.

    The points are returned in a random order, their arms in ``truth["z"]``.

    Args:
        num_clusters: :math:`K`, the number of arms.
        points_per_cluster: points per arm.
        radial_std: :math:`\sigma_r > 0`.
        tangential_std: :math:`\sigma_t > 0`.
        rate: :math:`\rho \ge 0`, how fast the arms turn.
        seed: integer seed.

    Returns:
        ``(X, truth)``: ``X`` float64 ``(K * points_per_cluster, 2)`` and ``truth = {"z": long
        (K * points_per_cluster,)}``.

    Example:
        >>> X, truth = simulate_pinwheel(seed=0)
        >>> tuple(X.shape), torch.bincount(truth["z"]).tolist()
        ((500, 2), [100, 100, 100, 100, 100])
    """
    k = check_int(num_clusters, "num_clusters", minimum=1)
    per = check_int(points_per_cluster, "points_per_cluster", minimum=1)
    scale = torch.tensor([check_positive(radial_std, "radial_std"),
                          check_positive(tangential_std, "tangential_std")], dtype=DTYPE)
    rho = check_positive(rate, "rate", strict=False)
    gen = make_generator(check_int(seed, "seed", minimum=0))
    z = torch.arange(k).repeat_interleave(per)
    f = torch.randn(k * per, 2, generator=gen, dtype=DTYPE) * scale
    f[:, 0] += 1.0
    theta = 2 * math.pi * z.to(DTYPE) / k + rho * torch.exp(f[:, 0])
    cos, sin = torch.cos(theta), torch.sin(theta)
    x = 10.0 * torch.stack([cos * f[:, 0] + sin * f[:, 1], -sin * f[:, 0] + cos * f[:, 1]], 1)
    order = torch.randperm(k * per, generator=gen)
    return x[order], {"z": z[order]}


def _two_facet_tree() -> dict:
    """The generating latent tree in :meth:`~pyromodels.trees.LatentTree.to_dict` form."""
    return {
        "latents": [{"name": "Y1", "cardinality": 2, "parent": None},
                    {"name": "Y2", "cardinality": 2, "parent": "Y1"}],
        "pouches": [{"parent": "Y1", "coordinates": [0, 1]},
                    {"parent": "Y2", "coordinates": [2, 3]}],
        "num_coordinates": 4,
    }


def simulate_two_facets(num_points: int = 5000, *, separation: float = 2.0,
                        within_std: float = 1.0, facet_weights=((0.5, 0.5), (0.5, 0.5)),
                        hidden: int = 10, width: int = 100, noise_std: float = 0.0,
                        seed: int):
    r"""The LTVAE paper's synthetic two-facet data (Li et al., 2019, Sec. 4.1, Fig. 4a).

    Two independent facets :math:`Y_1, Y_2` with two clusters each; :math:`Y_1` moves
    :math:`(z_1, z_2)` and :math:`Y_2` moves :math:`(z_3, z_4)`; a fixed random two-layer
    sigmoid network maps :math:`z \in \mathbb R^4` to :math:`x \in \mathbb R^{100}`:

    .. math::
        Y_{f} \sim \mathrm{Categorical}(w_f) \ \text{independently}, \qquad
        (z_{2f-1}, z_{2f}) \mid Y_f = k \sim \mathcal N\big(s\,(2k - 1)\,(1, 1),\
            \sigma^2 I_2\big), \\
        x = \operatorname{sigmoid}\big(U \operatorname{sigmoid}(W z)\big) + \tau\,\epsilon,
        \qquad W_{ij}, U_{ij}, \epsilon_j \sim \mathcal N(0, 1) \ \text{i.i.d.}

    with :math:`k \in \{0, 1\}`, :math:`W` of shape ``(hidden, 4)`` and :math:`U` of shape
    ``(width, hidden)``. The paper fixes the network (``hidden = 10``, ``width = 100``, standard
    normal weights), the two 2-cluster facets and ``num_points = 5000``. It leaves open the
    facet priors, whether the facets depend on each other, the clusters' means and spread in
    ``z`` and any noise on ``x``; the choices here, all arguments, are: uniform facet priors,
    independent facets, means :math:`\pm s (1, 1)` with ``separation`` :math:`s = 2` and
    isotropic spread ``within_std`` :math:`\sigma = 1` (the clusters' centres lie
    :math:`2 s \sqrt 2 / \sigma \approx 5.7` standard deviations apart), and no noise
    (:math:`\tau = 0`, the paper's formula as written, so ``x`` lies in ``(0, 1)``).

    The true latent tree is ``Y1 -> Y2`` with the pouches ``{z1, z2}`` under ``Y1`` and
    ``{z3, z4}`` under ``Y2`` (coordinates ``[0, 1]`` and ``[2, 3]``): as the facets are
    independent, the edge's table :math:`P(Y_2 \mid Y_1)` has every row equal to :math:`w_2`,
    so the edge carries no information (a latent tree needs one root, and this is the tree
    the paper's Fig. 4b reports recovering).

    The network's weights are drawn first, so the same ``seed`` gives the same network for any
    ``num_points``; then the facets, ``z`` and the noise.

    Args:
        num_points: number of points ``N``.
        separation: :math:`s > 0`, each cluster mean's distance from 0 in each of its facet's
            coordinates.
        within_std: :math:`\sigma > 0`, the clusters' standard deviation per coordinate.
        facet_weights: ``(2, 2)``; row ``f`` is facet ``f``'s prior over its two clusters.
        hidden: rows of :math:`W` (hidden units).
        width: rows of :math:`U`, the data's width ``d``.
        noise_std: :math:`\tau \ge 0`, the standard deviation of Gaussian noise on ``x``.
        seed: integer seed.

    Returns:
        ``(x, truth)``: ``x`` float64 ``(N, width)`` and ``truth`` a dict with ``"facets"``
        (long ``(N, 2)``: column ``f`` is facet ``f``'s cluster, 0 or 1), ``"z"`` (float64
        ``(N, 4)``), ``"means"`` (float64 ``(2, 2, 2)``: facet, cluster, coordinate of its
        pouch), ``"within_std"``, ``"facet_weights"`` (float64 ``(2, 2)``), ``"W"``,
        ``"U"`` and ``"tree"``: the generating structure as a
        :meth:`pyromodels.trees.LatentTree.to_dict` description (plain lists; build the tree
        with ``LatentTree.from_dict(truth["tree"])``; the data package sits below the trees
        package, so it hands over the description rather than the object) and
        ``"tree_params"``, the generating prior on ``z`` as that tree's parameters
        (``root_probs``, ``cpts``, ``means``, ``scale_trils``, plain tensors):
        ``TreeParams(tree, **truth["tree_params"])`` builds it.

    Example:
        >>> x, truth = simulate_two_facets(200, seed=0)
        >>> tuple(x.shape), tuple(truth["z"].shape), tuple(truth["facets"].shape)
        ((200, 100), (200, 4), (200, 2))
    """
    n = check_int(num_points, "num_points", minimum=1)
    s = check_positive(separation, "separation")
    sigma = check_positive(within_std, "within_std")
    w = check_stochastic(facet_weights, "facet_weights", shape=(2, 2), dtype=DTYPE)
    h = check_int(hidden, "hidden", minimum=1)
    d = check_int(width, "width", minimum=1)
    tau = check_positive(noise_std, "noise_std", strict=False)
    gen = make_generator(check_int(seed, "seed", minimum=0))
    W = torch.randn(h, 4, generator=gen, dtype=DTYPE)
    U = torch.randn(d, h, generator=gen, dtype=DTYPE)
    facets = torch.stack([torch.multinomial(w[f], n, replacement=True, generator=gen)
                          for f in range(2)], 1)
    signs = torch.tensor([-1.0, 1.0], dtype=DTYPE)
    means = s * signs[None, :, None].expand(2, 2, 2).clone()
    centre = torch.cat([means[0, facets[:, 0]], means[1, facets[:, 1]]], 1)
    z = centre + sigma * torch.randn(n, 4, generator=gen, dtype=DTYPE)
    x = torch.sigmoid(torch.sigmoid(z @ W.T) @ U.T)
    if tau > 0:
        x = x + tau * torch.randn(n, d, generator=gen, dtype=DTYPE)
    tril = sigma * torch.eye(2, dtype=DTYPE).expand(2, 2, 2).clone()
    tree_params = {"root_probs": w[0].clone(), "cpts": [None, w[1].expand(2, 2).clone()],
                   "means": [means[0].clone(), means[1].clone()],
                   "scale_trils": [tril, tril.clone()]}
    return x, {"facets": facets, "z": z, "means": means, "within_std": sigma,
               "facet_weights": w, "W": W, "U": U, "tree": _two_facet_tree(),
               "tree_params": tree_params}
