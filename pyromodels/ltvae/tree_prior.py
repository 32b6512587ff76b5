r"""The latent tree prior of the LTVAE (spec ``ltvae.md`` §2.1, §2.3, §3.4): the log density
:math:`\log p_S(z; \Theta)` as a pluggable prior of :class:`~pyromodels.ltvae.VAE`, the
default start :math:`S^0` and :math:`\Theta^0`, and one stepwise-EM update of
:math:`\Theta` on a minibatch of codes.
"""

from __future__ import annotations

import numpy as np
import torch

from ..core.stepwise_em import blend_stats
from ..trees.em import params_to_dict
from ..trees.message_passing import tree_log_likelihood
from ..trees.model import LatentTreeModel
from ..trees.params import TreeParams
from ..trees.structure import LatentTree

__all__ = ["TreePrior", "default_tree", "kmeans_start", "stepwise_update", "RUNNING_MODES"]

#: how the running statistics of the per-batch update are formed (see :func:`stepwise_update`)
RUNNING_MODES = ("rebuilt", "average")


class TreePrior:
    r"""The callable log density :math:`\log p_S(z; \Theta)` of a latent tree, for
    :class:`~pyromodels.ltvae.VAE`'s ``prior`` argument.

    ``params`` is a plain attribute the LTVAE's fit replaces after each EM step; its tensors
    are not Pyro params, so the networks' optimiser never sees them. Gradients reach ``z``
    (Eq. 6 of the paper, by autograd through the message passing).

    Args:
        params: the tree's parameters, in the dtype and on the device of the codes.

    Example:
        >>> params = TreeParams.random(LatentTree.single(2, 3), torch.Generator().manual_seed(0))
        >>> TreePrior(params)(torch.zeros(5, 4, 3, dtype=torch.float64)).shape
        torch.Size([5, 4])
    """

    def __init__(self, params: TreeParams):
        if not isinstance(params, TreeParams):
            raise TypeError(f"params must be TreeParams, got {type(params).__name__}")
        self.params = params

    def __call__(self, z: torch.Tensor) -> torch.Tensor:
        """``log p_S(z)`` of codes ``(..., J)``, shape ``(...)``."""
        flat = z.reshape(-1, z.shape[-1])
        return tree_log_likelihood(self.params, flat).reshape(z.shape[:-1])

    def __repr__(self) -> str:
        return f"TreePrior({self.params.tree!r})"


def default_tree(cardinality: int, latent_dim: int) -> LatentTree:
    """The spec's :math:`S^0` (§2.3): one latent node ``"Y"`` with ``cardinality`` states over
    every coordinate of ``z`` as its own leaf (a diagonal Gaussian mixture)."""
    return LatentTree.single(cardinality, latent_dim)


def kmeans_start(tree: LatentTree, z: torch.Tensor, alpha: float, seed: int) -> TreeParams:
    r""":math:`\Theta^0` from k-means on codes ``z`` ``(N, J)`` (spec §2.3, the release: sklearn
    ``KMeans`` with ``n_init=10``).

    Each latent node with pouches clusters the columns of its pouches into ``K_j`` groups:
    its pouches' means are the cluster means, every covariance is ``alpha * I``. The root
    prior is the root's cluster proportions, and a CPT :math:`P(Y_j \mid Y_{\pi(j)})` the
    cross-tabulation of the two nodes' clusters with one added to every cell (so no
    transition starts impossible); a node without pouches has no clusters, and the prior or
    CPT rows touching it start uniform. For the default one-node tree this is exactly the
    release's start.

    Args:
        tree: the structure.
        z: ``(N, J)`` codes (the encoder means of the training data), ``N >= max K_j``.
        alpha: the covariances' scale.
        seed: k-means' random state.
    """
    from sklearn.cluster import KMeans

    n = z.shape[0]
    if n < max(tree.cardinalities):
        raise ValueError(f"x must have at least {max(tree.cardinalities)} rows (the largest "
                         f"cardinality of the tree) to start the tree by k-means, got {n}")
    points = z.detach().cpu().double().numpy()
    labels: list[np.ndarray | None] = [None] * tree.num_latents
    centres: list[np.ndarray | None] = [None] * tree.num_latents
    for j, blocks in enumerate(tree.leaves):
        if blocks:
            cols = [c for b in blocks for c in tree.pouches[b]]
            km = KMeans(n_clusters=tree.cardinalities[j], n_init=10, random_state=seed % 2**32)
            labels[j] = km.fit_predict(points[:, cols])
            centres[j] = km.cluster_centers_
    like = {"dtype": z.dtype, "device": z.device}
    k_root = tree.cardinalities[tree.root]
    if labels[tree.root] is not None:
        root = np.bincount(labels[tree.root], minlength=k_root) / n
    else:
        root = np.full(k_root, 1.0 / k_root)
    cpts: list[torch.Tensor | None] = [None] * tree.num_latents
    for j, p in enumerate(tree.parents):
        if p is None:
            continue
        counts = np.ones((tree.cardinalities[p], tree.cardinalities[j]))
        if labels[j] is not None and labels[p] is not None:
            np.add.at(counts, (labels[p], labels[j]), 1.0)
        cpts[j] = torch.as_tensor(counts / counts.sum(1, keepdims=True), **like)
    means, trils = [], []
    for block, p in zip(tree.pouches, tree.pouch_parents):
        cols = [c for b in tree.leaves[p] for c in tree.pouches[b]]
        at = [cols.index(c) for c in block]
        means.append(torch.as_tensor(centres[p][:, at], **like))
        eye = torch.eye(len(block), **like) * alpha ** 0.5
        trils.append(eye.expand(tree.cardinalities[p], len(block), len(block)).clone())
    return TreeParams(tree, torch.as_tensor(root, **like), cpts, means, trils)


def stepwise_update(model: LatentTreeModel, z: torch.Tensor, params: TreeParams,
                    running: dict | None, eta: float, mode: str = "rebuilt"
                    ) -> tuple[TreeParams, dict, float]:
    r"""One stepwise-EM step of the tree's parameters on one minibatch of codes (spec §3.4):
    the batch's expected statistics :math:`\bar s` (averaged over its points), mixed into the
    running statistics, :math:`s \leftarrow (1 - \eta)\, s_0 + \eta\, \bar s`, then the
    closed-form M-step. This is the update of :func:`~pyromodels.core.run_stepwise_em`.

    Args:
        model: the tree's :class:`~pyromodels.trees.LatentTreeModel` (structure and
            covariance settings).
        z: ``(B, J)`` codes of the batch, without gradient.
        params: :math:`\Theta^t`.
        running: the running statistics (used when ``mode="average"``).
        eta: the step size.
        mode: ``"rebuilt"`` (the release: :math:`s_0` is the statistics :math:`\Theta^t`
            implies per point) or ``"average"`` (:math:`s_0` = ``running``).

    Returns:
        :math:`\Theta^{t+1}`, the new running statistics and the codes' mean log density
        under :math:`\Theta^t`.
    """
    current = params_to_dict(params)
    index = torch.arange(z.shape[0], device=z.device)
    batch, loglik = model.em_batch_stats(z, current, index)
    batch = {k: v / z.shape[0] for k, v in batch.items()}
    base = model.em_model_stats(z, current) if mode == "rebuilt" or running is None else running
    stats = blend_stats(base, batch, eta)
    new = model.tree_params(model.em_m_step(z, stats, current))
    return new, stats, loglik / z.shape[0]
