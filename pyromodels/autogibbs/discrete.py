"""Gibbs updates of discrete sites by enumerating their support in the model's log density.

Plate-vectorised: with every element of a site set to the same support value ``v``, the log
density terms of the sites that change with it (their ``log_prob`` tensors, not summed over the
plate) give each element's unnormalised conditional at ``v``; the ``K`` values (and the current
state) are scored in one batched trace where the program allows it (see :mod:`.trace`), and
update all ``N`` elements, ``O(N K)`` work. This is exact when the elements are conditionally
independent given the rest, that is when every term that changes with the site is indexed by
the site's own plate dimensions; otherwise (:func:`element_logits` returns ``None``) the update
goes element by element, ``O(N^2 K)`` work in ``N`` traces (one per element, all ``K``
values batched) or ``N K`` for a program that is not vectorisable.
"""

from __future__ import annotations

import logging
import warnings

import pyro.distributions as dist
import torch

from ..conjugate import sample_categorical
from ..core.seeding import make_generator
from .families import unwrap
from .trace import compiled_update, element_index, element_logits, log_joints, tolerance

__all__ = ["DiscreteUpdate", "element_logits", "brute_force_logits", "enumerable"]


def enumerable(fn) -> bool:
    """A finite discrete site the discrete update enumerates: no event dimension, or a one-hot
    one (``OneHotCategorical``: its support values are the rows of the identity)."""
    return fn.event_shape == () or isinstance(unwrap(fn), dist.OneHotCategorical) and unwrap(fn) is fn

logger = logging.getLogger(__name__)


def brute_force_logits(model, args, kwargs, state: dict, site: str, index: tuple,
                       support: torch.Tensor) -> torch.Tensor:
    """The log joint with element ``index`` of ``site`` set to each support value (``(K,)``;
    ``support`` is ``(K, *event)``)."""
    values = []
    for v in support:
        value = state[site].clone()
        value[index] = v.to(value.dtype)
        values.append(value)
    return log_joints(model, args, kwargs, state, site, values)


class _Coupled(Exception):
    """The elements of a discrete site do not separate (raised out of a recorded update)."""


class DiscreteUpdate:
    """The update of one discrete site (a picklable callable for a
    :class:`~pyromodels.core.GibbsBlock`).

    Args:
        model: the Pyro program.
        site: the site's name.
        support: its support values, ``(K, *event)`` (``(K, K)`` one-hot rows for a
            ``OneHotCategorical``).
        vectorised: update all elements at once (else element by element).
        verify: on the first call, compare the vectorised conditional of two random elements
            with brute-force enumeration of the joint, and fall back to element by element
            (with a warning naming the site) on a mismatch. The check draws from its own
            generator, so the chain's draws do not depend on whether it ran.

    After the first call, where the plan built logits from statistics tables for the site
    (:mod:`.tables`), they are computed from the tables without running the program.
    """

    def __init__(self, model, site: str, support: torch.Tensor, vectorised: bool, verify: bool = True):
        self.model, self.site, self.support = model, site, support
        self.vectorised, self.verify = vectorised, verify
        self.table_logits = None  # logits from statistics tables (see .tables), set by the plan

    def _shape(self, value: torch.Tensor) -> torch.Size:
        """The site's elements: its value's shape less the event dimensions."""
        return value.shape[:value.dim() - (self.support.dim() - 1)]

    def __call__(self, state: dict, data, generator: torch.Generator) -> dict:
        args, kwargs = data.args, data.kwargs
        if self.vectorised and not self.verify and self.table_logits is not None \
                and self.table_logits.data.same(args, kwargs):
            draw = sample_categorical(self.table_logits.logits(state), generator)
            return {self.site: self.support[draw].to(state[self.site].dtype)}
        if self.vectorised and not self.verify:
            logits = self._recorded_logits(state, args, kwargs)
            if logits is not None:
                draw = sample_categorical(logits, generator)
                return {self.site: self.support[draw].to(state[self.site].dtype)}
        if self.vectorised:
            logits = element_logits(self.model, args, kwargs, state, self.site, self.support)
            if logits is None:
                self._fall_back("its elements are not conditionally independent")
            elif self.verify and not self.agrees(logits, state, args, kwargs,
                                                 make_generator(0, logits.device)):
                self._fall_back("the vectorised conditional differs from brute-force enumeration")
            else:
                self.verify = False
                draw = sample_categorical(logits, generator)
                return {self.site: self.support[draw].to(state[self.site].dtype)}
        return {self.site: self._sequential(state, args, kwargs, generator)}

    def _recorded_logits(self, state, args, kwargs):
        """:func:`element_logits` with every term kept (no decision on values), through a
        recorded trace of the whole computation once verified (:func:`~.trace.compiled_update`);
        ``None`` where the elements stopped separating."""
        def body(s):
            logits = element_logits(self.model, args, kwargs, s, self.site, self.support,
                                    skip_unchanged=False)
            if logits is None:
                raise _Coupled
            return (logits,)

        try:
            return compiled_update(self.model, args, kwargs, state, ("discrete", self.site), body)[0]
        except _Coupled:
            return None

    def _fall_back(self, why: str) -> None:
        warnings.warn(f"site {self.site!r}: {why}; updating it element by element instead",
                      RuntimeWarning, stacklevel=3)
        self.vectorised = False

    def agrees(self, logits, state, args, kwargs, generator) -> bool:
        """Whether ``logits`` match brute-force enumeration of the joint at two random elements."""
        shape = self._shape(state[self.site])
        n = max(1, shape.numel())
        for _ in range(min(2, n)):
            flat = int(torch.randint(0, n, (), generator=generator))
            index = element_index(flat, shape)
            exact = brute_force_logits(self.model, args, kwargs, state, self.site, index, self.support)
            mine = logits[index] if shape else logits
            tol = tolerance(state[self.site].dtype if state[self.site].is_floating_point()
                            else torch.get_default_dtype()) * (1.0 + float(exact.abs().max()))
            a, b = torch.log_softmax(mine, -1), torch.log_softmax(exact, -1)
            if not bool(((a == b) | ((a - b).abs() <= tol)).all()):  # equal -inf: both impossible
                return False
        return True

    def _sequential(self, state, args, kwargs, generator) -> torch.Tensor:
        value = state[self.site].clone()
        shape = self._shape(value)
        for flat in range(max(1, shape.numel())):
            index = element_index(flat, shape)
            logits = brute_force_logits(self.model, args, kwargs, {**state, self.site: value},
                                        self.site, index, self.support)
            value[index] = self.support[sample_categorical(logits, generator)].to(value.dtype)
        return value

