r"""BayesSCDC's local step: message passing, the objective :math:`J` and the globals' statistics.

For a minibatch the step runs :func:`~pyromodels.scdc.vmp.run_vmp` on the recognition
potentials, evaluates the paper's objective (eq. 19) at the locally optimal factors,

.. math::

    J = E_{q^*(X)}\log p(O \mid X; \gamma) + E\log p(L \mid Z, \alpha, \beta)
        - E_{q(\pi, \mu, \Sigma)} KL(q^*(Z) q^*(X) \,\|\, p(Z \mid \pi) p(X \mid Z, \mu, \Sigma))
        - KL(q(\Theta) \,\|\, p(\Theta)),

(the reconstruction by one reparameterised draw :math:`\hat x_i \sim q^*(x_i)`, the
annotation term in closed form, eq. 20, the local KLs of eqs. 21-22; the engine adds the
global KL, eqs. 23-25) and returns the expected statistics of eqs. 26-29 for
:func:`~pyromodels.core.run_natgrad`.

**Two streams** (paper §3.2, spec §3.2). With ``|B| < N`` or ``|S| < N_a`` each step has

* a data branch: the minibatch ``B`` of items without relational terms; it gives the
  statistics of the weights and the components, weighted :math:`N / |B|`, and
  :math:`(N / |B|) \sum_{i \in B} [\text{reconstruction}_i - KL_i]` to :math:`J`;
* a link branch: ``|S|`` links drawn uniformly without replacement from the ``N_a``, and their
  items; message passing on that subgraph (messages not rescaled, as in the released code)
  gives the workers' statistics, weighted :math:`N_a / |S|` (the paper's unbiased scaling;
  ``worker_scaling="code"`` uses the released code's :math:`N |S| / N_a`, which shrinks the
  workers' counts by :math:`N |S|^2 / N_a^2`, spec §9 item 9), and
  :math:`(N_a / |S|) \sum_{l \in S}` eq. 20 to :math:`J`.

The recognition network encodes each distinct item of a step once: the link branch reads
the potentials of its items that are in the data batch from the data branch's pass and
encodes only the others (each once, however many drawn links it is in). The potential is a
deterministic function of the item, so the two estimators, their weights and their
gradients are what two separate passes give; the message passing and the local factors stay
per stream (the data branch's ``q(z_i)`` must not see the drawn links, or its
:math:`N / |B|`-weighted terms would depend on the link draw and no longer be those of eqs.
26-27).

During ``warmup_epochs`` the step returns no statistics: the globals keep their initial
factors while the networks learn to spread the items over the initial components. Without it,
the first global steps see every item at the same place (an untrained recognition network's
potentials are weak against the components' precision), put all the weight on one component,
and the sparse Dirichlet prior then keeps it there. The released code has no warm-up but
moves the globals by a tiny step (about 1.7e-4 of the natural gradient with momentum), which
holds them near their start for the paper's short Pinwheel run. With ``global_init="data"``
the first step after the warm-up restarts the globals from the data instead of moving them
(:meth:`BayesLocalStep.data_start`, :mod:`.bayes_start`): a full-data CAVI step of size 1
(``LocalStep.step_sizes``) from k-means++ means on the encoded items.

With the full data and every link in one batch (``|B| = N`` and ``|S| = N_a``) the step is
*joint*: one message passing over all items with every link gives every statistic at weight 1,
so a step of size 1 is the coordinate-ascent (CAVI) update of the whole model.

**KL warm-up** (``kl_warmup_steps``; :class:`~pyromodels.scdc.BayesSCDC`'s
``kl_warmup_epochs``). The networks' objective can weigh the local KL terms (eqs. 21-22) in
linearly over the first steps, :math:`J_w = E\log p(O \mid X) + E\log p(L \mid Z) - w_t
(KL_Z + KL_X)` with :math:`w_t = \min(1, t / T)` (Bowman et al. 2016; Sonderby et al.
2016): while :math:`w_t` is small the recognition network is paid for potentials that let the
decoder reconstruct each item, before the KL terms can pull every :math:`q(x_i)` onto the
component the item sits in. Only the networks' gradient changes: message passing, and so the
local factors and the globals' statistics, are those of the model itself, and from step
:math:`T` on :math:`J_w` is the paper's :math:`J`.

The observation model is pluggable (:class:`NetworkObservation` for the recognition network
and decoder; :class:`GaussianObservation` for the conjugate limit, features observed with
Gaussian noise of known precision).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import nn

from ..conjugate.gaussian import GaussianNatural
from ..core.conjugate_factors import LocalStep, Minibatch
from ..nn.amortized import observation_distribution
from .bayes_start import cavi_start
from .links import co_cluster_probability, worker_counts
from .vmp import (
    LinkBatch,
    LocalPosterior,
    annotation_term,
    global_means,
    local_kl_x,
    local_kl_z,
    potential_expectation,
    run_vmp,
)

__all__ = ["ObservationModel", "NetworkObservation", "GaussianObservation", "BayesLocalStep",
           "WORKER_SCALINGS", "local_terms"]

#: the workers' minibatch weights: the paper's ``N_a / |S|`` or the released code's
WORKER_SCALINGS = ("paper", "code")


class ObservationModel(Protocol):
    """What the local step needs of the observation side."""

    def potential(self, o: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(h, precision)``, each ``(N, d)``: the recognition potential on ``x``."""

    def expected_log_likelihood(self, o: torch.Tensor, qx: GaussianNatural,
                                generator: torch.Generator) -> torch.Tensor:
        """``(N,)`` an estimate of :math:`E_{q(x_i)}\\log p(o_i \\mid x_i)`."""


class NetworkObservation(nn.Module):
    """The recognition network :math:`r(o; \\phi)` and the decoder :math:`p(o \\mid x; \\gamma)`.

    Args:
        encoder: a :class:`~pyromodels.nn.GaussianPotentialEncoder`.
        decoder: an :class:`~pyromodels.nn.ObservationDecoder`.
    """

    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def potential(self, o):
        return self.encoder(o)

    def expected_log_likelihood(self, o, qx, generator):
        x = qx.rsample(generator)  # one reparameterised draw per item (Algorithm 1, step 3)
        return observation_distribution(self.decoder.likelihood, self.decoder(x)).log_prob(o)


@dataclass(frozen=True)
class GaussianObservation:
    """The conjugate limit: :math:`o_i = x_i + \\epsilon_i`, :math:`\\epsilon_i \\sim N(0,
    \\lambda^{-1} I)`, no networks. The potential is exact, :math:`h_i = \\lambda o_i` with
    precision :math:`\\lambda`, and the expected log-likelihood is in closed form; a large
    :math:`\\lambda` pins :math:`x_i` at :math:`o_i` (the observed-feature sub-model)."""

    precision: float

    def potential(self, o):
        lam = torch.full_like(o, float(self.precision))
        return lam * o, lam

    def expected_log_likelihood(self, o, qx, generator):
        h, lam = self.potential(o)
        const = -0.5 * (lam * o * o).sum(-1) + 0.5 * (lam.log() - math.log(2 * math.pi)).sum(-1)
        return potential_expectation(qx, h, lam) + const


def local_terms(observation, o, local: LocalPosterior, g, generator,
                kl_weight: float = 1.0) -> torch.Tensor:
    """``(N,)`` per item: reconstruction minus the local KLs (eqs. 21-22), these weighted by
    ``kl_weight`` (1: the ELBO's terms)."""
    return (observation.expected_log_likelihood(o, local.x, generator)
            - kl_weight * (local_kl_z(local, g) + local_kl_x(local, g)))


def _component_stats(factor, probs: torch.Tensor, qx: GaussianNatural):
    stats = qx.expected_stats()
    return factor.observation_stats(probs.sum(0), probs.mT @ stats.linear,
                                    torch.einsum("nk,nab->kab", probs, stats.quadratic))


@dataclass
class BayesLocalStep:
    """The ``local_step`` of :func:`~pyromodels.core.run_natgrad` for BayesSCDC.

    Attributes:
        observation: the observation model (:class:`NetworkObservation` or
            :class:`GaussianObservation`).
        o: ``(N, D)`` all observations (the link branch reads its items' rows).
        i_idx, j_idx, worker_idx, link: ``(N_a,)`` the links (row numbers of ``o``).
        num_workers: ``M``.
        pair_batch_size: ``|S|``.
        num_sweeps, schedule, z_init: as for :func:`~pyromodels.scdc.vmp.run_vmp`.
        worker_scaling: ``"paper"`` or ``"code"`` (module docstring).
        warmup_epochs: epochs at the start during which the step returns no statistics, so
            the globals keep their initial factors while the networks learn (0: none).
        global_init: ``"prior-draws"``: the globals start from their initial factors (the
            paper's); ``"data"``: at the first step after the warm-up they are restarted from
            the data (:mod:`.bayes_start`), once per step object (build one per run).
        priors: the prior factors (needed by ``global_init="data"``).
        start_iterations: CAVI sweeps of the data start.
        kl_warmup_steps: steps over which the local KL terms of the networks' objective are
            weighted in, by ``min(1, step / kl_warmup_steps)`` (0: the ELBO throughout; see
            the module docstring).
    """

    observation: object
    o: torch.Tensor
    i_idx: torch.Tensor
    j_idx: torch.Tensor
    worker_idx: torch.Tensor
    link: torch.Tensor
    num_workers: int
    pair_batch_size: int
    num_sweeps: int = 4
    schedule: str = "parallel"
    z_init: str = "responsibilities"
    worker_scaling: str = "paper"
    warmup_epochs: int = 0
    global_init: str = "prior-draws"
    priors: dict | None = None
    start_iterations: int = 1
    kl_warmup_steps: int = 0
    _started: bool = field(default=False, init=False, repr=False)

    @property
    def num_links(self) -> int:
        return int(self.link.shape[0])

    def _run(self, potential, g, links, generator) -> LocalPosterior:
        """Message passing on the potentials ``(h, precision)`` with this step's settings."""
        return run_vmp(*potential, g, links, num_sweeps=self.num_sweeps, schedule=self.schedule,
                       z_init=self.z_init, generator=generator)

    def _worker_stats(self, globals_, probs, links: LinkBatch) -> dict:
        rho = co_cluster_probability(probs, links.i, links.j)
        counts = worker_counts(rho, links.link, links.worker, self.num_workers)
        return {"alpha": globals_["alpha"].observation_stats(counts.alpha[:, 0], counts.alpha[:, 1]),
                "beta": globals_["beta"].observation_stats(counts.beta[:, 0], counts.beta[:, 1])}

    def _worker_scale(self, num_items: int, drawn: int) -> float:
        if self.worker_scaling == "code":
            return num_items * drawn / self.num_links
        return self.num_links / drawn

    def _draw_links(self, generator: torch.Generator) -> tuple[LinkBatch, torch.Tensor]:
        """``|S|`` links drawn uniformly without replacement, as a :class:`LinkBatch` over
        their distinct items, and those items' rows of ``o`` (each once, however many of the
        drawn links it is in)."""
        drawn = torch.randperm(self.num_links, generator=generator,
                               device=generator.device)[: self.pair_batch_size].to(self.o.device)
        ends = torch.cat([self.i_idx[drawn], self.j_idx[drawn]])
        items, inverse = torch.unique(ends, return_inverse=True)
        size = drawn.numel()
        return LinkBatch(inverse[:size], inverse[size:], self.worker_idx[drawn],
                         self.link[drawn]), items

    def _link_potentials(self, batch: Minibatch, items: torch.Tensor, batch_potential):
        """The recognition potentials ``(h, precision)`` of the link items ``items``: those in
        the data batch read from the batch's ``batch_potential``, the others from one pass of
        the recognition network over their rows. The potential is a deterministic function of
        the item, so the link branch's terms, and their gradients, are those of encoding every
        item anew; each distinct item of the step is encoded once."""
        size = batch.indices.numel()
        position = torch.full((self.o.shape[0],), -1, dtype=torch.long, device=items.device)
        position[batch.indices.to(items.device)] = torch.arange(size, device=items.device)
        source = position[items]
        fresh = source < 0
        h, lam = batch_potential
        if bool(fresh.any()):
            h_new, lam_new = self.observation.potential(self.o[items[fresh]])
            source = source.masked_scatter(fresh, torch.arange(
                size, size + h_new.shape[0], device=items.device))
            h, lam = torch.cat([h, h_new]), torch.cat([lam, lam_new])
        return h[source], lam[source]

    def __call__(self, globals_: dict, batch: Minibatch, generator: torch.Generator) -> LocalStep:
        g = global_means(globals_)
        n = self.o.shape[0]
        has_links = self.num_links > 0
        if has_links and batch.indices.numel() == n and self.pair_batch_size == self.num_links:
            return self._warm(self._joint(globals_, g, batch, generator), batch, globals_,
                              generator)
        o = batch.data
        potential = self.observation.potential(o)
        local = self._run(potential, g, None, generator)
        objective = batch.scale * local_terms(self.observation, o, local, g, generator,
                                              self.kl_weight(batch)).sum()
        stats = {"weights": globals_["weights"].observation_stats(local.probs.sum(0)),
                 "components": _component_stats(globals_["components"], local.probs, local.x)}
        scales = {}
        if has_links:
            links, items = self._draw_links(generator)
            size = links.link.numel()
            pair_local = self._run(self._link_potentials(batch, items, potential), g, links,
                                   generator)
            objective = objective + (self.num_links / size) * annotation_term(
                pair_local.probs, links, g).sum()
            stats.update(self._worker_stats(globals_, pair_local.probs, links))
            scale = self._worker_scale(n, size)
            scales = {"alpha": scale, "beta": scale}
        return self._warm(LocalStep(stats=stats, scales=scales, objective=objective), batch,
                          globals_, generator)

    def kl_weight(self, batch: Minibatch) -> float:
        """The weight of the local KL terms at ``batch``'s step (1 after the KL warm-up)."""
        if self.kl_warmup_steps <= 0:
            return 1.0
        return min(1.0, batch.step / self.kl_warmup_steps)

    def _warm(self, result: LocalStep, batch: Minibatch, globals_: dict,
              generator: torch.Generator) -> LocalStep:
        if batch.epoch < self.warmup_epochs:  # the globals stay; the networks still learn
            return LocalStep(stats={}, scales={}, objective=result.objective)
        if self.global_init == "data" and batch.epoch == self.warmup_epochs and not self._started:
            # once, at the first step after the warm-up (a run resumed later does not restart)
            self._started = True
            start = self.data_start(globals_, generator)
            return dataclasses.replace(start, objective=result.objective)
        return result

    def data_start(self, globals_: dict, generator: torch.Generator) -> LocalStep:
        """The globals restarted from the data (:func:`~.bayes_start.cavi_start`) on the
        current recognition potentials of every item, held fixed: k-means++ means on the
        encoded items (their :math:`E[x_i]` by message passing at the current globals, without
        links), then ``start_iterations`` full-data CAVI sweeps, the last returned at step
        size 1."""
        if self.priors is None:
            raise ValueError("global_init='data' needs the priors")
        with torch.no_grad():
            h_r, lam_r = self.observation.potential(self.o)
            h_r, lam_r = h_r.detach(), lam_r.detach()
        links = (LinkBatch(self.i_idx, self.j_idx, self.worker_idx, self.link)
                 if self.num_links > 0 else None)

        def sweep(factors: dict) -> dict:
            with torch.no_grad():
                local = run_vmp(h_r, lam_r, global_means(factors), links,
                                num_sweeps=self.num_sweeps, schedule=self.schedule,
                                z_init="responsibilities")
                return self._full_stats(factors, local, links)

        with torch.no_grad():  # the encoded items: E[x_i] at the current globals
            points = run_vmp(h_r, lam_r, global_means(globals_), None, num_sweeps=self.num_sweeps,
                             schedule=self.schedule, z_init="responsibilities").x.mean()
        return cavi_start(globals_, self.priors, points, sweep, self.start_iterations, generator)

    def _full_stats(self, globals_: dict, local: LocalPosterior, links: LinkBatch | None) -> dict:
        """Every global's statistics from full-data local factors (weight 1)."""
        stats = {"weights": globals_["weights"].observation_stats(local.probs.sum(0)),
                 "components": _component_stats(globals_["components"], local.probs, local.x)}
        if links is not None:
            stats.update(self._worker_stats(globals_, local.probs, links))
        return stats

    def _joint(self, globals_, g, batch: Minibatch, generator) -> LocalStep:
        """Every item and every link in one message passing (weight 1 for every statistic)."""
        position = torch.empty_like(batch.indices)
        position[batch.indices] = torch.arange(batch.indices.numel(), device=batch.indices.device)
        links = LinkBatch(position[self.i_idx], position[self.j_idx], self.worker_idx, self.link)
        o = batch.data
        local = self._run(self.observation.potential(o), g, links, generator)
        objective = (local_terms(self.observation, o, local, g, generator,
                                 self.kl_weight(batch)).sum()
                     + annotation_term(local.probs, links, g).sum())
        stats = self._full_stats(globals_, local, links)
        scales = {k: 1.0 for k in stats}
        return LocalStep(stats=stats, scales=scales, objective=objective)
