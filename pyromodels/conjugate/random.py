"""Samplers driven by an explicit ``torch.Generator``.

``torch.distributions`` samplers draw from the global random state only, so a Gibbs block that
must be reproducible from its own generator draws through these functions instead. Each
function returns one draw per entry of its (broadcast) parameters, on the parameters' device;
to draw many, expand the parameters (``alpha.expand(n)``). ``generator=None`` uses torch's
global generator. The samplers are not differentiable.

Gamma, Dirichlet and Beta draws come from torch's own generator-driven kernels (Marsaglia and
Tsang's method, ``torch._standard_gamma`` and ``torch._sample_dirichlet``) when every
concentration is at least :func:`direct_floor` of the dtype, where a draw underflows to zero
with probability below ``e^-30``; smaller concentrations go through the log-space sampler here
(:func:`sample_log_gamma`), which never underflows. Both are exact samplers, so only the random
stream differs between the two paths.

Every sampler checks its arguments; ``check=False`` skips that, for a caller that checked them
once outside its loop (a Gibbs sweep drawing from parameters it computed itself).

Example:
    >>> import torch
    >>> gen = torch.Generator().manual_seed(0)
    >>> x = sample_gamma(torch.full((3,), 0.5, dtype=torch.float64), gen)
    >>> x.shape
    torch.Size([3])
"""

from __future__ import annotations

import math

import torch

from ..checks import broadcast_shapes
from ._base import check_generator, check_positive_tensor, coerce_params

__all__ = [
    "direct_floor",
    "sample_normal",
    "sample_log_gamma",
    "sample_gamma",
    "sample_beta",
    "sample_dirichlet",
    "sample_categorical",
    "sample_wishart",
]


def _normal(shape, ref: torch.Tensor, generator) -> torch.Tensor:
    return torch.randn(shape, dtype=ref.dtype, device=ref.device, generator=generator)


def _uniform(shape, ref: torch.Tensor, generator) -> torch.Tensor:
    return torch.rand(shape, dtype=ref.dtype, device=ref.device, generator=generator)


@torch.no_grad()
def sample_normal(loc, scale, generator: torch.Generator | None = None, *,
                  check: bool = True) -> torch.Tensor:
    """Draw ``loc + scale * N(0, 1)``, one per broadcast entry.

    Args:
        loc: mean, any shape.
        scale: standard deviation (> 0), broadcastable with ``loc``.
        generator: ``torch.Generator`` on the parameters' device, or ``None``.
        check: check the arguments (see the module docs).

    Example:
        >>> sample_normal(torch.zeros(2), 1.0, torch.Generator().manual_seed(1)).shape
        torch.Size([2])
    """
    if check:
        p = coerce_params(loc=loc, scale=scale)
        check_positive_tensor(p["scale"], "scale")
        check_generator(generator, p["loc"].device)
        loc, scale = p["loc"], p["scale"]
    loc, scale = torch.broadcast_tensors(loc, scale)
    return loc + scale * _normal(loc.shape, loc, generator)


def _marsaglia_tsang_round(d: torch.Tensor, c: torch.Tensor, generator):
    """One proposal per entry: ``(log(d v), accepted)``.

    Marsaglia & Tsang (2000): with ``x ~ N(0, 1)`` and ``v = (1 + c x)^3``, accept ``d v`` when
    ``v > 0`` and ``log u < x^2 / 2 + d - d v + d log v``; the acceptance rate exceeds 0.95.
    """
    x = _normal(d.shape, d, generator)
    v = (1.0 + c * x) ** 3
    log_u = torch.log(_uniform(d.shape, d, generator))
    positive = v > 0
    log_v = torch.log(torch.where(positive, v, torch.ones_like(v)))
    accept = positive & (log_u < 0.5 * x * x + d - d * v + d * log_v)
    return torch.log(d) + log_v, accept


def _log_gamma(alpha: torch.Tensor, generator) -> torch.Tensor:
    """Log of unit-rate Gamma(alpha) draws for validated ``alpha`` (no grad)."""
    flat = alpha.reshape(-1)
    boosted = flat < 1
    d = torch.where(boosted, flat + 1, flat) - 1.0 / 3.0
    c = torch.rsqrt(9.0 * d)
    # A dense first round, then the few rejected entries again until all are accepted.
    out, accept = _marsaglia_tsang_round(d, c, generator)
    pending = torch.nonzero(~accept).flatten()
    while pending.numel():
        value, accept = _marsaglia_tsang_round(d[pending], c[pending], generator)
        out[pending[accept]] = value[accept]
        pending = pending[~accept]
    # Boost for alpha < 1: Gamma(alpha) = Gamma(alpha + 1) * U^(1/alpha), U ~ U(0, 1], kept in
    # log space so that tiny alpha does not underflow.
    log_u = torch.log1p(-_uniform(flat.shape, flat, generator))
    out = torch.where(boosted, out + log_u / flat, out)
    return out.reshape(alpha.shape)


def _checked_concentration(concentration, name: str, generator, check: bool = True) -> torch.Tensor:
    if not check:
        return concentration
    alpha = coerce_params(**{name: concentration})[name]
    check_positive_tensor(alpha, name)
    check_generator(generator, alpha.device)
    return alpha


def direct_floor(dtype: torch.dtype) -> float:
    """The smallest concentration drawn by torch's Gamma kernel: ``30 / -log(tiny)``, where a
    Gamma(alpha) draw, below ``tiny`` with probability about ``tiny^alpha``, underflows with
    probability under ``e^-30`` (0.042 in float64, 0.34 in float32)."""
    return 30.0 / -math.log(torch.finfo(dtype).tiny)


def _direct(alpha: torch.Tensor) -> bool:
    """Whether every concentration is drawn well by torch's kernels (see :func:`direct_floor`)."""
    return alpha.numel() > 0 and bool(alpha.min() >= direct_floor(alpha.dtype))


def _gamma(alpha: torch.Tensor, generator) -> torch.Tensor:
    """Unit-rate Gamma(alpha) draws for validated ``alpha`` (no grad)."""
    if _direct(alpha):
        return torch._standard_gamma(alpha, generator=generator)
    return torch.exp(_log_gamma(alpha, generator))


def _dirichlet(alpha: torch.Tensor, generator) -> torch.Tensor:
    """Dirichlet draws over the last axis for validated ``alpha`` (no grad)."""
    if _direct(alpha):
        return torch._sample_dirichlet(alpha, generator=generator)
    return torch.softmax(_log_gamma(alpha, generator), dim=-1)


@torch.no_grad()
def sample_log_gamma(concentration, generator: torch.Generator | None = None, *,
                     check: bool = True) -> torch.Tensor:
    """Log of unit-rate Gamma(concentration) draws, exact in log space for tiny concentrations.

    For ``alpha < 1`` the draw is ``log G + log(U) / alpha`` with ``G ~ Gamma(alpha + 1)``,
    which stays finite where ``exp`` of it would underflow to zero.

    Args:
        concentration: shape parameter ``alpha > 0``, any shape.
        generator: ``torch.Generator`` on the parameters' device, or ``None``.
        check: check the arguments (see the module docs).

    Returns:
        Tensor of ``concentration``'s shape.
    """
    return _log_gamma(_checked_concentration(concentration, "concentration", generator, check),
                      generator)


@torch.no_grad()
def sample_gamma(concentration, generator: torch.Generator | None = None, *,
                 check: bool = True) -> torch.Tensor:
    """Unit-rate Gamma(concentration) draws by Marsaglia & Tsang's method.

    The density is ``x^(alpha - 1) e^(-x) / Gamma(alpha)``; divide by a rate ``b`` for
    Gamma(alpha, b). Shapes below one use the boost ``Gamma(alpha + 1) * U^(1/alpha)``.

    Args:
        concentration: shape parameter ``alpha > 0``, any shape.
        generator: ``torch.Generator`` on the parameters' device, or ``None``.
        check: check the arguments (see the module docs).

    Returns:
        Tensor of ``concentration``'s shape.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> sample_gamma(torch.tensor([0.1, 1.0, 3.7], dtype=torch.float64), g).shape
        torch.Size([3])
    """
    return _gamma(_checked_concentration(concentration, "concentration", generator, check),
                  generator)


@torch.no_grad()
def sample_dirichlet(concentration, generator: torch.Generator | None = None, *,
                     check: bool = True) -> torch.Tensor:
    """Dirichlet draws over the last axis: normalised Gamma draws (normalised in log space
    where a concentration is below :func:`direct_floor`).

    Args:
        concentration: ``(..., K)`` with every entry > 0 and ``K >= 2``.
        generator: ``torch.Generator`` on the parameters' device, or ``None``.
        check: check the arguments (see the module docs).

    Returns:
        ``(..., K)`` points of the simplex. With tiny concentrations some coordinates may be
        exactly zero (their share is below the smallest float), never NaN.

    Example:
        >>> p = sample_dirichlet(torch.ones(4, 3), torch.Generator().manual_seed(0))
        >>> p.shape
        torch.Size([4, 3])
    """
    alpha = _checked_concentration(concentration, "concentration", generator, check)
    if check and (alpha.dim() < 1 or alpha.shape[-1] < 2):
        raise ValueError(
            "concentration must have at least 2 categories on its last axis, "
            f"got shape {tuple(alpha.shape)}"
        )
    return _dirichlet(alpha, generator)


@torch.no_grad()
def sample_beta(a, b, generator: torch.Generator | None = None, *,
                check: bool = True) -> torch.Tensor:
    """Beta(a, b) draws: the first coordinate of a Dirichlet(a, b) draw (``sigmoid(log G_a -
    log G_b)`` with independent Gamma draws where a shape is below :func:`direct_floor`).

    Args:
        a: first shape parameter (> 0), any shape.
        b: second shape parameter (> 0), broadcastable with ``a``.
        generator: ``torch.Generator`` on the parameters' device, or ``None``.
        check: check the arguments (see the module docs).

    Example:
        >>> sample_beta(2.0, torch.ones(3), torch.Generator().manual_seed(0)).shape
        torch.Size([3])
    """
    if check:
        p = coerce_params(a=a, b=b)
        check_positive_tensor(p["a"], "a")
        check_positive_tensor(p["b"], "b")
        check_generator(generator, p["a"].device)
        a, b = p["a"], p["b"]
    pair = torch.stack(torch.broadcast_tensors(a, b), dim=-1)
    if _direct(pair):
        return torch._sample_dirichlet(pair, generator=generator)[..., 0]
    log_g = _log_gamma(pair, generator)
    return torch.sigmoid(log_g[..., 0] - log_g[..., 1])


@torch.no_grad()
def sample_categorical(logits, generator: torch.Generator | None = None, *,
                       check: bool = True) -> torch.Tensor:
    """Categorical draws over the last axis by the Gumbel-max trick.

    ``argmax_k (logits_k + G_k)`` with ``G_k = -log(-log U_k)`` is distributed as
    ``softmax(logits)``. Logits need not be normalised; ``-inf`` marks an impossible category.

    Args:
        logits: ``(..., K)`` floating tensor with no NaN or ``+inf`` and at least one finite
            entry per row.
        generator: ``torch.Generator`` on the logits' device, or ``None``.
        check: check the arguments (see the module docs).

    Returns:
        ``(...)`` tensor of ``torch.long`` category indices.

    Example:
        >>> sample_categorical(torch.zeros(5, 3), torch.Generator().manual_seed(0)).shape
        torch.Size([5])
    """
    if check:
        logits = _checked_logits(logits, generator)
    u = _uniform(logits.shape, logits, generator)
    # logits + G with G = -log(-log U); the difference is laid out row by row: logits read
    # across their rows (a site's enumerated values moved last) would otherwise leave the
    # argmax striding through memory, 10x slower
    return torch.argmax((logits - torch.log(-torch.log(u))).contiguous(), dim=-1)


def _checked_logits(logits, generator) -> torch.Tensor:
    if not isinstance(logits, torch.Tensor):
        logits = coerce_params(logits=logits)["logits"]
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a floating tensor, got dtype {logits.dtype}")
    if logits.dim() < 1 or logits.shape[-1] < 1:
        raise ValueError(f"logits must have a non-empty last axis, got {tuple(logits.shape)}")
    # one reduction finds all three faults: a row's maximum is NaN where the row holds a NaN,
    # +inf where it holds +inf, and -inf where no entry is finite
    if logits.numel() and not bool(torch.isfinite(logits.amax(-1)).all()):
        if bool(torch.isnan(logits).any()) or bool((logits == float("inf")).any()):
            raise ValueError("logits must not contain NaN or +inf")
        raise ValueError("logits must have at least one finite entry in every row")
    check_generator(generator, logits.device)
    return logits


def _bartlett_factor(df: torch.Tensor, scale_tril: torch.Tensor, generator) -> torch.Tensor:
    """``F = L A`` with ``F F^T ~ Wishart(df, L L^T)`` for validated arguments (no grad).

    Bartlett: ``A`` is lower triangular with ``A_ii^2 ~ chi2(df - i)`` for ``i = 0..d-1`` and
    standard normal entries below the diagonal; ``chi2(k) = 2 Gamma(k / 2)``.
    """
    d = scale_tril.shape[-1]
    batch = broadcast_shapes(df.shape, scale_tril.shape[:-2])
    offsets = torch.arange(d, dtype=df.dtype, device=df.device)
    half_dof = (df.expand(batch).unsqueeze(-1) - offsets) / 2
    diag = torch.sqrt(2.0 * _gamma(half_dof, generator))
    noise = torch.tril(_normal(batch + (d, d), df, generator), diagonal=-1)
    return scale_tril @ (noise + torch.diag_embed(diag))


@torch.no_grad()
def sample_wishart(df, scale_tril, generator: torch.Generator | None = None, *,
                   check: bool = True) -> torch.Tensor:
    """Wishart(df, W) draws by the Bartlett decomposition, with ``W = scale_tril scale_tril^T``.

    The density is ``|X|^((df - d - 1)/2) exp(-tr(W^{-1} X)/2) / (2^(df d/2) |W|^(df/2)
    Gamma_d(df/2))`` and ``E[X] = df W``. Used as a precision matrix ``Lambda``, its inverse
    is InverseWishart(df, W^{-1}).

    Args:
        df: degrees of freedom ``> d - 1``, shape broadcastable with ``scale_tril.shape[:-2]``.
        scale_tril: ``(..., d, d)`` lower-triangular Cholesky factor of ``W`` with a positive
            diagonal.
        generator: ``torch.Generator`` on the parameters' device, or ``None``.
        check: check the arguments (see the module docs).

    Returns:
        ``(..., d, d)`` symmetric positive definite matrices.

    Example:
        >>> eye = torch.eye(2, dtype=torch.float64)
        >>> sample_wishart(5.0, eye, torch.Generator().manual_seed(0)).shape
        torch.Size([2, 2])
    """
    if not check:
        factor = _bartlett_factor(df, scale_tril, generator)
        return factor @ factor.mT
    p = coerce_params(df=df, scale_tril=scale_tril)
    df, tril = p["df"], p["scale_tril"]
    if tril.dim() < 2 or tril.shape[-1] != tril.shape[-2]:
        raise ValueError(f"scale_tril must have shape (..., d, d), got {tuple(tril.shape)}")
    d = tril.shape[-1]
    if bool((torch.triu(tril, diagonal=1) != 0).any()) or not bool(
        (tril.diagonal(dim1=-2, dim2=-1) > 0).all()
    ):
        raise ValueError("scale_tril must be lower triangular with a positive diagonal")
    check_positive_tensor(df, "df", bound=d - 1, label=f"d - 1 = {d - 1}")
    check_generator(generator, df.device)
    factor = _bartlett_factor(df, tril, generator)
    return factor @ factor.mT
