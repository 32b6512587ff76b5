r"""The reference Gibbs sampler of the semi-crowdsourced mixture with observed features (spec §3.3).

Blocks, each a full conditional of :class:`~pyromodels.scdc.observed_model.ObservedBayesSCDC`'s
program (checked by condition-and-score and the Geweke test in the tests):

* ``assignments``: each :math:`z_n` in turn, :math:`n = 1 .. N`, from

  .. math:: p(z_n = k \mid \cdot) \propto \pi_k\, N(x_n \mid \mu_k, \Lambda_k^{-1})
            \prod_{l \ni n} p(L_l \mid z_n = k, z_{j_l}),

  over the links :math:`l` of item :math:`n` with partner :math:`j_l` at its current cluster.
  The link factor is :math:`\exp(w_l [k = z_{j_l}])` times a constant, with :math:`w_l` the
  two-coin message weight at the current coins (:func:`~pyromodels.scdc.links.message_weights`),
  so each item costs one weighted count over its links (the CSR
  :class:`~pyromodels.scdc.observed_data.LinkAdjacency`). The items are visited one after
  another (a sequential scan, as the pairwise terms couple them); the loop runs on the CPU in
  NumPy, vectorised over the clusters and the item's links, or compiled by numba
  (:mod:`.assign_kernel`), with the Gumbel noise of every item drawn up front from the block's
  generator;
* ``weights``: :math:`\pi \mid z \sim \mathrm{Dir}(\alpha_0 + n_k)` (a share that underflows
  to zero is held at the smallest positive float);
* ``components``: :math:`(\mu_k, \Lambda_k) \mid x, z` from the Normal-Wishart posterior of
  cluster :math:`k` (the NIW posterior of :math:`(\mu_k, \Sigma_k)` in precision form);
* ``workers``: :math:`\alpha_m \sim \mathrm{Beta}(\tau^1_\alpha + \#\{\text{same}, L=1\},
  \tau^2_\alpha + \#\{\text{same}, L=0\})` and :math:`\beta_m \sim
  \mathrm{Beta}(\tau^1_\beta + \#\{\text{different}, L=0\}, \tau^2_\beta +
  \#\{\text{different}, L=1\})`, counted by :func:`~pyromodels.scdc.links.worker_counts` with
  ``same`` :math:`= [z_i = z_j]`.

The sequential scan has no one-line joint density, so the ``assignments`` block carries none;
:func:`item_block` is the single-item update with its density, for condition-and-score.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch.distributions import Beta, Dirichlet, MultivariateNormal

from ..conjugate.random import sample_beta, sample_dirichlet
from ..core.gibbs import GibbsBlock, GibbsSweep
from .links import message_weights, point_worker_logs, worker_counts
from .observed_data import ObservedData

__all__ = [
    "sweep",
    "base_logits",
    "link_weights",
    "item_log_probs",
    "assign_sequentially",
    "assignments_block",
    "item_block",
    "weights_block",
    "weights_concentration",
    "components_block",
    "components_posterior",
    "workers_block",
    "worker_concentrations",
]


def base_logits(state: dict, data: ObservedData) -> torch.Tensor:
    r""":math:`\log\pi_k + \log N(x_n \mid \mu_k, \Lambda_k^{-1})`, shape ``(N, K)``."""
    comp = MultivariateNormal(state["locs"], precision_matrix=state["precisions"])
    return comp.log_prob(data.x.unsqueeze(-2)) + state["weights"].log()


def link_weights(state: dict, data: ObservedData) -> torch.Tensor:
    """Each link's log-likelihood gain when its two items share a cluster, ``(L,)``."""
    logs = point_worker_logs(state["alpha"], state["beta"])
    return message_weights(data.link, logs, data.worker_idx)


def item_log_probs(state: dict, data: ObservedData, n: int) -> torch.Tensor:
    """``log p(z_n = k | everything else)`` for one item, ``(K,)`` (the reference formula)."""
    entries = data.adjacency.entries(n)
    partners = state["z"][data.adjacency.partner[entries]]
    weights = link_weights(state, data)[data.adjacency.link_of[entries]]
    logits = base_logits(state, data)[n].index_add(0, partners, weights)
    return torch.log_softmax(logits, -1)


def assign_sequentially(scores: np.ndarray, indptr: np.ndarray, partner: np.ndarray,
                        entry_weight: np.ndarray, z: np.ndarray, backend: str = "numpy") -> np.ndarray:
    """The sequential scan: for ``n = 0 .. N - 1``, ``z[n] = argmax_k(scores[n, k] +
    sum of entry_weight over item n's entries whose partner is in cluster k)``, in place.

    With ``scores`` = base logits plus independent Gumbel noise, each ``z[n]`` is a draw from
    its conditional given the partners' current clusters (Gumbel-max).

    Args:
        scores: ``(N, K)`` float64.
        indptr, partner: the CSR adjacency as int64 arrays.
        entry_weight: ``(2 L,)`` weight of each entry's link.
        z: ``(N,)`` int64 current clusters, updated in place and returned.
        backend: ``"numpy"`` (this loop, vectorised over each item's links) or ``"numba"``
            (:func:`~pyromodels.scdc.assign_kernel.assign_pass`, the same sums compiled);
            both give the same clusters.
    """
    if backend == "numba":
        from .assign_kernel import assign_pass  # loaded on use: numba starts in ~0.3 s

        return assign_pass(scores, indptr, partner, entry_weight, z)
    K = scores.shape[1]
    for n in range(scores.shape[0]):
        start, stop = indptr[n], indptr[n + 1]
        row = scores[n]
        if stop > start:
            row = row + np.bincount(z[partner[start:stop]], weights=entry_weight[start:stop],
                                    minlength=K)
        z[n] = row.argmax()
    return z


def assignments_block(state: dict, data: ObservedData, generator: torch.Generator,
                      backend: str = "numpy") -> dict:
    """Draw every ``z_n`` in turn from its conditional (see the module docstring), with the
    scan's ``backend`` (:func:`assign_sequentially`)."""
    base = base_logits(state, data)
    u = torch.rand(base.shape, dtype=base.dtype, device=base.device, generator=generator)
    scores = (base - torch.log(-torch.log(u))).detach().cpu().numpy()
    adj = data.adjacency
    entry_weight = link_weights(state, data)[adj.link_of].detach().cpu().numpy()
    z = state["z"].detach().cpu().numpy().astype(np.int64, copy=True)
    z = assign_sequentially(scores, adj.indptr.cpu().numpy(), adj.partner.cpu().numpy(),
                            entry_weight, z, backend)
    return {"z": torch.from_numpy(z).to(state["z"].device)}


def item_block(n: int) -> GibbsBlock:
    """The update of ``z_n`` alone with its log density (for condition-and-score checks)."""

    def update(state, data, generator):
        probs = item_log_probs(state, data, n).exp()
        z = state["z"].clone()
        z[n] = torch.multinomial(probs, 1, generator=generator)[0]
        return {"z": z}

    def log_density(values, state, data):
        return item_log_probs({**state, **values}, data, n)[values["z"][n]]

    return GibbsBlock(f"item {n}", ("z",), update, log_density)


def weights_concentration(state: dict, data: ObservedData) -> torch.Tensor:
    """The Dirichlet concentration of the weights given the clusters, ``alpha0 + n_k``."""
    K = state["weights"].shape[-1]
    counts = torch.bincount(state["z"], minlength=K).to(data.x.dtype)
    return data.prior.weight_concentration + counts


def weights_block(state: dict, data: ObservedData, generator: torch.Generator) -> dict:
    concentration = weights_concentration(state, data)
    if concentration.shape[-1] == 1:  # one cluster: the Dirichlet is the point mass at 1
        return {"weights": torch.ones_like(concentration)}
    weights = sample_dirichlet(concentration, generator=generator)
    # A sparse prior (alpha0 = 0.05 / K) leaves empty clusters shares below the smallest
    # float, drawn as exact zeros, where the Dirichlet density is infinite: hold them at the
    # smallest positive float instead (a change below 1e-38), so the log joint stays finite.
    weights = weights.clamp_min(torch.finfo(weights.dtype).tiny)
    return {"weights": weights / weights.sum(-1, keepdim=True)}


def weights_log_density(values: dict, state: dict, data: ObservedData) -> torch.Tensor:
    return Dirichlet(weights_concentration(state, data)).log_prob(values["weights"])


def components_posterior(z: torch.Tensor, data: ObservedData, num_clusters: int):
    """The Normal-Wishart posterior of every cluster given the assignments, batch ``(K,)``."""
    onehot = torch.nn.functional.one_hot(z, num_clusters).to(data.x.dtype)
    count = onehot.sum(0)
    sum_x = onehot.T @ data.x
    outer = (data.x.unsqueeze(-1) * data.x.unsqueeze(-2)).reshape(data.x.shape[0], -1)
    sum_xx = (onehot.T @ outer).reshape(num_clusters, data.dim, data.dim)
    return data.prior.normal_wishart.posterior(count, sum_x, sum_xx)


def components_block(state: dict, data: ObservedData, generator: torch.Generator) -> dict:
    post = components_posterior(state["z"], data, state["weights"].shape[-1])
    locs, precisions = post.sample(generator=generator)
    return {"locs": locs, "precisions": precisions}


def components_log_density(values: dict, state: dict, data: ObservedData) -> torch.Tensor:
    post = components_posterior(state["z"], data, state["weights"].shape[-1])
    return post.log_prob(values["locs"], values["precisions"]).sum()


def worker_concentrations(state: dict, data: ObservedData) -> tuple[torch.Tensor, torch.Tensor]:
    """The Beta concentrations ``(M, 2)`` of the sensitivities and of the specificities given
    the clusters: the prior's plus the link counts of :func:`~.links.worker_counts`."""
    z = state["z"]
    same = (z[data.i_idx] == z[data.j_idx]).to(data.x.dtype)
    counts = worker_counts(same, data.link, data.worker_idx, data.num_workers)
    return data.prior.alpha_prior + counts.alpha, data.prior.beta_prior + counts.beta


def workers_block(state: dict, data: ObservedData, generator: torch.Generator) -> dict:
    a, b = worker_concentrations(state, data)
    return {"alpha": sample_beta(a[:, 0], a[:, 1], generator=generator),
            "beta": sample_beta(b[:, 0], b[:, 1], generator=generator)}


def workers_log_density(values: dict, state: dict, data: ObservedData) -> torch.Tensor:
    a, b = worker_concentrations(state, data)
    return (Beta(a[:, 0], a[:, 1]).log_prob(values["alpha"]).sum()
            + Beta(b[:, 0], b[:, 1]).log_prob(values["beta"]).sum())


def sweep(scan: str = "systematic", backend: str = "numpy") -> GibbsSweep:
    """The sweep assignments -> weights -> components -> workers, the clusters' scan run by
    ``backend`` (``"numpy"`` or ``"numba"``)."""
    return GibbsSweep(
        [
            GibbsBlock("assignments", ("z",), functools.partial(assignments_block, backend=backend)),
            GibbsBlock("weights", ("weights",), weights_block, weights_log_density),
            GibbsBlock("components", ("locs", "precisions"), components_block,
                       components_log_density),
            GibbsBlock("workers", ("alpha", "beta"), workers_block, workers_log_density),
        ],
        scan=scan,
    )
