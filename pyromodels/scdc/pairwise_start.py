r"""Starts of the pairwise worker model's coordinate ascent, read from the links themselves.

Mean-field coordinate ascent on the links has a fixed point at the uniform clustering: with
:math:`q_n = 1/K` for every item, every pair's co-clustering probability is :math:`1/K`,
the workers' coin updates see the same share of "same" and "different" pairs whatever they
said (every weight :math:`\mathrm{logit}\,\alpha_m + \mathrm{logit}\,\beta_m` is 0), and with
zero weights the cluster update ignores the links. A start has to leave that point decidedly.

Near the uniform point the cluster update is linear: a small departure :math:`\delta` (rows
summing to 0) becomes :math:`K^{-1} W \delta` up to centring, with :math:`W` the links'
message weights (:func:`~pyromodels.scdc.links.message_weights`). The departures that grow
are the leading eigenvectors of :math:`W`; with every worker trusted alike, :math:`W` is a
multiple of the signed count matrix :math:`S_{ij}` = (must links - cannot links between
:math:`i` and :math:`j`). :func:`spectral_start` takes those directions at once: the ``K``
eigenvectors of largest eigenvalue of :math:`D^{-1/2} S D^{-1/2}` (:math:`D` the row sums of
:math:`|S|`, so that busy items do not dominate), of those only the ones whose eigenvalue is
positive (a direction of non-positive eigenvalue does not grow; where clean groups leave a
degenerate block of negative eigenvalues among the ``K`` largest, an arbitrary vector of it
would otherwise blur the groups; the largest is kept when none is positive), each item's row
scaled to unit length, then k-means into ``K`` groups; the groups start the clusters,
half-way between one-hot and uniform, and are settled on the links with trusted workers
(:func:`~pyromodels.scdc.pairwise_cavi.settle_start`) before the first global update.
The embedding is computed once per prepared data (its sparse eigensolver's start vector
drawn from the first restart's generator), so restarts differ by k-means' seeding, drawn
from each restart's generator.
"""

from __future__ import annotations

import weakref

import numpy as np
import torch

from . import pairwise_cavi as cavi
from .pairwise_data import PairwiseData

__all__ = ["START_SMOOTHING", "DENSE_EIGEN_ITEMS", "EIGEN_TOL", "START_KINDS", "signed_link_counts",
           "link_embedding", "spectral_start", "make_start"]

#: the weight of the uniform distribution in a spectral start's cluster probabilities: the
#: k-means groups are a guess, and the settling sweeps may move an item out of its group
START_SMOOTHING = 0.5

#: up to this many linked items the eigenvectors come from a dense eigensolver (beyond, the
#: sparse one: 2,000 items took 5 s dense and 1 s sparse on one thread)
DENSE_EIGEN_ITEMS = 1000

#: the sparse eigensolver's relative tolerance: the eigenvectors only seed k-means, and on a
#: million links (20,000 items) it took 2.5 s where full precision took 9 s
EIGEN_TOL = 1e-3

# the embedding of the last data seen, reused by the restarts of one fit: (weak reference to
# the data, linked items, rows)
_last_embedding: list = [None]

#: the starts the model offers: ``"links"`` (:func:`spectral_start`) and ``"random"``
#: (:func:`~pyromodels.scdc.pairwise_cavi.init_params`, annealed random starts)
START_KINDS = ("links", "random")


def signed_link_counts(data: PairwiseData):
    """The symmetric ``(N, N)`` SciPy CSR matrix of must links minus cannot links between
    every two items (all workers together)."""
    import scipy.sparse as sp

    groups = torch.arange(2 * data.num_workers, device=data.device)
    signs = (2 * (groups % 2) - 1).to(data.dtype)
    op = data.graph.operator(signs).cpu()
    return sp.csr_matrix((op.values().double().numpy(), op.col_indices().numpy(),
                          op.crow_indices().numpy()), shape=tuple(op.shape))


def link_embedding(data: PairwiseData, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The linked items (a nonzero row of the signed counts) and their rows of the normalised
    signed matrix's leading eigenvectors (module docstring), each row of unit length.

    Args:
        data: the prepared links.
        seed: seeds the sparse eigensolver's start vector.

    Returns:
        ``(linked, rows)``: the indices of the items in at least one link ``(n,)`` and their
        embedding, at most ``min(K, n - 1)`` columns, one per leading eigenvector of positive
        eigenvalue (``(n, 0)`` when fewer than two items are linked).
    """
    counts = signed_link_counts(data)
    degree = np.asarray(abs(counts).sum(1)).ravel()
    linked = np.flatnonzero(degree > 0)
    n, k = len(linked), min(data.num_clusters, len(linked) - 1)
    if k < 1:
        return linked, np.zeros((n, 0))
    scale = 1 / np.sqrt(degree[linked])
    sub = counts[linked][:, linked].multiply(scale[:, None]).multiply(scale[None, :]).tocsr()
    if n <= DENSE_EIGEN_ITEMS:
        # torch's solver keeps to the threads torch is given
        values, vectors = torch.linalg.eigh(torch.from_numpy(sub.toarray()))
        values, vectors = values[-k:].numpy(), vectors[:, -k:].numpy()
    else:
        from scipy.sparse.linalg import eigsh

        v0 = np.random.default_rng(seed).standard_normal(n)
        values, vectors = eigsh(sub, k=k, which="LA", v0=v0, tol=EIGEN_TOL)
    growing = values > 0
    growing[np.argmax(values)] = True
    vectors = vectors[:, growing]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return linked, vectors / np.maximum(norms, 1e-12)


def _cached_embedding(data: PairwiseData, seed: int):
    """:func:`link_embedding` of ``data``, computed once for the restarts of a fit on the same
    prepared data (the restarts then differ by k-means' seeding)."""
    last = _last_embedding[0]
    if last is not None and last[0]() is data:
        return last[1], last[2]
    linked, rows = link_embedding(data, seed)
    _last_embedding[0] = (weakref.ref(data), linked, rows)
    return linked, rows


def spectral_start(data: PairwiseData, generator: torch.Generator | None = None,
                   sweeps: int = cavi.INIT_SWEEPS, smoothing: float = START_SMOOTHING) -> dict:
    """A start from the links' spectrum (module docstring), settled on the links.

    Args:
        data: the prepared links.
        generator: the restart's random numbers (k-means' seeding, and the sparse
            eigensolver's start vector the first time ``data`` is seen, are drawn from it).
        sweeps: settling sweeps (:func:`~pyromodels.scdc.pairwise_cavi.settle_start`).
        smoothing: the uniform distribution's weight in the starting probabilities, in
            ``[0, 1)``.

    Returns:
        the model's variational parameters (``q`` and the globals' conjugate updates). Items
        in no link start, and stay, at the prior.
    """
    from sklearn.cluster import KMeans

    if not 0.0 <= smoothing < 1.0:
        raise ValueError(f"smoothing must be in [0, 1), got {smoothing!r}")
    seed = int(torch.randint(2**31 - 1, (1,), generator=generator))
    linked, rows = _cached_embedding(data, seed)
    N, K = data.num_items, data.num_clusters
    q = torch.full((N, K), 1.0 / K, dtype=data.dtype)
    if rows.shape[1] > 0:
        groups = min(K, len(linked))
        labels = KMeans(groups, n_init=1, random_state=seed).fit(rows).labels_
        one_hot = torch.nn.functional.one_hot(torch.as_tensor(labels, dtype=torch.long), K)
        q[torch.as_tensor(linked, dtype=torch.long)] = ((1 - smoothing) * one_hot.to(q.dtype)
                                                        + smoothing / K)
    return cavi.settle_start(data, q.to(data.device), sweeps)


def make_start(kind: str, data: PairwiseData, generator: torch.Generator | None) -> dict:
    """The start ``kind`` of :data:`START_KINDS` for ``data``."""
    if kind == "links":
        return spectral_start(data, generator)
    if kind == "random":
        return cavi.init_params(data, generator)
    raise ValueError(f"start must be one of {START_KINDS}, got {kind!r}")
