r"""State of a DP-mixture Gibbs chain with stable cluster ids, and its parameter block.

Clusters live in *slots* of fixed-capacity arrays so that a sweep can open and close clusters
in O(1): a point stores its slot, a slot stores the cluster's id and its running statistics
(count, sum, sum of squared norms) and, for Neal's Algorithm 2, its instantiated
:math:`(\mu_k, \lambda_k)`. The occupied slots are listed in ``active[:K]`` (with
``position[slot]`` its index there) and the free ones in the stack ``free[:nfree]``. Ids are
handed out in increasing order and never reused within a chain, so a cluster keeps its id for
as long as it is occupied; an emptied cluster is deleted with its parameters.

The parameter block (eq. 22, DDPM paper Theorem 1) draws, for every occupied cluster with
:math:`n_k` points, mean :math:`\bar z_k` and scatter :math:`S_k`,

.. math::

    \lambda_k \sim \mathrm{Gamma}(\alpha_0 + n_k d / 2,\ \beta_n), \quad
    \mu_k \mid \lambda_k \sim N\Big(\frac{\kappa_0\mu_0 + n_k \bar z_k}{\kappa_0 + n_k},
        ((\kappa_0 + n_k)\lambda_k)^{-1} I_d\Big),

with :math:`\beta_n = \beta_0 + S_k / 2 + \kappa_0 n_k \|\bar z_k - \mu_0\|^2 /
(2(\kappa_0 + n_k))`.

Example:
    >>> import torch
    >>> from pyromodels.conjugate import NormalGamma
    >>> z = torch.tensor([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0]], dtype=torch.float64)
    >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 0.1, 2.0, 1.0)
    >>> state = init_state(z, [4, 4, 9], prior, torch.Generator().manual_seed(0))
    >>> state.assignments.tolist(), state.num_clusters
    ([0, 0, 1], 2)
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from ..checks import as_label_tensor, check_in
from ..conjugate import NormalGamma
from .crp import check_torch_generator
from .ng_predictive import check_data, check_prior
from .partitions import canonical_labels

__all__ = ["DPState", "init_state", "empty_state", "resample_params", "ALGORITHMS"]

ALGORITHMS = ("alg2", "alg3")

# counters[...] indices: number of occupied clusters, free slots, next id to hand out.
NUM_ACTIVE, NUM_FREE, NEXT_ID = 0, 1, 2


@dataclass(eq=False)
class DPState:
    """Mutable state of one chain (all CPU tensors).

    Attributes:
        slot: ``(N,)`` int64 slot of each point.
        cluster_id: ``(C,)`` int64 id of the cluster in each slot (``-1`` when free).
        counts: ``(C,)`` int64 points per slot.
        sums: ``(C, d)`` float64 sum of the slot's points.
        sumsq: ``(C,)`` float64 sum of their squared norms.
        mu: ``(C, d)`` float64 cluster means (meaningful when ``has_params``).
        lam: ``(C,)`` float64 cluster precisions (meaningful when ``has_params``).
        active: ``(C,)`` int64; ``active[:K]`` are the occupied slots.
        position: ``(C,)`` int64 index of each occupied slot in ``active``.
        free: ``(C,)`` int64; ``free[:nfree]`` is a stack of free slots.
        counters: ``(3,)`` int64 ``[K, nfree, next_id]``.
        has_params: whether ``mu``/``lam`` are a draw for the current partition.
    """

    slot: torch.Tensor
    cluster_id: torch.Tensor
    counts: torch.Tensor
    sums: torch.Tensor
    sumsq: torch.Tensor
    mu: torch.Tensor
    lam: torch.Tensor
    active: torch.Tensor
    position: torch.Tensor
    free: torch.Tensor
    counters: torch.Tensor
    has_params: bool = False

    @property
    def num_points(self) -> int:
        return self.slot.shape[0]

    @property
    def dim(self) -> int:
        return self.sums.shape[1]

    @property
    def capacity(self) -> int:
        return self.cluster_id.shape[0]

    @property
    def num_clusters(self) -> int:
        """Number of occupied clusters ``K``."""
        return int(self.counters[NUM_ACTIVE])

    @property
    def active_slots(self) -> torch.Tensor:
        """``(K,)`` occupied slots, in the sampler's order."""
        return self.active[: self.num_clusters]

    @property
    def assignments(self) -> torch.Tensor:
        """``(N,)`` int64 cluster id of each point."""
        return self.cluster_id[self.slot]

    @property
    def occupied_ids(self) -> torch.Tensor:
        """``(K,)`` int64 ids of the occupied clusters, in the sampler's order."""
        return self.cluster_id[self.active_slots]

    @property
    def cluster_sizes(self) -> torch.Tensor:
        """``(K,)`` int64 sizes aligned with :attr:`occupied_ids`."""
        return self.counts[self.active_slots]

    def cluster_params(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(ids (K,), mu (K, d), lam (K,))`` of the occupied clusters.

        Raises:
            ValueError: if the state holds no parameter draw (after a collapsed sweep).
        """
        if not self.has_params:
            raise ValueError("state has no cluster parameters: call resample_params first")
        s = self.active_slots
        return self.cluster_id[s], self.mu[s], self.lam[s]

    def point_params(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mu (N, d), lam (N,))``: each point's cluster parameters (for the M-step loss
        ``sum_i (lam_i / 2) ||f(y_i) - mu_i||^2``).

        Raises:
            ValueError: if the state holds no parameter draw.
        """
        if not self.has_params:
            raise ValueError("state has no cluster parameters: call resample_params first")
        return self.mu[self.slot], self.lam[self.slot]

    def copy(self) -> DPState:
        """An independent copy."""
        return DPState(**{f.name: (getattr(self, f.name).clone() if f.name != "has_params"
                                   else self.has_params) for f in fields(self)})

    def grow(self, capacity: int) -> None:
        """Enlarge the slot arrays to ``capacity``; the new slots go on the free stack so that
        the lowest is handed out first."""
        old = self.capacity
        extra = capacity - old
        if extra <= 0:
            return

        def pad(t, value):
            return torch.cat([t, torch.full((extra,) + tuple(t.shape[1:]), value, dtype=t.dtype)])

        nfree = int(self.counters[NUM_FREE])
        new_free = torch.arange(capacity - 1, old - 1, -1, dtype=torch.int64)
        free = torch.cat([new_free, self.free[:nfree]])
        self.free = torch.cat([free, torch.zeros(capacity - free.numel(), dtype=torch.int64)])
        self.counters[NUM_FREE] = nfree + extra
        self.cluster_id = pad(self.cluster_id, -1)
        self.counts = pad(self.counts, 0)
        self.sums = pad(self.sums, 0.0)
        self.sumsq = pad(self.sumsq, 0.0)
        self.mu = pad(self.mu, 0.0)
        self.lam = pad(self.lam, 1.0)
        self.active = pad(self.active, 0)
        self.position = pad(self.position, 0)

    def refresh_stats(self, z: torch.Tensor) -> None:
        """Recompute the per-slot statistics from the points (clears rounding drift)."""
        c = self.capacity
        self.counts = torch.bincount(self.slot, minlength=c)
        self.sums = torch.zeros(c, self.dim, dtype=torch.float64).index_add_(0, self.slot, z)
        self.sumsq = torch.zeros(c, dtype=torch.float64).index_add_(0, self.slot, (z * z).sum(1))


def _check_params(params, k: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(params, tuple) or len(params) != 2:
        raise TypeError("params must be a (mu, lam) tuple")
    mu = as_float_tensor_2d(params[0], "params[0] (mu)", (k, d))
    lam = torch.as_tensor(params[1], dtype=torch.float64).cpu()
    if tuple(lam.shape) != (k,):
        raise ValueError(f"params[1] (lam) must have shape ({k},), got {tuple(lam.shape)}")
    if not bool(torch.isfinite(lam).all()) or not bool((lam > 0).all()):
        raise ValueError("params[1] (lam) must be finite and > 0")
    return mu, lam


def as_float_tensor_2d(x, name: str, shape: tuple[int, int]) -> torch.Tensor:
    t = torch.as_tensor(x, dtype=torch.float64).cpu()
    if tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite")
    return t


def empty_state(num_points: int, dim: int, capacity: int = 16) -> DPState:
    """A state with no cluster and no point seated (``slot`` is ``-1``): the start of a
    sequential allocation (:func:`~pyromodels.bnp.dp_sweep.sequential_init`). Sizes are
    trusted (the caller has checked the data)."""
    return DPState(
        slot=torch.full((num_points,), -1, dtype=torch.int64),
        cluster_id=torch.full((capacity,), -1, dtype=torch.int64),
        counts=torch.zeros(capacity, dtype=torch.int64),
        sums=torch.zeros(capacity, dim, dtype=torch.float64),
        sumsq=torch.zeros(capacity, dtype=torch.float64),
        mu=torch.zeros(capacity, dim, dtype=torch.float64),
        lam=torch.ones(capacity, dtype=torch.float64),
        active=torch.zeros(capacity, dtype=torch.int64),
        position=torch.zeros(capacity, dtype=torch.int64),
        free=torch.arange(capacity - 1, -1, -1, dtype=torch.int64),
        counters=torch.tensor([0, capacity, 0], dtype=torch.int64),
    )


def init_state(z, labels, prior: NormalGamma, generator: torch.Generator | None = None,
               algorithm: str = "alg2", params=None) -> DPState:
    """A chain state from any initial partition (for example k-means labels).

    Cluster ids are ``0..K-1`` in order of first appearance in ``labels``; the next new cluster
    gets id ``K``.

    Args:
        z: ``(N, d)`` data.
        labels: ``(N,)`` non-negative integer labels (only equality matters).
        prior: the Normal-Gamma base measure (dimension ``d``).
        generator: ``torch.Generator`` for the parameter draw; required for ``"alg2"`` unless
            ``params`` is given.
        algorithm: ``"alg2"`` draws :math:`(\\mu_k, \\lambda_k)` from eq. 22; ``"alg3"``
            (collapsed) leaves them undrawn.
        params: optional ``(mu (K, d), lam (K,))`` to use instead of a draw, in the order of
            the canonical labels.

    Raises:
        ValueError: labels of the wrong length, a bad ``algorithm``, bad ``params``.
        TypeError: a missing or wrong ``generator`` when a draw is needed.

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 1.0, 1.0, 1.0)
        >>> s = init_state(torch.zeros(4, 1, dtype=torch.float64), [0, 1, 0, 2], prior,
        ...                algorithm="alg3")
        >>> s.cluster_sizes.tolist()
        [2, 1, 1]
    """
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    check_in(algorithm, "algorithm", ALGORITHMS)
    n, d = z.shape
    lab = as_label_tensor(labels, "labels").cpu()
    if lab.numel() != n:
        raise ValueError(f"labels must have one entry per row of z ({n}), got {lab.numel()}")
    lab = canonical_labels(lab)
    k = int(lab.max()) + 1
    cap = k + max(16, k)
    state = DPState(
        slot=lab.clone(),
        cluster_id=torch.cat([torch.arange(k), torch.full((cap - k,), -1)]).long(),
        counts=torch.zeros(cap, dtype=torch.int64),
        sums=torch.zeros(cap, d, dtype=torch.float64),
        sumsq=torch.zeros(cap, dtype=torch.float64),
        mu=torch.zeros(cap, d, dtype=torch.float64),
        lam=torch.ones(cap, dtype=torch.float64),
        active=torch.cat([torch.arange(k), torch.zeros(cap - k, dtype=torch.int64)]),
        position=torch.cat([torch.arange(k), torch.zeros(cap - k, dtype=torch.int64)]),
        free=torch.arange(cap - 1, k - 1, -1, dtype=torch.int64),
        counters=torch.tensor([k, cap - k, k], dtype=torch.int64),
    )
    state.free = torch.cat([state.free, torch.zeros(k, dtype=torch.int64)])
    state.refresh_stats(z)
    if params is not None:
        mu, lam = _check_params(params, k, d)
        state.mu[:k], state.lam[:k] = mu, lam
        state.has_params = True
    elif algorithm == "alg2":
        check_torch_generator(generator)
        resample_params(z, state, prior, generator)
    return state


def resample_params(z, state: DPState, prior: NormalGamma, generator: torch.Generator) -> DPState:
    """Draw every occupied cluster's :math:`(\\mu_k, \\lambda_k)` from eq. 22, in place.

    The statistics are recomputed from ``z`` first. Clusters are drawn in the order of
    :attr:`DPState.active_slots`.

    Returns:
        ``state``, now with ``has_params = True``.
    """
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    check_torch_generator(generator)
    if not isinstance(state, DPState):
        raise TypeError(f"state must be a DPState, got {type(state).__name__}")
    if state.num_points != z.shape[0]:
        raise ValueError(f"state has {state.num_points} points but z has {z.shape[0]} rows")
    state.refresh_stats(z)
    draw_params(state, prior, generator)
    return state


def draw_params(state: DPState, prior: NormalGamma, generator: torch.Generator) -> None:
    """The unchecked body of :func:`resample_params` (statistics assumed current)."""
    s = state.active_slots
    post = prior.posterior(state.counts[s].double(), state.sums[s], state.sumsq[s])
    mu, lam = post.sample(generator)
    state.mu[s], state.lam[s] = mu, lam
    state.has_params = True
