r"""Two small distributions the HMM programs are written with.

* :class:`MarkovChain` -- the whole label path of ragged sequences,
  :math:`p(z) = \prod_s p_1(z_{s,1}) \prod_{t \ge 2} A_{z_{s,t-1} z_{s,t}}`, as one site of
  event shape ``(T_total,)``.
* :class:`CrowdResponses` -- the responses of ``M`` workers to one item given its label:
  independent categoricals, with ``-1`` marking a worker who did not respond (that worker's
  factor is 1). It is the observation distribution of ``DiscreteHMM`` and of the enumerated
  program.
"""

from __future__ import annotations

import torch
from pyro.distributions import Categorical, TorchDistribution, constraints
from pyro.ops.indexing import Vindex

from ...checks import broadcast_shapes

__all__ = ["MarkovChain", "CrowdResponses", "chain_log_prob"]


def chain_log_prob(z: torch.Tensor, log_initial: torch.Tensor, log_transition: torch.Tensor,
                   starts: torch.Tensor) -> torch.Tensor:
    r"""``log p(z)`` of label paths ``z`` ``(..., T)`` of ragged sequences.

    Args:
        z: long ``(..., T_total)``.
        log_initial: ``(..., K)`` log law of the first label of each sequence.
        log_transition: ``(..., K, K)``, rows = previous label.
        starts: bool ``(T_total,)``, true at the first position of each sequence.

    Returns:
        ``(...)``: :math:`\sum_s \log p_1(z_{s,1}) + \sum_{t \ge 2} \log A_{z_{t-1} z_t}`.
    """
    first = Vindex(log_initial.unsqueeze(-2))[..., z[..., starts]].sum(-1)
    if z.shape[-1] == 1:
        return first
    step = Vindex(log_transition.unsqueeze(-3))[..., z[..., :-1], z[..., 1:]]
    return first + torch.where(~starts[1:], step, torch.zeros_like(step)).sum(-1)


class MarkovChain(TorchDistribution):
    """Label paths of ragged Markov chains sharing one initial law and one transition matrix.

    Args:
        initial: ``(..., K)`` law of the first label of each sequence.
        transition: ``(..., K, K)`` row-stochastic, ``[i, j] = P(z_t = j | z_{t-1} = i)``.
        lengths: long ``(S,)`` sequence lengths; the event is the concatenated path
            ``(sum(lengths),)``.

    Example:
        >>> d = MarkovChain(torch.tensor([0.5, 0.5]), torch.tensor([[0.9, 0.1], [0.2, 0.8]]),
        ...                 torch.tensor([2, 3]))
        >>> d.sample().shape, d.event_shape
        (torch.Size([5]), torch.Size([5]))
    """

    arg_constraints = {
        "initial": constraints.simplex,
        "transition": constraints.independent(constraints.simplex, 1),
    }
    has_enumerate_support = False

    def __init__(self, initial, transition, lengths, validate_args=None):
        self.initial, self.transition = initial, transition
        self.lengths = torch.as_tensor(lengths, dtype=torch.long, device=initial.device)
        self.offsets = torch.cumsum(self.lengths, 0) - self.lengths
        self.starts = torch.zeros(int(self.lengths.sum()), dtype=torch.bool, device=initial.device)
        self.starts[self.offsets] = True
        batch_shape = broadcast_shapes(initial.shape[:-1], transition.shape[:-2])
        super().__init__(batch_shape, self.starts.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.independent(constraints.integer_interval(0, self.initial.shape[-1] - 1), 1)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MarkovChain, _instance)
        batch_shape = torch.Size(batch_shape)
        K = self.initial.shape[-1]
        new.initial = self.initial.expand(batch_shape + (K,))
        new.transition = self.transition.expand(batch_shape + (K, K))
        new.lengths, new.offsets, new.starts = self.lengths, self.offsets, self.starts
        super(MarkovChain, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return chain_log_prob(value, self.initial.log(), self.transition.log(), self.starts)

    def sample(self, sample_shape=()):
        shape = torch.Size(sample_shape) + self.batch_shape
        with torch.no_grad():
            z = torch.zeros(shape + self.event_shape, dtype=torch.long, device=self.initial.device)
            init = self.initial.expand(shape + self.initial.shape[-1:]).unsqueeze(-2)
            z[..., self.offsets] = Categorical(init.expand(shape + (len(self.offsets), -1))).sample()
            trans = self.transition.expand(shape + self.transition.shape[-2:]).unsqueeze(-3)
            for t in range(1, int(self.lengths.max())):
                idx = self.offsets[self.lengths > t] + t
                z[..., idx] = Categorical(Vindex(trans)[..., z[..., idx - 1], :]).sample()
        return z


class CrowdResponses(TorchDistribution):
    """Responses of ``M`` workers to one item: independent categoricals over ``J`` answers.

    ``value[..., m] = -1`` means worker ``m`` gave no response (factor 1); otherwise it is the
    answer in ``0 .. J - 1``. Samples always contain every worker's answer.

    Args:
        logits: ``(..., M, J)`` log-probabilities of each worker's answers (normalised here).

    Example:
        >>> d = CrowdResponses(torch.log(torch.tensor([[0.8, 0.2], [0.6, 0.4]])))
        >>> round(float(d.log_prob(torch.tensor([1, -1])).exp()), 6)  # 0.2 * 1
        0.2
    """

    arg_constraints = {"logits": constraints.real}
    has_enumerate_support = False

    def __init__(self, logits, validate_args=None):
        self.logits = logits - logits.logsumexp(-1, keepdim=True)
        super().__init__(logits.shape[:-2], logits.shape[-2:-1], validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.independent(constraints.integer_interval(-1, self.logits.shape[-1] - 1), 1)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(CrowdResponses, _instance)
        batch_shape = torch.Size(batch_shape)
        new.logits = self.logits.expand(batch_shape + self.logits.shape[-2:])
        super(CrowdResponses, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        shape = broadcast_shapes(value.shape[:-1], self.batch_shape)
        logits = self.logits.expand(shape + self.logits.shape[-2:])
        value = value.expand(shape + value.shape[-1:])
        picked = logits.gather(-1, value.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return torch.where(value >= 0, picked, torch.zeros_like(picked)).sum(-1)

    def sample(self, sample_shape=()):
        with torch.no_grad():
            return Categorical(logits=self.logits).sample(torch.Size(sample_shape))
