r"""Stepwise (online) EM over minibatches: running sufficient statistics, then an M-step.

At step :math:`t = 1, 2, \dots` the model's E-step on minibatch :math:`B_t` gives the
statistics :math:`\bar s_t = \frac{1}{|B_t|} \sum_{i \in B_t} E[s(x_i, y_i)]` (an average over
the batch, so the scale does not depend on the batch size), the running statistics move
towards them and the M-step maps them to parameters:

.. math::

    s \leftarrow (1 - \eta_t)\, s + \eta_t\, \bar s_t, \qquad
    \theta \leftarrow \arg\max_\theta \ell(s, \theta), \qquad
    \eta_t = (t + \tau)^{-\kappa}

(Cappé and Moulines 2009; Liang and Klein 2009; LTVAE spec ``ltvae.md`` §3.4, Eq. 8), or a
constant :math:`\eta`. ``running="rebuilt"`` instead mixes each batch with the statistics the
*current parameters* imply per point (:math:`s \leftarrow (1 - \eta)\, s(\theta_t) + \eta\,
\bar s_t`), the form of the LTVAE release. When the M-step maps the statistics to parameters
that imply exactly those statistics (an exponential family whose M-step is the inverse of its
moment map), :math:`s(\theta_t) = s` and the two forms agree; they differ where the M-step
constrains the parameters (an eigenvalue floor, a state left without data).

The model supplies:

* ``em_init(data, generator) -> params`` (a dict of tensors), as for :func:`run_em`;
* ``em_batch_stats(data, params, index) -> (stats, log_likelihood)``: the expected
  statistics of the points ``index`` (a long tensor) *summed* over them, a dict of tensors,
  and the sum of their log-likelihoods under ``params`` (a number);
* ``em_m_step(data, stats, params) -> params``: the M-step (invariant to a common scale of
  ``stats``; ``params`` are the current values, for states the statistics do not inform);
* optionally ``em_model_stats(data, params) -> stats``: the statistics of one point expected
  under ``params`` (the start of the running statistics; needed by ``running="rebuilt"``;
  without it the running statistics start as the first batch's); ``em_objective(data,
  params)`` (evaluated on all the data after each epoch) and ``em_outputs(data, params)``.
"""

from __future__ import annotations

import math
import numbers
import time

import torch

from ..checks import check_in, check_int, check_positive
from .conjugate_factors import RobbinsMonro
from .device import resolve_device
from .entry import engine_entry
from .posterior import Posterior, make_attrs
from .progress import check_callbacks, progress_bar, run_callbacks
from .seeding import derive_seed, make_generator, resolve_seed
from .threads import with_fit_threads

__all__ = ["run_stepwise_em", "step_sizes", "blend_stats"]

RUNNING_MODES = ("average", "rebuilt")


def step_sizes(num_steps: int, step_size: float | RobbinsMonro | None = None) -> list[float]:
    r"""The step sizes :math:`\eta_1 .. \eta_T` of ``num_steps`` steps.

    Args:
        num_steps: :math:`T \ge 0`.
        step_size: a constant in ``(0, 1]`` (the LTVAE paper uses 0.01), a
            :class:`~pyromodels.core.RobbinsMonro` schedule :math:`(t + \tau)^{-\kappa}`
            for ``t = 1, 2, ...``, or ``None`` for ``RobbinsMonro()``.

    Raises:
        TypeError, ValueError: a step size that is not a number in ``(0, 1]`` or a schedule.

    Example:
        >>> step_sizes(3, RobbinsMonro(tau=0.0, kappa=1.0))
        [1.0, 0.5, 0.3333333333333333]
    """
    num_steps = check_int(num_steps, "num_steps", minimum=0)
    if step_size is None:
        step_size = RobbinsMonro()
    if isinstance(step_size, RobbinsMonro):
        return [step_size(t) for t in range(1, num_steps + 1)]
    if isinstance(step_size, bool) or not isinstance(step_size, numbers.Real):
        raise TypeError(f"step_size must be a number in (0, 1] or a RobbinsMonro schedule, "
                        f"got {type(step_size).__name__}")
    eta = check_positive(step_size, "step_size")
    if eta > 1:
        raise ValueError(f"step_size must be in (0, 1], got {eta}")
    return [eta] * num_steps


def blend_stats(old: dict, new: dict, eta: float) -> dict:
    r""":math:`(1 - \eta)\,\text{old} + \eta\,\text{new}`, entry by entry."""
    if set(old) != set(new):
        raise ValueError(f"the statistics' entries differ: {sorted(set(old) ^ set(new))}")
    return {k: (1 - eta) * old[k] + eta * new[k] for k in new}


def _num_points(data) -> int:
    try:
        return len(data)
    except TypeError as exc:
        raise TypeError(f"stepwise EM needs data with a length (the number of points), got "
                        f"{type(data).__name__}") from exc


@engine_entry()
@with_fit_threads
def run_stepwise_em(
    model,
    data,
    *,
    batch_size: int = 256,
    num_epochs: int = 1,
    step_size: float | RobbinsMonro | None = None,
    running: str = "average",
    shuffle: bool = True,
    init: dict | None = None,
    seed: int | None = None,
    progress: bool = True,
    callbacks=None,
    device=None,
    num_threads: int | None = None,
) -> Posterior:
    """Fit by stepwise EM: one E-step, statistics update and M-step per minibatch.

    Args:
        model: a model with the hooks of the module docstring.
        *args, **kwargs: the program's arguments (as for :func:`run_em`).
        batch_size: points per minibatch (the last batch of an epoch may be smaller).
        num_epochs: passes over the data.
        step_size: a constant in ``(0, 1]`` or a :class:`~pyromodels.core.RobbinsMonro`
            schedule (default ``RobbinsMonro()``; see :func:`step_sizes`). ``step_size=1``
            with one batch of all the points is one batch EM step per epoch.
        running: ``"average"`` (the textbook running statistics) or ``"rebuilt"`` (mix each
            batch with the statistics the current parameters imply; needs
            ``em_model_stats``).
        shuffle: draw a new order of the points each epoch (else keep their order).
        init: parameters to start from instead of ``em_init``.
        seed: the fit's seed (start and batch order); ``None`` draws one.
        progress: show a progress bar over the steps.
        callbacks: callables ``f(step, info)`` after step ``step`` (1, 2, ...) with
            ``info["objective"]`` (the batch's mean log-likelihood before the step),
            ``info["step_size"]``, ``info["epoch"]`` and ``info["params"]``; ``True`` stops.
        device: ``"cpu"``, ``"cuda"`` or ``None`` (the data's device).
        num_threads: CPU threads of the fit (see :func:`run_em`).

    Returns:
        A :class:`Posterior` (``method="em"``, ``attrs["variant"] == "stepwise"``) holding
        the final parameters; ``losses`` the batches' mean log-likelihoods, one per step;
        ``diagnostics["epoch_objectives"]`` the model's ``em_objective`` after each epoch
        (when it has one) and ``diagnostics["step_sizes"]``.

    Raises:
        ValueError: bad settings (named), ``running="rebuilt"`` without ``em_model_stats``,
            a non-finite batch log-likelihood.
    """
    model._require("em_init", "em_batch_stats", "em_m_step", engine="stepwise_em")
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    num_epochs = check_int(num_epochs, "num_epochs", minimum=1)
    running = check_in(running, "running", RUNNING_MODES)
    implied = getattr(model, "em_model_stats", None)
    implied = implied if callable(implied) else None
    if running == "rebuilt" and implied is None:
        raise ValueError(f"running='rebuilt' needs {type(model).__name__}.em_model_stats")
    callbacks = check_callbacks(callbacks)
    device = resolve_device(device, data)
    data = model.prepare(data, device=device)
    n = _num_points(data)
    per_epoch = math.ceil(n / batch_size)
    etas = step_sizes(per_epoch * num_epochs, step_size)
    seed = resolve_seed(seed)
    start = time.perf_counter()
    params = dict(init) if init is not None else \
        model.em_init(data, make_generator(derive_seed(seed, "restart", 0), device))
    order_gen = make_generator(derive_seed(seed, "batches"), "cpu")
    stats = implied(data, params) if implied is not None else None
    history, epoch_objectives, stopped = [], [], False
    objective = getattr(model, "em_objective", None)
    with progress_bar(len(etas), "stepwise em", progress) as bar:
        for epoch in range(num_epochs):
            order = torch.randperm(n, generator=order_gen) if shuffle else torch.arange(n)
            order = order.to(device) if device is not None else order
            for index in order.split(batch_size):
                t = len(history)
                eta = etas[t]  # the step size of step t + 1
                batch, loglik = model.em_batch_stats(data, params, index)
                value = float(loglik) / len(index)
                if not math.isfinite(value):
                    raise ValueError(f"the log-likelihood of batch {t} is {value}: the data or "
                                     f"the parameters are degenerate")
                batch = {k: v / len(index) for k, v in batch.items()}
                base = implied(data, params) if running == "rebuilt" else stats
                stats = batch if base is None else blend_stats(base, batch, eta)
                params = model.em_m_step(data, stats, params)
                history.append(value)
                bar.update()
                info = {"objective": value, "step_size": eta, "epoch": epoch, "params": params}
                if callbacks and run_callbacks(callbacks, t + 1, info):
                    stopped = True
                    break
            if callable(objective):
                epoch_objectives.append(float(objective(data, params)))
            if stopped:
                break
    outputs = model.em_outputs(data, params) if callable(getattr(model, "em_outputs", None)) \
        else {}
    sites = getattr(model, "em_sites", tuple(params))
    samples = {k: params[k].unsqueeze(0).unsqueeze(0) for k in sites if k in params}
    return Posterior(
        samples=samples,
        method="em",
        losses=torch.tensor(history, dtype=torch.float64),
        params={**params, **outputs},
        diagnostics={
            "n_iter": len(history),
            "epoch_objectives": epoch_objectives,
            "step_sizes": etas[:len(history)],
            "stopped_by_callback": stopped,
        },
        attrs=make_attrs("em", seed, device, start, variant="stepwise", running=running,
                         batch_size=batch_size, num_epochs=num_epochs),
        model=model,
        data=data,
    )
