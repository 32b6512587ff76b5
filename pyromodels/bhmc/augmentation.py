r"""The max-margin pieces of RBHMC that need no tree: hinge, Polson-Scott kernel, lambda and eta.

RBHMC (the posterior-regularised BHMC) multiplies the BHMC posterior by one hinge factor per
datum (Lemma 1, eq. 5), :math:`\phi_n = \exp\{-2C \max(0, \zeta_n)\}` with
:math:`\zeta_n = \varepsilon_0 - (\eta_{v} - \eta_{s})^\top x_n` the worst margin violation
(RBHMC paper, eq. 2). Polson and Scott's identity (eq. 6) writes it as a scale mixture,

.. math::

    e^{-2C\max(0, \zeta)} = \int_0^\infty \frac{1}{\sqrt{2\pi\lambda}}
        \exp\Big\{-\frac{(C\zeta + \lambda)^2}{2\lambda}\Big\}\, d\lambda,

so the augmented target carries the kernel
:math:`K(\lambda; \zeta) = (2\pi\lambda)^{-1/2} \exp\{-(C\zeta + \lambda)^2 / (2\lambda)\}`
(eq. 8 with its constant; **not** a normalised density in :math:`\lambda`: it integrates to
:math:`\phi`). Expanding the square, :math:`\lambda \mid \zeta \sim
\mathrm{GIG}(1/2, 1, C^2\zeta^2)` (eq. 7), whose mean is :math:`1 + C|\zeta|` and whose variance
is :math:`2 + C|\zeta|` (from :math:`E[\lambda^r] = b^r K_{1/2 + r}(b) / K_{1/2}(b)`,
:math:`b = C|\zeta|`, and the closed forms of the half-integer Bessel functions). Given the
:math:`\lambda`'s, the augmented log density is quadratic in each :math:`\eta_z`
(:func:`eta_conditional`, with the paper's prior-precision error fixed).

Example:
    >>> import torch
    >>> zeta = torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64)
    >>> hinge_log_factor(zeta, 0.5).tolist()
    [-0.0, -0.0, -2.0]
    >>> sample_lambda(zeta, 0.5, torch.Generator().manual_seed(0)).shape
    torch.Size([3])
"""

from __future__ import annotations

import math
import numbers

import torch

__all__ = [
    "hinge_log_factor",
    "polson_scott_log_kernel",
    "sample_lambda",
    "lambda_mean",
    "lambda_variance",
    "eta_conditional",
    "sample_gaussian_precision",
    "DEFAULT_SWITCH",
]

DEFAULT_SWITCH = 1e-8
"""Below this ``b = C|zeta|`` :func:`sample_lambda` draws the ``b -> 0`` limit Gamma(1/2, rate
1/2). The limit's density differs from GIG(1/2, 1, b^2)'s by the factor
``exp(b - b^2 / (2 lam)) <= e^b``, so the total variation between them is at most
``e^b - 1 ~ b <= 1e-8``: far below any Monte Carlo error."""


def _check_c(C) -> float:
    if isinstance(C, bool) or not isinstance(C, numbers.Real):
        raise TypeError(f"C must be a real number, got {type(C).__name__}")
    C = float(C)
    if not math.isfinite(C) or C <= 0:
        raise ValueError(f"C must be finite and > 0, got {C}")
    return C


def _check_real(value, name: str, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or (positive and value <= 0):
        raise ValueError(f"{name} must be finite{' and > 0' if positive else ''}, got {value}")
    return value


def _as_float(x, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise TypeError(f"{name} must be a floating tensor or a real number, "
                            f"got {type(x).__name__}")
        x = torch.tensor(float(x), dtype=torch.float64)
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor, got dtype {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must be finite: found NaN or infinite values")
    return x


def _check_lam(lam, name: str = "lam") -> torch.Tensor:
    lam = _as_float(lam, name)
    if lam.numel() and not bool((lam > 0).all()):
        raise ValueError(f"{name} must be > 0, got minimum {float(lam.min()):.6g}")
    return lam


def hinge_log_factor(zeta, C) -> torch.Tensor:
    r"""Log of the pseudo-likelihood factor, :math:`-2C\max(0, \zeta)` (eqs. 3 and 5).

    Args:
        zeta: margin violations, any shape (finite).
        C: regularisation constant (> 0).

    Returns:
        tensor of ``zeta``'s shape and dtype.

    Example:
        >>> float(hinge_log_factor(torch.tensor(0.25), 2.0))
        -1.0
    """
    return _hinge_log_factor(_as_float(zeta, "zeta"), _check_c(C))


def _hinge_log_factor(zeta: torch.Tensor, C: float) -> torch.Tensor:
    """:func:`hinge_log_factor` on checked arguments (a sampler's inner step)."""
    return -2.0 * C * torch.relu(zeta)


def polson_scott_log_kernel(lam, zeta, C) -> torch.Tensor:
    r"""Log Polson-Scott kernel :math:`-\tfrac12\log(2\pi\lambda) - (C\zeta + \lambda)^2/(2\lambda)`.

    Its integral over :math:`\lambda \in (0, \infty)` is :math:`\exp\{-2C\max(0, \zeta)\}`
    (eq. 6): use it (not a normalised GIG density) in the augmented target and MH ratios.

    Args:
        lam: augmentation variables (> 0), any shape.
        zeta: margin violations, broadcastable with ``lam``.
        C: regularisation constant (> 0).

    Returns:
        tensor of the broadcast shape.

    Example:
        >>> round(float(polson_scott_log_kernel(torch.tensor(1.0), torch.tensor(0.0), 1.0)), 6)
        -1.418939
    """
    C = _check_c(C)
    lam = _check_lam(lam)
    zeta = _as_float(zeta, "zeta")
    return -0.5 * torch.log(2.0 * math.pi * lam) - (C * zeta + lam) ** 2 / (2.0 * lam)


def lambda_mean(zeta, C) -> torch.Tensor:
    """Mean of ``lam | zeta ~ GIG(1/2, 1, C^2 zeta^2)``: ``1 + C|zeta|``.

    Example:
        >>> float(lambda_mean(torch.tensor(-2.0), 0.5))
        2.0
    """
    return 1.0 + _check_c(C) * _as_float(zeta, "zeta").abs()


def lambda_variance(zeta, C) -> torch.Tensor:
    """Variance of ``lam | zeta ~ GIG(1/2, 1, C^2 zeta^2)``: ``2 + C|zeta|`` (module docstring).

    Example:
        >>> float(lambda_variance(torch.tensor(0.0), 1.0))  # chi-square, 1 degree of freedom
        2.0
    """
    return 2.0 + _check_c(C) * _as_float(zeta, "zeta").abs()


@torch.no_grad()
def sample_lambda(zeta, C, generator: torch.Generator, switch: float = DEFAULT_SWITCH) -> torch.Tensor:
    r"""Draw :math:`\lambda \mid \zeta \sim \mathrm{GIG}(1/2, 1, b^2)`, :math:`b = C|\zeta|`
    (eq. 7; Sec. 4.4).

    Route: :math:`\omega = 1/\lambda \sim \mathrm{IG}(\mu = 1/b, \text{shape } 1)` by
    Michael, Schucany and Haas (1976): with :math:`y = \nu^2`, :math:`\nu \sim N(0, 1)`, the
    smaller root of the IG's chi-square equation is :math:`\omega_1 = \mu + \mu^2 y / 2 -
    (\mu/2)\sqrt{4\mu y + \mu^2 y^2}`; keep it with probability :math:`\mu / (\mu + \omega_1)`,
    else take :math:`\mu^2 / \omega_1`. Written for :math:`\lambda` without cancellation, that
    is :math:`\lambda_1 = 1/\omega_1 = b + y/2 + \sqrt{b y + y^2/4}`, kept with probability
    :math:`\lambda_1 / (\lambda_1 + b)`, else :math:`b^2 / \lambda_1`, which stays exact as
    :math:`b \to 0` (the limit is :math:`\lambda = y`). Where :math:`b <` ``switch`` the draw is
    that limit, Gamma(1/2, rate 1/2) (see :data:`DEFAULT_SWITCH` for the error bound).

    Args:
        zeta: margin violations (finite), any shape.
        C: regularisation constant (> 0).
        generator: ``torch.Generator`` on ``zeta``'s device.
        switch: ``b`` below which the Gamma(1/2, 1/2) limit is drawn (>= 0; 0 never switches).

    Returns:
        tensor of ``zeta``'s shape and dtype, entries > 0 (a draw of exactly 0 has
        probability 0; one that rounds to 0 is floored at the smallest normal float).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> lam = sample_lambda(torch.full((20000,), 3.0, dtype=torch.float64), 1.0, g)
        >>> abs(float(lam.mean()) - 4.0) < 0.1  # mean 1 + 3, sd sqrt(5 / 20000) = 0.016
        True
    """
    C = _check_c(C)
    zeta = _as_float(zeta, "zeta")
    switch = _check_real(switch, "switch")
    if switch < 0:
        raise ValueError(f"switch must be >= 0, got {switch}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return _sample_lambda(zeta, C, generator, switch)


def _sample_lambda(zeta: torch.Tensor, C: float, generator: torch.Generator,
                   switch: float = DEFAULT_SWITCH) -> torch.Tensor:
    """:func:`sample_lambda` on checked arguments (a sampler's inner step)."""
    b = C * zeta.abs()
    nu = torch.randn(zeta.shape, dtype=zeta.dtype, device=zeta.device, generator=generator)
    u = torch.rand(zeta.shape, dtype=zeta.dtype, device=zeta.device, generator=generator)
    y = nu * nu
    lam1 = b + 0.5 * y + torch.sqrt(b * y + 0.25 * y * y)
    keep = u * (lam1 + b) <= lam1
    lam = torch.where(keep, lam1, b * b / lam1)
    lam = torch.where(b < switch, y, lam)
    return lam.clamp_min(torch.finfo(zeta.dtype).tiny)


def _check_block(x, lam, partner, name: str):
    x = _as_float(x, f"x_{name}")
    if x.dim() != 2:
        raise ValueError(f"x_{name} must have shape (n_{name}, D), got {tuple(x.shape)}")
    lam = _check_lam(lam, f"lam_{name}")
    partner = _as_float(partner, f"eta_partner_{name}")
    if tuple(lam.shape) != (x.shape[0],):
        raise ValueError(f"lam_{name} must have shape (n_{name},) = ({x.shape[0]},), "
                         f"got {tuple(lam.shape)}")
    if tuple(partner.shape) != tuple(x.shape):
        raise ValueError(f"eta_partner_{name} must have shape {tuple(x.shape)} like x_{name}, "
                         f"got {tuple(partner.shape)}")
    return x, lam, partner


def eta_conditional(x_A, lam_A, eta_partner_A, x_B, lam_B, eta_partner_B, C, eps0, nu0,
                    paper_literal: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Gaussian conditional of one node's discriminant :math:`\eta_z` (Sec. 4.3, App. A.2).

    ``A`` holds the data whose correct node at their active level is :math:`z` (their partner
    is the worst sibling :math:`\eta_{s_{n2}}`); ``B`` the data whose worst sibling is
    :math:`z` (their partner is their correct node :math:`\eta_{v_{n s_{n1}}}`). With
    :math:`a_n = \lambda_n / C + \varepsilon_0`,

    .. math::

        \Lambda_z &= \nu_0^{-2} I + C^2 \sum_{n \in A \cup B} x_n x_n^\top / \lambda_n, \\
        h_z &= C^2 \Big\{\sum_{n\in A} (a_n + x_n^\top \eta_{s_{n2}}) \frac{x_n}{\lambda_n}
              - \sum_{n\in B} (a_n - x_n^\top \eta_{v_{n s_{n1}}}) \frac{x_n}{\lambda_n}\Big\},
        \qquad \eta_z \mid \cdot \sim N(\Lambda_z^{-1} h_z, \Lambda_z^{-1}),

    the exact conditional of the prior :math:`N(0, \nu_0^2 I)` times the kernels
    :math:`K(\lambda_n; \zeta_n)`. ``paper_literal=True`` uses the paper's printed
    prior precision :math:`+\nu_0^2 I` (wrong unless :math:`\nu_0 = 1`).

    Args:
        x_A: ``(n_A, D)`` data of set A (``n_A`` may be 0).
        lam_A: ``(n_A,)`` their augmentation variables (> 0).
        eta_partner_A: ``(n_A, D)`` each one's worst sibling's :math:`\eta`.
        x_B: ``(n_B, D)`` data of set B.
        lam_B: ``(n_B,)`` (> 0).
        eta_partner_B: ``(n_B, D)`` each one's correct node's :math:`\eta`.
        C: regularisation constant (> 0).
        eps0: margin :math:`\varepsilon_0` (finite).
        nu0: prior scale :math:`\nu_0` (> 0).
        paper_literal: use the printed :math:`+\nu_0^2 I`.

    Returns:
        ``(mean, precision)``: ``(D,)`` and ``(D, D)`` tensors.

    Example:
        >>> x = torch.tensor([[2.0]], dtype=torch.float64)
        >>> e = torch.zeros(0, 1, dtype=torch.float64)
        >>> mean, prec = eta_conditional(x, torch.ones(1, dtype=torch.float64), torch.zeros(1, 1,
        ...     dtype=torch.float64), e, e[:, 0], e, C=1.0, eps0=1.0, nu0=1.0)
        >>> round(float(mean), 12), prec.tolist()  # h = (1 + 1) * 2 = 4, Lambda = 1 + 4
        (0.8, [[5.0]])
    """
    C = _check_c(C)
    eps0 = _check_real(eps0, "eps0")
    nu0 = _check_real(nu0, "nu0", positive=True)
    if not isinstance(paper_literal, bool):
        raise TypeError(f"paper_literal must be a bool, got {type(paper_literal).__name__}")
    x_A, lam_A, p_A = _check_block(x_A, lam_A, eta_partner_A, "A")
    x_B, lam_B, p_B = _check_block(x_B, lam_B, eta_partner_B, "B")
    if x_A.shape[1] != x_B.shape[1]:
        raise ValueError(f"x_A and x_B must have the same dimension D, got {x_A.shape[1]} "
                         f"and {x_B.shape[1]}")
    return _eta_conditional(x_A, lam_A, p_A, x_B, lam_B, p_B, C, eps0, nu0, paper_literal)


def _eta_conditional(x_A, lam_A, p_A, x_B, lam_B, p_B, C: float, eps0: float, nu0: float,
                     paper_literal: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`eta_conditional` on checked arguments (the sampler's step for every node)."""
    D = x_A.shape[1]
    prior = nu0 ** 2 if paper_literal else nu0 ** -2
    scaled_A = x_A / lam_A.unsqueeze(-1)
    scaled_B = x_B / lam_B.unsqueeze(-1)
    precision = prior * torch.eye(D, dtype=x_A.dtype, device=x_A.device) + C * C * (
        scaled_A.mT @ x_A + scaled_B.mT @ x_B)
    coef_A = lam_A / C + eps0 + (x_A * p_A).sum(-1)
    coef_B = lam_B / C + eps0 - (x_B * p_B).sum(-1)
    h = C * C * ((coef_A.unsqueeze(-1) * scaled_A).sum(0) - (coef_B.unsqueeze(-1) * scaled_B).sum(0))
    mean = torch.cholesky_solve(h.unsqueeze(-1), torch.linalg.cholesky(precision)).squeeze(-1)
    return mean, precision


@torch.no_grad()
def sample_gaussian_precision(mean, precision, generator: torch.Generator) -> torch.Tensor:
    r"""Draw :math:`N(\mu, \Lambda^{-1})` given the precision: :math:`\mu + L^{-\top} z` with
    :math:`\Lambda = L L^\top` and :math:`z \sim N(0, I)` (no matrix inverse is formed).

    Args:
        mean: ``(..., D)`` means, e.g. from :func:`eta_conditional`.
        precision: ``(..., D, D)`` symmetric positive definite precisions.
        generator: ``torch.Generator`` on ``mean``'s device.

    Returns:
        ``(..., D)`` draws.

    Example:
        >>> draw = sample_gaussian_precision(torch.zeros(2, dtype=torch.float64),
        ...     torch.eye(2, dtype=torch.float64) * 4, torch.Generator().manual_seed(0))
        >>> draw.shape
        torch.Size([2])
    """
    mean = _as_float(mean, "mean")
    precision = _as_float(precision, "precision")
    if mean.dim() < 1 or precision.shape != mean.shape + mean.shape[-1:]:
        raise ValueError(f"precision must have shape {tuple(mean.shape) + tuple(mean.shape[-1:])} "
                         f"for mean of shape {tuple(mean.shape)}, got {tuple(precision.shape)}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return _sample_gaussian_precision(mean, precision, generator)


def _sample_gaussian_precision(mean: torch.Tensor, precision: torch.Tensor,
                               generator: torch.Generator) -> torch.Tensor:
    """:func:`sample_gaussian_precision` on checked arguments; a precision that is not
    positive definite still raises (a numerical failure, not an input check)."""
    factor, info = torch.linalg.cholesky_ex(precision)
    if bool((info != 0).any()):
        raise ValueError("precision must be symmetric positive definite: Cholesky failed")
    z = torch.randn(mean.shape, dtype=mean.dtype, device=mean.device, generator=generator)
    offset = torch.linalg.solve_triangular(factor.mT, z.unsqueeze(-1), upper=True).squeeze(-1)
    return mean + offset
