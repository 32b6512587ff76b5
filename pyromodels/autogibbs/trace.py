"""The model's log density terms at a given state, read from Pyro traces.

Every automatic update is computed from these terms only, so it is a second reading of the
program itself: nothing about the model is written twice.
"""

from __future__ import annotations

import pyro
import torch
from pyro import poutine
from pyro.poutine.util import site_is_subsample

__all__ = ["trace_model", "latent_sites", "log_terms", "log_joint", "reduce_to_site", "element_log_density",
           "element_index", "tolerance"]


def trace_model(model, args: tuple, kwargs: dict, state: dict | None = None):
    """One trace of ``model(*args, **kwargs)`` with the latent sites in ``state`` fixed (a prior
    draw for the others), its ``log_prob`` tensors computed. The param store and the caller's
    handlers are left alone."""
    fn = model if not state else poutine.condition(model, data=state)
    with pyro.get_param_store().scope(), poutine.block(), torch.no_grad():
        trace = poutine.trace(fn).get_trace(*args, **kwargs)
    trace.compute_log_prob()
    return trace


def latent_sites(trace) -> dict:
    """The latent sample sites of a trace, in program order: ``{name: site}``."""
    return {name: site for name, site in trace.nodes.items()
            if site["type"] == "sample" and not site["is_observed"]
            and not site_is_subsample(site)}


def log_terms(model, args: tuple, kwargs: dict, state: dict) -> dict:
    """``{site: log_prob tensor}`` of every sample site at ``state`` (not summed over plates)."""
    trace = trace_model(model, args, kwargs, state)
    return {name: site["log_prob"] for name, site in trace.nodes.items()
            if site["type"] == "sample" and not site_is_subsample(site)}


def log_joint(model, args: tuple, kwargs: dict, state: dict) -> torch.Tensor:
    """The model's log joint at ``state`` (a scalar)."""
    return sum(t.sum() for t in log_terms(model, args, kwargs, state).values())


def reduce_to_site(lp: torch.Tensor, shape: torch.Size) -> torch.Tensor | None:
    """Sum a log density tensor down to a site's batch ``shape``; ``None`` when one of its
    entries involves several elements of the site (a term not indexed by the site's plates)."""
    n = max(len(shape), lp.dim())
    target = (1,) * (n - len(shape)) + tuple(shape)
    lp = lp.reshape((1,) * (n - lp.dim()) + tuple(lp.shape))
    for d in range(n):
        if target[d] == 1 and lp.shape[d] > 1:
            lp = lp.sum(d, keepdim=True)
        elif target[d] > 1 and lp.shape[d] != target[d]:
            return None
    return lp.reshape(shape)


def element_logits(model, args, kwargs, state: dict, site: str, support: torch.Tensor):
    """Each element's log conditional at each support value, ``(*shape, K)``, from ``K``
    evaluations of the model; ``None`` when the elements are not conditionally independent."""
    value = state[site]
    per_value = [log_terms(model, args, kwargs, {**state, site: torch.full_like(value, v)})
                 for v in support.tolist()]
    out = torch.zeros((len(per_value),) + tuple(value.shape), dtype=torch.float64,
                      device=value.device)
    for name in per_value[0]:
        terms = [t[name] for t in per_value]
        if all(torch.equal(terms[0], t) for t in terms[1:]):
            continue  # does not change with the site: cancels in the conditional
        for k, lp in enumerate(terms):
            reduced = reduce_to_site(lp.to(torch.float64), value.shape)
            if reduced is None:
                return None
            out[k] += reduced
    return out.movedim(0, -1)


def element_log_density(model, args, kwargs, state: dict, site: str, values: list,
                        batch_shape: torch.Size) -> torch.Tensor | None:
    """Each element's log density terms at each full value of ``site`` in ``values``:
    ``(len(values), *batch_shape)`` float64, up to a constant per element. Only the terms that
    change across ``values`` enter; ``None`` when one of them is not indexed by the site's plates
    (the elements are then not conditionally independent given the rest)."""
    per_value = [log_terms(model, args, kwargs, {**state, site: v}) for v in values]
    current = log_terms(model, args, kwargs, state)  # a mixed value too: a term of a sum of
    device = values[0].device                          # the elements can tie on equal values
    out = torch.zeros((len(values),) + tuple(batch_shape), dtype=torch.float64, device=device)
    for name in per_value[0]:
        terms = [t[name] for t in per_value]
        if all(torch.equal(current[name], t) for t in terms):
            continue  # does not change with the site: cancels in the conditional
        for k, lp in enumerate(terms):
            reduced = reduce_to_site(lp.to(torch.float64), batch_shape)
            if reduced is None:
                return None
            out[k] += reduced
    return out


def element_index(flat: int, shape: torch.Size) -> tuple:
    """The index of element number ``flat`` (row-major) of a tensor of ``shape``."""
    if not shape:
        return ()
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape))


def tolerance(dtype: torch.dtype) -> float:
    """The relative tolerance of the checks for a model computed in ``dtype``: log densities
    are compared to this times ``1 + |log joint|`` (float64: 1e-7; lower precisions: 1e-3)."""
    return 1e-7 if dtype == torch.float64 else 1e-3
