"""Summary tables: ArviZ's posterior summary, and one row of statistics per engine."""

from __future__ import annotations

import numbers
import warnings

import arviz as az
import pandas as pd
import torch

from .convert import check_posterior, to_inference_data

__all__ = ["summary", "compare_engines"]

_NOT_MCMC = {
    "svi": "its draws are one chain of independent draws from the variational guide, so they "
    "say nothing about convergence of the fit",
    "em": "it is a point estimate stored as one draw, so they are undefined",
}


def summary(posterior, var_names=None, **kwargs) -> pd.DataFrame:
    """ArviZ summary table: mean, sd, HDI, MCSE, ``ess_bulk``, ``ess_tail`` and ``r_hat``.

    For ``method`` ``"svi"`` or ``"em"`` a ``UserWarning`` says that R-hat and ESS are not
    MCMC diagnostics there.

    Args:
        posterior: a :class:`~pyromodels.core.Posterior`.
        var_names: sites to summarise; all sites by default.
        **kwargs: passed to ``arviz.summary`` (``hdi_prob``, ``kind``, ``round_to``, ...).

    Returns:
        ``pandas.DataFrame`` with one row per scalar component of each site.

    Example:
        >>> import torch
        >>> from pyromodels.core import Posterior
        >>> g = torch.Generator().manual_seed(0)
        >>> post = Posterior(samples={"mu": torch.randn(4, 200, generator=g)}, method="nuts")
        >>> list(summary(post).index)
        ['mu']
    """
    posterior = check_posterior(posterior)
    if posterior.method in _NOT_MCMC:
        warnings.warn(
            f"R-hat and ESS are MCMC diagnostics, not diagnostics of a {posterior.method!r} fit: "
            f"{_NOT_MCMC[posterior.method]}.",
            UserWarning,
            stacklevel=2,
        )
    idata = to_inference_data(posterior, log_likelihood=False)
    return az.summary(idata, var_names=var_names, **kwargs)


def _scalar(value, engine: str, stat: str) -> float:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"stats[{stat!r}] must return a scalar, got a tensor of shape "
                f"{tuple(value.shape)} for engine {engine!r}"
            )
        value = value.item()
    if hasattr(value, "item") and getattr(value, "size", 1) == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"stats[{stat!r}] must return a real number, got {type(value).__name__} "
            f"for engine {engine!r}"
        )
    return float(value)


def compare_engines(posteriors: dict, stats: dict) -> pd.DataFrame:
    """A table of summary statistics with one row per engine (or per fit).

    Args:
        posteriors: ``{engine_label: Posterior}``, for example ``{"em": ..., "gibbs": ...}``.
        stats: ``{column_name: f}`` where ``f(posterior)`` returns a real number (a Python or
            NumPy scalar, or a one-element tensor).

    Returns:
        ``pandas.DataFrame`` indexed by engine label (index name ``"engine"``), one float
        column per statistic, in the order given.

    Example:
        >>> import torch
        >>> from pyromodels.core import Posterior
        >>> fits = {"nuts": Posterior(samples={"mu": torch.ones(2, 3)}, method="nuts"),
        ...         "svi": Posterior(samples={"mu": torch.zeros(1, 3)}, method="svi")}
        >>> compare_engines(fits, {"mean mu": lambda p: p.mean("mu")})["mean mu"].tolist()
        [1.0, 0.0]
    """
    if not isinstance(posteriors, dict) or not posteriors:
        raise TypeError("posteriors must be a non-empty dict {engine_label: Posterior}")
    if not isinstance(stats, dict) or not stats:
        raise TypeError("stats must be a non-empty dict {column_name: callable(posterior)}")
    for name, fn in stats.items():
        if not callable(fn):
            raise TypeError(f"stats[{name!r}] must be callable(posterior), got {type(fn).__name__}")
    rows = {}
    for engine, posterior in posteriors.items():
        check_posterior(posterior, f"posteriors[{engine!r}]")
        rows[engine] = {name: _scalar(fn(posterior), engine, name) for name, fn in stats.items()}
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(stats))
    table.index.name = "engine"
    return table
