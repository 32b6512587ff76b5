r"""Blocked Gibbs sweep for the Bayesian Dawid-Skene model.

Blocks (each the full conditional of the program; checked by condition-and-score and the
Geweke test in the tests):

* ``classes``: :math:`z_n \mid \pi, \Gamma, \text{labels} \sim \mathrm{Categorical}(q_n)`,
  :math:`\log q_{nk} = \log \pi_k + \sum_{l:\, n_l = n} \log \Gamma_{w_l k y_l} + c_n`,
  independently over items;
* ``prior``: :math:`\pi \mid z \sim \mathrm{Dirichlet}(\alpha + n)` with
  :math:`n_k = \#\{n: z_n = k\}` (absent when the model holds the prior fixed);
* ``confusion``: :math:`\Gamma_{mk} \mid z, \text{labels} \sim \mathrm{Dirichlet}(B_k +
  C_{mk})` with :math:`C_{mkj} = \#\{l: w_l = m, z_{n_l} = k, y_l = j\}`.

Every draw uses the generator it is given (:mod:`pyromodels.conjugate.random`).

Example:
    >>> import torch
    >>> from pyromodels.crowd.ds.model import DawidSkene
    >>> from pyromodels.data import simulate_annotations
    >>> table, _ = simulate_annotations(30, 3, 2, seed=0)
    >>> model = DawidSkene()
    >>> data = model.prepare(table)
    >>> gen = torch.Generator().manual_seed(0)
    >>> state = sweep()(model.init_state(data, gen), data, gen)
    >>> sorted(state), state["confusion"].shape
    (['confusion', 'prior', 'z'], torch.Size([3, 2, 2]))
"""

from __future__ import annotations

import torch
from torch.distributions import Dirichlet

from ...conjugate.random import sample_categorical, sample_dirichlet
from ...conjugate.suffstats import one_hot
from ...core.gibbs import GibbsBlock, GibbsSweep
from ..emissions import confusion_counts
from .data import DSData
from .em import class_logits

__all__ = [
    "sweep",
    "classes_block",
    "classes_log_density",
    "prior_block",
    "prior_log_density",
    "confusion_block",
    "confusion_log_density",
]


def _class_log_probs(state: dict, data: DSData) -> torch.Tensor:
    return torch.log_softmax(class_logits(data, state), -1)


def classes_block(state: dict, data: DSData, generator: torch.Generator) -> dict:
    """Draw every ``z_n`` from its conditional."""
    return {"z": sample_categorical(_class_log_probs(state, data), generator=generator)}


def classes_log_density(values: dict, state: dict, data: DSData) -> torch.Tensor:
    """``log p(z | pi, Gamma, labels)`` at ``values["z"]``."""
    return _class_log_probs(state, data).gather(-1, values["z"].unsqueeze(-1)).sum()


def _prior_concentration(state: dict, data: DSData) -> torch.Tensor:
    counts = torch.bincount(state["z"], minlength=data.num_classes).to(data.dtype)
    return data.prior_concentration + counts


def prior_block(state: dict, data: DSData, generator: torch.Generator) -> dict:
    """Draw the class prior from its Dirichlet conditional."""
    return {"prior": sample_dirichlet(_prior_concentration(state, data), generator=generator)}


def prior_log_density(values: dict, state: dict, data: DSData) -> torch.Tensor:
    return Dirichlet(_prior_concentration(state, data)).log_prob(values["prior"])


def _confusion_concentration(state: dict, data: DSData) -> torch.Tensor:
    counts = confusion_counts(data.table, one_hot(state["z"], data.num_classes, data.dtype),
                              data.num_workers)
    return data.confusion_concentration + counts


def confusion_block(state: dict, data: DSData, generator: torch.Generator) -> dict:
    """Draw every confusion row from its Dirichlet conditional."""
    concentration = _confusion_concentration(state, data)
    return {"confusion": sample_dirichlet(concentration, generator=generator)}


def confusion_log_density(values: dict, state: dict, data: DSData) -> torch.Tensor:
    return Dirichlet(_confusion_concentration(state, data)).log_prob(values["confusion"]).sum()


def sweep(learn_prior: bool = True, scan: str = "systematic") -> GibbsSweep:
    """The sweep classes -> prior -> confusion (no prior block when the prior is fixed)."""
    blocks = [GibbsBlock("classes", ("z",), classes_block, classes_log_density)]
    if learn_prior:
        blocks.append(GibbsBlock("prior", ("prior",), prior_block, prior_log_density))
    blocks.append(GibbsBlock("confusion", ("confusion",), confusion_block, confusion_log_density))
    return GibbsSweep(blocks, scan=scan)
