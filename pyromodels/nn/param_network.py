"""A network whose weights live in Pyro's param store and nowhere else.

``pyro.module`` registers the weights of one ``nn.Module`` object, which then carries its
trained weights from one fit into the next. :class:`ParamNetwork` keeps only the architecture
(a skeleton module, never trained) and reads the weights from the param store on every call,
through ``torch.func.functional_call``. So each fit, which runs in its own param-store scope,
starts from fresh weights; restoring a param store (a resumed checkpoint) restores the
network; and a fitted network is rebuilt from a dict of tensors (a fit's ``params``) without
a param store.

Missing weights are initialised together, as the builder initialises a new module from a
``torch.Generator`` seeded from torch's global generator: inside a seeded fit the initial
weights follow from the fit's seed.
"""

from __future__ import annotations

from collections.abc import Callable

import pyro
import torch
from torch import nn
from torch.func import functional_call

from ..checks import check_name

__all__ = ["ParamNetwork"]


class ParamNetwork:
    """A module's weights as Pyro params named ``"<name>.<parameter name>"``.

    Args:
        name: the prefix of the params' names.
        build: ``build(generator, dtype, device) -> nn.Module``, the architecture with
            initial weights drawn from ``generator``.

    Example:
        >>> from pyromodels.nn import mlp
        >>> net = ParamNetwork("f", lambda g, dtype, device: mlp(3, (4,), 2, generator=g,
        ...                                                      dtype=dtype, device=device))
        >>> with pyro.get_param_store().scope():
        ...     out = net(torch.zeros(5, 3))
        ...     names = sorted(pyro.get_param_store().keys())
        >>> out.shape, names
        (torch.Size([5, 2]), ['f.0.bias', 'f.0.weight', 'f.2.bias', 'f.2.weight'])
    """

    def __init__(self, name: str, build: Callable[..., nn.Module]):
        self.name = check_name(name, "name")
        if not callable(build):
            raise TypeError(f"build must be callable, got {type(build).__name__}")
        self.build = build
        self._skeleton: nn.Module | None = None

    @property
    def skeleton(self) -> nn.Module:
        """The architecture (its own weights are never used)."""
        if self._skeleton is None:
            self._skeleton = self.build(torch.Generator().manual_seed(0), None, None)
        return self._skeleton

    def param_names(self) -> list[str]:
        """The names of the network's params in the store."""
        return [f"{self.name}.{k}" for k, _ in self.skeleton.named_parameters()]

    def params(self, dtype: torch.dtype | None = None, device=None) -> dict[str, torch.Tensor]:
        """The weights from the param store, ``{parameter name: tensor}``; weights missing
        there are drawn (all of them from one new module, ``dtype`` and ``device`` as given)
        and registered first."""
        store = pyro.get_param_store()
        names = self.param_names()
        init = None
        if any(n not in store for n in names):
            seed = int(torch.randint(0, 2**62, ()))
            fresh = self.build(torch.Generator().manual_seed(seed), dtype, device)
            init = {f"{self.name}.{k}": v.detach() for k, v in fresh.named_parameters()}
        prefix = len(self.name) + 1
        out = {}
        for n in names:
            out[n[prefix:]] = pyro.param(n) if n in store else pyro.param(n, init[n])
        return out

    def stored(self, params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The network's weights picked out of a fit's ``params`` (keys with this prefix);
        a ``KeyError`` names a missing one."""
        prefix = len(self.name) + 1
        out = {}
        for n in self.param_names():
            if n not in params:
                raise KeyError(f"the fitted parameters hold no {n!r}")
            out[n[prefix:]] = params[n]
        return out

    def __call__(self, *args, params: dict[str, torch.Tensor] | None = None):
        """Run the network on ``args`` with ``params`` (default: :meth:`params` in the
        inputs' dtype and device)."""
        if params is None:
            first = args[0]
            params = self.params(first.dtype, first.device)
        return functional_call(self.skeleton, params, args)
