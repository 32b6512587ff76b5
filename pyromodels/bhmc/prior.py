r"""Hyperparameters of BHMC (Bayesian hierarchical mixture clustering) and the paper's presets.

The model (RBHMC paper, Algorithm 1 and Fig. 2), truncated at ``K`` components:

.. math::

    o_k &\sim \mathrm{Beta}(1, \gamma_0)\ (k < K - 1), \quad
        \beta_{z_0} = \mathrm{GEM}_K(o) \text{ (the last cell takes the leftover stick)}, \\
    v_n &\sim \mathrm{nCRP}(\alpha) \text{ of depth } L, \quad
        \beta_{z'} \mid \beta_z \sim \mathrm{Dir}(\gamma \beta_z) \text{ for every edge } (z, z'), \\
    \theta_k &\sim N(0, I_D), \quad c_n \sim \mathrm{Cat}(\beta_{v_{nL}}), \quad
        x_n \sim N(\theta_{c_n}, I_D),

and, for the max-margin variant (RBHMC), :math:`\eta_z \sim N(0, \nu_0^2 I_D)` per non-root
node.

**Units.** The story is written for data of centre 0 and unit spread: the model of data ``x``
is the story for ``x' = (x - loc) / scale``. ``loc`` and ``scale`` default to ``None``, which
resolves against the data (:meth:`BHMCPrior.units`: the column means and the root mean
column variance over :math:`\sqrt 2`, from :func:`~pyromodels.conjugate.data_units`, so that
``x'`` has the story's marginal variance, 2 per coordinate: 1 from :math:`\theta` and 1 from
the noise), so that ``c x + b`` gets the
hierarchy of ``x``; with the unit story applied to raw data, ``x * 1e-8`` is one cluster and
``x + 1e6`` sits a million prior standard deviations from every component. The paper's
presets apply the story to the data as they are (``loc = 0``, ``scale = 1``), as the paper
does; explicit values are used as given.

**Truncation default.** The paper's model is infinite and it never states a truncation. Under
the truncated stick-breaking root, the leftover mass after ``K - 1`` sticks has mean
:math:`(\gamma_0 / (1 + \gamma_0))^{K-1}`; the default ``K = 20`` makes it
:math:`(0.85 / 1.85)^{19} \approx 4 \times 10^{-7}` at the papers' :math:`\gamma_0 = 0.85`,
while the expected number of components used by ``N = 100`` data is about
:math:`\gamma_0 \log(1 + N / \gamma_0) \approx 4` (a DP's CRP with concentration
:math:`\gamma_0`), so the truncation is invisible at the paper's sizes.

Example:
    >>> prior = BHMCPrior.paper_preset("animals")
    >>> prior.alpha, prior.gamma, prior.gamma0, prior.depth, prior.num_components
    (0.4, 1.0, 0.85, 3, 20)
    >>> BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=3).nu0
    1.0
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import torch

from ..checks import check_in, check_int, check_positive
from ..conjugate import data_units

__all__ = ["BHMCPrior", "PAPER_PRESETS", "DEFAULT_NUM_COMPONENTS"]

DEFAULT_NUM_COMPONENTS = 20
"""Default truncation ``K`` (module docstring: leftover mass about 4e-7 at gamma0 = 0.85)."""


@dataclass(frozen=True)
class BHMCPrior:
    """Frozen hyperparameters of (R)BHMC.

    Args:
        alpha: nested-CRP concentration :math:`\\alpha` (> 0).
        gamma: child concentration :math:`\\gamma` of the HDP weight diffusion (> 0).
        gamma0: root stick-breaking concentration :math:`\\gamma_0` (> 0).
        depth: ``L >= 1``, the level of the leaves (the root is level 0).
        num_components: ``K >= 2``, the truncation of the root's stick breaking (the last of
            the ``K`` cells holds the leftover stick); default :data:`DEFAULT_NUM_COMPONENTS`.
        nu0: prior scale :math:`\\nu_0` of the max-margin discriminants :math:`\\eta_z` (> 0;
            unused by BHMC itself).
        loc: the data's centre (a real number, the same in every column), or ``None``
            (default) for the data's column means (module docstring, "Units").
        scale: the data's unit of spread (> 0), or ``None`` (default) for the data's root mean
            column variance over :math:`\\sqrt 2` (the story's marginal variance is 2).

    Raises:
        TypeError: a non-number (``depth``, ``num_components``: a non-integer).
        ValueError: ``'alpha must be > 0, got ...'``, ``'depth must be an integer >= 1, got
            ...'``, ``'num_components must be an integer >= 2, got ...'`` and so on.

    Example:
        >>> BHMCPrior(alpha=0.5, gamma=1.0, gamma0=0.85, depth=2).num_components
        20
    """

    alpha: float
    gamma: float
    gamma0: float
    depth: int
    num_components: int = DEFAULT_NUM_COMPONENTS
    nu0: float = 1.0
    loc: float | None = None
    scale: float | None = None

    def __post_init__(self):
        for name in ("alpha", "gamma", "gamma0", "nu0"):
            object.__setattr__(self, name, check_positive(getattr(self, name), name))
        if self.loc is not None:
            if isinstance(self.loc, bool) or not isinstance(self.loc, numbers.Real):
                raise TypeError(f"loc must be a real number or None, got {self.loc!r}")
            if not math.isfinite(float(self.loc)):
                raise ValueError(f"loc must be finite, got {self.loc}")
            object.__setattr__(self, "loc", float(self.loc))
        if self.scale is not None:
            object.__setattr__(self, "scale", check_positive(self.scale, "scale"))
        object.__setattr__(self, "depth", check_int(self.depth, "depth", minimum=1))
        object.__setattr__(self, "num_components",
                           check_int(self.num_components, "num_components", minimum=2))

    def units(self, x: torch.Tensor) -> tuple[torch.Tensor, float]:
        """``(loc (D,), scale)`` in which the story sees the data ``x`` ``(N, D)``: the given
        ``loc`` and ``scale``, and for those left ``None`` the data's (module docstring).

        Raises:
            ValueError: ``scale=None`` with all points identical (no spread to measure).

        Example:
            >>> loc, scale = BHMCPrior(1.0, 1.0, 1.0, 2, loc=0.0).units(torch.tensor([[0.0], [2.0]]))
            >>> loc.tolist(), round(scale, 4)
            ([0.0], 1.0)
        """
        scale = data_units(x)[1] / math.sqrt(2.0) if self.scale is None else self.scale
        if self.loc is None:
            return x.detach().mean(0), scale
        return torch.full(x.shape[1:], self.loc, dtype=x.dtype, device=x.device), scale

    @classmethod
    def paper_preset(cls, dataset: str, num_components: int = DEFAULT_NUM_COMPONENTS) -> BHMCPrior:
        """The hyperparameters of the RBHMC paper's Sec. 5 for ``dataset``.

        Args:
            dataset: ``"animals"`` (alpha 0.4, gamma 1, gamma0 0.85, L 3) or ``"fashion"``
                (MNIST-fashion: alpha 0.2, gamma 1.5, gamma0 0.85, L 4).
            num_components: the truncation ``K`` (not given in the paper).

        The story is applied to the data as they are (``loc = 0``, ``scale = 1``), as in the
        paper.

        Example:
            >>> BHMCPrior.paper_preset("fashion").depth
            4
        """
        check_in(dataset, "dataset", tuple(PAPER_PRESETS))
        return replace(PAPER_PRESETS[dataset], num_components=num_components)


#: Sec. 5.1 (Animals) and 5.2 (MNIST-fashion); nu0 = 1 in both
PAPER_PRESETS = {
    "animals": BHMCPrior(alpha=0.4, gamma=1.0, gamma0=0.85, depth=3, loc=0.0, scale=1.0),
    "fashion": BHMCPrior(alpha=0.2, gamma=1.5, gamma0=0.85, depth=4, loc=0.0, scale=1.0),
}
