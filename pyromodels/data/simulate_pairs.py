r"""Seeded simulators of pairwise crowd judgements (must link / cannot link) from two-coin workers.

Worker :math:`m` judges a pair of items :math:`(i, j)` whose true clusters are :math:`z_i,
z_j`:

.. math::
    P(L = 1 \mid z_i = z_j) = \alpha_m \ (\text{sensitivity}), \qquad
    P(L = 0 \mid z_i \ne z_j) = \beta_m \ (\text{specificity}),

the two-coin model of the semi-crowdsourced clustering paper (Luo et al., 2018, eq. 1). The
simulators differ in which pairs a worker judges:

* :func:`simulate_random_pairs`: distinct pairs drawn uniformly;
* :func:`simulate_block_pairs`: the paper's Pinwheel protocol, a shuffled block of items per
  worker and ``items_per_worker - 1`` pairs along it;
* :func:`simulate_stratified_pairs`: as many same-cluster as different-cluster pairs per
  worker (the Face protocol the paper takes from MCVC);
* :func:`simulate_hit_partitions`: tasks (HITs) of 36 items that a worker splits into groups,
  every pair of a task judged from that one noisy partition (the paper's AMT protocol).

Each returns ``(pairs, truth)``: a :class:`~pyromodels.data.PairwiseAnnotations` whose items
are all ``N`` items of ``z`` (codes = positions in ``z``, judged or not) and workers
``0 .. M - 1``, and a dict with the workers' true ``alpha`` and ``beta`` (float64 ``(M,)``),
``same`` (bool ``(L,)``: whether the row's items share a true cluster) and ``annotated`` (the
codes of the items workers could be shown). Everything is drawn on the CPU from a
``torch.Generator`` made from ``seed``, never from the global RNG; move the table with
``pairs.to(device)``.
"""

from __future__ import annotations

import numpy as np
import torch

from ..checks import as_float_tensor, as_label_tensor, check_int
from ..core.seeding import make_generator
from .pairwise import PairwiseAnnotations
from .simulate import DTYPE

__all__ = [
    "two_coin_rates",
    "two_coin_links",
    "partition_rates",
    "simulate_random_pairs",
    "simulate_block_pairs",
    "simulate_stratified_pairs",
    "simulate_hit_partitions",
]


def _probabilities(value, name: str) -> torch.Tensor:
    """``value`` as a float64 tensor of probabilities (any shape), each in [0, 1]."""
    t = as_float_tensor(value, name, dtype=DTYPE, device="cpu")
    if bool(((t < 0) | (t > 1)).any()):
        raise ValueError(f"{name} must lie in [0, 1], got {t.tolist()}")
    return t


def _per_worker(value, name: str, m: int) -> torch.Tensor:
    """``value`` (one probability, or ``m`` of them) as a float64 ``(m,)`` tensor in [0, 1]."""
    t = _probabilities(value, name)
    if t.dim() == 0:
        return t.expand(m).clone()
    if t.dim() != 1 or len(t) != m:
        raise ValueError(
            f"{name} must be one probability or one per worker ({m} values), got shape "
            f"{tuple(t.shape)}"
        )
    return t


def two_coin_rates(num_workers: int, alpha, beta) -> tuple[torch.Tensor, torch.Tensor]:
    """The workers' sensitivities and specificities as float64 ``(M,)`` tensors.

    Args:
        num_workers: ``M >= 1``.
        alpha: ``P(L = 1 | same cluster)``: one value for every worker or ``M`` values.
        beta: ``P(L = 0 | different clusters)``, likewise.

    Example:
        >>> two_coin_rates(2, 0.9, [0.8, 0.7])[1].tolist()
        [0.8, 0.7]
    """
    m = check_int(num_workers, "num_workers", minimum=1)
    return _per_worker(alpha, "alpha", m), _per_worker(beta, "beta", m)


def two_coin_links(same: torch.Tensor, worker: torch.Tensor, alpha: torch.Tensor,
                   beta: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Links ``L ~ Bernoulli(alpha[w])`` for same-cluster rows and ``L ~ Bernoulli(1 - beta[w])``
    for the others (long ``(L,)``); ``same`` (bool) and ``worker`` (codes) are per row."""
    p_link = torch.where(same, alpha[worker], 1.0 - beta[worker])
    return (torch.rand(len(same), generator=generator, dtype=DTYPE) < p_link).long()


def partition_rates(error, num_labels: int) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The two-coin rates implied by the noisy partitions of :func:`simulate_hit_partitions`.

    An item keeps its cluster with probability :math:`1 - \varepsilon` and otherwise takes one
    of the :math:`K` labels uniformly, so it ends with its own label w.p. :math:`q = 1 -
    \varepsilon + \varepsilon / K` and with each other one w.p. :math:`r = \varepsilon / K`.
    Two items are grouped together when their labels agree:

    .. math:: \alpha = q^2 + (K - 1) r^2, \qquad 1 - \beta = 2 q r + (K - 2) r^2.

    Args:
        error: :math:`\varepsilon`, probabilities of any shape (one per worker, say).
        num_labels: :math:`K \ge 2`.

    Returns:
        ``(alpha, beta)``, float64 tensors of the shape of ``error``.

    Example:
        >>> alpha, beta = partition_rates([0.0, 1.0], 2)
        >>> alpha.tolist(), beta.tolist()
        ([1.0, 0.5], [1.0, 0.5])
    """
    k = check_int(num_labels, "num_labels", minimum=2)
    eps = _probabilities(error, "error")
    q, r = 1.0 - eps + eps / k, eps / k
    return q**2 + (k - 1) * r**2, 1.0 - (2 * q * r + (k - 2) * r**2)


# ---------------------------------------------------------------- shared preparation


def _prepare(z, num_workers: int, annotated, generator: torch.Generator):
    """Checked ``(z, M, annotated codes)``; an int ``annotated`` draws that many items."""
    z = as_label_tensor(z, "z", device="cpu")
    n = len(z)
    if n < 2:
        raise ValueError(f"z must hold the clusters of at least 2 items, got {n}")
    m = check_int(num_workers, "num_workers", minimum=1)
    if annotated is None:
        chosen = torch.arange(n)
    elif isinstance(annotated, (int, np.integer)) and not isinstance(annotated, bool):
        count = check_int(annotated, "annotated", minimum=2, maximum=n)
        chosen = torch.sort(torch.randperm(n, generator=generator)[:count]).values
    else:
        chosen = as_label_tensor(annotated, "annotated", num_classes=n, size_name="len(z)",
                                 device="cpu")
        if len(torch.unique(chosen)) != len(chosen):
            raise ValueError("annotated must list distinct item codes")
        if len(chosen) < 2:
            raise ValueError(f"annotated must hold at least 2 items, got {len(chosen)}")
    return z, m, chosen


def _finish(z, i, j, worker, alpha, beta, annotated, generator, **extra):
    """The table of the pairs ``(i, j)`` judged by ``worker`` with two-coin links, and truth."""
    same = z[i] == z[j]
    link = two_coin_links(same, worker, alpha, beta, generator)
    pairs = PairwiseAnnotations.from_arrays(i, j, worker, link, num_items=len(z),
                                            num_workers=len(alpha))
    return pairs, {"alpha": alpha, "beta": beta, "same": same, "annotated": annotated, **extra}


def _distinct_pairs(propose, count: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``count`` distinct unordered pairs among proposals ``propose(size) -> (a,
    b)`` (item codes ``< n``, ``a != b``), in the order drawn; the caller checks that
    ``count`` distinct pairs exist."""
    a_all = b_all = torch.zeros(0, dtype=torch.long)
    while True:
        a, b = propose(2 * count + 16)
        a_all, b_all = torch.cat([a_all, a]), torch.cat([b_all, b])
        keys = (torch.minimum(a_all, b_all) * n + torch.maximum(a_all, b_all)).numpy()
        first = np.sort(np.unique(keys, return_index=True)[1])
        if len(first) >= count:
            rows = torch.from_numpy(first[:count])
            return a_all[rows], b_all[rows]


def _uniform_pairs(items: torch.Tensor, generator: torch.Generator):
    """A proposal of uniform ordered pairs of distinct entries of ``items``."""
    size = len(items)

    def propose(k: int):
        a = torch.randint(size, (k,), generator=generator)
        b = torch.randint(size - 1, (k,), generator=generator)
        return items[a], items[b + (b >= a).long()]

    return propose


def _within_cluster_pairs(z: torch.Tensor, items: torch.Tensor, generator: torch.Generator):
    """A proposal of uniform unordered pairs of distinct ``items`` in the same cluster (a
    cluster drawn by its number of pairs, then two of its members), and how many exist."""
    labels = z[items]
    order = torch.argsort(labels, stable=True)
    members = items[order]
    sizes = torch.bincount(labels)
    starts = torch.cumsum(sizes, 0) - sizes
    weights = (sizes * (sizes - 1) // 2).to(DTYPE)
    total = int(weights.sum())

    def propose(k: int):
        c = torch.multinomial(weights, k, replacement=True, generator=generator)
        u = (torch.rand(k, generator=generator, dtype=DTYPE) * sizes[c]).long()
        v = (torch.rand(k, generator=generator, dtype=DTYPE) * (sizes[c] - 1)).long()
        v = v + (v >= u).long()
        return members[starts[c] + u], members[starts[c] + v]

    return propose, total


# ---------------------------------------------------------------- the simulators


def simulate_random_pairs(z, num_workers: int, pairs_per_worker: int, *, alpha=0.9, beta=0.9,
                          annotated=None, seed: int):
    r"""Two-coin judgements of pairs drawn uniformly: each worker judges ``pairs_per_worker``
    distinct pairs of annotated items, drawn uniformly among all such pairs.

    Args:
        z: true cluster of each of the ``N`` items, integer codes ``(N,)``.
        num_workers: ``M``.
        pairs_per_worker: distinct pairs per worker, at most :math:`\binom{N_a}{2}` for
            :math:`N_a` annotated items.
        alpha, beta: sensitivity and specificity, one value or one per worker.
        annotated: which items workers see: ``None`` (all), a number (that many drawn at
            random) or a list of item codes.
        seed: integer seed.

    Returns:
        ``(pairs, truth)`` (see :mod:`pyromodels.data.simulate_pairs`).

    Example:
        >>> pairs, truth = simulate_random_pairs([0, 0, 1, 1, 2], 3, 4, seed=0)
        >>> pairs.counts_per_worker().tolist(), truth["alpha"].tolist()
        ([4, 4, 4], [0.9, 0.9, 0.9])
    """
    gen = make_generator(check_int(seed, "seed", minimum=0))
    z, m, chosen = _prepare(z, num_workers, annotated, gen)
    alpha, beta = two_coin_rates(m, alpha, beta)
    capacity = len(chosen) * (len(chosen) - 1) // 2
    count = check_int(pairs_per_worker, "pairs_per_worker", minimum=1, maximum=capacity)
    propose = _uniform_pairs(chosen, gen)
    drawn = [_distinct_pairs(propose, count, len(z)) for _ in range(m)]
    i, j = torch.cat([a for a, _ in drawn]), torch.cat([b for _, b in drawn])
    worker = torch.arange(m).repeat_interleave(count)
    return _finish(z, i, j, worker, alpha, beta, chosen, gen)


def simulate_block_pairs(z, num_workers: int, items_per_worker: int = 50, *, alpha=0.9,
                         beta=0.9, annotated=None, seed: int):
    r"""Two-coin judgements along a shuffled block of items per worker (the paper's Pinwheel
    protocol: 100 annotated points, 20 workers, 50 items and so 49 pairs each,
    :math:`\alpha_m = \beta_m = 0.9`).

    Worker :math:`m` gets a block :math:`b_0, \dots, b_{B-1}` of ``items_per_worker`` distinct
    annotated items in random order (a uniform draw without replacement). For each position
    :math:`p < B - 1` a later position :math:`q` is drawn uniformly from :math:`p + 1, \dots,
    B - 1` and the worker judges :math:`(b_p, b_q)`: :math:`B - 1` pairs, distinct because each
    starts at its own position.

    Args:
        z, num_workers, alpha, beta, annotated, seed: as in :func:`simulate_random_pairs`.
        items_per_worker: the block size :math:`B`, between 2 and the number of annotated
            items.

    Returns:
        ``(pairs, truth)``; ``truth["blocks"]`` holds each worker's block in order, long
        ``(M, B)`` item codes.

    Example:
        >>> pairs, truth = simulate_block_pairs(torch.arange(10) % 2, 2, 5, seed=0)
        >>> pairs.num_pairs, tuple(truth["blocks"].shape)
        (8, (2, 5))
    """
    gen = make_generator(check_int(seed, "seed", minimum=0))
    z, m, chosen = _prepare(z, num_workers, annotated, gen)
    alpha, beta = two_coin_rates(m, alpha, beta)
    size = check_int(items_per_worker, "items_per_worker", minimum=2, maximum=len(chosen))
    blocks = torch.stack([chosen[torch.randperm(len(chosen), generator=gen)[:size]]
                          for _ in range(m)])
    first = torch.arange(size - 1)
    later = (size - 1 - first).to(DTYPE)
    second = first + 1 + (torch.rand(m, size - 1, generator=gen, dtype=DTYPE) * later).long()
    i = blocks[:, :-1].reshape(-1)
    j = torch.gather(blocks, 1, second).reshape(-1)
    worker = torch.arange(m).repeat_interleave(size - 1)
    return _finish(z, i, j, worker, alpha, beta, chosen, gen, blocks=blocks)


def simulate_stratified_pairs(z, num_workers: int, pairs_per_kind: int, *, alpha=0.9, beta=0.9,
                              annotated=None, seed: int):
    r"""Two-coin judgements of as many same-cluster as different-cluster pairs per worker (the
    Face protocol: 5 workers with :math:`\alpha_m = \beta_m = 0.95, 0.9, 0.85, 0.8, 0.75` and
    100 to 1,000 pairs of each kind).

    Each worker judges ``pairs_per_kind`` distinct pairs drawn uniformly among the pairs of
    annotated items in one true cluster and ``pairs_per_kind`` drawn uniformly among the pairs
    in different clusters, in a random order; the links are then drawn from the two coins.
    "#ML = #CL" holds for the true relation of the pairs, not for the noisy links.

    Args:
        z, num_workers, alpha, beta, annotated, seed: as in :func:`simulate_random_pairs`.
        pairs_per_kind: same-cluster pairs (and different-cluster pairs) per worker, at most
            the number of such pairs among the annotated items.

    Returns:
        ``(pairs, truth)`` with ``2 * pairs_per_kind`` rows per worker.

    Example:
        >>> pairs, truth = simulate_stratified_pairs(torch.arange(12) % 3, 2, 5, seed=0)
        >>> int(truth["same"].sum()), pairs.num_pairs
        (10, 20)
    """
    gen = make_generator(check_int(seed, "seed", minimum=0))
    z, m, chosen = _prepare(z, num_workers, annotated, gen)
    alpha, beta = two_coin_rates(m, alpha, beta)
    within, num_within = _within_cluster_pairs(z, chosen, gen)
    num_between = len(chosen) * (len(chosen) - 1) // 2 - num_within
    count = check_int(pairs_per_kind, "pairs_per_kind", minimum=1)
    if count > min(num_within, num_between):
        raise ValueError(
            f"pairs_per_kind must be at most {min(num_within, num_between)}: the annotated "
            f"items have {num_within} same-cluster and {num_between} different-cluster pairs, "
            f"got {count}"
        )
    uniform = _uniform_pairs(chosen, gen)

    def between(k: int):
        a, b = uniform(k)
        keep = z[a] != z[b]
        return a[keep], b[keep]

    parts = []
    for _ in range(m):
        a1, b1 = _distinct_pairs(within, count, len(z))
        a2, b2 = _distinct_pairs(between, count, len(z))
        order = torch.randperm(2 * count, generator=gen)
        parts.append((torch.cat([a1, a2])[order], torch.cat([b1, b2])[order]))
    i, j = torch.cat([a for a, _ in parts]), torch.cat([b for _, b in parts])
    worker = torch.arange(m).repeat_interleave(2 * count)
    return _finish(z, i, j, worker, alpha, beta, chosen, gen)


def simulate_hit_partitions(z, num_workers: int, hits_per_worker=1, *, items_per_hit: int = 36,
                            error=0.1, num_labels: int | None = None, annotated=None,
                            seed: int):
    r"""Judgements derived from noisy partitions of tasks (HITs), the paper's AMT protocol: a
    worker is shown ``items_per_hit`` items (36) and splits them into groups; every pair of
    the task is judged from that partition, :math:`\binom{36}{2} = 630` pairs per HIT.

    How the noise is made: worker :math:`m` groups the items of a HIT by a noisy label. Each
    item independently keeps its true cluster with probability :math:`1 - \varepsilon_m`
    (``error``) and otherwise takes a label drawn uniformly from the :math:`K` labels
    (``num_labels``, its own included); :math:`L_{ij} = 1` exactly when the noisy labels of
    :math:`i` and :math:`j` agree. A partition is an equivalence relation, so the links of one
    HIT are transitive, and pairs of one HIT are not independent (the two-coin model treats
    them as independent). Marginally each pair follows the two coins with the rates of
    :func:`partition_rates`, which ``truth`` reports as ``alpha`` and ``beta``.

    A worker never sees an item twice: the items of its HITs are distinct annotated items
    drawn without replacement, so its pairs are distinct.

    Args:
        z, num_workers, annotated, seed: as in :func:`simulate_random_pairs`.
        hits_per_worker: HITs per worker, one number or one per worker (at least 1 each;
            ``hits * items_per_hit`` must not exceed the number of annotated items).
        items_per_hit: items per HIT, at least 2.
        error: :math:`\varepsilon_m`, one value or one per worker, in [0, 1].
        num_labels: :math:`K`, at least 2; default ``max(z) + 1``.

    Returns:
        ``(pairs, truth)``; ``truth`` also holds ``error`` ``(M,)``, ``hit`` (long ``(L,)``: the
        HIT of each row), ``hit_worker`` (long ``(H,)``), ``hit_items`` and ``hit_labels`` (long
        ``(H, items_per_hit)``: the items shown and the noisy labels given).

    Example:
        >>> pairs, truth = simulate_hit_partitions(torch.arange(80) % 4, 2, seed=0)
        >>> pairs.num_pairs, truth["hit_items"].shape[0]
        (1260, 2)
    """
    gen = make_generator(check_int(seed, "seed", minimum=0))
    z, m, chosen = _prepare(z, num_workers, annotated, gen)
    size = check_int(items_per_hit, "items_per_hit", minimum=2)
    hits = _hits_per_worker(hits_per_worker, m, size, len(chosen))
    eps = _per_worker(error, "error", m)
    k = int(z.max()) + 1 if num_labels is None else check_int(num_labels, "num_labels")
    if k < max(2, int(z.max()) + 1):
        raise ValueError(f"num_labels must be at least max(2, max(z) + 1) = "
                         f"{max(2, int(z.max()) + 1)}, got {k}")
    alpha, beta = partition_rates(eps, k)
    hit_worker = torch.arange(m).repeat_interleave(hits)
    hit_items = torch.cat([
        chosen[torch.randperm(len(chosen), generator=gen)[: h * size]].reshape(h, size)
        for h in hits.tolist()
    ])
    relabel = torch.rand(hit_items.shape, generator=gen, dtype=DTYPE) < eps[hit_worker, None]
    other = torch.randint(k, hit_items.shape, generator=gen)
    hit_labels = torch.where(relabel, other, z[hit_items])
    a, b = torch.triu_indices(size, size, offset=1)
    i, j = hit_items[:, a].reshape(-1), hit_items[:, b].reshape(-1)
    link = (hit_labels[:, a] == hit_labels[:, b]).long().reshape(-1)
    hit = torch.arange(len(hit_worker)).repeat_interleave(len(a))
    worker = hit_worker[hit]
    pairs = PairwiseAnnotations.from_arrays(i, j, worker, link, num_items=len(z), num_workers=m)
    truth = {"alpha": alpha, "beta": beta, "same": z[i] == z[j], "annotated": chosen,
             "error": eps, "hit": hit, "hit_worker": hit_worker, "hit_items": hit_items,
             "hit_labels": hit_labels}
    return pairs, truth


def _hits_per_worker(value, m: int, size: int, available: int) -> torch.Tensor:
    """``hits_per_worker`` as a long ``(M,)`` tensor of counts >= 1 that fit the items."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        counts = torch.full((m,), check_int(value, "hits_per_worker", minimum=1))
    else:
        counts = as_label_tensor(value, "hits_per_worker", device="cpu")
        if len(counts) != m:
            raise ValueError(f"hits_per_worker must be one number or one per worker ({m} "
                             f"values), got {len(counts)}")
        if bool((counts < 1).any()):
            raise ValueError(f"hits_per_worker must be at least 1 for every worker, got "
                             f"{counts.tolist()}")
    most = int(counts.max())
    if most * size > available:
        raise ValueError(
            f"hits_per_worker * items_per_hit must not exceed the {available} annotated items "
            f"(a worker sees each item at most once), got {most} * {size} = {most * size}"
        )
    return counts
