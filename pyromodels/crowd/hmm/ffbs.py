r"""Forward-filtering backward-sampling and the blocked Gibbs sweep of the Bayesian sequential
Dawid-Skene model.

FFBS draws every label path jointly from :math:`p(z \mid F, \theta)`: filter forward to
:math:`P(z_t \mid F_{1:t})`, draw :math:`z_T` from the last filter, then for :math:`t = T-1, ...,
1` draw :math:`z_t \propto P(z_t \mid F_{1:t})\, A_{z_t z_{t+1}}`. Draws use the inverse CDF of
uniforms taken from the generator, so the torch and numba backends give the same paths.

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

from ...checks import check_int
from ...conjugate.random import sample_dirichlet
from ...core.backend import resolve_backend
from ...core.errors import ModelSpecError
from ...core.gibbs import GibbsBlock, GibbsSweep
from ..emissions import confusion_counts, log_emissions
from .baum_welch import count_transitions
from .distributions import chain_log_prob
from .kernels.forward_backward import forward_filter, log_likelihood
from .kernels.inputs import check_log_inputs
from .kernels.viterbi import pad_positions

__all__ = [
    "ffbs_sample",
    "sweep",
    "labels_log_density",
    "first_label_law",
    "initial_concentration",
    "transition_concentration",
    "confusion_concentration",
]


def _torch_backward_sample(log_filt, tr, lengths, u):
    n = u.shape[0]
    pf, mask = pad_positions(log_filt, lengths)  # (S, T, K)
    pu = pad_positions(u.T, lengths)[0].permute(2, 0, 1)  # (n, S, T)
    S, T, K = pf.shape
    z = torch.zeros((n, S, T), dtype=torch.long, device=log_filt.device)
    last = lengths - 1
    for t in range(T - 1, -1, -1):
        step = tr.T[z[:, :, t + 1]] if t + 1 < T else torch.zeros_like(pf[None, :, 0])  # (n, S, K)
        logw = pf[:, t] + torch.where((last == t)[None, :, None], torch.zeros_like(step), step)
        w = torch.exp(logw - logw.amax(-1, keepdim=True))
        cdf = torch.cumsum(w, -1)
        draw = (cdf < (pu[:, :, t] * cdf[..., -1]).unsqueeze(-1)).sum(-1).clamp(max=K - 1)
        z[:, :, t] = torch.where(mask[:, t][None], draw, torch.zeros_like(draw))
    return z[:, mask]


def ffbs_sample(log_emissions, log_initial, log_transition, lengths=None, *, generator: torch.Generator,
                num_samples: int = 1, backend: str = "auto") -> torch.Tensor:
    """Draw ``num_samples`` label paths of every sequence from the HMM posterior.

    Args:
        log_emissions, log_initial, log_transition, lengths: as
            :func:`~pyromodels.crowd.hmm.kernels.forward_backward`.
        generator: the ``torch.Generator`` the uniforms come from.
        num_samples: number of independent joint draws.
        backend: ``"auto"``, ``"torch"`` or ``"numba"`` (filtering and backward pass).

    Returns:
        long ``(num_samples, T_total)``.

    Example:
        >>> import torch
        >>> e = torch.zeros(4, 2, dtype=torch.float64)
        >>> a = torch.log(torch.tensor([0.5, 0.5], dtype=torch.float64))
        >>> tr = torch.log(torch.tensor([[0.9, 0.1], [0.1, 0.9]], dtype=torch.float64))
        >>> ffbs_sample(e, a, tr, [1, 3], generator=torch.Generator().manual_seed(0)).shape
        torch.Size([1, 4])
    """
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    e, a, tr, lengths = check_log_inputs(log_emissions, log_initial, log_transition, lengths)
    which = resolve_backend(backend, e, a, tr)
    log_filt, _ = forward_filter(e, a, tr, lengths, backend=which)
    u = torch.rand((num_samples, e.shape[0]), generator=generator, dtype=torch.float64, device=e.device)
    if which == "numba":
        from .kernels.scaled import numba_backward_sample

        return numba_backward_sample(log_filt, tr, lengths, u)
    return _torch_backward_sample(log_filt, tr, lengths, u)


# ----------------------------------------------------------------------------- Gibbs blocks
def first_label_law(state: dict, data) -> torch.Tensor:
    """The law of the first label: the state's ``initial`` or the data's fixed one."""
    return state["initial"] if data.initial_mode == "learned" else data.initial_probs


def _log_terms(state, data):
    return (log_emissions(data.table, state["confusion"].log()), first_label_law(state, data).log(),
            state["transition"].log())


def labels_block(state: dict, data, generator: torch.Generator) -> dict:
    e, a, tr = _log_terms(state, data)
    return {"z": ffbs_sample(e, a, tr, data.lengths, generator=generator)[0]}


def labels_log_density(values: dict, state: dict, data) -> torch.Tensor:
    r""":math:`\log p(z \mid \theta, F) = \log p(z, F \mid \theta) - \log p(F \mid \theta)`."""
    e, a, tr = _log_terms(state, data)
    z = values["z"]
    joint = chain_log_prob(z, a, tr, data.starts) + e.gather(1, z.unsqueeze(1)).sum()
    return joint - log_likelihood(e, a, tr, data.lengths).sum()


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
