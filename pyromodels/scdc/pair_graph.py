r"""The links as a sparse matrix over the items: messages and co-clustering in one product each.

Coordinate ascent passes over the links several times a step. Gathering ``L x K`` rows and
adding them back (:func:`~pyromodels.scdc.links.pair_messages`,
:func:`~pyromodels.scdc.links.co_cluster_probability`) is the reference; on a million links
it is an order of magnitude slower than the same sums as sparse products, which
:class:`PairGraph` computes:

* messages :math:`\sum_{l \ni n} w_l q_{\mathrm{other}(l)} = (A q)_n` with the symmetric
  ``(N, N)`` CSR matrix :math:`A` of the pairs' summed link weights (a pair judged by several
  workers is one entry);
* co-clustering :math:`\rho_{ij} = q_i^\top q_j` of every distinct pair as one sampled product
  (``torch.sparse.sampled_addmm``) on the pattern of the pairs;
* the per-worker sums the coins' updates need (eqs. 28-29) and the pairs' summed weights,
  through the sparse ``(P, 2 M)`` matrix that counts each pair's links per (worker, link
  value) group: a link's weight and its share of the counts depend only on its group.

The structure (distinct pairs, CSR indices) is built once per set of links and reused; only
the values change between steps. Both products equal the reference functions to rounding
(``tests/scdc/test_pair_graph.py``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

__all__ = ["PairGraph"]


def _csr(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, n: int) -> torch.Tensor:
    with warnings.catch_warnings():  # torch labels its CSR support as beta on every call
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return torch.sparse_csr_tensor(crow, col, values, (n, n), check_invariants=False)


def _sparse_counts(rows: torch.Tensor, cols: torch.Tensor, size: tuple[int, int],
                   dtype: torch.dtype) -> torch.Tensor:
    """The CSR matrix of ``size`` counting each ``(row, col)`` pair."""
    ones = torch.ones(len(rows), dtype=dtype, device=rows.device)
    coo = torch.sparse_coo_tensor(torch.stack([rows, cols]), ones, size,
                                  check_invariants=False).coalesce()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return coo.to_sparse_csr()


def _row_pointers(rows: torch.Tensor, n: int) -> torch.Tensor:
    crow = torch.zeros(n + 1, dtype=torch.long, device=rows.device)
    crow[1:] = torch.bincount(rows, minlength=n).cumsum(0)
    return crow


@dataclass(frozen=True, eq=False)
class PairGraph:
    """The distinct pairs of a set of links and their sparse structure.

    Attributes:
        num_items: ``N``.
        link_pair: ``(L,)`` the distinct pair of each link.
        num_pairs: the number ``P`` of distinct pairs ``(a, b)``, ``a < b`` (in the order of
            ``a``, then ``b``).
        crow, col: CSR indices of both orientations of every pair (``2 P`` entries).
        entry_groups: sparse CSR ``(2 P, 2 M)``: how many links of each group ``2 m + L``
            (worker ``m``, link value ``L``) the pair of each entry of the symmetric
            structure has.
        groups_t: sparse CSR ``(2 M, P)``: the same counts per distinct pair, transposed.
        pattern: the ``(N, N)`` CSR pattern of the distinct pairs (values one).
    """

    num_items: int
    num_pairs: int
    link_pair: torch.Tensor
    crow: torch.Tensor
    col: torch.Tensor
    entry_groups: torch.Tensor
    groups_t: torch.Tensor
    pattern: torch.Tensor

    @classmethod
    def from_links(cls, i_idx: torch.Tensor, j_idx: torch.Tensor, worker_idx: torch.Tensor,
                   link: torch.Tensor, num_items: int, num_workers: int,
                   dtype: torch.dtype) -> PairGraph:
        """Build from the links' codes (``i_idx != j_idx``, any order; ``link`` 0/1)."""
        n = num_items
        lo, hi = torch.minimum(i_idx, j_idx), torch.maximum(i_idx, j_idx)
        keys, link_pair = torch.unique(lo * n + hi, return_inverse=True)  # sorted: by a, then b
        a, b = keys // n, keys % n
        rows, cols = torch.cat([a, b]), torch.cat([b, a])
        order = torch.argsort(rows * n + cols)
        entry_of = torch.empty_like(order)
        entry_of[order] = torch.arange(len(order), device=order.device)
        num_pairs = len(keys)
        group = 2 * worker_idx + link.long()
        crow, col = _row_pointers(rows, n), cols[order]
        upper_crow = _row_pointers(a, n)
        pattern = _csr(upper_crow, b, torch.ones(num_pairs, dtype=dtype, device=b.device), n)
        entry_rows = torch.cat([entry_of[link_pair], entry_of[link_pair + num_pairs]])
        entry_groups = _sparse_counts(entry_rows, torch.cat([group, group]),
                                      (2 * num_pairs, 2 * num_workers), dtype)
        groups_t = _sparse_counts(group, link_pair, (2 * num_workers, num_pairs), dtype)
        return cls(n, num_pairs, link_pair, crow, col, entry_groups, groups_t, pattern)

    def operator(self, group_weights: torch.Tensor) -> torch.Tensor:
        """The symmetric ``(N, N)`` CSR matrix of the pairs' summed link weights, from the
        weight of each group ``(2 M,)`` (index ``2 m + L``)."""
        values = self.entry_groups @ group_weights.to(self.entry_groups.dtype)
        return _csr(self.crow, self.col, values, self.num_items)

    def messages(self, operator: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """``(N, K)`` messages :math:`A q` (:func:`~pyromodels.scdc.links.pair_messages`)."""
        return operator @ q

    def pair_co_cluster(self, q: torch.Tensor) -> torch.Tensor:
        """``(P,)`` :math:`\\rho = q_a^\\top q_b` of every distinct pair."""
        pattern = self.pattern if self.pattern.dtype == q.dtype else self.pattern.to(q.dtype)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            rho = torch.sparse.sampled_addmm(pattern, q, q.T, beta=0.0).values()
        return rho

    def co_cluster(self, q: torch.Tensor) -> torch.Tensor:
        """``(L,)`` :math:`\\rho_l = q_{i_l}^\\top q_{j_l}` of every link
        (:func:`~pyromodels.scdc.links.co_cluster_probability`)."""
        return self.pair_co_cluster(q)[self.link_pair]

    def group_sums(self, pair_values: torch.Tensor) -> torch.Tensor:
        """``(2 M,)`` sums over each group's links of a value per pair ``(P,)``."""
        return self.groups_t @ pair_values.to(self.groups_t.dtype)
