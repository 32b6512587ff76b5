"""The layers of a NICE flow (Dinh, Krueger and Bengio 2015) as Pyro transform modules.

Three bijections of ``R^d``, each a :class:`pyro.distributions.torch_transform.TransformModule`
acting on the last axis of a ``(..., d)`` tensor:

- :class:`AdditiveCoupling`: ``y1 = x1``, ``y2 = x2 + m(x1)`` with ``m`` a ReLU MLP; its
  Jacobian is unit lower-triangular, so ``log|det dy/dx| = 0`` (volume preserving).
- :class:`Permutation`: ``y = x[..., perm]``; ``|det| = 1``.
- :class:`Scaling`: ``y = x * exp(s)``; ``log|det dy/dx| = sum_j s_j``.

Every layer's Jacobian determinant is the same at every point, which :class:`~.nice.NICE`
uses to add up log-determinants without a second pass through the layers.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from pyro.distributions.torch_transform import TransformModule
from torch import nn
from torch.distributions import constraints

from ..checks import check_in, check_int, check_positive
from .mlp import check_dims, mlp

__all__ = ["AdditiveCoupling", "Permutation", "Scaling"]

_INITS = ("identity", "random")


def check_flow_input(t, dim: int, name: str, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Raise unless ``t`` is a tensor of shape ``(..., dim)`` with dtype ``dtype`` (any floating
    dtype when ``None``)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (..., {dim}), got {type(t).__name__}")
    if t.dim() < 1 or t.shape[-1] != dim:
        raise ValueError(f"{name} must have shape (..., {dim}) (last axis of width {dim}), "
                         f"got shape {tuple(t.shape)}")
    if dtype is None and not t.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got dtype {t.dtype}")
    if dtype is not None and t.dtype != dtype:
        raise TypeError(f"{name} must have the flow's dtype {dtype}, got {t.dtype}; "
                        f"move the flow with .to({t.dtype}) or cast the input")
    return t


def _check_dim(dim) -> int:
    return check_int(dim, "dim", minimum=2)


class AdditiveCoupling(TransformModule):
    r"""NICE's additive coupling layer: ``y1 = x1``, ``y2 = x2 + m(x1)``.

    The input ``x`` of shape ``(..., d)`` is split on its last axis into a first block of
    ``split`` coordinates and a second block of ``d - split``. Without ``swap`` the first block
    ``x1`` conditions and the second is shifted; with ``swap=True`` the roles are exchanged.
    The inverse is ``x2 = y2 - m(y1)``, and since ``dy/dx = [[I, 0], [dm/dx1, I]]`` is unit
    triangular, ``log|det dy/dx| = 0`` (Dinh et al. 2015, sec. 3.2).

    Args:
        dim: the event width ``d >= 2``.
        hidden: hidden widths of the coupling MLP ``m`` (ReLU), default ``(256, 256)``.
        split: the size of the first block, ``1 <= split <= d - 1``; ``d // 2`` by default.
        swap: if ``True``, the second block conditions and the first is shifted.
        init: ``"identity"`` (default) zeroes ``m``'s output layer so the layer starts as the
            identity map; ``"random"`` draws it like the other layers, times ``scale``.
        scale: the size of the output layer's initial weights with ``init="random"``.
        activation: the activation of ``m``'s hidden layers.
        generator: the source of the initial weights (a ``torch.Generator``).
        dtype, device: of the parameters.

    Example:
        >>> layer = AdditiveCoupling(4, hidden=(8,))
        >>> x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
        >>> bool(torch.equal(layer(x), x))  # a new layer is the identity
        True
        >>> layer.log_abs_det_jacobian(x, layer(x)).shape
        torch.Size([3])
    """

    domain = constraints.real_vector
    codomain = constraints.real_vector
    bijective = True
    sign = +1
    volume_preserving = True

    def __init__(self, dim: int, hidden: Sequence[int] = (256, 256), split: int | None = None,
                 swap: bool = False, init: str = "identity", scale: float = 1.0,
                 activation: str = "relu", generator: torch.Generator | None = None,
                 dtype: torch.dtype | None = None, device=None):
        super().__init__(cache_size=0)  # no cache: a cached output goes stale when m is trained
        self.dim = _check_dim(dim)
        split = self.dim // 2 if split is None else check_int(split, "split", 1, self.dim - 1)
        if not isinstance(swap, bool):
            raise TypeError(f"swap must be a bool, got {type(swap).__name__} {swap!r}")
        check_in(init, "init", _INITS)
        scale = check_positive(scale, "scale")
        self.split, self.swap, self.init = split, swap, init
        n_cond, n_shift = (self.dim - split, split) if swap else (split, self.dim - split)
        self.net = mlp(n_cond, check_dims(hidden, "hidden"), n_shift, activation=activation,
                       generator=generator, last_scale=0.0 if init == "identity" else scale,
                       dtype=dtype, device=device)

    def _blocks(self, t):
        a, b = t[..., : self.split], t[..., self.split:]
        return (b, a) if self.swap else (a, b)  # (conditioning block, shifted block)

    def _join(self, cond, shifted):
        return torch.cat((shifted, cond) if self.swap else (cond, shifted), dim=-1)

    def _dtype(self):
        return next(self.net.parameters()).dtype

    def _call(self, x):
        cond, shifted = self._blocks(check_flow_input(x, self.dim, "x", self._dtype()))
        return self._join(cond, shifted + self.net(cond))

    def _inverse(self, y):
        cond, shifted = self._blocks(check_flow_input(y, self.dim, "y", self._dtype()))
        return self._join(cond, shifted - self.net(cond))

    def log_abs_det_jacobian(self, x, y):
        """Zeros of shape ``x.shape[:-1]``: additive coupling preserves volume."""
        return x.new_zeros(x.shape[:-1])

    def with_cache(self, cache_size=1):
        """The layer itself: it inverts exactly and cheaply, so it keeps no cache."""
        return self

    def extra_repr(self) -> str:
        return f"dim={self.dim}, split={self.split}, swap={self.swap}"


class Permutation(TransformModule):
    """A fixed permutation of the last axis: ``y = x[..., permutation]``; ``log|det| = 0``.

    The permutation is a registered buffer, so it follows the module to another device.

    Args:
        permutation: a sequence or 1-D integer tensor holding each of ``0 .. d-1`` once.

    Example:
        >>> p = Permutation.reversal(3)
        >>> p(torch.tensor([[1.0, 2.0, 3.0]]))
        tensor([[3., 2., 1.]])
    """

    domain = constraints.real_vector
    codomain = constraints.real_vector
    bijective = True
    volume_preserving = True

    def __init__(self, permutation):
        super().__init__(cache_size=0)
        perm = torch.as_tensor(permutation)
        if perm.dim() != 1 or perm.is_floating_point() or perm.is_complex() or perm.dtype == torch.bool:
            raise TypeError(f"permutation must be a 1-D sequence of integers, got {permutation!r}")
        perm = perm.to(torch.long).cpu()
        d = perm.numel()
        if d < 2 or not torch.equal(torch.sort(perm).values, torch.arange(d)):
            raise ValueError(f"permutation must hold each of 0 .. d-1 exactly once with d >= 2, "
                             f"got {perm.tolist()}")
        self.dim = d
        self.register_buffer("permutation", perm)
        self.register_buffer("inverse_permutation", torch.argsort(perm))

    @classmethod
    def reversal(cls, dim: int) -> Permutation:
        """The permutation ``d-1, ..., 1, 0``."""
        return cls(torch.arange(_check_dim(dim) - 1, -1, -1))

    @classmethod
    def random(cls, dim: int, generator: torch.Generator | None = None) -> Permutation:
        """A uniformly random permutation of ``0 .. dim-1`` drawn from ``generator``."""
        return cls(torch.randperm(_check_dim(dim), generator=generator))

    def _call(self, x):
        check_flow_input(x, self.dim, "x")
        return x[..., self.permutation]

    def _inverse(self, y):
        check_flow_input(y, self.dim, "y")
        return y[..., self.inverse_permutation]

    def log_abs_det_jacobian(self, x, y):
        """Zeros of shape ``x.shape[:-1]``."""
        return x.new_zeros(x.shape[:-1])

    def with_cache(self, cache_size=1):
        """The layer itself: it inverts exactly and cheaply, so it keeps no cache."""
        return self

    def extra_repr(self) -> str:
        return f"permutation={self.permutation.tolist()}"


class Scaling(TransformModule):
    r"""NICE's diagonal scaling layer: ``y = x * exp(s)``, ``log|det dy/dx| = sum_j s_j``.

    Args:
        dim: the event width ``d >= 2``.
        init: ``"identity"`` (default, ``s = 0``) or ``"random"`` (``s_j ~ U(-scale, scale)``).
        scale: the half-width of the random initial log-scales.
        generator: the source of the random initial log-scales.
        dtype, device: of the parameter ``log_scale`` (shape ``(d,)``).

    Example:
        >>> layer = Scaling(2)
        >>> with torch.no_grad():
        ...     _ = layer.log_scale.copy_(torch.tensor([0.0, 1.0]))
        >>> float(layer.log_abs_det_jacobian(torch.zeros(2), None).detach())
        1.0
    """

    domain = constraints.real_vector
    codomain = constraints.real_vector
    bijective = True
    sign = +1
    volume_preserving = False

    def __init__(self, dim: int, init: str = "identity", scale: float = 0.5,
                 generator: torch.Generator | None = None, dtype: torch.dtype | None = None,
                 device=None):
        super().__init__(cache_size=0)
        self.dim = _check_dim(dim)
        check_in(init, "init", _INITS)
        scale = check_positive(scale, "scale")
        s = torch.zeros(self.dim, dtype=torch.float64)
        if init == "random":
            s = (torch.rand(self.dim, generator=generator, dtype=torch.float64) * 2 - 1) * scale
        dtype = torch.get_default_dtype() if dtype is None else dtype
        self.log_scale = nn.Parameter(s.to(dtype=dtype, device=device))

    def _call(self, x):
        check_flow_input(x, self.dim, "x", self.log_scale.dtype)
        return x * torch.exp(self.log_scale)

    def _inverse(self, y):
        check_flow_input(y, self.dim, "y", self.log_scale.dtype)
        return y * torch.exp(-self.log_scale)

    def log_abs_det_jacobian(self, x, y):
        """``sum_j s_j`` for every point: shape ``x.shape[:-1]``."""
        return self.log_scale.sum().expand(x.shape[:-1])

    def with_cache(self, cache_size=1):
        """The layer itself: it inverts exactly and cheaply, so it keeps no cache."""
        return self

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
