r"""Active latent units, and the warning a deep latent-variable fit gives when none is active.

A fit with a recognition network (a VAE, the LTVAE, SCDC, BayesSCDC) can end at *posterior
collapse*: the decoder ignores the latent code, and the recognition network gives every item
the same posterior, the prior's. The loss then looks settled and the fit returns, but its
clusters and codes say nothing about the data. The fits of those families end by measuring
it with the *active units* statistic of Burda, Grosse and Salakhutdinov (2016), "Importance
weighted autoencoders", Sec. 5.2: a latent coordinate :math:`u` is active when

.. math::

    A_u = \mathrm{Var}_i\bigl(E_q[x_u \mid o_i]\bigr) > \delta \, s_u,

the variance across the training items of the recognition mean above a threshold
:math:`\delta = 0.01` (:data:`ACTIVE_UNIT_THRESHOLD`, Burda et al.'s) times the unit's
reference scale :math:`s_u`. The variance is the items' own (divisor ``N``, not ``N - 1``).

The scale. Burda et al. compare with 0.01 itself: their prior is :math:`N(0, I)`, whose
variance is 1 in every unit, so :math:`s_u = 1` (the VAE and the LTVAE, whose tree prior
starts every component at covariance :math:`\alpha I`, keep this). A model whose latent prior
is a *learned* Gaussian mixture (SCDC, BayesSCDC) can put the whole latent space at any
scale, with the decoder following, so an absolute 0.01 would say nothing: there :math:`s_u` is
the prior's own marginal variance of unit :math:`u` (:func:`mixture_variance`), which is 1 for
Burda et al.'s prior. The statistic then reads "the items' recognition means spread over at
least 1% of the prior's variance", whatever the scale.

The rule. :func:`check_latent_activity` records the count in the fit's diagnostics
(``active_units`` and ``latent_dim``) and emits one :class:`PosteriorCollapseWarning` when
*no* unit is active (full collapse: every item is encoded alike). A fit with some but not all
units active is not warned about: unused units are common, and harmless, in a fit whose
latent space is larger than the data need; the count is there to read.

Example:
    >>> means = torch.tensor([[0.0, 1.0], [0.0, -1.0], [0.0, 1.0], [0.0, -1.0]])
    >>> active_units(means), unit_activity(means).tolist()
    (1, [0.0, 1.0])
"""

from __future__ import annotations

import warnings

import torch

from ..checks import check_bool

__all__ = [
    "ACTIVE_UNIT_THRESHOLD",
    "PosteriorCollapseWarning",
    "unit_activity",
    "active_units",
    "mixture_variance",
    "check_latent_activity",
]

#: a unit is active when its recognition means vary by more than this times its scale
#: (Burda, Grosse and Salakhutdinov 2016, Sec. 5.2)
ACTIVE_UNIT_THRESHOLD = 0.01


class PosteriorCollapseWarning(UserWarning):
    """A deep latent-variable fit ended with no active latent unit: its recognition network
    gives every training item (nearly) the same latent mean, so the decoder ignores the code
    and the clusters or features say nothing about the data (posterior collapse). Silence it
    with ``diagnostic_warnings=False`` on the fit, or with
    ``warnings.filterwarnings("ignore", category=PosteriorCollapseWarning)``."""


def _means(means) -> torch.Tensor:
    if not isinstance(means, torch.Tensor):
        raise TypeError(f"means must be a torch.Tensor (N, d), got {type(means).__name__}")
    if means.dim() != 2 or means.shape[0] < 1 or means.shape[1] < 1:
        raise ValueError(f"means must be (N, d) with N, d >= 1, got shape {tuple(means.shape)}")
    if not means.is_floating_point() or not bool(torch.isfinite(means).all()):
        raise ValueError("means must be finite floating-point values")
    return means.detach()


def unit_activity(means) -> torch.Tensor:
    """The variance across items of each unit's recognition mean, :math:`A_u`.

    Args:
        means: ``(N, d)`` :math:`E_q[x \\mid o_i]` of the ``N`` items.

    Returns:
        ``(d,)`` float64 tensor, the variance of each column of ``means`` (divisor ``N``).
    """
    means = _means(means).double()
    return means.var(dim=0, correction=0)


def active_units(means, threshold: float = ACTIVE_UNIT_THRESHOLD, scale=1.0) -> int:
    """The number of active units: those whose :func:`unit_activity` exceeds ``threshold``
    times ``scale``.

    Args:
        means: ``(N, d)`` recognition means of the items.
        threshold: :math:`\\delta` (Burda et al.: 0.01), positive.
        scale: the units' reference variances :math:`s_u`: a positive number or a ``(d,)``
            tensor of them (1: an :math:`N(0, I)` prior's, Burda et al.'s absolute rule).

    Returns:
        An ``int`` in ``0 .. d``.

    Example:
        >>> means = torch.tensor([[0.0, 0.18], [0.0, 0.0]])  # unit 1 varies by 0.0081
        >>> active_units(means), active_units(means, scale=0.5)
        (0, 1)
    """
    activity = unit_activity(means)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not threshold > 0:
        raise ValueError(f"threshold must be a positive number, got {threshold!r}")
    scale = torch.as_tensor(scale, dtype=torch.float64).detach().to(activity.device)
    if scale.dim() > 1 or (scale.dim() == 1 and scale.shape[0] != activity.shape[0]):
        raise ValueError(f"scale must be a number or a ({activity.shape[0]},) tensor, got shape "
                         f"{tuple(scale.shape)}")
    if not bool(torch.isfinite(scale).all()) or not bool((scale > 0).all()):
        raise ValueError("scale must be finite and positive")
    return int((activity > threshold * scale).sum())


def mixture_variance(weights, locs, variances) -> torch.Tensor:
    r"""The marginal variance of each coordinate of a Gaussian mixture,
    :math:`\sum_k \pi_k (\Sigma_{k,uu} + \mu_{k,u}^2) - (\sum_k \pi_k \mu_{k,u})^2`.

    Args:
        weights: ``(K,)`` mixture weights (summing to 1).
        locs: ``(K, d)`` component means.
        variances: ``(K, d)`` the components' variances of each coordinate (the diagonals of
            their covariances).

    Returns:
        ``(d,)`` float64 tensor.

    Example:
        >>> mixture_variance(torch.tensor([0.5, 0.5]), torch.tensor([[-1.0], [1.0]]),
        ...                  torch.tensor([[0.5], [0.5]])).tolist()
        [1.5]
    """
    w, m, v = (torch.as_tensor(t).detach().double() for t in (weights, locs, variances))
    if w.dim() != 1 or m.dim() != 2 or m.shape[0] != w.shape[0] or v.shape != m.shape:
        raise ValueError(f"weights must be (K,), locs and variances (K, d), got shapes "
                         f"{tuple(w.shape)}, {tuple(m.shape)}, {tuple(v.shape)}")
    mean = w @ m
    return (w @ (v + m.square()) - mean.square()).clamp_min(0.0)


def check_latent_activity(means, *, fit: str, remedies: str, scale=1.0,
                          scale_note: str = "", diagnostic_warnings: bool = True,
                          stacklevel: int = 3) -> dict:
    """Count the active units of a fit's training items and warn on full collapse.

    Args:
        means: ``(N, d)`` recognition means of the training items.
        fit: the fit's name in the message (``"BayesSCDC.fit"``).
        remedies: the sentence of remedies that ends the message.
        scale: the units' reference variances (:func:`active_units`).
        scale_note: what ``scale`` is, for the message (``""``: Burda et al.'s absolute rule).
        diagnostic_warnings: ``False``: count, but do not warn.
        stacklevel: of the warning (3: the caller of the fit that calls this).

    Returns:
        ``{"active_units": int, "latent_dim": int}``, the entries a fit adds to its
        ``diagnostics``.
    """
    diagnostic_warnings = check_bool(diagnostic_warnings, "diagnostic_warnings")
    count = active_units(means, scale=scale)
    dim = int(means.shape[1])
    if count == 0 and diagnostic_warnings:
        spread = float(unit_activity(means).max())
        note = f" ({scale_note})" if scale_note else ""
        warnings.warn(
            f"{fit}: posterior collapse: 0 of {dim} latent units are active (largest variance "
            f"across items of a unit's recognition mean {spread:.3g}, threshold "
            f"{ACTIVE_UNIT_THRESHOLD} times the unit's scale{note}). The recognition network "
            "gives every item nearly the same latent posterior, so the decoder ignores the "
            f"code and the fit says nothing about the data (after only a few epochs it may "
            f"not have learned yet). {remedies}",
            PosteriorCollapseWarning, stacklevel=stacklevel)
    return {"active_units": count, "latent_dim": dim}
