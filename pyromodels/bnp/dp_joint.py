r"""Log joint densities of the DP mixture with Normal-Gamma base, and label-invariant summaries.

With the parameters instantiated (DDPM paper eqs. 16-19, the flow's log-determinant being 0):

.. math::

    \log p(c, \mu, \lambda, Z) = \log \mathrm{CRP}(c; \alpha)
        + \sum_k \log NG(\mu_k, \lambda_k \mid \mu_0, \kappa_0, \alpha_0, \beta_0)
        + \sum_i \log N(z_i \mid \mu_{c_i}, \lambda_{c_i}^{-1} I_d).

Collapsed over the parameters, :math:`\log p(c, Z) = \log\mathrm{CRP}(c; \alpha) + \sum_k
\log m(Z_k)`, with :math:`m(Z_k)` the Normal-Gamma marginal likelihood of cluster :math:`k`'s
points. Normalised over the Bell(N) partitions, the latter is the exact posterior
:math:`p(c \mid Z) \propto \alpha^K \prod_k (n_k - 1)!\, m(Z_k)`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ..checks import as_label_tensor
from ..conjugate import NormalGamma
from .crp import check_concentration, crp_log_prob
from .dp_state import DPState
from .ng_predictive import LOG_2PI, check_data, check_prior
from .partitions import canonical_labels

__all__ = ["log_joint", "collapsed_log_joint", "state_statistics", "StateStatistics"]


def _check_state(z: torch.Tensor, state) -> DPState:
    if not isinstance(state, DPState):
        raise TypeError(f"state must be a DPState, got {type(state).__name__}")
    if state.num_points != z.shape[0] or state.dim != z.shape[1]:
        raise ValueError(f"state is for {state.num_points} points of dimension {state.dim}, "
                         f"but z has shape {tuple(z.shape)}")
    return state


def log_joint(z, state: DPState, prior: NormalGamma, alpha) -> torch.Tensor:
    """Log joint of the data, the partition and the instantiated cluster parameters.

    Args:
        z: ``(N, d)`` data.
        state: a state holding a parameter draw (``has_params``).
        prior: Normal-Gamma base measure.
        alpha: DP concentration (> 0).

    Returns:
        0-dim float64 tensor.

    Raises:
        ValueError: a state without parameters, or a state for other data.

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> from pyromodels.bnp import init_state
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 1.0, 2.0, 1.0)
        >>> z = torch.tensor([[0.3]], dtype=torch.float64)
        >>> st = init_state(z, [0], prior, params=(torch.zeros(1, 1), torch.ones(1)))
        >>> value = float(prior.log_prob(torch.zeros(1), 1.0)) - 0.5 * math.log(2 * math.pi) - 0.045
        >>> abs(float(log_joint(z, st, prior, 1.0)) - value) < 1e-12
        True
    """
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    alpha = check_concentration(alpha)
    state = _check_state(z, state)
    _, mu, lam = state.cluster_params()
    s = state.active_slots
    # Position of each point's cluster among the occupied ones.
    rank = torch.empty(state.capacity, dtype=torch.int64)
    rank[s] = torch.arange(s.numel())
    idx = rank[state.slot]
    d = z.shape[1]
    lam_i = lam[idx]
    lik = 0.5 * d * (torch.log(lam_i) - LOG_2PI) - 0.5 * lam_i * ((z - mu[idx]) ** 2).sum(-1)
    return crp_log_prob(state.counts[s], alpha) + prior.log_prob(mu, lam).sum() + lik.sum()


def collapsed_log_joint(z, labels, prior: NormalGamma, alpha) -> torch.Tensor:
    """Log joint of the data and the partition, the cluster parameters integrated out.

    Args:
        z: ``(N, d)`` data.
        labels: ``(N,)`` non-negative integer labels (only equality matters), or a
            :class:`~pyromodels.bnp.dp_state.DPState`.
        prior: Normal-Gamma base measure.
        alpha: DP concentration (> 0).

    Returns:
        0-dim float64 tensor.

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 1.0, 2.0, 1.0)
        >>> z = torch.tensor([[0.3], [0.4]], dtype=torch.float64)
        >>> together = collapsed_log_joint(z, [0, 0], prior, 1.0)
        >>> apart = collapsed_log_joint(z, [0, 1], prior, 1.0)
        >>> bool(together > apart)
        True
    """
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    alpha = check_concentration(alpha)
    if isinstance(labels, DPState):
        labels = _check_state(z, labels).assignments
    lab = as_label_tensor(labels, "labels").cpu()
    if lab.numel() != z.shape[0]:
        raise ValueError(f"labels must have one entry per row of z ({z.shape[0]}), got "
                         f"{lab.numel()}")
    lab = canonical_labels(lab)
    k = int(lab.max()) + 1
    counts = torch.bincount(lab, minlength=k).double()
    sums = torch.zeros(k, z.shape[1], dtype=torch.float64).index_add_(0, lab, z)
    sumsq = torch.zeros(k, dtype=torch.float64).index_add_(0, lab, (z * z).sum(1))
    log_ml = prior.log_marginal_likelihood(counts, sums, sumsq).sum()
    return crp_log_prob(counts.long(), alpha) + log_ml


class StateStatistics(NamedTuple):
    """Label-invariant summaries of a state.

    Attributes:
        num_clusters: ``K``.
        log_joint: instantiated log joint (NaN when the state holds no parameters).
        collapsed_log_joint: log joint with the parameters integrated out.
        sizes: ``(K,)`` int64 cluster sizes, sorted descending.
    """

    num_clusters: int
    log_joint: float
    collapsed_log_joint: float
    sizes: torch.Tensor


def state_statistics(z, state: DPState, prior: NormalGamma, alpha) -> StateStatistics:
    """:class:`StateStatistics` of ``state`` (unchanged by relabelling the clusters).

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> from pyromodels.bnp import init_state
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 1.0, 2.0, 1.0)
        >>> z = torch.tensor([[0.0], [0.1], [4.0]], dtype=torch.float64)
        >>> stats = state_statistics(z, init_state(z, [1, 1, 0], prior, algorithm="alg3"),
        ...                          prior, 1.0)
        >>> stats.num_clusters, stats.sizes.tolist(), math.isnan(stats.log_joint)
        (2, [2, 1], True)
    """
    z = check_data(z)
    state = _check_state(z, state)
    joint = float(log_joint(z, state, prior, alpha)) if state.has_params else math.nan
    collapsed = float(collapsed_log_joint(z, state.assignments, prior, alpha))
    sizes = torch.sort(state.cluster_sizes, descending=True).values
    return StateStatistics(state.num_clusters, joint, collapsed, sizes)
