r"""The labels of the networked model given fixed confusions, as a model of its own.

With the confusions :math:`\Gamma` held fixed, the labels of the networked crowd model
(:mod:`~pyromodels.crowd.mrf.model`) have the posterior

.. math::

    p(y \mid F, \Gamma) \propto e^{-E(y)}, \qquad E(y) = U(y) - \sum_n \log b_n(y_n)

(ensemble paper, eq. 31 for each node). :class:`LabelPosterior` writes it as a Pyro program
and samples it with the label sweep of the full model's Gibbs sampler;
:func:`~pyromodels.crowd.mrf.fit.sample_labels` is its functional front end, and
:func:`~pyromodels.crowd.mrf.exact.exact_posterior` its exact answer on tiny graphs.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import pyro
import torch

from ...checks import as_record, check_in
from ...core.model import Model
from . import gibbs as gibbs_kernels
from .energy import PottsCoupling, check_log_emissions, loop_backend, total_energy
from .exact import UniformLabelings
from .icm import check_labels

__all__ = ["LabelData", "LabelPosterior"]


@dataclass(frozen=True, eq=False)
class LabelData:
    r"""Fixed log emissions and the coupling over their items: the data of :class:`LabelPosterior`.

    Attributes:
        log_b: floating ``(N, K)`` log emissions :math:`\log b_n(k)` of fixed confusions
            (``-inf`` marks an impossible class).
        coupling: a symmetric :class:`~pyromodels.crowd.mrf.energy.PottsCoupling` on the
            ``N`` items, on ``log_b``'s device (a node-dependent one has no joint: pass
            ``coupling.symmetrized()``).
    """

    log_b: torch.Tensor
    coupling: PottsCoupling

    def __post_init__(self):
        if not isinstance(self.coupling, PottsCoupling):
            raise TypeError(f"coupling must be a PottsCoupling, got {type(self.coupling).__name__}")
        check_log_emissions(self.log_b, self.coupling.num_nodes)
        if self.coupling.device != self.log_b.device:
            raise ValueError(f"coupling is on {self.coupling.device} but log_b on "
                             f"{self.log_b.device}; move one of them with .to(device)")
        gibbs_kernels.check_symmetric(self.coupling)

    @property
    def device(self) -> torch.device:
        return self.log_b.device

    def label_terms(self, state: dict) -> tuple[torch.Tensor, PottsCoupling]:
        """``(log_b, coupling)`` of the labels' full conditionals: the fixed ones."""
        return self.log_b, self.coupling


class LabelPosterior(Model):
    r"""The labels of the networked model given fixed confusions.

    .. math::

        p(y \mid F, \Gamma) \propto e^{-E(y)}, \qquad
        E(y) = U(y) - \sum_n \log b_n(y_n),

    with the Potts energy :math:`U` (:mod:`~pyromodels.crowd.mrf.energy`) and the log
    emissions :math:`\log b_n(k) = \sum_m \log \Gamma_m(f_{mn}, k)` held fixed (ensemble
    paper, eq. 31 for each node). The program draws ``y`` from a uniform base measure over
    labelings and adds ``pyro.factor("energy", -E(y))``: the posterior up to its normaliser.

    Sample site: ``y``, in :math:`\{0, \ldots, K-1\}^N`, shape ``(N,)`` (enumerated; on tiny
    graphs Pyro sums over every labeling, as :func:`~pyromodels.crowd.mrf.exact.exact_posterior`
    does).

    Data: a :class:`LabelData` or a ``(log_b, coupling)`` tuple.

    Engine ``gibbs``: the label sweep of :class:`NetworkedDawidSkene`'s sampler with the
    confusions held fixed (each node from its full conditional by the Gumbel-max trick, one
    colour class or one node at a time; :mod:`~pyromodels.crowd.mrf.gibbs`).

    Example:
        >>> from pyromodels.data import Graph
        >>> from pyromodels.crowd.mrf.energy import PottsCoupling
        >>> c = PottsCoupling.constant(Graph.from_edges([[0, 1], [1, 2]], num_nodes=3), 2.0)
        >>> log_b = torch.tensor([[0.0, -1.0], [-1.0, 0.0], [0.0, -1.0]])
        >>> post = LabelPosterior().fit((log_b, c), num_samples=50, num_chains=1, seed=0,
        ...                             progress=False)
        >>> post.samples["y"].shape
        torch.Size([1, 50, 3])
    """

    discrete_sites = ("y",)
    max_plate_nesting = 0
    engines = ("gibbs",)

    def __init__(self):
        self._options = _label_options()

    def prepare(self, data, device=None) -> LabelData:
        """Validate ``data`` (see :class:`LabelData`) and move it to ``device``."""
        data = as_record(data, LabelData, ("log_b", "coupling"))
        if device is None or data.device == torch.device(device):
            return data
        return LabelData(data.log_b.to(device), data.coupling.to(device))

    def model(self, data):
        """The labels' posterior up to its normaliser (see the class docstring)."""
        d = self.prepare(data)
        num_items, num_classes = d.log_b.shape
        y = pyro.sample("y", UniformLabelings(num_items, num_classes, device=d.device),
                        infer={"enumerate": "parallel"})
        pyro.factor("energy", -total_energy(d.coupling, d.log_b, y))

    def log_joint(self, data, values: dict) -> torch.Tensor:
        r"""The program's log joint written out: :math:`-E(y) - N \log K`."""
        d = self.prepare(data)
        if "y" not in values:
            raise ValueError("values must fix every latent site; missing ['y']")
        num_items, num_classes = d.log_b.shape
        return -total_energy(d.coupling, d.log_b, values["y"]) - num_items * math.log(num_classes)

    def init_state(self, data, generator) -> dict:
        r"""The given ``init_labels``, else :math:`\arg\max_k \log b_n(k)` (no draw)."""
        d = self.prepare(data)
        given = self._options["init_labels"]
        if given is None:
            return {"y": d.log_b.argmax(-1)}
        return {"y": check_labels(given, d.coupling.num_nodes, d.log_b.shape[1], d.device,
                                  "init_labels")}

    def gibbs_sweep(self, data):
        """One sweep over the labels (chromatic or sequential)."""
        return gibbs_kernels.labels_sweep(self._options["schedule"], self._options["backend"])

    def fit(self, data, method: str = "gibbs", *, init_labels=None, schedule: str = "colored",
            backend: str = "auto", **kwargs):
        r"""Sample the labels with ``"gibbs"``.

        Args:
            data: :class:`LabelData` or ``(log_b, coupling)``.
            method: ``"gibbs"``.
            init_labels: starting labels ``(N,)`` of every chain (default
                :math:`\arg\max_k \log b_n(k)`).
            schedule: ``"colored"`` (default) or ``"sequential"`` label sweeps.
            backend: ``"auto"``, ``"numba"`` or ``"python"`` for sequential sweeps, chosen
                once for the fit.
            **kwargs: passed to :func:`~pyromodels.core.run_gibbs` (``seed``,
                ``num_samples``, ``num_chains``...).

        Returns:
            A :class:`~pyromodels.core.Posterior` with draws ``y`` shaped ``(chain, draw, N)``.
        """
        check_in(method, "method", self.engines)
        model = copy.copy(self)
        model._options = _label_options(init_labels, schedule, backend)
        return Model.fit(model, data, method=method, **kwargs)


def _label_options(init_labels=None, schedule="colored", backend="auto") -> dict:
    return {
        "init_labels": init_labels,
        "schedule": check_in(schedule, "schedule", gibbs_kernels.GIBBS_SCHEDULES),
        "backend": loop_backend(backend),
    }
