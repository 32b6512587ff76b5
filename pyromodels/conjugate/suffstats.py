"""Additive sufficient statistics of ``K`` components, updated point by point.

A collapsed Gibbs sweep removes a point from its component's statistics, scores every
component with a conjugate predictive, and adds the point to the chosen one. The statistics
are sums over points, so adding and removing are ``index_add_`` with a sign:

.. math::

    n_k = \\sum_{i: z_i = k} w_i, \\qquad
    S_k = \\sum_{i: z_i = k} w_i\\, f(x_i),

with point weights ``w_i`` (1 unless given) and a feature map ``f`` (for Gaussian statistics
``f(x) = (x, x x^T)``; count-only statistics have no features).

Example:
    >>> import torch
    >>> x = torch.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], dtype=torch.float64)
    >>> stats = gaussian_stats(x, torch.tensor([0, 1, 1]), 2)
    >>> stats.counts
    tensor([1., 2.], dtype=torch.float64)
    >>> stats.remove(x[1], 1).counts
    tensor([1., 1.], dtype=torch.float64)
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping

import torch

from ..checks import as_float_tensor, as_label_tensor, check_int, check_same_length
from ._base import check_nonnegative_tensor

__all__ = [
    "SufficientStats",
    "gaussian_features",
    "isotropic_gaussian_features",
    "gaussian_stats",
    "categorical_stats",
    "one_hot",
]

_CHUNK = 1024  # points per index_add_ call, which bounds the memory of the feature tensors


def gaussian_features(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-point Gaussian features of ``x`` ``(m, d)``: ``sum_x`` ``(m, d)`` and ``sum_xx``
    ``(m, d, d)`` (the outer products ``x x^T``)."""
    return {"sum_x": x, "sum_xx": x.unsqueeze(-1) * x.unsqueeze(-2)}


def isotropic_gaussian_features(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-point isotropic Gaussian features of ``x`` ``(m, d)``: ``sum_x`` ``(m, d)`` and
    ``sum_sq`` ``(m,)`` (the squared norms)."""
    return {"sum_x": x, "sum_sq": (x * x).sum(-1)}


class SufficientStats:
    """Named additive statistics of ``K`` components, indexed along the first axis.

    Args:
        stats: mapping from names to floating tensors of shape ``(K, ...)`` on one device with
            one dtype; it must hold ``"count"`` of shape ``(K,)``. The tensors are copied.
        features: function mapping points ``(m, *point_shape)`` to a dict with one ``(m, ...)``
            tensor per name other than ``"count"``, or ``None`` for count-only statistics
            (whose points are ``None``). Use a module-level function so the container pickles.
        point_shape: shape of one point; required with ``features``.

    Example:
        >>> s = SufficientStats({"count": torch.zeros(3, dtype=torch.float64)})
        >>> s.add(None, torch.tensor([0, 2, 2])).counts
        tensor([1., 0., 2.], dtype=torch.float64)
    """

    def __init__(
        self,
        stats: Mapping[str, torch.Tensor],
        features: Callable[[torch.Tensor], dict[str, torch.Tensor]] | None = None,
        point_shape: tuple[int, ...] | None = None,
    ):
        if not isinstance(stats, Mapping) or "count" not in stats:
            raise ValueError("stats must be a mapping of named tensors that includes 'count'")
        count = stats["count"]
        if not isinstance(count, torch.Tensor) or count.dim() != 1 or count.numel() == 0:
            raise ValueError("stats['count'] must be a non-empty 1-dimensional tensor (K,)")
        for name, value in stats.items():
            if not isinstance(value, torch.Tensor) or not value.is_floating_point():
                raise TypeError(f"stats[{name!r}] must be a floating tensor")
            if value.dim() < 1 or value.shape[0] != count.shape[0]:
                raise ValueError(
                    f"stats[{name!r}] must have {count.shape[0]} components on its first axis, "
                    f"got shape {tuple(value.shape)}"
                )
            if value.dtype != count.dtype or value.device != count.device:
                raise ValueError(f"stats[{name!r}] must share the dtype and device of 'count'")
        if features is not None and not callable(features):
            raise TypeError(f"features must be callable or None, got {type(features).__name__}")
        if features is not None and point_shape is None:
            raise ValueError("point_shape must be given together with features")
        if features is None and len(stats) > 1:
            raise ValueError("features must be given when stats hold more than 'count'")
        self._stats = {name: value.clone() for name, value in stats.items()}
        self._features = features
        self._point_shape = None if features is None else tuple(int(s) for s in point_shape)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._stats)

    @property
    def num_components(self) -> int:
        return self._stats["count"].shape[0]

    @property
    def counts(self) -> torch.Tensor:
        """``(K,)`` total weight of the points in each component (the live tensor)."""
        return self._stats["count"]

    def __getitem__(self, name: str) -> torch.Tensor:
        """The live ``(K, ...)`` tensor of statistic ``name``."""
        if name not in self._stats:
            raise KeyError(f"no statistic named {name!r}; have {list(self._stats)}")
        return self._stats[name]

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}={tuple(v.shape)}" for k, v in self._stats.items())
        return f"SufficientStats({shapes})"

    def _prepare(self, x, component, weight):
        count = self._stats["count"]
        single = (isinstance(component, numbers.Integral) and not isinstance(component, bool)) or (
            isinstance(component, torch.Tensor) and component.dim() == 0
        )
        if single:
            component = component.reshape(1) if isinstance(component, torch.Tensor) else [component]
        idx = as_label_tensor(
            component,
            "component",
            num_classes=self.num_components,
            device=count.device,
            allow_empty=True,
        )
        m = idx.shape[0]
        if self._features is None:
            if x is not None:
                raise ValueError("x must be None for count-only statistics (use weight instead)")
        else:
            x = as_float_tensor(x, "x", dtype=count.dtype, device=count.device, allow_empty=True)
            if single:
                x = x.unsqueeze(0)
            if tuple(x.shape) != (m,) + self._point_shape:
                raise ValueError(
                    f"x must have shape {(m,) + self._point_shape} for {m} component index(es), "
                    f"got shape {tuple(x.shape[1:] if single else x.shape)}"
                )
        if weight is None:
            w = torch.ones(m, dtype=count.dtype, device=count.device)
        else:
            w = as_float_tensor(
                weight, "weight", dtype=count.dtype, device=count.device, allow_empty=True
            )
            if tuple(w.shape) != (() if single else (m,)):
                raise ValueError(
                    f"weight must have shape {() if single else (m,)}, got {tuple(w.shape)}"
                )
            w = check_nonnegative_tensor(w.reshape(m), "weight")
        return x, idx, w

    def _apply(self, x, component, weight, sign: int) -> SufficientStats:
        x, idx, w = self._prepare(x, component, weight)
        count = self._stats["count"]
        if sign < 0 and idx.numel():
            new = count.index_add(0, idx, w, alpha=-1)
            tol = 64 * torch.finfo(count.dtype).eps * max(1.0, float(count.abs().max()))
            bad = torch.nonzero(new < -tol).flatten().tolist()
            if bad:
                raise ValueError(
                    f"remove would make the count of component(s) {bad} negative; "
                    "remove only points that were added"
                )
        expected = set(self._stats) - {"count"}
        for start in range(0, idx.shape[0], _CHUNK):
            part_idx, part_w = idx[start : start + _CHUNK], w[start : start + _CHUNK]
            deltas = {"count": part_w}
            if self._features is not None:
                feats = self._features(x[start : start + _CHUNK])
                if set(feats) != expected:
                    raise ValueError(
                        f"features returned statistics {sorted(feats)}, expected {sorted(expected)}"
                    )
                for name, value in feats.items():
                    deltas[name] = value * part_w.reshape((-1,) + (1,) * (value.dim() - 1))
            for name, value in deltas.items():
                self._stats[name].index_add_(0, part_idx, value.to(count.dtype), alpha=sign)
        return self

    def add(self, x, component, weight=None) -> SufficientStats:
        """Add points to their components, in place; returns ``self``.

        Args:
            x: one point ``point_shape`` with an integer ``component``, or a batch
                ``(m, *point_shape)`` with a ``(m,)`` index vector; ``None`` for count-only
                statistics.
            component: int or ``(m,)`` integer tensor of component indices in ``[0, K)``.
            weight: optional non-negative weight(s), scalar or ``(m,)``; default 1 per point.
        """
        return self._apply(x, component, weight, 1)

    def remove(self, x, component, weight=None) -> SufficientStats:
        """Remove points from their components, in place; returns ``self``.

        Raises:
            ValueError: if a count would become negative (beyond rounding: 64 ulp of the
                largest count); the statistics are then left unchanged.
        """
        return self._apply(x, component, weight, -1)

    def _check_compatible(self, other) -> None:
        if not isinstance(other, SufficientStats):
            raise TypeError(f"other must be SufficientStats, got {type(other).__name__}")
        same = self.names == other.names and all(
            self._stats[k].shape == other._stats[k].shape for k in self._stats
        )
        if not same or self._features != other._features:
            raise ValueError(
                f"other must hold the same statistics and features: {self!r} vs {other!r}"
            )

    def merge(self, other: SufficientStats) -> SufficientStats:
        """A new container holding the sums of ``self`` and ``other`` (same names and shapes)."""
        self._check_compatible(other)
        stats = {k: v + other._stats[k].to(v.device) for k, v in self._stats.items()}
        return SufficientStats(stats, self._features, self._point_shape)

    def copy(self) -> SufficientStats:
        """A deep copy."""
        return SufficientStats(self._stats, self._features, self._point_shape)


def gaussian_stats(
    x, z, num_components: int, weights=None, isotropic: bool = False
) -> SufficientStats:
    """Per-component Gaussian statistics ``n_k``, ``sum_k x`` and ``sum_k x x^T``.

    Args:
        x: ``(n, d)`` points (``n`` may be 0).
        z: ``(n,)`` component labels in ``[0, num_components)``.
        num_components: ``K``.
        weights: optional ``(n,)`` non-negative point weights.
        isotropic: keep ``sum_sq = sum_k ||x||^2`` ``(K,)`` instead of ``sum_xx`` ``(K, d, d)``
            (the statistics of :class:`~pyromodels.conjugate.NormalGamma`).

    Returns:
        :class:`SufficientStats` with ``count`` ``(K,)``, ``sum_x`` ``(K, d)`` and ``sum_xx``
        ``(K, d, d)`` or ``sum_sq`` ``(K,)``.

    Example:
        >>> s = gaussian_stats(torch.ones(4, 2, dtype=torch.float64), torch.zeros(4), 3)
        >>> s["sum_xx"].shape
        torch.Size([3, 2, 2])
    """
    k = check_int(num_components, "num_components", minimum=1)
    x = as_float_tensor(x, "x", ndim=2, allow_empty=True)
    z = as_label_tensor(z, "z", num_classes=k, device=x.device, allow_empty=True)
    check_same_length("x", x, "z", z)
    if weights is not None:
        check_same_length("x", x, "weights", weights)
    d = x.shape[1]
    zeros = {"dtype": x.dtype, "device": x.device}
    stats = {"count": torch.zeros(k, **zeros), "sum_x": torch.zeros(k, d, **zeros)}
    if isotropic:
        stats["sum_sq"] = torch.zeros(k, **zeros)
        features = isotropic_gaussian_features
    else:
        stats["sum_xx"] = torch.zeros(k, d, d, **zeros)
        features = gaussian_features
    return SufficientStats(stats, features, (d,)).add(x, z, weights)


def categorical_stats(z, num_categories: int, weights=None) -> SufficientStats:
    """Count-only statistics: ``n_k`` = total weight of the labels equal to ``k``.

    Args:
        z: ``(n,)`` labels in ``[0, num_categories)``.
        num_categories: ``K``.
        weights: optional ``(n,)`` non-negative weights (their dtype sets the counts' dtype,
            else ``torch.get_default_dtype()``).

    Example:
        >>> categorical_stats(torch.tensor([0, 2, 2]), 3).counts
        tensor([1., 0., 2.])
    """
    k = check_int(num_categories, "num_categories", minimum=1)
    z = as_label_tensor(z, "z", num_classes=k, allow_empty=True)
    dtype = torch.get_default_dtype()
    if weights is not None:
        weights = as_float_tensor(weights, "weights", device=z.device, allow_empty=True)
        check_same_length("z", z, "weights", weights)
        dtype = weights.dtype
    stats = SufficientStats({"count": torch.zeros(k, dtype=dtype, device=z.device)})
    return stats.add(None, z, weights)


def one_hot(z: torch.Tensor, num_categories: int, dtype: torch.dtype) -> torch.Tensor:
    """Labels ``(n,)`` as indicators ``(n, K)`` of floating ``dtype`` (hard responsibilities,
    the per-point statistics of a categorical).

    Example:
        >>> one_hot(torch.tensor([0, 2]), 3, torch.float64)
        tensor([[1., 0., 0.],
                [0., 0., 1.]], dtype=torch.float64)
    """
    return torch.nn.functional.one_hot(z, num_categories).to(dtype)
