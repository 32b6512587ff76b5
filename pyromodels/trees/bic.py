r"""The BIC score of a latent tree model (spec ``ltvae.md`` §3.5).

.. math::

    \mathrm{BIC}(m \mid D) = \log P(D \mid m, \hat\theta) - \frac{d(m)}{2} \log N,

with :math:`d(m)` the number of free parameters, counted as PLTM-EAST does: the root
:math:`K_r - 1`; each other latent node :math:`K_{\pi(j)} (K_j - 1)`; each pouch of
:math:`d_b` coordinates :math:`K_{\pi(b)} d_b (d_b + 3) / 2` (means plus a full symmetric
covariance), or :math:`K_{\pi(b)} d_b` (means only) when the covariances are fixed at
:math:`\alpha I` and so not estimated.
"""

from __future__ import annotations

import math

from ..checks import check_in
from .em import COVARIANCE_MODES
from .message_passing import tree_log_likelihood
from .params import TreeParams
from .structure import LatentTree

__all__ = ["free_parameters", "tree_bic"]


def free_parameters(tree: LatentTree, covariance: str = "full") -> int:
    """:math:`d(m)`, the number of free parameters of ``tree`` (see the module docstring).

    Args:
        tree: the structure.
        covariance: ``"full"`` (learned covariances) or ``"fixed"`` (means only).

    Example:
        >>> free_parameters(LatentTree.single(3, 2, pouch=True))  # 2 + 3 * (2 + 3)
        17
    """
    if not isinstance(tree, LatentTree):
        raise TypeError(f"tree must be a LatentTree, got {type(tree).__name__}")
    covariance = check_in(covariance, "covariance", COVARIANCE_MODES)
    cards = tree.cardinalities
    count = 0
    for j, p in enumerate(tree.parents):
        count += cards[j] - 1 if p is None else cards[p] * (cards[j] - 1)
    for block, p in zip(tree.pouches, tree.pouch_parents):
        d = len(block)
        count += cards[p] * (d * (d + 3) // 2 if covariance == "full" else d)
    return count


def tree_bic(params: TreeParams, z, covariance: str = "full") -> float:
    r"""BIC of ``params`` on points ``z`` ``(N, J)``: :math:`\sum_n \log p(z_n) -
    \frac{d}{2} \log N`.

    Args:
        params: the (fitted) parameters.
        z: the points.
        covariance: how the covariances were fitted (``"full"`` or ``"fixed"``), which sets
            the parameter count.
    """
    if not isinstance(params, TreeParams):
        raise TypeError(f"params must be TreeParams, got {type(params).__name__}")
    loglik = tree_log_likelihood(params, z)
    dim = free_parameters(params.tree, covariance)
    return float(loglik.sum()) - 0.5 * dim * math.log(loglik.shape[0])
