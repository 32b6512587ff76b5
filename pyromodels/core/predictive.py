"""Prior and posterior predictive draws, simulated by the model's own Pyro program.

Both come from one trace of the program with its observed sites released
(``poutine.uncondition``), vectorised over draws by a particle plate left of the model's own
plates (the program must broadcast over a batch of draws, as :func:`~pyromodels.core.
sample_discrete` also requires):

* **prior**: nothing is conditioned; every latent site and every observed site is drawn
  from the prior, ``num_draws`` times;
* **posterior predictive**: the latent sites are conditioned on the posterior's draws, except
  the model's enumerated ``discrete_sites``, which are drawn afresh given the others, as are
  the observed sites. Each replicate is
  therefore a fresh data set of the same design (new points for a mixture, new items with the
  same workers and label slots for Dawid-Skene), the replication whose marginal density is
  the ``log_likelihood`` group's ``log p(y_i | theta)``.

A program that does not broadcast over a batch of draws is simulated one draw at a time. A
program with a ``pyro.factor`` cannot be simulated (see :func:`observed_sites`). A model may
define ``format_replicates(data, values) -> values`` to mark slots that carry no
data (Dawid-Skene's padded label slots become ``-1``, as in its ``observed_data``).
"""

from __future__ import annotations

import logging

import pyro
import torch
from pyro import poutine
from pyro.poutine.uncondition_messenger import UnconditionMessenger
from pyro.poutine.util import site_is_subsample

from ..checks import check_int
from .seeding import resolve_seed, seeded

logger = logging.getLogger("pyromodels")

__all__ = ["observed_sites", "prior_draws", "posterior_predictive_draws"]

_PARTICLES = "_pyromodels_predictive"


class _ReleaseObserved(UnconditionMessenger):
    """``poutine.uncondition`` for the data only: a ``pyro.deterministic`` site (an observed
    ``Delta`` of a computed value, whose event shape is its value's whole shape) keeps its
    value. Released, its ``Delta`` would be expanded by every plate around it, the particle
    plate included: ``(draws, 8)`` values became ``(draws, 8, draws, 8)`` tensors, gigabytes
    for a few thousand draws."""

    def _pyro_sample(self, msg) -> None:
        if not (msg["infer"] or {}).get("_deterministic"):
            super()._pyro_sample(msg)


def _release(fn):
    return _ReleaseObserved()(fn)


def _drawn(site) -> bool:
    """Whether a trace node is a sample site the simulation draws (not a subsample site, not
    a ``pyro.deterministic`` record)."""
    return (site["type"] == "sample" and not site_is_subsample(site)
            and not (site["infer"] or {}).get("_deterministic"))


def _site_shapes(model, data, values: dict) -> dict[str, tuple[torch.Size, torch.Size]]:
    """``{site: (batch_shape, event_shape)}`` of every sample site of one trace with
    ``values`` (one draw of some sites) conditioned on."""
    fn = poutine.condition(model.model, data=values) if values else model.model
    with poutine.block(), torch.no_grad():
        tr = poutine.trace(fn).get_trace(data)
    return {
        name: (site["fn"].batch_shape, site["fn"].event_shape)
        for name, site in tr.nodes.items()
        if _drawn(site)
    }


def observed_sites(model, data) -> tuple[str, ...]:
    """The names of the program's observed sample sites, in program order.

    Raises:
        NotImplementedError: when the program holds a ``pyro.factor``: a factor reweights the
            joint law without a distribution to draw from, so simulating the program would not
            draw from the model (the networked model's Potts term is one).
    """
    with poutine.block(), torch.no_grad():
        tr = poutine.trace(model.model).get_trace(data)
    factors = [name for name, site in tr.nodes.items()
               if site["type"] == "sample" and site["infer"].get("is_auxiliary")]
    if factors:
        raise NotImplementedError(
            f"{type(model).__name__}'s program has the factor(s) {factors}, which reweight its "
            "joint law without a distribution to draw from: simulating the program would not "
            "draw from the model, so it has no prior or posterior predictive draws"
        )
    return tuple(
        name
        for name, site in tr.nodes.items()
        if _drawn(site) and site["is_observed"]
    )


def _simulate(model, data, num: int, values: dict) -> dict[str, torch.Tensor]:
    """Every sample site of one unconditioned trace over ``num`` particles, shaped
    ``(num, *batch, *event)``; ``values`` (flat ``(num, ...)`` draws) are conditioned on."""
    mpn = model.max_plate_nesting
    shapes = _site_shapes(model, data, {k: v[0] for k, v in values.items()})

    def full(name):
        batch, event = shapes[name]
        return (num,) + (1,) * (mpn - len(batch)) + tuple(batch) + tuple(event)

    reshaped = {name: value.reshape(full(name)) for name, value in values.items()}

    def particle_model(d):
        with pyro.plate(_PARTICLES, num, dim=-1 - mpn):
            return model.model(d)

    # release the observed sites first, then fix the conditioned ones
    fn = poutine.condition(_release(particle_model), data=reshaped)
    with poutine.block(), torch.no_grad():
        tr = poutine.trace(fn).get_trace(data)
    out = {}
    for name, (batch, event) in shapes.items():
        v = tr.nodes[name]["value"].expand(full(name))
        out[name] = v.reshape((num,) + tuple(batch) + tuple(event))
    return out


def _simulate_draws(model, data, num: int, values: dict) -> dict[str, torch.Tensor]:
    """:func:`_simulate` over all ``num`` draws at once or, when the program does not
    broadcast over a batch of draws (a shape error), one draw at a time."""
    try:
        return _simulate(model, data, num, values)
    except (RuntimeError, ValueError, IndexError) as exc:
        logger.info("%s does not broadcast over a batch of draws (%s); simulating one draw at "
                    "a time", type(model).__name__, exc)
    per_draw = [_simulate_one(model, data, {k: v[s] for k, v in values.items()})
                for s in range(num)]
    return {k: torch.stack([d[k] for d in per_draw]) for k in per_draw[0]}


def _simulate_one(model, data, values: dict) -> dict[str, torch.Tensor]:
    """Every sample site of one unconditioned trace with one draw of ``values`` fixed."""
    fn = poutine.condition(_release(model.model), data=values)
    with poutine.block(), torch.no_grad():
        tr = poutine.trace(fn).get_trace(data)
    return {name: site["value"] for name, site in tr.nodes.items() if _drawn(site)}


def _format(model, data, values: dict) -> dict:
    fn = getattr(model, "format_replicates", None)
    return fn(data, values) if callable(fn) else values


def _split(model, data, draws: dict) -> tuple[dict, dict]:
    observed = set(observed_sites(model, data))
    latent = {k: v for k, v in draws.items() if k not in observed}
    replicates = _format(model, data, {k: v for k, v in draws.items() if k in observed})
    return latent, replicates


def prior_draws(model, data, num_draws: int = 500, seed: int | None = None) -> tuple[dict, dict]:
    """``num_draws`` joint draws from the prior: ``(latent sites, observed sites)``.

    Args:
        model: a pyromodels model whose program broadcasts over a batch of draws.
        data: the data (prepared or raw) that fix the design (sizes, workers, slots).
        num_draws: how many draws.
        seed: seed for the draws.

    Returns:
        Two dicts ``{site: tensor (1, num_draws, *site_shape)}``: the latent sites (the
        ``prior`` group) and the observed sites (the ``prior_predictive`` group).
    """
    num = check_int(num_draws, "num_draws", minimum=1)
    data = model.prepare(data)
    with seeded(resolve_seed(seed)):
        draws = _simulate_draws(model, data, num, {})
    latent, replicates = _split(model, data, draws)
    return _one_chain(latent), _one_chain(replicates)


def posterior_predictive_draws(model, data, samples: dict, seed: int | None = None) -> dict:
    """One replicate of the observed sites for every posterior draw.

    Args:
        model: a pyromodels model whose program broadcasts over a batch of draws.
        data: the data the posterior was fitted to.
        samples: posterior draws ``{site: (chain, draw, *site_shape)}``; the model's
            enumerated ``discrete_sites`` among them are ignored (redrawn given the others).
        seed: seed for the draws.

    Returns:
        ``{observed site: tensor (chain, draw, *site_shape)}``.
    """
    data = model.prepare(data)
    discrete = set(getattr(model, "discrete_sites", ()))
    values = {k: v for k, v in samples.items() if k not in discrete}
    first = next(iter(values.values()))
    chains, draws = first.shape[:2]
    flat = {k: v.reshape((chains * draws,) + tuple(v.shape[2:])) for k, v in values.items()}
    with seeded(resolve_seed(seed)):
        out = _simulate_draws(model, data, chains * draws, flat)
    _, replicates = _split(model, data, out)
    return {k: v.reshape((chains, draws) + tuple(v.shape[1:])) for k, v in replicates.items()}


def _one_chain(values: dict) -> dict:
    return {k: v.unsqueeze(0) for k, v in values.items()}
