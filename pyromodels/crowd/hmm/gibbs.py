r"""The blocked Gibbs sweep of the Bayesian sequential Dawid-Skene model.

The labels block draws every label path jointly from :math:`p(z \mid F, \theta)` by
forward-filtering backward-sampling (:func:`~pyromodels.crowd.hmm.inference.ffbs_sample`, on
the backend the data were prepared with).

Blocks of the sweep (each the exact full conditional of the program, checked by
condition-and-score in the tests):

* ``labels``: every sequence's path by FFBS; its log density is :math:`\log p(z \mid \text{rest})
  = \log p(z, F \mid \theta) - \log p(F \mid \theta)`,
* ``initial`` (``initial="learned"`` only): :math:`p_1 \mid z \sim \mathrm{Dir}(c^0 + n^1)`, with
  :math:`n^1_k` the number of sequences starting in :math:`k`,
* ``transition``: row :math:`i` :math:`\sim \mathrm{Dir}(c^A_i + n_{i\cdot})` with the transition
  counts of :math:`z`,
* ``confusion``: row :math:`(m, k)` :math:`\sim \mathrm{Dir}(c^\Gamma_k + n_{mk\cdot})` with the
  counts of worker :math:`m`'s answers on items labelled :math:`k`.
"""

from __future__ import annotations

import torch
from torch.distributions import Dirichlet

from ...conjugate.random import sample_dirichlet
from ...core.errors import ModelSpecError
from ...core.gibbs import GibbsBlock, GibbsSweep
from ..emissions import confusion_counts, log_emissions
from .baum_welch import count_transitions
from .distributions import chain_log_prob
from .inference import ffbs_sample, log_likelihood

__all__ = [
    "sweep",
    "labels_block",
    "labels_log_density",
    "first_label_law",
    "initial_concentration",
    "transition_concentration",
    "confusion_concentration",
]


# ----------------------------------------------------------------------------- Gibbs blocks
def first_label_law(state: dict, data) -> torch.Tensor:
    """The law of the first label: the state's ``initial`` or the data's fixed one."""
    return state["initial"] if data.initial_mode == "learned" else data.initial_probs


def _log_terms(state, data):
    return (log_emissions(data.table, state["confusion"].log()), first_label_law(state, data).log(),
            state["transition"].log())


def labels_block(state: dict, data, generator: torch.Generator) -> dict:
    e, a, tr = _log_terms(state, data)
    return {"z": ffbs_sample(e, a, tr, data.lengths, generator=generator, backend=data.backend)[0]}


def labels_log_density(values: dict, state: dict, data) -> torch.Tensor:
    r""":math:`\log p(z \mid \theta, F) = \log p(z, F \mid \theta) - \log p(F \mid \theta)`."""
    e, a, tr = _log_terms(state, data)
    z = values["z"]
    joint = chain_log_prob(z, a, tr, data.starts) + e.gather(1, z.unsqueeze(1)).sum()
    return joint - log_likelihood(e, a, tr, data.lengths, backend=data.backend).sum()


def initial_concentration(state, data):
    """Dirichlet concentration of ``initial`` given the labels ``state["z"]``."""
    counts = torch.bincount(state["z"][data.starts], minlength=data.num_classes)
    return data.initial_concentration + counts.to(torch.float64)


def transition_concentration(state, data):
    """``(K, K)`` Dirichlet concentrations of the transition rows given ``state["z"]``."""
    return data.transition_concentration + count_transitions(state["z"], data.starts, data.num_classes)


def confusion_concentration(state, data):
    """``(M, K, K)`` Dirichlet concentrations of the confusion rows given ``state["z"]``."""
    onehot = torch.nn.functional.one_hot(state["z"], data.num_classes).to(torch.float64)
    return data.confusion_concentration + confusion_counts(data.table, onehot)


def _dirichlet_block(site, concentration):
    def update(state, data, generator):
        return {site: sample_dirichlet(concentration(state, data), generator=generator)}

    def log_density(values, state, data):
        return Dirichlet(concentration(state, data)).log_prob(values[site]).sum()

    return GibbsBlock(site, (site,), update, log_density)


def sweep(data, scan: str = "systematic") -> GibbsSweep:
    """The sweep labels -> (initial) -> transition -> confusion for prepared ``data``."""
    if data.initial_mode == "stationary":
        raise ModelSpecError(
            "initial='stationary' ties the first label's law to the transition matrix, which has "
            "no conjugate Gibbs update; use initial='learned' or 'fixed' for method='gibbs'"
        )
    blocks = [GibbsBlock("labels", ("z",), labels_block, labels_log_density)]
    if data.initial_mode == "learned":
        blocks.append(_dirichlet_block("initial", initial_concentration))
    blocks.append(_dirichlet_block("transition", transition_concentration))
    blocks.append(_dirichlet_block("confusion", confusion_concentration))
    return GibbsSweep(blocks, scan=scan)
