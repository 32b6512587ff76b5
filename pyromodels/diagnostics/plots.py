"""Diagnostic plots. Each function draws and returns a ``matplotlib.figure.Figure``; none shows it.

Trace and rank plots default to label-invariant statistics (the log joint, the number of
occupied clusters, the largest-cluster fraction): raw per-component parameters of a mixture are
not identified, and their traces only show label switching.
"""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..checks import as_float_tensor, as_label_tensor
from ..core.inference_data import inference_attrs, to_numpy
from ..core.posterior import Posterior, check_posterior, to_inference_data
from .label_invariant import label_invariant_stats

with warnings.catch_warnings():
    # ArviZ announces its coming 1.x refactor once a day on import; nothing here can act on it
    warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor",
                            category=FutureWarning)
    import arviz as az

__all__ = ["plot_trace", "label_trace", "plot_rank", "plot_energy", "plot_coclustering", "plot_loss"]


def _figure_of(axes) -> plt.Figure:
    return np.atleast_1d(axes).ravel()[0].figure


def _plot_variables(posterior, var_names, site: str):
    """InferenceData whose posterior holds the requested variables (label-invariant by default)."""
    posterior = check_posterior(posterior)
    pool = {}
    if site in posterior.samples:
        pool.update(label_invariant_stats(posterior, site))
    elif "lp" in posterior.sample_stats:
        pool["lp"] = posterior.sample_stats["lp"]
    if var_names is None:
        if not pool:
            raise ValueError(
                f"var_names is needed: the posterior has no label site {site!r} and no 'lp' "
                "statistic to plot by default"
            )
        # a statistic that never changes (every draw occupies all clusters) has no trace or
        # rank information, and ArviZ's density and rank plots fail on it
        var_names = [v for v in pool if bool((pool[v] != pool[v].reshape(-1)[0]).any())]
        if not var_names:
            raise ValueError(
                "var_names is needed: every default statistic is constant across draws"
            )
    if isinstance(var_names, str):
        var_names = [var_names]
    clash = set(pool) & set(posterior.samples)
    if clash:
        raise ValueError(
            f"sites {sorted(clash)} clash with the names of label-invariant statistics"
        )
    pool.update(posterior.samples)
    missing = [v for v in var_names if v not in pool]
    if missing:
        raise ValueError(
            f"var_names {missing} are not among the plottable variables {sorted(pool)}"
        )
    arrays = {v: to_numpy(pool[v], v) for v in var_names}
    attrs = inference_attrs(posterior.attrs, posterior.method)
    return az.from_dict(posterior=arrays, attrs=attrs), list(var_names)


def plot_trace(posterior, var_names=None, site: str = "z", **kwargs) -> plt.Figure:
    """Trace plot (``arviz.plot_trace``): a density and a trace per variable, one line per chain.

    Chains differ by line style; the first trace axis carries a legend with one entry per
    chain, named by its index (the ``chain`` coordinate of the NetCDF file).

    Args:
        posterior: a :class:`~pyromodels.core.Posterior`.
        var_names: sites of ``posterior.samples`` or label-invariant statistics
            (``"lp"``, ``"occupied_clusters"``, ``"largest_cluster_fraction"``); by default the
            label-invariant statistics when ``site`` is a sample site, else ``lp``.
        site: the label site the label-invariant statistics are computed from.
        **kwargs: passed to ``arviz.plot_trace`` (``legend=False`` leaves the chain legend out).

    Returns:
        The figure: two axes per variable (fewer rows if ArviZ compacts vector sites).

    Example:
        >>> import torch
        >>> from pyromodels.core import Posterior
        >>> g = torch.Generator().manual_seed(0)
        >>> post = Posterior(samples={"z": torch.randint(0, 3, (2, 50, 10), generator=g)},
        ...                  method="gibbs", sample_stats={"lp": torch.randn(2, 50, generator=g)})
        >>> len(plot_trace(post).axes)
        6
    """
    idata, names = _plot_variables(posterior, var_names, site)
    legend = kwargs.pop("legend", True)
    return label_trace(az.plot_trace(idata, var_names=names, **kwargs), idata, legend=legend)


def label_trace(axes, idata, legend: bool = True) -> plt.Figure:
    """Label the axes that ``arviz.plot_trace`` drew from ``idata`` (which leaves them bare):
    the left panel of each variable gets the variable and ``density`` (``frequency`` for a
    discrete variable, redrawn as one histogram per chain with a bin per value), the right
    panel ``draw`` and the variable.

    Args:
        axes: the ``(variables, 2)`` array of axes ``arviz.plot_trace`` returned.
        idata: the ``arviz.InferenceData`` it plotted.
        legend: add a legend with one entry per chain (in its line style) to the first
            trace panel.

    Returns:
        The figure, laid out.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> idata = az.from_dict(posterior={"K": rng.integers(1, 4, (2, 30))})
        >>> fig = label_trace(az.plot_trace(idata), idata)
        >>> [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]
        [('K', 'frequency'), ('draw', 'K')]
    """
    axes = np.atleast_2d(axes)
    for left, right in axes:
        name = left.get_title()
        discrete = name in idata.posterior and is_discrete(idata.posterior[name].values)
        if discrete and idata.posterior[name].ndim == 2:
            _histogram(left, idata.posterior[name].values, name)
        left.set_xlabel(name)
        left.set_ylabel("frequency" if discrete else "density")
        right.set_xlabel("draw")
        right.set_ylabel(name)
    if legend:
        _chain_legend(axes[0, 1], idata.posterior.sizes["chain"])
    figure = _figure_of(axes)
    figure.tight_layout()
    return figure


#: the line style of each chain in ArviZ's trace plots (they cycle past four chains)
CHAIN_STYLES = ("solid", "dotted", "dashed", "dashdot")


def _chain_legend(ax, num_chains: int) -> None:
    """A legend on ``ax`` with one entry per chain, in the line style ArviZ gives it."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="0.2", lw=1.2, linestyle=CHAIN_STYLES[c % len(CHAIN_STYLES)],
                      label=f"chain {c}") for c in range(num_chains)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7,
              frameon=False, title="line", title_fontsize=7)


def is_discrete(values, max_levels: int = 40) -> bool:
    """Whether draws take few distinct values (integers, or fractions such as the largest
    cluster's share ``k / N``), so that a histogram shows them and a density would invent
    values in between.

    Example:
        >>> is_discrete(np.array([[0.25, 0.5, 0.25, 0.5, 0.75, 0.5, 0.25, 0.5]]))
        True
    """
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        return True
    levels = np.unique(values[np.isfinite(values)]).size
    return levels <= min(max_levels, values.size // 2)


def _histogram(ax, draws: np.ndarray, name: str) -> None:
    """Redraw ``ax`` as one step histogram per chain with a bin per value of ``draws``."""
    # keep the colour and line style ArviZ gave each chain's density (they match the traces)
    styles = [(line.get_color(), line.get_linestyle()) for line in ax.get_lines()]
    if len(styles) != len(draws):
        styles = [("C0", CHAIN_STYLES[c % len(CHAIN_STYLES)]) for c in range(len(draws))]
    ax.clear()
    levels = np.unique(draws)
    step = np.diff(levels).min() if levels.size > 1 else 1.0
    edges = np.append(levels - step / 2, levels[-1] + step / 2)
    for row, (colour, style) in zip(draws, styles):
        ax.hist(row, bins=edges, histtype="step", color=colour, linestyle=style, lw=1.2)
    ax.set_title(name)


def plot_rank(posterior, var_names=None, site: str = "z", **kwargs) -> plt.Figure:
    """Rank plot (``arviz.plot_rank``): histograms of each chain's ranks among all draws.

    Uniform histograms mean the chains mix. A rank plot compares chains, so it needs at least
    two. Arguments as for :func:`plot_trace`; ``**kwargs`` go to ``arviz.plot_rank``.

    Returns:
        The figure: one axis per scalar variable.

    Raises:
        ValueError: the posterior has a single chain.
    """
    posterior = check_posterior(posterior)
    if posterior.num_chains < 2:
        raise ValueError(
            f"posterior has {posterior.num_chains} chain: a rank plot compares the ranks of "
            "chains among all draws, so it needs at least two (fit with num_chains >= 2)"
        )
    idata, names = _plot_variables(posterior, var_names, site)
    axes = np.atleast_1d(az.plot_rank(idata, var_names=names, **kwargs)).ravel()
    for ax in axes:
        ax.set_xlabel("rank (all chains)")
        ax.set_ylabel("chain")
    return _figure_of(axes)


def plot_energy(posterior, **kwargs) -> plt.Figure:
    """Energy plot (``arviz.plot_energy``): the marginal energy against the energy transitions.

    Needs ``posterior.sample_stats["energy"]`` (the Hamiltonian of each HMC/NUTS draw).

    Returns:
        The figure (one axis).
    """
    posterior = check_posterior(posterior)
    if "energy" not in posterior.sample_stats:
        raise ValueError(
            "posterior.sample_stats has no 'energy' entry (chain, draw): the energy plot needs "
            f"the Hamiltonian of each draw; available statistics: {sorted(posterior.sample_stats)}"
        )
    idata = to_inference_data(posterior, log_likelihood=False, predictive=False)
    kwargs.setdefault("kind", "hist")
    kwargs.setdefault("figsize", (6, 3.5))
    ax = np.atleast_1d(az.plot_energy(idata, **kwargs)).ravel()[0]
    ax.set_xlabel("energy minus its mean")
    ax.set_ylabel("frequency")
    ax.set_title("marginal energy and energy transitions (BFMI per chain in the legend)")
    _legend_outside(ax)
    return ax.figure


def _legend_outside(ax) -> None:
    """Move the axis' legend to the right of the plot, where it cannot cover the data."""
    legend = ax.get_legend()
    if legend is None:
        return
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8,
              frameon=False)
    ax.figure.tight_layout()


def plot_coclustering(matrix, order=None, ax=None, cmap: str = "viridis") -> plt.Figure:
    """Heat map of a co-clustering matrix ``C_ij = P(z_i = z_j)`` on a fixed ``[0, 1]`` scale.

    Args:
        matrix: ``(N, N)`` probabilities, as from :func:`~pyromodels.diagnostics.coclustering`.
        order: a permutation of ``0 .. N-1`` putting rows and columns in that order (for example
            the points sorted by a point-estimate clustering), or ``None`` for the given order.
        ax: axis to draw on; a new figure by default.
        cmap: matplotlib colour map.

    Returns:
        The figure: the heat map axis and its colour bar.
    """
    c = as_float_tensor(matrix, "matrix", ndim=2, dtype=torch.float64)
    n = c.shape[0]
    if c.shape[1] != n:
        raise ValueError(f"matrix must be square (N, N), got shape {tuple(c.shape)}")
    if bool((c < 0).any()) or bool((c > 1).any()):
        raise ValueError("matrix must hold probabilities in [0, 1]")
    if order is not None:
        idx = as_label_tensor(order, "order", num_classes=n, ndim=1)
        if idx.shape[0] != n or torch.unique(idx).shape[0] != n:
            raise ValueError(f"order must be a permutation of 0 .. {n - 1}")
        c = c[idx][:, idx]
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 4.2))
    image = ax.imshow(c.cpu().numpy(), vmin=0.0, vmax=1.0, cmap=cmap, interpolation="nearest")
    ax.figure.colorbar(image, ax=ax, label="P(same cluster)")
    ax.set_xlabel("point")
    ax.set_ylabel("point")
    return ax.figure


def plot_loss(posterior, ax=None) -> plt.Figure:
    """The optimisation trace: the negative ELBO per SVI step, or the EM objective per iteration.

    ``losses`` shaped ``(restart, iter)`` (NaN-padded) get one line per restart.

    Args:
        posterior: a :class:`~pyromodels.core.Posterior` with ``losses``.
        ax: axis to draw on; a new figure by default.

    Returns:
        The figure (one axis).
    """
    if not isinstance(posterior, Posterior):  # draws are not needed: a networks-only fit has none
        raise TypeError(f"posterior must be a pyromodels Posterior, got {type(posterior).__name__}")
    if posterior.losses is None:
        raise ValueError(
            f"posterior.losses is None: a {posterior.method!r} fit records no optimisation trace"
        )
    losses = to_numpy(posterior.losses, "posterior.losses").astype(np.float64)
    if losses.ndim not in (1, 2):
        raise ValueError(f"posterior.losses must be (iter,) or (restart, iter), got {losses.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    rows = np.atleast_2d(losses)
    for r, row in enumerate(rows):
        label = f"restart {r}" if len(rows) > 1 else None
        ax.plot(np.arange(1, row.size + 1), row, label=label, lw=1)
    if len(rows) > 1:
        ax.legend()
        _legend_outside(ax)
    ylabel = {"svi": "negative ELBO", "em": "EM objective"}.get(posterior.method, "loss")
    ax.set_xlabel("iteration")
    ax.set_ylabel(ylabel)
    return ax.figure
