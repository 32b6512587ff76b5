"""Statistics of cluster labels that do not change when the labels are permuted.

Mixture posteriors are symmetric under relabelling of the components, so a sampler that mixes
well switches labels and the per-component traces are meaningless. The quantities here depend
only on the partition of the points, never on the names of its blocks: the number of occupied
clusters, the size of the largest cluster, and the co-clustering probabilities
``P(z_i = z_j | data)``. They are the right things to put through R-hat, ESS and trace plots.
"""

from __future__ import annotations

import torch

from ..checks import as_label_tensor, check_int, check_stochastic
from ..core.posterior import check_posterior

__all__ = [
    "cluster_sizes",
    "occupied_clusters",
    "largest_cluster_fraction",
    "coclustering",
    "coclustering_from_probs",
    "label_invariant_stats",
]


def check_label_draws(z, name: str = "z", num_classes: int | None = None) -> torch.Tensor:
    """``z`` as a ``long`` tensor of labels ``(chain, draw, N)`` (see ``as_label_tensor``)."""
    return as_label_tensor(z, name, num_classes=num_classes, ndim=3)


def cluster_sizes(z, num_classes: int | None = None) -> torch.Tensor:
    """Number of points carrying each label, per draw.

    Args:
        z: integer labels shaped ``(chain, draw, N)``, values in ``[0, num_classes)``.
        num_classes: number of labels ``K``; defaults to ``max(z) + 1``.

    Returns:
        ``long`` tensor ``(chain, draw, K)`` with ``n_k = #{i : z_i = k}`` per draw.

    Example:
        >>> cluster_sizes(torch.tensor([[[0, 2, 2]]])).tolist()
        [[[1, 0, 2]]]
    """
    z = check_label_draws(z, num_classes=num_classes)
    k = (
        int(z.max()) + 1
        if num_classes is None
        else check_int(num_classes, "num_classes", minimum=1)
    )
    chains, draws, n = z.shape
    return _sizes(z.reshape(chains * draws, n), k).reshape(chains, draws, k)


def _sizes(flat: torch.Tensor, k: int) -> torch.Tensor:
    """Label counts ``(S, K)`` of checked labels ``flat`` shaped ``(S, N)``."""
    offsets = torch.arange(flat.shape[0], device=flat.device).unsqueeze(-1) * k
    return torch.bincount((offsets + flat).reshape(-1), minlength=flat.shape[0] * k).reshape(-1, k)


def occupied_clusters(z) -> torch.Tensor:
    """Number of distinct labels in each draw, ``#{k : n_k > 0}``.

    Args:
        z: integer labels shaped ``(chain, draw, N)``.

    Returns:
        ``long`` tensor ``(chain, draw)``.

    Example:
        >>> occupied_clusters(torch.tensor([[[0, 2, 2], [1, 1, 1]]])).tolist()
        [[2, 1]]
    """
    return (cluster_sizes(z) > 0).sum(-1)


def largest_cluster_fraction(z) -> torch.Tensor:
    """Share of the points in the largest cluster of each draw, ``max_k n_k / N``.

    Args:
        z: integer labels shaped ``(chain, draw, N)``.

    Returns:
        ``float64`` tensor ``(chain, draw)`` with values in ``[1/N, 1]``.
    """
    sizes = cluster_sizes(z)
    n = int(sizes[0, 0].sum())
    return sizes.max(-1).values.double() / n


def _compact_columns(z: torch.Tensor, num_classes: int) -> tuple[torch.Tensor, int]:
    """Give each (draw, occupied label) pair its own column index; return it and the width."""
    occupied = _sizes(z, num_classes) > 0  # (B, K)
    rank = occupied.cumsum(-1) - 1
    counts = occupied.sum(-1)
    offsets = counts.cumsum(0) - counts
    return offsets.unsqueeze(-1) + rank.gather(1, z), int(counts.sum())


def coclustering(z, max_elements: int = 2**22) -> torch.Tensor:
    """Posterior co-clustering probabilities ``P(z_i = z_j | data)``.

    Averages the indicator ``[z_i = z_j]`` over every chain and draw:
    ``C_ij = (1/S) sum_s sum_k [z_i^(s) = k][z_j^(s) = k] = (1/S) sum_s (O_s O_s^T)_ij`` with
    ``O_s`` the one-hot ``(N, K)`` matrix of draw ``s``. Draws are processed in blocks whose
    one-hot matrices sit side by side in one ``(N, width)`` matrix ``M`` (only the occupied
    labels of each draw get a column), so each block costs one product ``M M^T`` and at most
    about ``max_elements`` floats of scratch memory besides the ``(N, N)`` result.

    Args:
        z: integer labels shaped ``(chain, draw, N)``.
        max_elements: scratch budget in matrix entries; at least one draw is processed at a time.

    Returns:
        ``float64`` tensor ``(N, N)``, symmetric, with unit diagonal.

    Example:
        >>> coclustering(torch.tensor([[[0, 0, 1], [0, 1, 1]]])).tolist()
        [[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]]
    """
    z = check_label_draws(z)
    max_elements = check_int(max_elements, "max_elements", minimum=1)
    chains, draws, n = z.shape
    flat = z.reshape(chains * draws, n)
    k = int(z.max()) + 1
    block = max(1, max_elements // (n * min(k, n)))
    total = torch.zeros(n, n, dtype=torch.float64, device=z.device)
    rows = torch.arange(n, device=z.device)
    for start in range(0, flat.shape[0], block):
        zb = flat[start : start + block]
        cols, width = _compact_columns(zb, k)
        onehot = torch.zeros(n, width, dtype=torch.float64, device=z.device)
        onehot[rows.expand_as(cols), cols] = 1.0
        total += onehot @ onehot.T
    return total / flat.shape[0]


def coclustering_from_probs(r) -> torch.Tensor:
    """Co-clustering probabilities from per-point cluster probabilities (responsibilities).

    When the labels are independent given the data with ``P(z_i = k) = r_ik`` (an EM E-step or
    a mean-field variational posterior), ``P(z_i = z_j) = sum_k r_ik r_jk = (r r^T)_ij`` for
    ``i != j``. The diagonal is set to 1, since every point shares its cluster with itself, so
    the result is comparable with :func:`coclustering`.

    Args:
        r: probabilities shaped ``(N, K)``, non-negative, rows summing to 1 within ``1e-5``
            (or within float rounding of ``r``'s dtype where that is larger; see
            :func:`~pyromodels.checks.check_stochastic`).

    Returns:
        ``float64`` tensor ``(N, N)``.

    Example:
        >>> coclustering_from_probs(torch.tensor([[1.0, 0.0], [0.5, 0.5]])).tolist()
        [[1.0, 0.5], [0.5, 1.0]]
    """
    r = check_stochastic(r, "r", ndim=2, dtype=torch.float64, atol=1e-5)
    c = r @ r.T
    c.fill_diagonal_(1.0)
    return c


def label_invariant_stats(posterior, site: str = "z") -> dict[str, torch.Tensor]:
    """Per-draw statistics that label switching leaves unchanged.

    Args:
        posterior: a :class:`~pyromodels.core.Posterior` whose ``samples[site]`` holds labels
            shaped ``(chain, draw, N)``.
        site: the label site.

    Returns:
        ``{"lp": ..., "occupied_clusters": ..., "largest_cluster_fraction": ...}``, each
        ``(chain, draw)``; ``lp`` (the log joint) only when ``posterior.sample_stats`` has it.
    """
    posterior = check_posterior(posterior)
    if site not in posterior.samples:
        raise ValueError(
            f"site must name a label site of the posterior; {site!r} is not among "
            f"{sorted(posterior.samples)}"
        )
    z = posterior.samples[site]
    stats = {}
    if "lp" in posterior.sample_stats:
        stats["lp"] = posterior.sample_stats["lp"]
    stats["occupied_clusters"] = occupied_clusters(z)
    stats["largest_cluster_fraction"] = largest_cluster_fraction(z)
    return stats
