r"""Seeded simulators of crowd labels: i.i.d. items, items in sequences, items on a graph.

Conventions (those of :mod:`pyromodels.crowd`): ``confusion[m, k, j] = P(worker m answers j
| true class k)`` (rows = true class) and ``transition[i, j] = P(y_t = j | y_{t-1} = i)``
(rows = previous state). Everything is float64 and drawn from generators made from ``seed``.

The three simulators share their workers: a :class:`WorkerPopulation` says how many there
are, how reliable they are and who labels which item; each simulator draws the true classes
its own way and lets the population label them.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import torch

from ..checks import check_int, check_positive, check_probability, check_stochastic
from ..conjugate.markov import stationary_distribution
from ..core.seeding import derive_seed, make_generator
from .annotations import AnnotationTable
from .graphs import Graph
from .sequences import Sequences
from .simulate import DTYPE

__all__ = [
    "WorkerPopulation",
    "random_confusions",
    "random_transitions",
    "who_labels",
    "emit_labels",
    "simulate_annotations",
    "simulate_sequential_annotations",
    "sbm_graph",
    "simulate_networked_annotations",
]


def _check_reliability(m: int, dominance, concentration, num_random, force_dominant):
    """Check the confusion arguments of ``m`` workers (see :func:`random_confusions`);
    return ``(dominance, concentration, num_random)`` as Python numbers."""
    rho = check_probability(dominance, "dominance")
    if rho in (0.0, 1.0):
        raise ValueError(f"dominance must lie strictly between 0 and 1, got {rho}")
    conc = check_positive(concentration, "concentration")
    bad = check_int(num_random, "num_random", minimum=0, maximum=m)
    if not isinstance(force_dominant, bool):
        raise TypeError(f"force_dominant must be a bool, got {force_dominant!r}")
    return rho, conc, bad


def _check_coverage(m: int, labels_per_item, missing_rate) -> None:
    """Check who-labels-what for ``m`` workers (see :func:`who_labels`)."""
    if labels_per_item is not None and missing_rate is not None:
        raise ValueError("give at most one of labels_per_item and missing_rate")
    if labels_per_item is not None:
        check_int(labels_per_item, "labels_per_item", minimum=1, maximum=m)
    if missing_rate is not None and check_probability(missing_rate, "missing_rate") == 1.0:
        raise ValueError("missing_rate must be < 1, got 1.0")


def _dirichlet_rows(alpha: np.ndarray, seed: int) -> torch.Tensor:
    """Rows ``~ Dirichlet(alpha[..., :])`` as normalised Gamma draws (numpy: torch's Gamma
    sampler takes no generator)."""
    gamma = np.random.default_rng(seed).standard_gamma(alpha)
    return torch.from_numpy(gamma / gamma.sum(-1, keepdims=True))


def random_confusions(
    num_workers: int,
    num_classes: int,
    *,
    dominance: float = 0.7,
    concentration: float = 10.0,
    num_random: int = 0,
    force_dominant: bool = False,
    seed: int,
) -> torch.Tensor:
    r"""``(M, K, K)`` random confusion matrices (rows = true class).

    Row ``k`` of worker ``m`` is ``Dirichlet(c a_k)`` with ``a_kk = rho`` (``dominance``) and
    ``a_kj = (1 - rho)/(K - 1)``, so its expected diagonal mass is ``rho``. The last
    ``num_random`` workers instead get rows ``~ Dirichlet(1_K)`` (no better than random, as
    the ensemble paper's synthetic studies use). With ``force_dominant`` the largest entry of
    each row of the other workers is swapped onto the diagonal, which guarantees diagonal
    dominance (the paper's assumption As2).

    Args:
        num_workers, num_classes: ``M`` and ``K >= 2``.
        dominance: ``rho`` in (0, 1).
        concentration: ``c > 0``.
        num_random: how many workers (the last ones) answer from Dirichlet(1) rows.
        force_dominant: swap each row's largest entry onto the diagonal (non-random workers).
        seed: integer seed.
    """
    m = check_int(num_workers, "num_workers", minimum=1)
    k = check_int(num_classes, "num_classes", minimum=2)
    rho, conc, bad = _check_reliability(m, dominance, concentration, num_random, force_dominant)
    alpha = np.full((k, k), conc * (1 - rho) / (k - 1))
    np.fill_diagonal(alpha, conc * rho)
    alpha = np.broadcast_to(alpha, (m, k, k)).copy()
    if bad:
        alpha[m - bad:] = 1.0
    conf = _dirichlet_rows(alpha, seed)
    if force_dominant:
        good = conf[: m - bad]
        diag = torch.diagonal(good, dim1=-2, dim2=-1).clone()
        best_val, best_idx = good.max(-1)
        good.scatter_(-1, best_idx.unsqueeze(-1), diag.unsqueeze(-1))
        torch.diagonal(good, dim1=-2, dim2=-1).copy_(best_val)
    return conf


def random_transitions(num_classes: int, *, stickiness: float = 0.0, seed: int) -> torch.Tensor:
    """``(K, K)`` random transition matrix (rows = previous state), rows ``~ Dirichlet(1_K)``
    mixed with the identity: ``(1 - s) D + s I`` with ``s`` = ``stickiness`` in [0, 1)."""
    k = check_int(num_classes, "num_classes", minimum=2)
    s = check_probability(stickiness, "stickiness")
    if s == 1.0:
        raise ValueError("stickiness must be < 1 (1 would freeze the chain)")
    rows = _dirichlet_rows(np.ones((k, k)), seed)
    return (1 - s) * rows + s * torch.eye(k, dtype=DTYPE)


def who_labels(n: int, m: int, labels_per_item, missing_rate, generator):
    """``(items, workers)`` code vectors saying which worker labels which item.

    Every worker labels every item, or ``labels_per_item`` distinct workers per item, or each
    (item, worker) pair is dropped with probability ``missing_rate`` (give at most one).
    """
    _check_coverage(m, labels_per_item, missing_rate)
    if labels_per_item is not None:
        r = int(labels_per_item)
        keys = torch.rand(n, m, generator=generator, dtype=DTYPE)
        chosen = torch.argsort(keys, dim=1)[:, :r]
        return torch.arange(n).repeat_interleave(r), chosen.reshape(-1)
    items = torch.arange(n).repeat_interleave(m)
    workers = torch.arange(m).repeat(n)
    if missing_rate is not None:
        keep = torch.rand(n * m, generator=generator, dtype=DTYPE) >= float(missing_rate)
        if not bool(keep.any()):
            raise ValueError("missing_rate removed every label; lower it or raise the sizes")
        items, workers = items[keep], workers[keep]
    return items, workers


def emit_labels(z, confusion, items, workers, generator) -> AnnotationTable:
    """Labels ``y_l ~ confusion[workers_l, z[items_l]]`` as an annotation table."""
    m, k = confusion.shape[0], confusion.shape[-1]
    probs = confusion[workers, z[items]]
    labels = torch.multinomial(probs, 1, generator=generator).squeeze(1)
    return AnnotationTable.from_arrays(items, workers, labels, num_items=len(z), num_workers=m,
                                       num_classes=k)


@dataclass(frozen=True)
class WorkerPopulation:
    r"""The simulated workers: how many, how reliable, and who labels which item.

    Worker ``m``'s answer to an item of true class ``k`` is drawn from row ``k`` of its
    confusion matrix, ``Dirichlet(c a_k)`` with ``a_kk = rho`` (``dominance``) and
    ``a_kj = (1 - rho)/(K - 1)``, so the expected diagonal mass of each row is ``rho`` and
    ``c`` (``concentration``) sets how much workers vary around it (see
    :func:`random_confusions`).

    Who labels what: by default every worker labels every item. ``labels_per_item = r`` gives
    each item ``r`` distinct workers drawn uniformly; ``missing_rate = p`` drops each
    (item, worker) label independently with probability ``p`` (items may end up unlabelled;
    they stay in the table). Give at most one of the two.

    The arguments are checked when the population is made.

    Attributes:
        num_workers: ``M >= 1``.
        dominance: ``rho`` in (0, 1).
        concentration: ``c > 0``.
        num_random: how many workers (the last ones) answer from ``Dirichlet(1_K)`` rows.
        force_dominant: swap each row's largest entry onto the diagonal (other workers).
        labels_per_item: ``r`` in ``[1, M]``, or ``None``.
        missing_rate: ``p`` in ``[0, 1)``, or ``None``.

    Example:
        >>> workers = WorkerPopulation(5, dominance=0.6, labels_per_item=3)
        >>> table, truth = simulate_annotations(20, workers, 3, seed=1)
        >>> table.counts_per_item().unique().tolist()
        [3]
    """

    num_workers: int
    dominance: float = 0.7
    concentration: float = 10.0
    num_random: int = 0
    force_dominant: bool = False
    labels_per_item: int | None = None
    missing_rate: float | None = None

    def __post_init__(self):
        m = check_int(self.num_workers, "num_workers", minimum=1)
        _check_reliability(m, self.dominance, self.concentration, self.num_random,
                           self.force_dominant)
        _check_coverage(m, self.labels_per_item, self.missing_rate)

    @classmethod
    def of(cls, workers) -> WorkerPopulation:
        """``workers`` itself, or for a number of workers the default population of that size."""
        if isinstance(workers, cls):
            return workers
        if isinstance(workers, numbers.Integral) and not isinstance(workers, bool):
            return cls(workers)
        raise TypeError(
            "workers must be a WorkerPopulation or a number of workers, got "
            f"{type(workers).__name__} {workers!r}"
        )

    def label(self, z: torch.Tensor, num_classes: int, seed: int, generator: torch.Generator):
        """The population's labels of items whose true classes are ``z``.

        The confusions are drawn from ``derive_seed(seed, "confusion")``; who labels what and
        the labels themselves from ``generator``.

        Returns:
            ``(table, confusion)``: the :class:`~pyromodels.data.AnnotationTable` and the
            ``(M, K, K)`` confusion matrices.
        """
        confusion = random_confusions(self.num_workers, num_classes, dominance=self.dominance,
                                      concentration=self.concentration,
                                      num_random=self.num_random,
                                      force_dominant=self.force_dominant,
                                      seed=derive_seed(seed, "confusion"))
        items, workers = who_labels(len(z), self.num_workers, self.labels_per_item,
                                    self.missing_rate, generator)
        return emit_labels(z, confusion, items, workers, generator), confusion


def simulate_annotations(num_items: int, workers, num_classes: int, *, class_prior=None,
                         seed: int):
    r"""Crowd labels from the Dawid–Skene model with random confusion matrices.

    .. math::
        z_n \sim \mathrm{Categorical}(\pi), \qquad
        \Gamma_{m,k,\cdot} \sim \mathrm{Dirichlet}(c\,a_k), \qquad
        y_{nm} \mid z_n = k \sim \mathrm{Categorical}(\Gamma_{m,k,\cdot}),

    with :math:`a_{k k} = \rho` and :math:`a_{k j} = (1-\rho)/(K-1)` for :math:`j \ne k`
    (:math:`\rho` and :math:`c` and who labels what: see :class:`WorkerPopulation`). Rows of
    ``confusion`` index the true class, columns the label given.

    Args:
        num_items: ``N``.
        workers: a :class:`WorkerPopulation`, or the number of workers ``M`` for the default one.
        num_classes: ``K >= 2``.
        class_prior: :math:`\pi`, ``(K,)``; default uniform.
        seed: integer seed.

    Returns:
        ``(table, truth)`` with ``truth = {"z": long (N,), "confusion": (M, K, K), "prior":
        (K,)}``; the table's ids are ``0 .. n - 1``.

    Example:
        >>> workers = WorkerPopulation(5, labels_per_item=3)
        >>> table, truth = simulate_annotations(20, workers, 3, seed=1)
        >>> table.counts_per_item().unique().tolist(), truth["confusion"].shape
        ([3], torch.Size([5, 3, 3]))
    """
    n = check_int(num_items, "num_items", minimum=1)
    workers = WorkerPopulation.of(workers)
    k = check_int(num_classes, "num_classes", minimum=2)
    prior = (torch.full((k,), 1.0 / k, dtype=DTYPE) if class_prior is None
             else check_stochastic(class_prior, "class_prior", shape=(k,), dtype=DTYPE))
    seed = check_int(seed, "seed", minimum=0)
    gen = make_generator(seed)
    z = torch.multinomial(prior, n, replacement=True, generator=gen)
    table, confusion = workers.label(z, k, seed, gen)
    return table, {"z": z, "confusion": confusion, "prior": prior}


def simulate_sequential_annotations(
    lengths,
    workers,
    num_classes: int,
    *,
    transition=None,
    stickiness: float = 0.0,
    initial=None,
    seed: int,
):
    r"""Crowd labels of items in sequences whose true labels form a Markov chain.

    .. math::
        y_{s,1} \sim p_1, \quad y_{s,t} \mid y_{s,t-1} = i \sim T_{i,\cdot}, \quad
        f_{m,s,t} \mid y_{s,t} = k \sim \mathrm{confusion}_{m,k,\cdot}.

    Args:
        lengths: sequence lengths (a list of ints), e.g. ``[40] * 25``.
        workers: a :class:`WorkerPopulation`, or the number of workers ``M`` for the default one.
        num_classes: ``K``.
        transition: ``(K, K)`` row-stochastic ``T[i, j] = P(y_t = j | y_{t-1} = i)``; default
            :func:`random_transitions` with ``stickiness``.
        initial: law of ``y_1``; default the stationary distribution of ``transition``.
        seed: integer seed.

    Returns:
        ``(sequences, truth)``: a :class:`~pyromodels.data.Sequences` whose data is the
        :class:`~pyromodels.data.AnnotationTable` (items in sequence order), and
        ``truth = {"z", "confusion", "transition", "initial"}``.
    """
    seed = check_int(seed, "seed", minimum=0)
    workers = WorkerPopulation.of(workers)
    k = check_int(num_classes, "num_classes", minimum=2)
    lens = [check_int(v, f"lengths[{i}]", minimum=1) for i, v in enumerate(lengths)]
    if not lens:
        raise ValueError("lengths must hold at least one sequence length")
    if transition is None:
        trans = random_transitions(k, stickiness=stickiness, seed=derive_seed(seed, "transition"))
    else:
        trans = check_stochastic(transition, "transition", shape=(k, k), dtype=DTYPE)
    init = (stationary_distribution(trans) if initial is None
            else check_stochastic(initial, "initial", shape=(k,), dtype=DTYPE))
    gen = make_generator(seed)
    states = []
    for length in lens:
        y = torch.empty(length, dtype=torch.long)
        y[0] = torch.multinomial(init, 1, generator=gen)
        for t in range(1, length):
            y[t] = torch.multinomial(trans[y[t - 1]], 1, generator=gen)
        states.append(y)
    z = torch.cat(states)
    table, confusion = workers.label(z, k, seed, gen)
    truth = {"z": z, "confusion": confusion, "transition": trans, "initial": init}
    return Sequences(table, torch.tensor(lens)), truth


def sbm_graph(z, mean_degree: float, *, within: float = 0.9, seed: int) -> Graph:
    """An undirected stochastic-block-model graph on the communities ``z``.

    ``round(mean_degree * N / 2)`` distinct edges are drawn; each joins two nodes of the same
    community with probability ``within`` (else of different communities), uniformly among
    such pairs. No self loops, no repeated edges.
    """
    z = torch.as_tensor(z, dtype=torch.long)
    n = len(z)
    d = check_positive(mean_degree, "mean_degree", strict=False)
    w = check_probability(within, "within")
    num_edges = int(round(d * n / 2))
    if num_edges > n * (n - 1) // 2:
        raise ValueError(f"mean_degree {d} needs more edges than the {n}-node complete graph has")
    gen = make_generator(seed)
    seen: set[tuple[int, int]] = set()
    edges = []
    tries = 0
    want_same = bool(torch.rand(1, generator=gen, dtype=DTYPE) < w)
    while len(edges) < num_edges:
        tries += 1
        if tries > 500 * max(num_edges, 1):
            raise ValueError("could not draw enough distinct edges; lower mean_degree or change within")
        a, b = torch.randint(n, (2,), generator=gen).tolist()
        if a == b or bool(z[a] == z[b]) != want_same:
            continue  # rejection: a uniform pair of the wanted kind
        key = (min(a, b), max(a, b))
        if key not in seen:
            seen.add(key)
            edges.append(key)
            want_same = bool(torch.rand(1, generator=gen, dtype=DTYPE) < w)
    return Graph.from_edges(torch.tensor(edges, dtype=torch.long).reshape(-1, 2), num_nodes=n)


def simulate_networked_annotations(
    num_items: int,
    workers,
    num_classes: int,
    *,
    mean_degree: float,
    within: float = 0.9,
    class_prior=None,
    seed: int,
):
    """Crowd labels of items on a stochastic-block-model graph whose communities are the true
    classes (the ensemble paper's synthetic networked data: the graph is not drawn from the
    Potts model used for inference).

    The labels are those of :func:`simulate_annotations` with the same arguments; the graph
    is :func:`sbm_graph` on the true classes with ``mean_degree`` and ``within``, drawn from
    ``derive_seed(seed, "graph")``.

    Returns:
        ``(table, graph, truth)`` with ``truth = {"z", "confusion", "prior"}``.
    """
    table, truth = simulate_annotations(num_items, workers, num_classes, class_prior=class_prior,
                                        seed=seed)
    graph = sbm_graph(truth["z"], mean_degree, within=within, seed=derive_seed(seed, "graph"))
    return table, graph, truth
