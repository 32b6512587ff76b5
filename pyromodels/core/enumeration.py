"""Discrete latent sites: enumeration dimensions, marginal log joints and ``sample_discrete``.

Pyro's ``Predictive`` has no ``infer_discrete`` switch, so draws of the continuous sites from SVI
or NUTS come without the discrete sites that were summed out. :func:`sample_discrete` puts them
back: it conditions the model on each continuous draw and runs ``infer_discrete`` (forward
filtering, backward sampling, or the MAP at ``temperature=0``), vectorised over draws by a
particle plate placed left of the model's own plates.
"""

from __future__ import annotations

import logging

import pyro
import torch
from pyro import poutine
from pyro.infer import TraceEnum_ELBO, infer_discrete
from pyro.poutine.util import site_is_subsample

from ..checks import check_in
from .seeding import resolve_seed, seeded

logger = logging.getLogger("pyromodels")

__all__ = ["first_available_dim", "sample_discrete", "marginal_log_joint", "site_shapes"]

_PARTICLES = "_pyromodels_particles"


def first_available_dim(max_plate_nesting: int, particle_plate: bool = False) -> int:
    """The first tensor dimension free for enumeration.

    Plates take dims ``-1 .. -max_plate_nesting``; a particle plate (one batch of draws) takes
    the next one, so enumeration starts left of both.
    """
    return -1 - int(max_plate_nesting) - (1 if particle_plate else 0)


def site_shapes(model, data, values: dict | None = None) -> dict[str, tuple[torch.Size, torch.Size]]:
    """``{site: (batch_shape, event_shape)}`` of every latent sample site, from one trace.

    ``values`` (one draw of some sites) are conditioned on rather than sampled.
    """
    fn = poutine.condition(model.model, data=values) if values else model.model
    with poutine.block(), torch.no_grad():
        tr = poutine.trace(fn).get_trace(data)
    values = values or {}
    return {
        name: (site["fn"].batch_shape, site["fn"].event_shape)
        for name, site in tr.nodes.items()
        if site["type"] == "sample"
        and not site_is_subsample(site)
        and (name in values or not site["is_observed"])
    }


def _continuous_values(model, samples):
    discrete = set(model.discrete_sites)
    return {k: v for k, v in samples.items() if k not in discrete}


def _flatten_draws(samples):
    first = next(iter(samples.values()))
    chains, draws = first.shape[:2]
    flat = {k: v.reshape((chains * draws,) + tuple(v.shape[2:])) for k, v in samples.items()}
    return flat, chains, draws


def sample_discrete(
    model,
    data,
    samples: dict[str, torch.Tensor],
    *,
    temperature: int = 1,
    seed: int | None = None,
    vectorize: bool | str = "auto",
) -> dict[str, torch.Tensor]:
    """Draw ``model.discrete_sites`` given continuous draws ``samples`` shaped ``(chain, draw, ...)``.

    Args:
        model: a model object with ``model(data)``, ``discrete_sites`` and ``max_plate_nesting``.
            For ``vectorize=True`` the program must broadcast over an extra batch dimension left
            of its plates (write global sites with ``to_event`` and index with ``Vindex``).
        data: the data passed to ``model.model``.
        samples: continuous site draws shaped ``(chain, draw, *site_shape)``.
        temperature: 1 samples from the conditional posterior, 0 takes its mode (Viterbi/MAP).
        seed: seed for the draws.
        vectorize: ``True``: one trace for all draws (fast); ``False``: a loop over draws;
            ``"auto"``: try the vectorised trace and, if the program does not broadcast over
            the extra draws dimension (a shape error), log a warning and loop.

    Returns:
        ``{site: LongTensor (chain, draw, *site_shape)}`` for each discrete site.
    """
    if isinstance(temperature, bool):
        raise TypeError(f"temperature must be the int 0 or 1, got {temperature!r}")
    check_in(temperature, "temperature", (0, 1))
    check_in(vectorize, "vectorize", (True, False, "auto"))
    if not model.discrete_sites:
        return {}
    values = _continuous_values(model, samples)
    flat, chains, draws = _flatten_draws(values)
    num = chains * draws
    mpn = model.max_plate_nesting
    with seeded(resolve_seed(seed)), torch.no_grad():
        if vectorize is False:
            out = _sample_loop(model, data, flat, num, mpn, temperature)
        elif vectorize is True:
            out = _sample_vectorized(model, data, flat, num, mpn, temperature)
        else:
            try:
                out = _sample_vectorized(model, data, flat, num, mpn, temperature)
            except (RuntimeError, ValueError, IndexError) as exc:
                logger.warning(
                    "%s does not broadcast over a batch of draws (%s); drawing its discrete "
                    "sites one draw at a time", type(model).__name__, exc,
                )
                out = _sample_loop(model, data, flat, num, mpn, temperature)
    return {k: v.reshape((chains, draws) + tuple(v.shape[1:])).long() for k, v in out.items()}


def _sample_loop(model, data, flat, num, mpn, temperature):
    per_draw = []
    for s in range(num):
        cond = poutine.condition(model.model, data={k: v[s] for k, v in flat.items()})
        fn = infer_discrete(cond, first_available_dim=first_available_dim(mpn), temperature=temperature)
        tr = poutine.trace(fn).get_trace(data)
        per_draw.append({k: tr.nodes[k]["value"] for k in model.discrete_sites})
    return {k: torch.stack([d[k] for d in per_draw]) for k in model.discrete_sites}


def _sample_vectorized(model, data, flat, num, mpn, temperature):
    shapes = site_shapes(model, data, {k: v[0] for k, v in flat.items()})
    reshaped = {}
    for name, value in flat.items():
        if name not in shapes:
            continue
        batch, event = shapes[name]
        pad = (1,) * (mpn - len(batch))
        reshaped[name] = value.reshape((num,) + pad + tuple(batch) + tuple(event))

    def particle_model(d):
        with pyro.plate(_PARTICLES, num, dim=-1 - mpn):
            return model.model(d)

    cond = poutine.condition(particle_model, data=reshaped)
    fn = infer_discrete(
        cond, first_available_dim=first_available_dim(mpn, particle_plate=True), temperature=temperature
    )
    tr = poutine.trace(fn).get_trace(data)
    out = {}
    for name in model.discrete_sites:
        batch, event = shapes[name]
        v = tr.nodes[name]["value"]
        v = v.expand((num,) + (1,) * (v.dim() - 1 - len(batch) - len(event)) + tuple(batch) + tuple(event))
        out[name] = v.reshape((num,) + tuple(batch) + tuple(event))
    return out


def marginal_log_joint(model, data, values: dict[str, torch.Tensor]) -> torch.Tensor:
    """``log p(data, values)`` with every discrete site not in ``values`` summed out.

    Computed as minus the enumerated ELBO of the model conditioned on ``values`` with an empty
    guide, which is exact when every latent site is either in ``values`` or enumerated.
    """
    if not model.discrete_sites:
        return model.log_joint(data, values).to(torch.float64)
    cond = poutine.condition(model.model, data=values)

    def empty_guide(*args, **kwargs):
        pass

    elbo = TraceEnum_ELBO(max_plate_nesting=model.max_plate_nesting)
    with torch.no_grad():
        return torch.tensor(-elbo.loss(cond, empty_guide, data), dtype=torch.float64)
