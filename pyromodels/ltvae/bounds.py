r"""Importance-weighted bounds of a Pyro program with an amortised guide (Burda et al. 2016).

For a program :math:`p(x, z)` and a guide :math:`q(z \mid x)` whose sample sites all lie in
one plate over data points, the log importance weight of a draw :math:`z \sim q(z \mid x)` is

.. math::

    \log w(x, z) = \log p(x, z) - \log q(z \mid x),

the sum of the log densities of the program's sites (observed ones and ``pyro.factor`` terms
included) less those of the guide's, per data point. With :math:`k` independent draws,

.. math::

    \mathcal{L}_k(x) = \mathbb{E}\Big[\log \frac1k \sum_{i=1}^k w(x, z^{(i)})\Big]
    \le \log p(x),

which is the ELBO at :math:`k = 1`, grows with :math:`k` and tends to :math:`\log p(x)`.

* :func:`importance_log_weights`: the ``(k, B)`` log weights of ``k`` draws for a batch of
  ``B`` points, from one vectorised trace of the guide and one of the program replayed on it.
* :class:`IWAEBound`: the bound as a Pyro loss (``-\mathcal{L}_k`` summed over the data, with a
  subsample's scale), for :func:`~pyromodels.core.run_svi`; its gradient is the
  reparameterised one of the IWAE.
* :func:`importance_log_likelihood`: the estimator of the test log-likelihood
  :math:`\mathcal{L}_{5000}` of the LTVAE paper's Table 1 (eq. 13 of Burda et al.), with the
  draws taken in batches (memory grows with the batch, not with ``k``), seeded, per point,
  with each point's Monte Carlo standard error and the mean's standard error.

Scales applied inside the program (a subsample's ``N / B``, ``poutine.scale``) do not enter the
weights: they are of the program as written, per data point.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import pyro
import torch
from pyro import poutine
from pyro.infer import ELBO
from pyro.poutine.util import site_is_subsample

from ..checks import check_finite, check_int
from ..core.device import cuda_devices
from ..core.seeding import resolve_seed, seeded

__all__ = ["IWAEBound", "ImportanceEstimate", "importance_log_likelihood", "importance_log_weights"]

#: draws times rows of one pass of :func:`importance_log_likelihood` by default
ROW_BUDGET = 50_000

#: the name of the plate over importance draws (dimension left of the program's plates)
SAMPLE_PLATE = "importance_samples"


def importance_log_weights(model: Callable, guide: Callable, args: tuple = (),
                           kwargs: dict | None = None, *, num_samples: int = 1,
                           max_plate_nesting: int = 1) -> tuple[torch.Tensor, float]:
    """Log importance weights :math:`\\log p(x, z) - \\log q(z \\mid x)` of ``num_samples``
    draws of the guide per data point.

    The guide and the program run once each, inside a plate of ``num_samples`` draws left of
    their own ``max_plate_nesting`` plates (the program is replayed on the guide's draws).
    Differentiable in the parameters of both when the guide's sites are reparameterised.

    Args:
        model, guide: the program and the guide, called as ``f(*args, **kwargs)``; every
            sample site of either must lie inside a plate over data points.
        args, kwargs: their arguments.
        num_samples: ``k``, draws per data point.
        max_plate_nesting: the plates the program nests (1 for one plate over data points).

    Returns:
        ``(log_weights, scale)``: ``log_weights`` of shape ``(k, B)`` (``B`` points of the
        data plate, a subsample when the plate subsamples), and the plate's scale ``N / B``
        (1.0 without subsampling), by which a sum over the ``B`` points estimates the sum
        over all ``N``.

    Raises:
        ValueError: a site outside every data plate, or sites of different scales.
    """
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    kwargs = {} if kwargs is None else kwargs
    with pyro.plate(SAMPLE_PLATE, num_samples, dim=-(max_plate_nesting + 1)):
        guide_trace = poutine.trace(guide).get_trace(*args, **kwargs)
        model_trace = poutine.trace(poutine.replay(model, trace=guide_trace)).get_trace(*args, **kwargs)
    total, scales = 0.0, set()
    for trace, sign in ((model_trace, 1.0), (guide_trace, -1.0)):
        for name, site in trace.nodes.items():
            if site["type"] != "sample" or site_is_subsample(site):
                continue
            plates = [f for f in site["cond_indep_stack"] if f.name != SAMPLE_PLATE and f.vectorized]
            if not plates:
                raise ValueError(f"importance weights need every sample site inside a plate over "
                                 f"data points; site {name!r} is outside every plate")
            log_p = site["fn"].log_prob(site["value"])
            if isinstance(site["mask"], torch.Tensor):
                log_p = log_p.masked_fill(~site["mask"], 0.0)
            elif site["mask"] is False:
                log_p = torch.zeros_like(log_p)
            total = total + sign * log_p
            scales.add(_plate_scale(plates))
    if len(scales) > 1:
        raise ValueError(f"the sites' data plates subsample differently (scales {sorted(scales)})")
    if not isinstance(total, torch.Tensor) or total.dim() < 1 or total.shape[0] != num_samples:
        raise ValueError("the program and the guide have no sample sites over the draws")
    return total.reshape(num_samples, -1), scales.pop()


def _plate_scale(plates) -> float:
    """``full size / subsample size`` of the data plates of one site."""
    scale = 1.0
    for frame in plates:
        if frame.full_size is not None and frame.size:
            scale *= frame.full_size / frame.size
    return scale


def _log_mean_exp(log_weights: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(log_weights, dim=0) - math.log(log_weights.shape[0])


class IWAEBound(ELBO):
    """The importance-weighted bound :math:`\\mathcal{L}_k` as a Pyro loss (the IWAE objective).

    The loss is :math:`-\\frac{N}{B}\\sum_{b=1}^{B} \\log \\frac1k \\sum_i w(x_b, z_b^{(i)})` over
    a (sub)sample of ``B`` of the ``N`` data points (module docstring); at ``k = 1`` it is the
    negative ELBO of ``Trace_ELBO``. Its gradient is the reparameterised one, so the guide's
    sites must be reparameterised (Gaussian encoders are).

    Args:
        num_particles: ``k``, the draws inside each log-mean (the paper's code trains with 50).
        max_plate_nesting: the plates the program nests.

    Example:
        >>> import pyro.distributions as dist
        >>> def model(x):
        ...     with pyro.plate("data", len(x)):
        ...         z = pyro.sample("z", dist.Normal(0.0, 1.0))
        ...         pyro.sample("x", dist.Normal(z, 1.0), obs=x)
        >>> def guide(x):
        ...     with pyro.plate("data", len(x)):
        ...         pyro.sample("z", dist.Normal(x / 2, 0.8))
        >>> loss = IWAEBound(num_particles=10).differentiable_loss(model, guide, torch.zeros(3))
        >>> loss.shape
        torch.Size([])
    """

    def __init__(self, num_particles: int = 50, max_plate_nesting: int = 1):
        super().__init__(num_particles=check_int(num_particles, "num_particles", minimum=1),
                         max_plate_nesting=check_int(max_plate_nesting, "max_plate_nesting",
                                                     minimum=1))

    def _get_trace(self, model, guide, args, kwargs):
        raise NotImplementedError("IWAEBound draws its particles in one vectorised trace "
                                  "(importance_log_weights)")

    def differentiable_loss(self, model, guide, *args, **kwargs) -> torch.Tensor:
        """The loss as a differentiable scalar tensor."""
        log_w, scale = importance_log_weights(model, guide, args, kwargs,
                                              num_samples=self.num_particles,
                                              max_plate_nesting=self.max_plate_nesting)
        return -_log_mean_exp(log_w).sum() * scale

    def loss(self, model, guide, *args, **kwargs) -> float:
        """The loss as a float, without gradients."""
        with torch.no_grad():
            return float(self.differentiable_loss(model, guide, *args, **kwargs))

    def loss_and_grads(self, model, guide, *args, **kwargs) -> float:
        """The loss; its gradient is accumulated into the parameters' ``.grad``."""
        loss = self.differentiable_loss(model, guide, *args, **kwargs)
        loss.backward()
        return float(loss.detach())


@dataclasses.dataclass(frozen=True)
class ImportanceEstimate:
    """The importance-sampled log-likelihood :math:`\\mathcal{L}_k` of data points.

    Attributes:
        per_point: ``(N,)`` the estimate for each point.
        mc_standard_error: ``(N,)`` each point's Monte Carlo standard error (delta method:
            :math:`\\sqrt{(\\overline{w^2} / \\bar w^2 - 1) / k}`); it ignores the bias of the
            log, about :math:`-\\mathrm{se}^2 / 2`.
        mean: the mean of ``per_point``, the number tables report.
        standard_error: the standard error of ``mean`` over the points (their sample standard
            deviation over :math:`\\sqrt N`; 0 for one point).
        k: draws per point.
        seed: the seed of the draws.
    """

    per_point: torch.Tensor
    mc_standard_error: torch.Tensor
    mean: float
    standard_error: float
    k: int
    seed: int


def importance_log_likelihood(model: Callable, guide: Callable, x: torch.Tensor, *, k: int = 5000,
                              batch_size: int = 500, row_batch_size: int | None = None,
                              seed: int = 0, max_plate_nesting: int = 1) -> ImportanceEstimate:
    """The importance-sampled log-likelihood :math:`\\mathcal{L}_k(x)` of each row of ``x``.

    The ``k`` draws per row are taken ``batch_size`` at a time (and the rows
    ``row_batch_size`` at a time), so memory grows with ``batch_size * row_batch_size``, not
    with ``k`` or ``N``; the batches' log weights are combined by log-sum-exp.

    Args:
        model, guide: Pyro callables ``f(x_rows)`` of a batch of rows, with every sample site
            inside one plate over the rows (not subsampled).
        x: ``(N, ...)`` the data, a tensor (finite when floating), in the form the program
            reads (a model class checks its data before; this checks only the rows).
        k: draws per row (the paper's Table 1: 5000).
        batch_size: draws per pass.
        row_batch_size: rows per pass (``None``: ``max(1, 50_000 // batch_size)``, so that a
            pass evaluates the decoder at most about 50,000 times).
        seed: the seed of the draws (the global generators are restored afterwards).
        max_plate_nesting: the plates the program nests.

    Returns:
        An :class:`ImportanceEstimate`.
    """
    k = check_int(k, "k", minimum=1)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    seed = resolve_seed(seed)
    if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[0] < 1:
        raise TypeError(f"x must be a tensor with at least one row, got "
                        f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    check_finite(x, "x")
    rows = x.shape[0]
    row_batch_size = (max(1, ROW_BUDGET // batch_size) if row_batch_size is None
                      else check_int(row_batch_size, "row_batch_size", minimum=1))
    per_point, mc_se = [], []
    with torch.no_grad(), seeded(seed, devices=cuda_devices(x.device)):
        for start in range(0, rows, row_batch_size):
            chunk = x[start:start + row_batch_size]
            lse, lse2 = [], []
            for done in range(0, k, batch_size):
                log_w, _ = importance_log_weights(model, guide, (chunk,),
                                                  num_samples=min(batch_size, k - done),
                                                  max_plate_nesting=max_plate_nesting)
                if log_w.shape[1] != chunk.shape[0]:
                    raise ValueError(f"the program's plate over rows holds {log_w.shape[1]} points "
                                     f"for {chunk.shape[0]} rows")
                lse.append(torch.logsumexp(log_w, 0))
                lse2.append(torch.logsumexp(2 * log_w, 0))
            log_sum = torch.logsumexp(torch.stack(lse), 0)
            log_sum2 = torch.logsumexp(torch.stack(lse2), 0)
            per_point.append(log_sum - math.log(k))
            # mean(w^2) / mean(w)^2 = k * sum(w^2) / sum(w)^2
            ratio = torch.exp(log_sum2 - 2 * log_sum + math.log(k))
            mc_se.append(torch.sqrt((ratio - 1).clamp(min=0) / k))
    values = torch.cat(per_point)
    if not bool(torch.isfinite(values).all()):
        raise FloatingPointError("the importance log-likelihood is not finite for some rows "
                                 "(a weight of zero or infinity)")
    spread = float(values.std()) / math.sqrt(rows) if rows > 1 else 0.0
    return ImportanceEstimate(per_point=values, mc_standard_error=torch.cat(mc_se),
                              mean=float(values.mean()), standard_error=spread, k=k, seed=seed)
