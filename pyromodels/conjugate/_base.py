"""Shared pieces of the conjugate families: argument checks and exponential-family algebra.

Every family here is an exponential family over its parameter ``theta``,

.. math::

    p(\\theta \\mid \\eta) = h(\\theta) \\exp\\{\\langle \\eta, T(\\theta) \\rangle - A(\\eta)\\},

with natural parameters ``eta``, sufficient statistics ``T``, log normaliser ``A`` and base measure
``h``. The natural parameters and statistics of a family are a tensor or a named tuple of tensors
whose fields pair up; ``event_dims`` says how many trailing axes of each field are summed in the
inner product.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import torch

from ..checks import as_float_tensor, as_label_tensor, broadcast_shapes

__all__ = [
    "LOG_2PI",
    "coerce_params",
    "as_data_tensor",
    "as_labels",
    "check_positive_tensor",
    "check_nonnegative_tensor",
    "check_last_dim",
    "check_generator",
    "spd_cholesky",
    "build_unchecked",
    "inner_product",
    "multidigamma",
    "student_t_log_density",
    "ConjugateFamily",
    "NormalMeanFamily",
]

LOG_2PI = math.log(2.0 * math.pi)


def coerce_params(**named) -> dict[str, torch.Tensor]:
    """Convert hyperparameters to finite floating tensors sharing one dtype and one device.

    The dtype is the promotion of the floating tensors given (``torch.get_default_dtype()`` when
    none is floating); the device is the one the tensors given live on. Python numbers and
    array-likes are converted onto that dtype and device.

    Raises:
        ValueError: if the tensors live on different devices, or a value is empty or not finite.
        TypeError: if a value is not numeric.
    """
    tensors = {k: v for k, v in named.items() if isinstance(v, torch.Tensor)}
    devices = {t.device for t in tensors.values()}
    if len(devices) > 1:
        listing = ", ".join(f"{k} on {t.device}" for k, t in tensors.items())
        raise ValueError(f"hyperparameters must live on one device, got {listing}")
    device = devices.pop() if devices else None
    dtype = None
    for t in tensors.values():
        if t.is_floating_point():
            dtype = t.dtype if dtype is None else torch.promote_types(dtype, t.dtype)
    dtype = dtype or torch.get_default_dtype()
    return {k: as_float_tensor(v, k, dtype=dtype, device=device) for k, v in named.items()}


def as_data_tensor(x, name: str, like: torch.Tensor, min_ndim: int = 0) -> torch.Tensor:
    """Convert data ``x`` to a finite tensor with the dtype and device of ``like``."""
    t = as_float_tensor(x, name, dtype=like.dtype, device=like.device, allow_empty=True)
    if t.dim() < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimension(s), got shape {tuple(t.shape)}"
        )
    return t


def as_labels(
    labels, name: str, num_classes: int, device, require_axis: bool = False
) -> torch.Tensor:
    """Integer labels of any shape as a long tensor on ``device``, each in ``[0, num_classes)``.

    Raises:
        ValueError: ``'{name} must have at least one axis'`` for a scalar when ``require_axis``,
            or labels outside ``[0, num_classes)``.
        TypeError: non-integral labels.
    """
    ndim = labels.dim() if isinstance(labels, torch.Tensor) else int(np.ndim(labels))
    z = as_label_tensor(labels, name, num_classes=num_classes, ndim=ndim, device=device)
    if require_axis and z.dim() < 1:
        raise ValueError(f"{name} must have at least one axis, got shape {tuple(z.shape)}")
    return z


def check_positive_tensor(t: torch.Tensor, name: str, bound: float = 0.0, label: str = "0"):
    """Raise ``ValueError('{name} must be > {label}')`` unless every entry exceeds ``bound``."""
    if t.numel() and not bool((t > bound).all()):
        raise ValueError(f"{name} must be > {label}, got minimum {float(t.min()):.6g}")
    return t


def check_nonnegative_tensor(t: torch.Tensor, name: str):
    """Raise ``ValueError('{name} must be >= 0')`` if any entry is negative."""
    if t.numel() and not bool((t >= 0).all()):
        raise ValueError(f"{name} must be >= 0, got minimum {float(t.min()):.6g}")
    return t


def check_last_dim(t: torch.Tensor, name: str, size: int, what: str, trailing: int = 1):
    """Raise unless the last ``trailing`` axes of ``t`` all have length ``size``."""
    want = (size,) * trailing
    if t.dim() < trailing or tuple(t.shape[-trailing:]) != want:
        raise ValueError(f"{name} must end with shape {want} ({what}), got shape {tuple(t.shape)}")
    return t


def check_generator(generator, device: torch.device):
    """Raise unless ``generator`` is ``None`` or a ``torch.Generator`` on ``device``."""
    if generator is None:
        return None
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator or None, got {type(generator).__name__}"
        )
    if torch.device(generator.device).type != torch.device(device).type:
        raise ValueError(
            f"generator must live on the parameters' device ({device}), "
            f"got a generator on {generator.device}"
        )
    return generator


def spd_cholesky(matrix: torch.Tensor, name: str, symmetry_rtol: float = 1e-6) -> torch.Tensor:
    """Lower Cholesky factor of a symmetric positive definite batch of matrices.

    Raises:
        ValueError: ``'{name} must be symmetric positive definite'`` if a matrix is not square,
            not symmetric (relative tolerance ``symmetry_rtol``) or not positive definite.
    """
    if matrix.dim() < 2 or matrix.shape[-1] != matrix.shape[-2]:
        raise ValueError(
            f"{name} must be symmetric positive definite (square), got shape {tuple(matrix.shape)}"
        )
    scale = matrix.abs().amax(dim=(-2, -1), keepdim=True)
    if not bool(((matrix - matrix.mT).abs() <= symmetry_rtol * scale).all()):
        raise ValueError(f"{name} must be symmetric positive definite: it is not symmetric")
    tril, info = torch.linalg.cholesky_ex(matrix)
    if bool((info != 0).any()):
        raise ValueError(f"{name} must be symmetric positive definite: Cholesky failed")
    return tril


def build_unchecked(cls, **fields):
    """An instance of the frozen dataclass ``cls`` with ``fields`` set, skipping validation.

    Used for results (posteriors, broadcasts) whose validity follows from validated inputs.
    """
    obj = object.__new__(cls)
    for key, value in fields.items():
        object.__setattr__(obj, key, value)
    return obj


def _fields(x) -> tuple:
    return (x,) if isinstance(x, torch.Tensor) else tuple(x)


def inner_product(eta, stats, event_dims: Sequence[int]) -> torch.Tensor:
    """``<eta, T>``: the sum over paired fields of products summed over their event axes."""
    total = None
    for e, t, k in zip(_fields(eta), _fields(stats), event_dims, strict=True):
        prod = e * t
        if k:
            prod = prod.sum(dim=tuple(range(-k, 0)))
        total = prod if total is None else total + prod
    return total


def multidigamma(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Multivariate digamma ``psi_d(x) = sum_{i=0}^{d-1} psi(x - i/2)``, the derivative of
    ``torch.mvlgamma(x, d)``."""
    offsets = torch.arange(dim, dtype=x.dtype, device=x.device) / 2
    return torch.digamma(x.unsqueeze(-1) - offsets).sum(-1)


def student_t_log_density(df, dim: int, maha, half_log_det) -> torch.Tensor:
    """Log density of a ``dim``-variate Student-t.

    .. math::

        \\log \\Gamma(\\tfrac{\\nu + d}{2}) - \\log \\Gamma(\\tfrac{\\nu}{2})
        - \\tfrac{d}{2} \\log(\\nu \\pi) - \\tfrac12 \\log|\\Sigma|
        - \\tfrac{\\nu + d}{2} \\log(1 + \\delta / \\nu)

    Args:
        df: degrees of freedom ``nu``, shape broadcastable with ``maha``.
        dim: dimension ``d``.
        maha: squared Mahalanobis distance ``delta = (x - m)^T Sigma^{-1} (x - m)``.
        half_log_det: ``log|Sigma| / 2`` of the shape matrix ``Sigma``.
    """
    half = (df + dim) / 2
    return (
        torch.lgamma(half)
        - torch.lgamma(df / 2)
        - dim / 2 * torch.log(df * math.pi)
        - half_log_det
        - half * torch.log1p(maha / df)
    )


class ConjugateFamily:
    """Exponential-family algebra and layout shared by the conjugate priors.

    Subclasses define ``natural_params()``, ``expected_stats()``, ``log_normalizer()``, the
    class attribute ``event_dims`` (trailing axes of each natural-parameter field) and two class
    attributes describing where the shapes live:

    * ``_anchor``: the name of the hyperparameter whose dtype and device are the prior's, and
      whose leading axes are its batch shape;
    * ``_anchor_event_ndim``: how many trailing axes of that hyperparameter are event axes
      (0 or 1). With 1, its last axis is the event size (categories or dimension); with 0 the
      subclass sets ``event_size`` itself.

    Example:
        A Dirichlet over ``K`` categories anchored on ``concentration`` of shape ``(B, K)``
        (``_anchor_event_ndim = 1``) has ``batch_shape == (B,)`` and ``event_size == K``.
    """

    event_dims: ClassVar[tuple[int, ...]] = ()
    _anchor: ClassVar[str]
    _anchor_event_ndim: ClassVar[int] = 0

    def _anchor_tensor(self) -> torch.Tensor:
        return getattr(self, self._anchor)

    @property
    def batch_shape(self) -> torch.Size:
        """Shape of the batch of independent priors."""
        t = self._anchor_tensor()
        return t.shape[: t.dim() - self._anchor_event_ndim]

    @property
    def event_size(self) -> int:
        """Number of categories, or the dimension of the observations."""
        return self._anchor_tensor().shape[-1]

    @property
    def dtype(self) -> torch.dtype:
        """Floating dtype of the hyperparameters."""
        return self._anchor_tensor().dtype

    @property
    def device(self) -> torch.device:
        """Device of the hyperparameters."""
        return self._anchor_tensor().device

    def _store_broadcast(self, params: dict[str, torch.Tensor], **event_ndims: int) -> None:
        """Set the (frozen) fields ``params`` with their batch axes broadcast together.

        ``event_ndims[name]`` trailing axes of a field (default 0) are event axes and are kept
        as they are; the leading axes of every field are expanded to the common batch shape.
        """
        split = {k: t.dim() - event_ndims.get(k, 0) for k, t in params.items()}
        batch = broadcast_shapes(*(t.shape[: split[k]] for k, t in params.items()))
        for k, t in params.items():
            object.__setattr__(self, k, t.expand(batch + t.shape[split[k] :]))

    def kl(self, other) -> torch.Tensor:
        """``KL(self || other)`` in closed form, batched over the broadcast batch shapes.

        .. math::

            KL(p \\| q) = \\langle \\eta_p - \\eta_q, E_p[T] \\rangle - A(\\eta_p) + A(\\eta_q)

        Raises:
            TypeError: if ``other`` is not of the same family.
            ValueError: if the event sizes differ.
        """
        if type(other) is not type(self):
            raise TypeError(f"other must be a {type(self).__name__}, got {type(other).__name__}")
        if other.event_size != self.event_size:
            raise ValueError(
                f"other must have event size {self.event_size}, got {other.event_size}"
            )
        delta = tuple(
            p - q for p, q in zip(_fields(self.natural_params()), _fields(other.natural_params()))
        )
        return (
            inner_product(delta, self.expected_stats(), self.event_dims)
            - self.log_normalizer()
            + other.log_normalizer()
        )


class NormalMeanFamily(ConjugateFamily):
    """Shared by the priors with a Gaussian mean given a precision (Normal-Gamma,
    Normal-Wishart): a ``(..., d)`` mean ``loc`` with pseudo-count ``kappa``.

    The observations ``x_1..x_n`` enter through their count ``n``, their sum ``s`` and a
    second-moment statistic; the mean's update is

    .. math::

        \\kappa_n = \\kappa + n, \\qquad m_n = (\\kappa m + s) / \\kappa_n,

    and, with base measure ``(2 pi)^(-d/2)`` per observation, the marginal likelihood is
    ``log p(x_1..x_n) = A_n - A - (n d / 2) log(2 pi)``.

    Subclasses set ``_stats_type``, the named tuple of their natural parameters, whose fields
    are paired with the precision, its log-determinant (or log), the precision-weighted mean
    and the precision-weighted squared mean, in that order; they define
    ``posterior(count, sum_x, second_moment)`` and ``_from_natural_precision``.
    """

    _anchor = "loc"
    _anchor_event_ndim = 1
    _stats_type: ClassVar[type]

    @property
    def dim(self) -> int:
        """Dimension ``d`` of the observations."""
        return self.event_size

    def _check_loc(self, loc: torch.Tensor) -> torch.Tensor:
        if loc.dim() < 1:
            raise ValueError(f"loc must have shape (..., d), got shape {tuple(loc.shape)}")
        return loc

    def _vector(self, x, name: str) -> torch.Tensor:
        """Data ``x`` of shape ``(..., d)`` with the prior's dtype and device."""
        t = as_data_tensor(x, name, self.loc, min_ndim=1)
        return check_last_dim(t, name, self.dim, "d")

    def _count_and_sum(self, count, sum_x) -> tuple[torch.Tensor, torch.Tensor]:
        n = check_nonnegative_tensor(as_data_tensor(count, "count", self.kappa), "count")
        return n, self._vector(sum_x, "sum_x")

    def _mean_update(self, n: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(kappa_n, m_n)`` after ``n`` points summing to ``s``."""
        kappa_n = self.kappa + n
        loc_n = (self.kappa.unsqueeze(-1) * self.loc + s) / kappa_n.unsqueeze(-1)
        return kappa_n, loc_n

    @classmethod
    def from_natural(cls, eta):
        """The prior with natural parameters ``eta`` (inverse of :meth:`natural_params`).

        The mean's part comes from the last two fields, paired with the precision-weighted
        mean (``kappa m``) and squared mean (``-kappa / 2``); the family's
        ``_from_natural_precision(loc, kappa, eta_precision, eta_log_precision)`` turns the
        first two into the precision's hyperparameters.
        """
        eta_precision, eta_log_precision, eta_mean, eta_quad = cls._stats_type(*eta)
        kappa = -2 * eta_quad
        loc = eta_mean / kappa.unsqueeze(-1)
        return cls._from_natural_precision(loc, kappa, eta_precision, eta_log_precision)

    def log_marginal_likelihood(self, count, sum_x, second_moment) -> torch.Tensor:
        """``log p(x_1..x_n) = A_n - A - (n d / 2) log(2 pi)`` from the statistics
        :meth:`posterior` takes: the count, the sum and the family's second-moment statistic
        (``sum_sq`` for the Normal-Gamma, ``sum_xx`` for the Normal-Wishart)."""
        post = self.posterior(count, sum_x, second_moment)
        n = as_data_tensor(count, "count", self.kappa)
        return post.log_normalizer() - self.log_normalizer() - 0.5 * self.dim * n * LOG_2PI
