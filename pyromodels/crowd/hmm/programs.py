r"""The sequential Dawid-Skene model as Pyro programs: one story, three ways to run it.

Generative story (``S`` sequences, ``K`` classes, ``M`` workers)::

    initial             ~ Dirichlet(c0)                     (initial="learned"; else fixed or
                                                             the stationary law of transition)
    transition[i]       ~ Dirichlet(cA[i])                  i = 1..K   (rows = previous label)
    confusion[m, k]     ~ Dirichlet(cG[k])                  m = 1..M, k = 1..K (rows = true label)
    z_{s,1}             ~ Categorical(initial)
    z_{s,t} | z_{s,t-1} ~ Categorical(transition[z_{s,t-1}])
    f_{m,s,t} | z_{s,t} ~ Categorical(confusion[m, z_{s,t}])   for each response in the table

* :func:`full_model` keeps the label path as one site ``z`` (a :class:`MarkovChain`) and the
  responses as the long table's ``labels`` site; Gibbs, ``log_joint`` and simulation use it.
* :func:`collapsed_model` sums ``z`` out with ``pyro.distributions.DiscreteHMM``. Pyro applies
  one transition BEFORE the first observation (``initial_logits`` is the law of a state at time
  0), so the first of the time-dependent transition matrices has every row equal to
  ``log initial``: whatever the time-0 state, ``z_1 ~ initial`` exactly.
* :func:`enumerated_model` writes the chain with ``pyro.markov`` and enumerates each ``z_t``
  (a loop over time: for small data and for ``TraceEnum_ELBO`` / ``infer_discrete`` checks).

The collapsed and enumerated programs need at most one response per (item, worker): they read
the responses as a padded ``(S, T_max, M)`` block with ``-1`` for "no response".
"""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import torch
from pyro import poutine
from pyro.ops.indexing import Vindex

from .distributions import CrowdResponses, MarkovChain
from .params import stationary_distribution

__all__ = ["global_sites", "full_model", "collapsed_model", "enumerated_model"]


def global_sites(data) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sample ``initial`` (when learned), ``transition`` and ``confusion``; return all three."""
    K, M = data.num_classes, data.num_workers
    transition = pyro.sample("transition", dist.Dirichlet(data.transition_concentration).to_event(1))
    confusion = pyro.sample(
        "confusion", dist.Dirichlet(data.confusion_concentration.expand(M, K, K)).to_event(2)
    )
    if data.initial_mode == "learned":
        initial = pyro.sample("initial", dist.Dirichlet(data.initial_concentration))
    elif data.initial_mode == "fixed":
        initial = data.initial_probs
    else:
        initial = stationary_distribution(transition)
    return initial, transition, confusion


def full_model(data):
    """The program with the label path ``z`` ``(T_total,)`` and the responses ``labels`` ``(L,)``."""
    initial, transition, confusion = global_sites(data)
    z = pyro.sample("z", MarkovChain(initial, transition, data.lengths))
    table = data.table
    with pyro.plate("responses", table.num_labels, dim=-1):
        probs = Vindex(confusion)[..., table.worker_idx, z[..., table.item_idx], :]
        pyro.sample("labels", dist.Categorical(probs), obs=table.label_idx)
    return z


def _first_step_logits(initial: torch.Tensor, transition: torch.Tensor, num_steps: int) -> torch.Tensor:
    """``(..., num_steps, K, K)``: step 0 maps any state to ``initial``, later steps use
    ``transition``."""
    K = initial.shape[-1]
    first = initial.log().unsqueeze(-2).expand(initial.shape[:-1] + (K, K))
    later = transition.log().unsqueeze(-3).expand(transition.shape[:-2] + (num_steps - 1, K, K))
    batch = torch.broadcast_shapes(first.shape[:-2], later.shape[:-3])
    return torch.cat([first.expand(batch + (1, K, K)), later.expand(batch + (num_steps - 1, K, K))], -3)


def collapsed_model(data):
    """``z`` summed out by ``DiscreteHMM``: one site ``responses`` ``(S, T_max, M)`` per sequence."""
    initial, transition, confusion = global_sites(data)
    responses, _ = data.dense
    S, T, _ = responses.shape
    K = data.num_classes
    observation = CrowdResponses(confusion.log().transpose(-3, -2))  # batch (K,), event (M,)
    hmm = dist.DiscreteHMM(
        torch.zeros(K, dtype=initial.dtype, device=initial.device),  # the time-0 state: irrelevant
        _first_step_logits(initial, transition, T),
        observation,
    )
    with pyro.plate("sequences", S, dim=-1):
        pyro.sample("responses", hmm, obs=responses)


def enumerated_model(data):
    """The chain unrolled with ``pyro.markov``: sites ``z_t`` (enumerated) and ``responses_t``
    for ``t = 0 .. T_max - 1``, each batched over the sequences and masked past their ends."""
    initial, transition, confusion = global_sites(data)
    responses, mask = data.dense
    S, T, _ = responses.shape
    log_conf = confusion.log().transpose(-3, -2)  # (K, M, J)
    z = None
    with pyro.plate("sequences", S, dim=-1):
        for t in pyro.markov(range(T)):
            probs = initial if z is None else Vindex(transition)[..., z, :]
            with poutine.mask(mask=mask[:, t]):
                z = pyro.sample(f"z_{t}", dist.Categorical(probs), infer={"enumerate": "parallel"})
                pyro.sample(f"responses_{t}", CrowdResponses(Vindex(log_conf)[..., z, :, :]),
                            obs=responses[:, t])
