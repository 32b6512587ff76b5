"""DDPM: the DP mixture observed through a NICE flow that is built for the data it meets.

:class:`~pyromodels.ddpm.model.DPMixture` takes a ready flow. :class:`DDPM` is the paper's
model as a user meets it: the flow's architecture is a model argument, and the flow itself
(:class:`~pyromodels.nn.NICE`, volume-preserving unless ``scaling=True``, starting as the
identity map) is made for the width of the first data set it is given.

**Units.** With ``prior=None`` the model also takes its units from that first data set: the
features are standardized, ``y' = (y - loc) / scale`` with ``(loc, scale)`` =
:func:`~pyromodels.conjugate.data_units` of the first data (kept in :attr:`DDPM.units`
with the flow), before the flow and the default prior see them. A flow is not equivariant
(its networks and its optimiser's steps have absolute sizes), so without this the features
of ``y * 1e-8`` would be moved by steps of ``lr`` and those of ``y * 1e8`` not at all; with
it, ``c y + b`` gives the clustering of ``y``. Every method (``model``, ``transform``,
``complete_log_joint``, ``fit``) then works on ``y'``; the densities of ``y`` differ from
those of ``y'`` by the constant ``-N d log(scale)``. An explicit prior leaves ``y`` as it is.

Example:
    >>> import torch
    >>> from pyromodels.ddpm import DPMixturePrior
    >>> from pyromodels.ddpm.mcem import MCEMSettings
    >>> y = torch.cat([torch.zeros(10, 2), torch.full((10, 2), 8.0)])
    >>> y = y + 0.1 * torch.randn(20, 2, generator=torch.Generator().manual_seed(0))
    >>> model = DDPM(DPMixturePrior(kappa0=0.1, alpha0=5.0, beta0=1.0), hidden=(8,))
    >>> post = model.fit(y, settings=MCEMSettings(rounds=2, init_clusters=4), seed=0,
    ...                  progress=False)
    >>> post.params["labels"].shape, model.flow.dim
    (torch.Size([20]), 2)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..checks import check_bool, check_int
from ..conjugate import data_units
from ..nn import NICE
from .model import DPMixture
from .prior import DPMixturePrior

__all__ = ["DDPM"]


class DDPM(DPMixture):
    """The DP mixture of isotropic Gaussians on ``z = f(y)``, ``f`` a NICE flow (DDPM paper,
    eqs. 1-8 and Sec. 3.2), fitted by Monte Carlo EM (``fit(y, method="mcem")``).

    Args:
        prior: the DP mixture's hyperparameters (default ``DPMixturePrior()``; the paper's
            are :meth:`DPMixturePrior.paper_preset`).
        num_layers: coupling layers of the flow (the paper does not say; 4 as in NICE).
        hidden: hidden widths of each coupling network.
        scaling: add NICE's diagonal scaling layer (its log-determinant then enters the
            objective; the paper's flow is volume-preserving).
        flow_seed: seed of the flow's initial weights (with the default identity start only
            the couplings' hidden layers are random).
        dtype: the flow's floating dtype (float64 by default, as the sampler's).

    Raises:
        TypeError: ``dtype`` not a floating ``torch.dtype`` (the flow is fitted by gradients).

    Attributes:
        units: ``None``, or with ``prior=None`` the ``(loc (d,), scale)`` that standardize
            the features, taken from the first data set (module docstring).
    """

    #: Monte Carlo EM only: Gibbs sampling alone would hold the untrained flow fixed
    engines: tuple[str, ...] = ("mcem",)

    def __init__(self, prior: DPMixturePrior | None = None, *, num_layers: int = 4,
                 hidden: Sequence[int] = (256, 256), scaling: bool = False, flow_seed: int = 0,
                 dtype: torch.dtype = torch.float64):
        super().__init__(prior)
        self.num_layers = check_int(num_layers, "num_layers", minimum=1)
        self.hidden = tuple(hidden)
        self.scaling = check_bool(scaling, "scaling")
        self.flow_seed = check_int(flow_seed, "flow_seed", minimum=0)
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating torch.dtype (the flow is fitted by "
                            f"gradients), such as torch.float64, got {dtype!r}")
        self.dtype = dtype
        self.units = None

    def build(self, dim: int) -> NICE:
        """The flow for ``dim``-wide data: made on the first call, kept while ``dim`` matches.

        Raises:
            ValueError: data of another width than the flow was built for.
        """
        dim = check_int(dim, "dim", minimum=2)
        if self.flow is None:
            self.flow = NICE(dim, self.num_layers, self.hidden, self.scaling,
                             seed=self.flow_seed, dtype=self.dtype)
        elif self.flow.dim != dim:
            raise ValueError(f"data must have {self.flow.dim} columns, the width this model's "
                             f"flow was built for, got {dim}")
        return self.flow

    def prepare(self, data, device=None) -> torch.Tensor:
        """The observed ``y`` as a finite ``(N, d)`` tensor of the flow's dtype, ``d >= 2``
        (a flow needs two coordinates to couple), standardized by :attr:`units` when the
        prior is the default; builds the flow (and takes the units) on the first call."""
        x = super().prepare(data, device)
        if x.shape[1] < 2:
            raise ValueError(f"data must have at least 2 columns for a NICE flow, got {x.shape[1]}")
        first = self.flow is None
        self.build(x.shape[1])
        x = x.to(self.dtype)
        if self.prior is None:
            if first or self.units is None:
                self.units = data_units(x)
            loc, scale = self.units
            x = (x - loc.to(x.device)) / scale
        return x
