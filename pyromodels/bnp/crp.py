r"""The Chinese restaurant process: its partition probability, sampler and concentration update.

With concentration :math:`\alpha > 0`, the CRP seats customer :math:`i` at an occupied table
:math:`k` with probability :math:`n_k / (i - 1 + \alpha)` and at a new table with probability
:math:`\alpha / (i - 1 + \alpha)` (DDPM paper, eq. 8). The probability of a partition of
:math:`N` items into blocks of sizes :math:`n_1, \dots, n_K` (the exchangeable partition
probability function, EPPF) is

.. math::

    p(c) = \alpha^K \frac{\Gamma(\alpha)}{\Gamma(\alpha + N)} \prod_{k=1}^K \Gamma(n_k),

and the expected number of blocks is :math:`E[K] = \sum_{i=1}^N \alpha / (\alpha + i - 1)`.

Example:
    >>> import torch
    >>> round(float(crp_log_prob(torch.tensor([2, 1]), 1.0)), 6)  # 1 * 1 * 1 / 3!
    -1.791759
"""

from __future__ import annotations

import math
import numbers

import torch

from ..checks import check_int, check_positive
from ..conjugate.random import sample_beta, sample_gamma

__all__ = ["crp_log_prob", "crp_expected_clusters", "sample_crp", "resample_concentration"]


def check_concentration(alpha, name: str = "alpha") -> float:
    """``alpha`` (a real number or a one-element tensor) as a float, finite and > 0."""
    if isinstance(alpha, torch.Tensor):
        if alpha.numel() != 1 or not alpha.is_floating_point():
            raise TypeError(
                f"{name} must be a positive real number or a one-element floating tensor, "
                f"got a tensor of shape {tuple(alpha.shape)} and dtype {alpha.dtype}"
            )
        alpha = float(alpha)
    return check_positive(alpha, name)


def check_torch_generator(generator) -> torch.Generator:
    """Raise ``TypeError`` unless ``generator`` is a ``torch.Generator``."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return generator


def _as_sizes(sizes) -> torch.Tensor:
    t = torch.as_tensor(sizes)
    if t.dim() != 1 or t.numel() == 0:
        raise ValueError(f"sizes must be a non-empty 1-D array of block sizes, got shape "
                         f"{tuple(t.shape)}")
    if t.is_floating_point() or t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"sizes must hold integers, got dtype {t.dtype}")
    if not bool((t > 0).all()):
        raise ValueError(f"sizes must all be >= 1, got minimum {int(t.min())}")
    return t.to(torch.float64)


def crp_log_prob(sizes, alpha) -> torch.Tensor:
    r"""Log EPPF of the CRP: :math:`K \log\alpha + \log\Gamma(\alpha) - \log\Gamma(\alpha + N)
    + \sum_k \log\Gamma(n_k)`.

    Args:
        sizes: ``(K,)`` integer block sizes ``n_k >= 1`` (any order), ``N = sum(sizes)``.
        alpha: concentration (> 0).

    Returns:
        0-dim float64 tensor.

    Raises:
        ValueError: ``'alpha must be > 0'``, empty sizes or a size below 1.
        TypeError: non-integer sizes.

    Example:
        >>> math.isclose(float(crp_log_prob(torch.tensor([1, 1]), 1.0)), math.log(0.5))
        True
    """
    alpha = check_concentration(alpha)
    n = _as_sizes(sizes)
    total = float(n.sum())
    return (
        n.numel() * math.log(alpha)
        + math.lgamma(alpha)
        - math.lgamma(alpha + total)
        + torch.lgamma(n).sum()
    )


def crp_expected_clusters(n: int, alpha) -> float:
    r"""Prior mean of the number of blocks, :math:`\sum_{i=1}^n \alpha / (\alpha + i - 1)`.

    Args:
        n: number of items (>= 1).
        alpha: concentration (> 0).

    Example:
        >>> crp_expected_clusters(3, 1.0)  # 1 + 1/2 + 1/3
        1.8333333333333333
    """
    n = check_int(n, "n", minimum=1)
    alpha = check_concentration(alpha)
    return math.fsum(alpha / (alpha + i) for i in range(n))


def sample_crp(n: int, alpha, generator: torch.Generator) -> torch.Tensor:
    """Seat ``n`` customers one after another (eq. 8).

    Args:
        n: number of items (>= 1).
        alpha: concentration (> 0).
        generator: ``torch.Generator`` giving the ``n`` uniforms used (one per customer).

    Returns:
        ``(n,)`` int64 labels ``0..K-1`` in order of first appearance.

    Example:
        >>> labels = sample_crp(6, 1.0, torch.Generator().manual_seed(0))
        >>> int(labels[0]), labels.shape
        (0, torch.Size([6]))
    """
    n = check_int(n, "n", minimum=1)
    alpha = check_concentration(alpha)
    check_torch_generator(generator)
    u = torch.rand(n, dtype=torch.float64, generator=generator).tolist()
    counts: list[int] = []
    labels = []
    for i, ui in enumerate(u):
        # Inverse CDF over (table 0, ..., table K-1, new table) with weights (n_k, alpha).
        target = ui * (i + alpha)
        acc, choice = 0.0, len(counts)
        for k, c in enumerate(counts):
            acc += c
            if target < acc:
                choice = k
                break
        if choice == len(counts):
            counts.append(0)
        counts[choice] += 1
        labels.append(choice)
    return torch.tensor(labels, dtype=torch.int64)


def resample_concentration(alpha, num_clusters: int, n: int, shape, rate,
                           generator: torch.Generator) -> float:
    r"""One Escobar & West (1995) update of the concentration under a Gamma(shape, rate) prior.

    Given :math:`K` blocks among :math:`n` items, :math:`p(\alpha \mid K) \propto
    \mathrm{Gamma}(\alpha \mid a, b)\, \alpha^K \Gamma(\alpha) / \Gamma(\alpha + n)`. With the
    auxiliary :math:`\eta \sim \mathrm{Beta}(\alpha + 1, n)` the pair is Gibbs-sampled exactly:

    .. math::

        \alpha \mid \eta, K \sim \pi\, \mathrm{Gamma}(a + K, b - \log\eta)
            + (1 - \pi)\, \mathrm{Gamma}(a + K - 1, b - \log\eta), \qquad
        \frac{\pi}{1 - \pi} = \frac{a + K - 1}{n (b - \log\eta)}.

    This is not part of the DDPM paper, which fixes :math:`\alpha`.

    Args:
        alpha: current concentration (> 0).
        num_clusters: number of occupied blocks ``K`` (``1 <= K <= n``).
        n: number of items (>= 1).
        shape: Gamma prior shape ``a`` (> 0).
        rate: Gamma prior rate ``b`` (> 0).
        generator: ``torch.Generator`` for the three draws (one Beta, one uniform, one Gamma).

    Returns:
        The new concentration, a float.

    Example:
        >>> a = resample_concentration(1.0, 3, 10, 1.0, 1.0, torch.Generator().manual_seed(0))
        >>> a > 0
        True
    """
    alpha = check_concentration(alpha)
    n = check_int(n, "n", minimum=1)
    k = check_int(num_clusters, "num_clusters", minimum=1, maximum=n)
    for value, name in ((shape, "shape"), (rate, "rate")):
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    shape, rate = check_positive(shape, "shape"), check_positive(rate, "rate")
    check_torch_generator(generator)
    one = torch.ones((), dtype=torch.float64)
    eta = float(sample_beta(one * (alpha + 1.0), one * n, generator))
    post_rate = rate - math.log(eta)
    odds = (shape + k - 1) / (n * post_rate)
    u = float(torch.rand((), dtype=torch.float64, generator=generator))
    post_shape = shape + k if u < odds / (1.0 + odds) else shape + k - 1
    return float(sample_gamma(one * post_shape, generator)) / post_rate
