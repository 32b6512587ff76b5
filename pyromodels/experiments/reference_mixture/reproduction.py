"""The reference model on real data: a Bayesian Gaussian mixture fitted to the wine cultivars.

Model (:class:`~pyromodels.mixture.GaussianMixtureModel`, ``K = 3`` components)::

    weights ~ Dirichlet(1_K),  Sigma_k ~ InverseWishart(d + 2, S),
    mu_k | Sigma_k ~ Normal(xbar, Sigma_k),  z_n ~ Categorical(weights),
    x_n | z_n ~ Normal(mu_{z_n}, Sigma_{z_n})

with ``xbar`` and ``S`` the data mean and covariance. Data: scikit-learn's bundled wine set
(178 wines from 3 cultivars, 13 chemical measurements), each measurement standardised to mean 0
and variance 1, then projected on its first two principal components. The standardised iris
set is the other natural choice, but there the posterior of a three-component mixture is
multimodal (versicolor and virginica overlap, so chains wander between splittings of them) and
NUTS, with 44 unconstrained parameters instead of 17, runs about ten times slower than on the
two-dimensional wine projection, whose three clusters are well separated.

Engines: EM with restarts (the reference labelling), two Gibbs chains, SVI with the default
mean-field guide, and two NUTS chains; every sampled fit is relabelled to the EM labels before
it is compared (see :mod:`.reference_mixture_analysis`).

Example:
    >>> result = demo(smoke=True, progress=False, seed=0)  # doctest: +SKIP
    >>> result.metrics["em"]["accuracy"] > 0.9  # doctest: +SKIP
    True
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...core.device import num_threads
from ...core.seeding import derive_seed
from ...data import load_sklearn
from ...data.index_columns import check_no_index_column
from ...mixture import GaussianMixtureModel
from ...registry import register
from ..arguments import demo_arguments, reproduction_arguments
from ..catalogue import GAUSSIAN_MIXTURE
from .fit_report import describe_fit

if TYPE_CHECKING:  # the report package loads ArviZ: registering the entry stays light
    from ...report import DemoResult

__all__ = [
    "NAME",
    "NUM_COMPONENTS",
    "SCALES",
    "SETTINGS",
    "Settings",
    "ENTRY",
    "default_model",
    "load_features",
    "fit_engines",
    "run",
    "demo",
    "reproduce",
    "read_numeric_csv",
    "loader",
]

NAME = "gaussian-mixture"
NUM_COMPONENTS = 3
#: the scales :func:`reproduce` runs at (the reference model reproduces no paper)
SCALES = GAUSSIAN_MIXTURE.scales
PCA_DIMS = 2


@dataclass(frozen=True)
class Settings:
    """Iteration counts of one run of every engine (each chain gets the warm-up and draws)."""

    em_n_init: int
    em_max_iter: int
    gibbs_warmup: int
    gibbs_samples: int
    svi_steps: int
    svi_lr: float
    svi_samples: int
    nuts_warmup: int
    nuts_samples: int
    num_chains: int


#: ``smoke`` checks the plumbing in seconds; ``demo`` is ``pyromodels demo``'s first look (short
#: chains, NUTS the shortest); ``small`` and ``medium`` are the reproductions, with longer chains.
SETTINGS = {
    "smoke": Settings(3, 300, 40, 60, 150, 0.03, 100, 15, 15, 2),
    "demo": Settings(5, 300, 200, 300, 600, 0.03, 500, 60, 60, 2),
    "small": Settings(10, 500, 1000, 2000, 1500, 0.03, 1000, 300, 300, 2),
    "medium": Settings(20, 1000, 2000, 4000, 5000, 0.01, 4000, 500, 500, 4),
}


def default_model(num_components: int = NUM_COMPONENTS, **prior) -> GaussianMixtureModel:
    """The registered model: ``GaussianMixtureModel(num_components, **prior)`` (default 3
    components) with the data-driven default prior where ``prior`` gives no value (its
    keywords: ``weight_concentration``, ``mean_precision``, ``degrees_of_freedom``)."""
    return GaussianMixtureModel(num_components, **prior)


def load_features() -> tuple[np.ndarray, np.ndarray, float]:
    """The wine data as the demo uses it.

    Returns:
        ``(x, y, explained)``: ``x`` ``(178, 2)`` float64 scores on the first two principal
        components of the standardised measurements, ``y`` ``(178,)`` the cultivar (0, 1, 2)
        and ``explained`` the share of the standardised variance the two components keep.
    """
    from sklearn.decomposition import PCA

    features, y = load_sklearn("wine")
    standardised = (features - features.mean(0)) / features.std(0)
    pca = PCA(n_components=PCA_DIMS).fit(standardised)
    return pca.transform(standardised), y, float(pca.explained_variance_ratio_.sum())


def fit_engines(x, settings: Settings, *, seed: int, progress: bool) -> dict:
    """Fit :func:`default_model` to ``x`` with EM, Gibbs, SVI and NUTS.

    Each engine's seed is derived from ``seed`` and the engine's name, so the fits are
    reproducible one by one.

    Returns:
        ``{engine: Posterior}`` in the order em, gibbs, svi, nuts.
    """
    model = default_model()
    chains = {"num_chains": settings.num_chains}
    options = {
        "em": {"n_init": settings.em_n_init, "max_iter": settings.em_max_iter},
        "gibbs": {"num_warmup": settings.gibbs_warmup, "num_samples": settings.gibbs_samples,
                  **chains},
        "svi": {"num_steps": settings.svi_steps, "lr": settings.svi_lr,
                "num_samples": settings.svi_samples},
        "nuts": {"num_warmup": settings.nuts_warmup, "num_samples": settings.nuts_samples,
                 **chains},
    }
    return {
        method: model.fit(x, method=method, seed=derive_seed(seed, NAME, method),
                          progress=progress, **kwargs)
        for method, kwargs in options.items()
    }


def run(settings: Settings, name: str, *, progress: bool, seed: int) -> DemoResult:
    """Fit every engine with ``settings`` and assemble the report entry ``name``.

    Torch runs on one thread meanwhile (the tensors are small, so more threads only add
    overhead); the previous thread count is restored afterwards.
    """
    # Imported here so that registering the model (``pyromodels list``) stays light.
    import pandas as pd

    from ...report import DemoResult
    from .analysis import MCMC_ENGINES, align_to_em, engine_table, mcmc_checks
    from .summary import summary_text

    x, y, explained = load_features()
    with num_threads(1):
        fits = fit_engines(x, settings, seed=seed, progress=progress)
    aligned = align_to_em(fits, fits["em"].model.component_sites)
    table = engine_table(aligned, y)
    metrics = {
        engine: {k: v for k, v in row.items() if not k.startswith("weight_")}
        for engine, row in table.to_dict(orient="index").items()
    }
    for engine, post in aligned.items():
        metrics[engine]["weights_mean"] = post.mean("weights").tolist()
    metrics["em"]["converged"] = bool(fits["em"].diagnostics["converged"])
    metrics["em"]["n_iter"] = int(fits["em"].diagnostics["n_iter"])
    metrics["em"]["log_posterior"] = float(fits["em"].losses[-1])
    metrics["svi"]["final_loss"] = float(fits["svi"].losses[-100:].mean())
    summaries = []
    for engine in MCMC_ENGINES:
        checks, summ = mcmc_checks(fits[engine], aligned[engine])
        metrics[engine].update(checks)
        summaries.append(summ.set_index(engine + ": " + summ.index.astype(str)))
    metrics["settings"] = asdict(settings)
    metrics["data"] = {"name": "wine", "num_points": int(x.shape[0]), "dim": int(x.shape[1]),
                       "explained_variance": explained}
    return DemoResult(
        name=name,
        summary=summary_text(metrics, settings, explained),
        metrics=metrics,
        tables={"engine comparison (aligned to the EM labels)": table,
                "ArviZ summary (Gibbs and NUTS)": pd.concat(summaries)},
        figures=_figures(x, y, fits, aligned),
        inference_data={engine: post.to_inference_data() for engine, post in aligned.items()},
    )


def _figures(x, y, fits: dict, aligned: dict) -> dict:
    """The demo's figures, in the order the report shows them."""
    from ...diagnostics import plot_energy
    from . import figures as figs
    from .analysis import MCMC_ENGINES

    chains = {"raw": {e: fits[e] for e in MCMC_ENGINES},
              "aligned": {e: aligned[e] for e in MCMC_ENGINES}}
    figures = {"data and EM clusters": figs.plot_data(x, y, fits["em"])}
    for engine in MCMC_ENGINES:
        figures[f"{engine}: trace of label-invariant statistics"] = figs.plot_chain_trace(
            fits[engine])
        figures[f"{engine}: rank plot of lp and the relabelled weights"] = (
            figs.plot_chain_ranks(aligned[engine]))
    if "energy" in fits["nuts"].sample_stats:
        figures["nuts: energy plot (marginal energy against transitions, with BFMI)"] = (
            plot_energy(fits["nuts"]))
    figures["label switching: component means before and after relabelling"] = (
        figs.plot_relabelling(chains["raw"], chains["aligned"]))
    figures["EM objective and SVI loss"] = figs.plot_optimisation(fits["em"], fits["svi"])
    order = np.lexsort((aligned["em"].params["labels"].cpu().numpy(), y))
    figures["co-clustering per engine"] = figs.plot_coclustering_per_engine(aligned, order)
    figures["posterior of the weights per engine"] = figs.plot_weight_posteriors(aligned)
    return figures


def demo(*, smoke: bool, progress: bool, seed: int) -> DemoResult:
    """The demo: every engine on the wine projection (``smoke``: tiny iteration counts).

    Args:
        smoke: run :data:`SETTINGS` ``["smoke"]`` (a few seconds) instead of ``["demo"]``.
        progress: show progress bars.
        seed: integer ``>= 0``; each engine derives its own seed from it.

    Returns:
        The :class:`~pyromodels.report.DemoResult` named ``"gaussian-mixture"``.
    """
    key, options = demo_arguments(smoke, progress, seed, size="demo")
    return run(SETTINGS[key], NAME, **options)


def reproduce(*, scale: str, progress: bool, seed: int) -> DemoResult:
    """The reproduction at ``scale`` ``"small"`` or ``"medium"`` (longer chains than the demo).

    The reference model reproduces no paper, so there is no ``"paper"`` scale.

    Returns:
        The :class:`~pyromodels.report.DemoResult` named ``"gaussian-mixture-<scale>"``.
    """
    scale, options = reproduction_arguments(scale, progress, seed, scales=SCALES)
    return run(SETTINGS[scale], f"{NAME}-{scale}", **options)


def _parse_number(cell: str, line: int, column: str, path: Path) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise ValueError(
            f"{path}, line {line}, column {column}: {cell!r} is not a number "
            "(every column must be numeric)"
        ) from None
    if not np.isfinite(value):
        raise ValueError(f"{path}, line {line}, column {column}: {cell!r} is not finite")
    return value


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def read_numeric_csv(path) -> np.ndarray:
    """Read a comma-separated file of numbers into an ``(N, d)`` float64 array.

    The first line is a header when any of its cells is not a number. Every other non-blank
    line must have the same number of cells, each a finite number; blank lines are skipped.

    Args:
        path: a ``str`` or ``pathlib.Path``.

    Returns:
        ``(N, d)`` float64 array, one row per data line.

    Raises:
        ValueError: an empty file, a header without data, a ragged line, or a cell that is
            not a finite number (the message names the line and column).

    Example:
        >>> read_numeric_csv("points.csv")  # doctest: +SKIP
        array([[0.5, 1.2], [0.1, -0.3]])
    """
    if not isinstance(path, str | Path):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    path = Path(path)
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        lines = [(reader.line_num, row) for row in reader if row]
    if not lines:
        raise ValueError(f"{path} is empty: expected numeric CSV rows (N points, d columns)")
    header = None
    if not all(_is_number(cell) for cell in lines[0][1]):
        header = [cell.strip() for cell in lines[0][1]]
        lines = lines[1:]
        if not lines:
            raise ValueError(f"{path} has a header line but no data lines")
    names = header or [str(j + 1) for j in range(len(lines[0][1]))]
    values = np.empty((len(lines), len(names)), dtype=np.float64)
    for i, (line, row) in enumerate(lines):
        if len(row) != len(names):
            raise ValueError(
                f"{path}, line {line}: expected {len(names)} comma-separated values, got {len(row)}"
            )
        for j, cell in enumerate(row):
            values[i, j] = _parse_number(cell, line, repr(names[j]), path)
    check_no_index_column(header, values[:, 0], str(path))
    return values


def loader(path: str | None) -> np.ndarray:
    """The data ``pyromodels fit gaussian-mixture`` fits: a numeric CSV, or by default the
    demo's wine projection (see :func:`load_features`).

    Args:
        path: a CSV file (see :func:`read_numeric_csv`) or ``None``.

    Returns:
        ``(N, d)`` float64 array.
    """
    if path is None:
        return load_features()[0]
    return read_numeric_csv(path)


ENTRY = register(GAUSSIAN_MIXTURE.entry(factory=default_model, demo=demo, reproduce=reproduce,
                                        loader=loader, describe=describe_fit))
