r"""The moment-matching objective (ensemble paper eq. 17) and its block least-squares problems.

In the row orientation of :mod:`pyromodels.crowd` (``C_a = confusion[a]`` is the paper's
:math:`\Gamma_a^\top`) the objective is

.. math::
    g(\pi, C) = \sum_a w_a \|\hat\mu_a - C_a^\top\pi\|^2
      + \sum_{a<b} w_{ab} \|\hat S_{ab} - C_a^\top \Pi C_b\|_F^2
      + \sum_{a<b<c} w_{abc} \|\hat T_{abc} - [\![C_a^\top\Pi, C_b^\top, C_c^\top]\!]\|_F^2,

with :math:`\Pi = \mathrm{diag}(\pi)` and unit weights :math:`w` (zero for moments that rest on
no item). Every term is linear in one worker's :math:`C_a` once the others and :math:`\pi` are
fixed: :math:`Y \approx C_a^\top B` with a design :math:`B` whose rows index the true class
(:math:`B = \pi^\top` for the first moment, :math:`\Pi C_b` for a pair, the row-wise
Khatri–Rao product :math:`\Pi (C_b \odot C_c)` for a triple, with :math:`Y` the moment
unfolded along :math:`a`'s axis). Summing, the block objective is
:math:`\mathrm{tr}(C_a^\top G C_a) - 2\,\mathrm{tr}(C_a^\top H) + \mathrm{const}` with

.. math::
    G = \pi\pi^\top \circ \Big(w_a + \sum_b w_{ab} C_b C_b^\top
        + \sum_{(b,c)} w_{abc} (C_b C_b^\top) \circ (C_c C_c^\top)\Big), \qquad
    H = \sum B\, Y^\top .

The prior block is linear in :math:`\pi` with Gram matrix
:math:`\sum_a w_a G_a + \sum_{a<b} w_{ab} G_a \circ G_b + \sum w_{abc} G_a \circ G_b \circ G_c`
(:math:`G_a = C_a C_a^\top`) and right-hand side
:math:`h_k = \sum_a w_a c_{ak}^\top\hat\mu_a + \sum_{a<b} w_{ab} c_{ak}^\top \hat S_{ab} c_{bk}
+ \sum w_{abc} \hat T_{abc}(c_{ak}, c_{bk}, c_{ck})`, where :math:`c_{ak}` is row ``k`` of
:math:`C_a`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .statistics import Moments, model_moments

__all__ = ["MomentDesign", "moment_objective"]

# For each position of the block's worker in a triple (a, b, c): the other two positions, and
# the two contractions (last other worker first, then the first) that leave (class, own answer).
# Every einsum has two operands so that no contraction path has to be searched per call.
_OTHERS = ((1, 2), (0, 2), (0, 1))
_TRIPLE_RHS = (("pkl,pijl->pkij", "pkj,pkij->ki"), ("pkl,pijl->pkij", "pki,pkij->kj"),
               ("pkj,pijl->pkil", "pki,pkil->kl"))


@dataclass(frozen=True, eq=False)
class MomentDesign:
    """Moments with their term weights and, per worker, the triples it belongs to.

    Attributes:
        moments: the :class:`~pyromodels.crowd.moments.statistics.Moments`.
        w1, w2, w3: weights ``(M,)``, ``(M, M)`` (symmetric, zero diagonal), ``(P,)``.
        groups: ``groups[a][pos]`` is a long tensor of the triples whose position ``pos``
            holds worker ``a``.
        scale: the objective at the zero model, ``sum w ||moment||^2`` (a natural unit).
    """

    moments: Moments
    w1: torch.Tensor
    w2: torch.Tensor
    w3: torch.Tensor
    groups: tuple
    scale: float

    @classmethod
    def build(cls, moments: Moments, min_overlap: int = 1) -> MomentDesign:
        """Weights from the moment counts (``min_overlap`` items at least) and triple groups."""
        w1, w2, w3 = moments.weights(min_overlap)
        m, trip = moments.num_workers, moments.triples
        per_pos = []
        for pos in range(3):
            order = torch.sort(trip[:, pos], stable=True).indices
            sizes = torch.bincount(trip[:, pos], minlength=m).tolist()
            per_pos.append(torch.split(order, sizes))
        groups = tuple(tuple(per_pos[pos][a] for pos in range(3)) for a in range(m))
        scale = float((w1 * moments.first.pow(2).sum(-1)).sum()
                      + 0.5 * (w2 * moments.second.pow(2).sum((-1, -2))).sum()
                      + (w3 * moments.third.pow(2).sum((-1, -2, -3))).sum())
        return cls(moments, w1, w2, w3, groups, scale)

    def worker_terms(self, a: int, confusion, gram) -> tuple[torch.Tensor, torch.Tensor]:
        r"""``(V, U)`` of the terms holding worker ``a``: its block is
        ``G = pi pi^T * V``, ``H = pi[:, None] * U``, and those terms add ``G_a * V`` to the
        prior block's Gram matrix and ``sum_i C_a[k, i] U[k, i]`` to its right-hand side."""
        mom, w3 = self.moments, self.w3
        w2 = self.w2[a]
        inner = self.w1[a] + torch.einsum("b,bkl->kl", w2, gram)
        rhs = self.w1[a] * mom.first[a].expand_as(confusion[a])
        rhs = rhs + torch.einsum("bkj,bij->ki", w2[:, None, None] * confusion, mom.second[a])
        for pos, ids in enumerate(self.groups[a]):
            if ids.numel() == 0:
                continue
            o1, o2 = (mom.triples[ids, q] for q in _OTHERS[pos])
            w = w3[ids, None, None]
            inner = inner + (w * gram[o1] * gram[o2]).sum(0)
            first, second = _TRIPLE_RHS[pos]
            partial = torch.einsum(first, confusion[o2], mom.third[ids])
            rhs = rhs + torch.einsum(second, w * confusion[o1], partial)
        return inner, rhs

    def prior_block(self, confusion, gram) -> tuple[torch.Tensor, torch.Tensor]:
        """``(R, h)`` of the prior block: minimise ``pi^T R pi - 2 h^T pi``."""
        mom, trip, w3 = self.moments, self.moments.triples, self.w3
        w3 = w3[:, None, None]
        gram_sum = torch.einsum("a,akl->kl", self.w1, gram)
        gram_sum = gram_sum + 0.5 * torch.einsum("abkl,bkl->kl",
                                                 self.w2[:, :, None, None] * gram[:, None], gram)
        gram_sum = gram_sum + (w3 * gram[trip[:, 0]] * gram[trip[:, 1]] * gram[trip[:, 2]]).sum(0)
        rhs = (self.w1[:, None, None] * confusion * mom.first[:, None, :]).sum((0, 2))
        pair = torch.einsum("aki,abij->abkj", confusion, mom.second)
        rhs = rhs + 0.5 * torch.einsum("abkj,bkj->k", self.w2[:, :, None, None] * pair, confusion)
        partial = torch.einsum("pkl,pijl->pkij", confusion[trip[:, 2]], mom.third)
        partial = torch.einsum("pkj,pkij->pki", confusion[trip[:, 1]], partial)
        rhs = rhs + (w3 * confusion[trip[:, 0]] * partial).sum((0, 2))
        return gram_sum, rhs

    def objective(self, prior, confusion) -> float:
        """The weighted objective ``g`` (eq. 17) at ``(prior, confusion)``."""
        return moment_objective(self.moments, prior, confusion, (self.w1, self.w2, self.w3))


def moment_objective(moments: Moments, prior, confusion, weights=None) -> float:
    r"""Eq. 17: weighted squared distance between ``moments`` and the model's moments.

    Args:
        moments: sample or population :class:`~pyromodels.crowd.moments.statistics.Moments` of ``M'``
            workers.
        prior: ``(K,)`` class prior.
        confusion: ``(M', K, K)`` confusion matrices of those workers (rows = true class).
        weights: ``(w1, w2, w3)``; default ``moments.weights()``.
    """
    w1, w2, w3 = moments.weights() if weights is None else weights
    first, second, third = model_moments(prior, confusion, moments.triples)
    return float((w1 * (moments.first - first).pow(2).sum(-1)).sum()
                 + 0.5 * (w2 * (moments.second - second).pow(2).sum((-1, -2))).sum()
                 + (w3 * (moments.third - third).pow(2).sum((-1, -2, -3))).sum())
