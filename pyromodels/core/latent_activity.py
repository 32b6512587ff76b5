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

The code's information (clustering models). Burda et al.'s count misses a partial collapse
that a clustering model can reach: the recognition network gives every item a weak potential,
the local posteriors :math:`q(x_i)` are then mostly the prior component the item is assigned
to, and with every item on one component the means still vary a little along a few units,
each above 1% of a (shrunken) fitted prior's variance, while the posteriors overlap almost
completely. What a clustering code must do is tell items apart, so the second statistic is
how much the code says about *which item* it encodes. Draw an item :math:`i` uniformly and
:math:`x \sim q(x_i)`; the aggregate posterior :math:`\bar q(x) = N^{-1}\sum_i q(x_i)` has
covariance :math:`T = \mathrm{Cov}_i(E_q[x_i]) + N^{-1}\sum_i \Sigma_i` (the law of total
covariance, :math:`\Sigma_i` the covariance of :math:`q(x_i)`), and as a Gaussian has the
largest entropy of any law with that covariance,

.. math::

    I(i; x) = h(\bar q) - N^{-1} \textstyle\sum_i h(q(x_i)) \le \tfrac12 \bigl[\log\det T
    - N^{-1}\textstyle\sum_i \log\det \Sigma_i\bigr]

for Gaussian :math:`q(x_i)` (:func:`code_information`). The bound is invariant under any
invertible linear map of the latent space (the determinants' factors cancel), so it needs no
reference scale. The clusters :math:`c(i)` are a function of the item, so the code carries
at most this much about them (data processing); if it is below one bit (:math:`\log 2`,
:data:`MIN_CODE_INFORMATION`), Fano's inequality, :math:`h(P_e) \ge \log 2 - I` for two
equal clusters (:math:`h` the binary entropy in nats), keeps the error :math:`P_e` of *any*
rule that reads them off the code above 0, and the less information the nearer to chance
(above 0.28 at a tenth of a nat): the code cannot hold the clustering. The threshold is a
property of the task (separating at least two groups), not of a data set. It is meant for the clustering
models (BayesSCDC passes its local posteriors' covariances); for a VAE, whose code need not
separate groups, Burda et al.'s count alone is the rule.

The rule. :func:`check_latent_activity` records the count in the fit's diagnostics
(``active_units`` and ``latent_dim``; with covariances also ``code_information`` in nats and
``collapsed``) and emits one :class:`PosteriorCollapseWarning` when *no* unit is active
(full collapse: every item is encoded alike) or, given the covariances, when the code carries
less than one bit about the items. A fit with some but not all units active and an
informative code is not warned about: unused units are common, and harmless, in a fit whose
latent space is larger than the data need; the count is there to read.

Example:
    >>> means = torch.tensor([[0.0, 1.0], [0.0, -1.0], [0.0, 1.0], [0.0, -1.0]])
    >>> active_units(means), unit_activity(means).tolist()
    (1, [0.0, 1.0])
"""

from __future__ import annotations

import math
import warnings

import torch

from ..checks import check_bool

__all__ = [
    "ACTIVE_UNIT_THRESHOLD",
    "PosteriorCollapseWarning",
    "unit_activity",
    "active_units",
    "mixture_variance",
    "MIN_CODE_INFORMATION",
    "code_information",
    "check_latent_activity",
]

#: a unit is active when its recognition means vary by more than this times its scale
#: (Burda, Grosse and Salakhutdinov 2016, Sec. 5.2)
ACTIVE_UNIT_THRESHOLD = 0.01
#: the least information (nats) about the items a clustering code must carry: one bit, what
#: telling two equal groups of items apart takes (module docstring)
MIN_CODE_INFORMATION = math.log(2)


class PosteriorCollapseWarning(UserWarning):
    """A deep latent-variable fit ended with no active latent unit, or (a clustering model)
    with a code too weak to tell its items apart: its recognition network gives every
    training item (nearly) the same latent posterior, so the decoder ignores the code and the
    clusters or features say nothing about the data (posterior collapse). Silence it
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


def code_information(means, covariances) -> float:
    r"""An upper bound, in nats, on the information :math:`I(i; x)` the local posteriors
    :math:`q(x_i) = N(m_i, \Sigma_i)` carry about which item they encode:
    :math:`\tfrac12[\log\det(\mathrm{Cov}_i(m_i) + \bar\Sigma) - N^{-1}\sum_i\log\det\Sigma_i]`
    with :math:`\bar\Sigma` the mean covariance (module docstring). 0 when every item has the
    same posterior.

    Args:
        means: ``(N, d)`` the means :math:`m_i`.
        covariances: ``(N, d, d)`` the covariances :math:`\Sigma_i` (positive definite), or
            ``(N, d)`` their diagonals for diagonal Gaussians.

    Returns:
        A ``float`` :math:`\ge 0`.

    Example:
        >>> means = torch.tensor([[-1.0], [1.0]])  # spread 1 against posterior variance 1
        >>> round(code_information(means, torch.ones(2, 1)), 4)  # log(2) / 2
        0.3466
    """
    means = _means(means).double()
    if not isinstance(covariances, torch.Tensor):
        raise TypeError(f"covariances must be a torch.Tensor, got {type(covariances).__name__}")
    cov = covariances.detach().to(device=means.device, dtype=torch.float64)
    n, d = means.shape
    if cov.shape == (n, d):
        cov = torch.diag_embed(cov)
    if cov.shape != (n, d, d):
        raise ValueError(f"covariances must be ({n}, {d}, {d}) or ({n}, {d}) like means "
                         f"({n}, {d}), got shape {tuple(covariances.shape)}")
    if not bool(torch.isfinite(cov).all()):
        raise ValueError("covariances must be finite")
    chol, info = torch.linalg.cholesky_ex(0.5 * (cov + cov.mT))
    if bool((info != 0).any()):
        raise ValueError("covariances must be positive definite")
    own = 2 * chol.diagonal(dim1=-2, dim2=-1).log().sum(-1).mean()
    centred = means - means.mean(0)
    total = centred.mT @ centred / n + cov.mean(0)
    return max(0.0, 0.5 * float(torch.logdet(total) - own))


def check_latent_activity(means, *, fit: str, remedies: str, scale=1.0,
                          scale_note: str = "", covariances=None,
                          diagnostic_warnings: bool = True, stacklevel: int = 3) -> dict:
    """Count the active units of a fit's training items and warn on collapse (module
    docstring: no active unit or, given ``covariances``, less than one bit of code).

    Args:
        means: ``(N, d)`` recognition means of the training items.
        fit: the fit's name in the message (``"BayesSCDC.fit"``).
        remedies: the sentence of remedies that ends the message.
        scale: the units' reference variances (:func:`active_units`).
        scale_note: what ``scale`` is, for the message (``""``: Burda et al.'s absolute rule).
        covariances: ``None``, or the ``(N, d, d)`` (or diagonal ``(N, d)``) covariances of
            the items' Gaussian local posteriors: a clustering model's, whose code must also
            carry :data:`MIN_CODE_INFORMATION` about the items (:func:`code_information`).
        diagnostic_warnings: ``False``: count, but do not warn.
        stacklevel: of the warning (3: the caller of the fit that calls this).

    Returns:
        ``{"active_units": int, "latent_dim": int}``, the entries a fit adds to its
        ``diagnostics``; with ``covariances`` also ``"code_information"`` (nats) and
        ``"collapsed"`` (``bool``, whether the fit warns or would).
    """
    diagnostic_warnings = check_bool(diagnostic_warnings, "diagnostic_warnings")
    count = active_units(means, scale=scale)
    dim = int(means.shape[1])
    result = {"active_units": count, "latent_dim": dim}
    note = f" ({scale_note})" if scale_note else ""
    tail = ("The recognition network gives every item nearly the same latent posterior, so "
            "the decoder ignores the code and the fit says nothing about the data (after only "
            f"a few epochs it may not have learned yet). {remedies}")
    finding = None
    if count == 0:
        spread = float(unit_activity(means).max())
        finding = (f"{fit}: posterior collapse: 0 of {dim} latent units are active (largest "
                   f"variance across items of a unit's recognition mean {spread:.3g}, threshold "
                   f"{ACTIVE_UNIT_THRESHOLD} times the unit's scale{note}). {tail}")
    if covariances is not None:
        information = code_information(means, covariances)
        result["code_information"] = information
        if finding is None and information < MIN_CODE_INFORMATION:
            finding = (f"{fit}: posterior collapse: the items' latent posteriors carry at most "
                       f"{information:.3g} nats about which item they encode, less than one bit "
                       f"({MIN_CODE_INFORMATION:.3g} nats), too little to tell two equal groups "
                       f"of items apart ({count} of {dim} latent units pass the active-unit "
                       f"threshold, {ACTIVE_UNIT_THRESHOLD} times the unit's scale{note}). {tail}")
        result["collapsed"] = finding is not None
    if finding is not None and diagnostic_warnings:
        warnings.warn(finding, PosteriorCollapseWarning, stacklevel=stacklevel)
    return result
