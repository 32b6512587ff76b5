"""Blocked Gibbs sweep for the Bayesian Gaussian mixture.

Blocks (each a full conditional of the program; checked by condition-and-score in the tests):

* ``assignments``: ``z_n | weights, locs, precisions, x_n ~ Categorical(softmax(log w + log N))``,
* ``weights``: ``weights | z ~ Dirichlet(alpha + counts)``,
* ``components``: ``(locs_k, precisions_k) | z, x ~ NormalWishart(posterior of cluster k)``.
"""

from __future__ import annotations

import torch
from torch.distributions import Dirichlet

from ..conjugate.random import sample_categorical, sample_dirichlet
from ..conjugate.suffstats import one_hot
from ..core.gibbs import GibbsBlock, GibbsSweep
from .densities import component_log_density
from .em import component_posteriors

__all__ = ["sweep", "assignments_block", "weights_block", "components_block"]


def _assignment_logits(state: dict, data) -> torch.Tensor:
    comp = component_log_density(data.x, state["locs"], state["precisions"])
    return torch.log_softmax(comp + state["weights"].log(), -1)


def _weights_concentration(state: dict, data) -> torch.Tensor:
    K = state["weights"].shape[0]
    counts = torch.bincount(state["z"], minlength=K).to(data.x.dtype)
    return data.prior.weight_concentration + counts


def _components_posterior(state: dict, data):
    resp = one_hot(state["z"], state["weights"].shape[0], data.x.dtype)
    return component_posteriors(data, resp)


def assignments_block(state: dict, data, generator: torch.Generator) -> dict:
    return {"z": sample_categorical(_assignment_logits(state, data), generator=generator)}


def assignments_log_density(values: dict, state: dict, data) -> torch.Tensor:
    logits = _assignment_logits(state, data)
    return logits.gather(-1, values["z"].unsqueeze(-1)).sum()


def weights_block(state: dict, data, generator: torch.Generator) -> dict:
    concentration = _weights_concentration(state, data)
    if concentration.shape[-1] == 1:  # one component: the Dirichlet is the point mass at 1
        return {"weights": torch.ones_like(concentration)}
    return {"weights": sample_dirichlet(concentration, generator=generator)}


def weights_log_density(values: dict, state: dict, data) -> torch.Tensor:
    return Dirichlet(_weights_concentration(state, data)).log_prob(values["weights"])


def components_block(state: dict, data, generator: torch.Generator) -> dict:
    locs, precisions = _components_posterior(state, data).sample(generator=generator)
    return {"locs": locs, "precisions": precisions}


def components_log_density(values: dict, state: dict, data) -> torch.Tensor:
    return _components_posterior(state, data).log_prob(values["locs"], values["precisions"]).sum()


def sweep(scan: str = "systematic") -> GibbsSweep:
    """The systematic sweep assignments -> weights -> components."""
    return GibbsSweep(
        [
            GibbsBlock("assignments", ("z",), assignments_block, assignments_log_density),
            GibbsBlock("weights", ("weights",), weights_block, weights_log_density),
            GibbsBlock("components", ("locs", "precisions"), components_block, components_log_density),
        ],
        scan=scan,
    )
