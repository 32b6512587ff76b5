"""NICE: a stack of additive couplings and permutations, optionally ending in a scaling layer.

``f = [S o] [R o] C_L o P o C_{L-1} o ... o P o C_1`` maps ``y`` in ``R^d`` to ``z = f(y)``
(``R`` restores the input's coordinate order when the permutations ``P`` do not compose to
the identity). With additive couplings ``C_l`` and permutations only, ``|det df/dy| = 1``
everywhere (Dinh, Krueger and Bengio 2015, sec. 3.2-3.3); the optional diagonal scaling ``S``
(sec. 3.4) adds ``sum_j s_j`` to ``log|det df/dy|``. A density on ``y`` is built the usual Pyro way::

    TransformedDistribution(base, [flow.inv])   # log p(y) = log base(f(y)) + log|det df/dy|
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from pyro.distributions.torch_transform import ComposeTransformModule

from ..checks import check_bool, check_in, check_int
from ..core.seeding import make_generator, resolve_seed
from .coupling import AdditiveCoupling, Permutation, Scaling, check_flow_input

__all__ = ["NICE"]

_PERMUTATIONS = ("reverse", "alternate", "random")


def _generator(seed) -> torch.Generator:
    if isinstance(seed, torch.Generator):
        return seed
    return make_generator(resolve_seed(seed))


class NICE(ComposeTransformModule):
    r"""A NICE flow ``z = f(y)`` on ``R^d``: ``num_layers`` additive couplings with fixed
    permutations between them and an optional final scaling layer.

    Coupling ``l`` keeps the first ``split`` coordinates of its input and shifts the others
    by ``m_l`` of them (``y2 <- y2 + m_l(y1)``, :class:`~.coupling.AdditiveCoupling`). Between
    couplings the coordinates are mixed so that every coordinate gets shifted:

    - ``permutation="reverse"`` (default): a fixed reversal of the coordinates;
    - ``"alternate"``: no permutation layers; even couplings shift the second block, odd ones
      the first (``swap=True``);
    - ``"random"``: a fixed random permutation per gap, drawn from the seed.

    If the permutations do not compose to the identity, a last permutation restores the input's
    coordinate order, so a flow whose couplings are zero is the identity map (``init=
    "identity"``, the default) and coordinate ``j`` of ``z`` is the shifted coordinate ``j``
    of ``y``.

    Without scaling ``log|det df/dy| = 0``, so the flow preserves volume. With
    ``scaling=True`` the final layer multiplies by ``exp(s)`` and ``log|det df/dy| = sum_j s_j``
    at every point: an objective that omits it is not a likelihood.

    Args:
        dim: the event width ``d >= 2``.
        num_layers: the number of coupling layers (>= 1).
        hidden: the hidden widths of each coupling MLP (ReLU).
        scaling: add NICE's diagonal scaling layer at the end.
        seed: an int, a ``torch.Generator`` or ``None`` (a fresh seed); the source of every
            initial weight. The global RNG is not used.
        split: the size of each coupling's first block (``d // 2`` by default).
        permutation: ``"reverse"``, ``"alternate"`` or ``"random"`` (see above).
        init: ``"identity"`` (default: every coupling's output layer is zero, so a new flow is
            the identity map) or ``"random"`` (non-zero couplings and, with scaling, random
            log-scales: a known, non-trivial bijection, e.g. to warp synthetic data).
        scale: with ``init="random"``, the size of the couplings' initial output weights
            (uniform on ``(-scale, scale) / sqrt(fan_in)``); the initial log-scales are
            uniform on ``(-scale / 2, scale / 2)``.
        activation: the coupling MLPs' hidden activation.
        dtype, device: of the parameters; the flow takes inputs of its parameters' dtype.

    Shapes:
        ``forward``/``inverse`` map ``(..., d)`` to ``(..., d)``;
        ``log_abs_det_jacobian(y, z)`` has shape ``(...)``.

    Example:
        >>> flow = NICE.random(4, num_layers=2, hidden=(16,), seed=0)
        >>> y = torch.randn(5, 4, generator=torch.Generator().manual_seed(1))
        >>> z = flow.forward(y)
        >>> bool(torch.allclose(flow.inverse(z), y, atol=1e-5))
        True
        >>> flow.log_abs_det_jacobian(y, z)
        tensor([0., 0., 0., 0., 0.])
    """

    def __init__(self, dim: int, num_layers: int = 4, hidden: Sequence[int] = (256, 256),
                 scaling: bool = False, seed: int | torch.Generator | None = None, *,
                 split: int | None = None, permutation: str = "reverse", init: str = "identity",
                 scale: float = 1.0, activation: str = "relu", dtype: torch.dtype | None = None,
                 device=None):
        dim = check_int(dim, "dim", minimum=2)
        num_layers = check_int(num_layers, "num_layers", minimum=1)
        check_bool(scaling, "scaling")
        check_in(permutation, "permutation", _PERMUTATIONS)
        gen = _generator(seed)
        parts = []
        order = torch.arange(dim)  # output coordinate k holds input coordinate order[k]

        def add_permutation(perm):
            nonlocal order
            order = order[perm.permutation]
            parts.append(perm if device is None else perm.to(device))

        for layer in range(num_layers):
            if layer > 0 and permutation != "alternate":
                add_permutation(Permutation.reversal(dim) if permutation == "reverse"
                                else Permutation.random(dim, gen))
            swap = permutation == "alternate" and layer % 2 == 1
            parts.append(AdditiveCoupling(dim, hidden, split=split, swap=swap, init=init, scale=scale,
                                          activation=activation, generator=gen, dtype=dtype,
                                          device=device))
        if not torch.equal(order, torch.arange(dim)):
            add_permutation(Permutation(torch.argsort(order)))  # restore the input's order
        if scaling:
            parts.append(Scaling(dim, init=init, scale=scale / 2, generator=gen, dtype=dtype,
                                 device=device))
        super().__init__(parts)
        self.dim, self.num_layers, self.scaling = dim, num_layers, scaling

    @classmethod
    def random(cls, dim: int, num_layers: int = 4, hidden: Sequence[int] = (256, 256),
               scaling: bool = False, scale: float = 1.0, seed: int | torch.Generator | None = None,
               **kwargs) -> NICE:
        """A NICE flow with random (non-zero) couplings: ``NICE(..., init="random")``.

        Example:
            >>> flow = NICE.random(2, num_layers=1, hidden=(8,), seed=3)
            >>> bool((flow.forward(torch.ones(1, 2)) != 1).any())
            True
        """
        return cls(dim, num_layers, hidden, scaling, seed, init="random", scale=scale, **kwargs)

    @property
    def couplings(self) -> list[AdditiveCoupling]:
        """The coupling layers, in the order they are applied."""
        return [p for p in self.parts if isinstance(p, AdditiveCoupling)]

    def _check(self, t, name):
        return check_flow_input(t, self.dim, name, next(self.parameters()).dtype)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """``z = f(y)`` for ``y`` of shape ``(..., d)``."""
        return self(self._check(y, "y"))

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        """``y = f^{-1}(z)`` for ``z`` of shape ``(..., d)``."""
        return self.inv(self._check(z, "z"))

    def log_abs_det_jacobian(self, y: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        """``log|det df/dy|`` at each point of ``y`` (shape ``y.shape[:-1]``).

        Every layer's Jacobian determinant is the same at every point, so the layers' terms
        are added without passing ``y`` through the flow; ``z`` is accepted for the
        ``Transform`` interface and not used. It is ``0`` without scaling and ``sum_j s_j``
        with it.
        """
        self._check(y, "y")
        total = y.new_zeros(y.shape[:-1])
        for part in self.parts:
            total = total + part.log_abs_det_jacobian(y, y)
        return total

    def with_cache(self, cache_size=1):
        """The flow itself: it inverts exactly and cheaply, so it keeps no cache."""
        return self

    def extra_repr(self) -> str:
        return f"dim={self.dim}, num_layers={self.num_layers}, scaling={self.scaling}"
