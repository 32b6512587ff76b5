"""Clustering baselines of the DDPM paper (Sec. 4.2): k-means with a given K, and G-means.

* :func:`kmeans`: scikit-learn's ``KMeans`` (k-means++ starts, ``n_init`` restarts, fixed seed),
  the paper's ``KMeans^dp`` / ``KMeans^ddp`` with ``K`` taken from DPM / DDPM.
* :func:`gmeans`: G-means of Hamerly and Elkan (2003, "Learning the k in k-means"), which infers
  ``K``: start from one centre; run k-means; for every centre, split its points in two by
  2-means started at ``c +- s sqrt(2 lambda / pi)`` (``s``, ``lambda``: the principal axis and
  variance of its points), project the points onto the line joining the two children,
  standardise, and keep the centre when the projections pass an Anderson-Darling normality
  test at level ``significance``, else replace it by the two children; repeat until no centre
  splits. The paper cites a G-means without saying which variant or level; Hamerly and Elkan
  use ``significance = 1e-4``, the default here.

The Anderson-Darling statistic for a normal with estimated mean and variance is
``A^2 = -n - (1/n) sum_i (2i - 1) [log Phi(w_(i)) + log(1 - Phi(w_(n+1-i)))]`` on the sorted
standardised values ``w``; its p-value comes from the modified statistic
``A* = A^2 (1 + 0.75/n + 2.25/n^2)`` through the piecewise formula of D'Agostino and Stephens
(1986, Goodness-of-Fit Techniques), the correction behind the critical values of
``scipy.stats.anderson``. A centre splits when that p-value is below ``significance``. (Hamerly
and Elkan state their level 1e-4 as the critical value 1.8692 of ``A^2 (1 + 4/n - 25/n^2)``;
the formula here puts the 1e-4 point of ``A*`` at 1.851.)
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import log_ndtr
from sklearn.cluster import KMeans

from ..checks import as_float_tensor, check_int, check_probability

__all__ = ["ClusteringResult", "kmeans", "gmeans", "anderson_darling_normal", "anderson_darling_pvalue"]

logger = logging.getLogger(__name__)



@dataclass(frozen=True)
class ClusteringResult:
    """A hard clustering.

    Attributes:
        labels: ``(N,)`` long labels in ``0..K-1``.
        centres: ``(K, d)`` float64 centres.
    """

    labels: torch.Tensor
    centres: torch.Tensor

    @property
    def num_clusters(self) -> int:
        """``K``, the number of centres."""
        return int(self.centres.shape[0])


def _points(data) -> np.ndarray:
    return as_float_tensor(data, "data", ndim=2, dtype=torch.float64).detach().cpu().numpy()


def _result(fit: KMeans) -> ClusteringResult:
    return ClusteringResult(torch.as_tensor(fit.labels_, dtype=torch.long),
                            torch.as_tensor(fit.cluster_centers_, dtype=torch.float64))


def kmeans(data, num_clusters: int, seed: int = 0, n_init: int = 10) -> ClusteringResult:
    """k-means with ``K = num_clusters`` (scikit-learn ``KMeans``, k-means++ starts).

    Args:
        data: ``(N, d)`` points.
        num_clusters: ``1 <= K <= N``.
        seed: seed of the starts (``random_state``).
        n_init: number of starts; the run with the smallest inertia is kept.

    Returns:
        :class:`ClusteringResult`.

    Raises:
        ValueError / TypeError: ``data`` not a finite 2-d array; ``num_clusters`` not an
            integer in ``[1, N]``; a negative ``seed``; ``n_init < 1``.

    Example:
        >>> import torch
        >>> x = torch.tensor([[0.0], [0.1], [5.0], [5.1]])
        >>> kmeans(x, 2).num_clusters
        2
    """
    x = _points(data)
    k = check_int(num_clusters, "num_clusters", minimum=1, maximum=x.shape[0])
    seed = check_int(seed, "seed", minimum=0)
    n_init = check_int(n_init, "n_init", minimum=1)
    return _result(KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(x))


def anderson_darling_normal(values) -> float:
    """Anderson-Darling ``A^2`` of ``values`` against a normal with their own mean and sd.

    Args:
        values: ``(n,)`` real values, ``n >= 2``, not all equal.

    Returns:
        ``A^2`` (uncorrected; the test multiplies it by ``1 + 4/n - 25/n^2``).

    Example:
        >>> round(anderson_darling_normal([-1.0, 0.0, 1.0, 2.0]), 4)
        0.1592
    """
    x = np.sort(np.asarray(as_float_tensor(values, "values", ndim=1, dtype=torch.float64)))
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"values must hold at least 2 numbers, got {n}")
    sd = x.std(ddof=1)
    if not sd > 0:
        raise ValueError("values must not all be equal (the sd is 0)")
    w = (x - x.mean()) / sd
    i = np.arange(1, n + 1)
    return float(-n - ((2 * i - 1) * (log_ndtr(w) + log_ndtr(-w[::-1]))).sum() / n)


#: where the large-statistic fit of :func:`anderson_darling_pvalue` stops decreasing
_AD_FIT_MINIMUM = 5.709 / (2 * 0.0186)


def anderson_darling_pvalue(values) -> float:
    """p-value of the Anderson-Darling test of normality (mean and variance estimated).

    With ``A* = A^2 (1 + 0.75/n + 2.25/n^2)`` (D'Agostino and Stephens, 1986)::

        A* >= 0.6:         p = exp(1.2937 - 5.709 A* + 0.0186 A*^2)
        0.34 <= A* < 0.6:  p = exp(0.9177 - 4.279 A* - 1.38 A*^2)
        0.2 <= A* < 0.34:  p = 1 - exp(-8.318 + 42.796 A* - 59.938 A*^2)
        A* < 0.2:          p = 1 - exp(-13.436 + 101.14 A* - 223.73 A*^2)

    The first fit's quadratic turns upwards beyond its minimum at ``A* = 5.709 / (2 x 0.0186)
    = 153.5`` (where ``p`` is about ``1e-190``), so larger statistics get ``p = 0`` instead of
    a p-value that grows again and overflows.

    Args:
        values: ``(n,)`` real values, ``n >= 8`` (the formula's range), not all equal.

    Example:
        >>> import torch
        >>> p = anderson_darling_pvalue(torch.randn(200, generator=torch.Generator().manual_seed(0)))
        >>> 0.0 < p <= 1.0
        True
    """
    n = as_float_tensor(values, "values", ndim=1).shape[0]
    if n < 8:
        raise ValueError(f"values must hold at least 8 numbers for the p-value, got {n}")
    a = anderson_darling_normal(values) * (1 + 0.75 / n + 2.25 / n**2)
    if a >= _AD_FIT_MINIMUM:
        return 0.0
    if a >= 0.6:
        return math.exp(1.2937 - 5.709 * a + 0.0186 * a * a)
    if a >= 0.34:
        return math.exp(0.9177 - 4.279 * a - 1.38 * a * a)
    if a >= 0.2:
        return 1.0 - math.exp(-8.318 + 42.796 * a - 59.938 * a * a)
    return 1.0 - math.exp(-13.436 + 101.14 * a - 223.73 * a * a)


def _split_is_needed(points: np.ndarray, centre: np.ndarray, significance: float, seed: int):
    """``(True, children)`` when the points around ``centre`` fail the normality test."""
    cov = np.atleast_2d(np.cov(points, rowvar=False))
    eigval, eigvec = np.linalg.eigh(cov)
    if eigval[-1] <= 0:
        return False, None
    offset = eigvec[:, -1] * math.sqrt(2 * eigval[-1] / math.pi)
    start = np.stack([centre + offset, centre - offset])
    two = KMeans(n_clusters=2, init=start, n_init=1, random_state=seed).fit(points)
    children = two.cluster_centers_
    v = children[0] - children[1]
    norm_sq = float(v @ v)
    if norm_sq == 0.0:
        return False, None
    projected = points @ v / norm_sq
    if projected.std() == 0.0:
        return False, None
    return anderson_darling_pvalue(projected) < significance, children


def gmeans(data, significance: float = 1e-4, max_clusters: int = 1000, min_cluster_size: int = 8,
           seed: int = 0) -> ClusteringResult:
    """G-means (Hamerly and Elkan, 2003): k-means that grows ``K`` until every cluster looks
    Gaussian along its split direction (see the module docstring).

    Args:
        data: ``(N, d)`` points.
        significance: level of the Anderson-Darling test, in ``(0, 1)`` (Hamerly and
            Elkan's 1e-4 by default); a centre splits when the p-value is below it.
        max_clusters: guard on ``K``: no split is accepted beyond it (a warning is logged).
        min_cluster_size: clusters with fewer points are never tested nor split (``>= 8``,
            the smallest sample the p-value formula covers).
        seed: seed of the k-means runs.

    Returns:
        :class:`ClusteringResult`, after a final k-means over all points from the centres.

    Raises:
        ValueError / TypeError: ``data`` not a finite 2-d array; ``significance`` not in (0, 1);
            ``max_clusters < 1``; ``min_cluster_size < 8``; a negative ``seed``.

    Example:
        >>> import torch
        >>> g = torch.Generator().manual_seed(0)
        >>> x = torch.cat([torch.randn(100, 2, generator=g), torch.randn(100, 2, generator=g) + 10])
        >>> gmeans(x).num_clusters
        2
    """
    x = _points(data)
    significance = check_probability(significance, "significance")
    if significance in (0.0, 1.0):
        raise ValueError(f"significance must lie in (0, 1), got {significance}")
    max_clusters = check_int(max_clusters, "max_clusters", minimum=1)
    min_size = check_int(min_cluster_size, "min_cluster_size", minimum=8)
    seed = check_int(seed, "seed", minimum=0)
    centres = x.mean(0, keepdims=True)
    while True:
        fit = KMeans(n_clusters=centres.shape[0], init=centres, n_init=1, random_state=seed).fit(x)
        centres, labels = fit.cluster_centers_, fit.labels_
        new, split = [], False
        for k, centre in enumerate(centres):
            members = x[labels == k]
            room = len(new) + (centres.shape[0] - k) < max_clusters
            if members.shape[0] >= min_size and room:
                needed, children = _split_is_needed(members, centre, significance, seed)
                if needed:
                    new.extend(children)
                    split = True
                    continue
            elif members.shape[0] >= min_size and not room:
                logger.warning("gmeans stopped splitting at max_clusters=%d", max_clusters)
            new.append(centre)
        if not split:
            return _result(fit)
        centres = np.stack(new)
