"""Run settings of the RBHMC protocols at four scales, from seconds to the paper's.

The paper runs four protocols per data set (Sec. 5): **convergence** (CDL / RCDL traces,
Figs. 3 and 7), **sensitivity** (AID and AOD of the last tree over repeats on a ``(C, eps_0)``
grid, Figs. 4 and 8), **case study** (the best tree of a few chains, Figs. 5 and 9) and
**f_measure** (per-level F-measure of the best tree of 10 chains per method, Figs. 6 and 10).

Scales: ``smoke`` (tests, seconds), ``small`` and ``medium`` (a two-core machine; the grid and
the run lengths cut as the paper's notes suggest) and ``paper`` (the stated settings of
:data:`~.paper_numbers.FIGURES`). Where the paper is silent the choice is ours and marked:
the sensitivity grids (lost with the figures' axes), the iterations of Fig. 9, the chains of
Fig. 3 and the ``(C, eps_0)`` of Fig. 10 (taken as Fig. 6's, "the same methodology").

Example:
    >>> run = protocol_settings("animals", "f_measure", "paper")
    >>> run.chains, run.burn_in, run.draws, run.settings
    (10, 5000, 10000, ((0.1, 1.0),))
    >>> len(protocol_settings("fashion_mnist", "sensitivity", "paper").settings)
    20
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...checks import check_in
from .paper_numbers import C_VALUES_MENTIONED, FIGURES

__all__ = ["SCALES", "DATASETS", "PROTOCOLS", "ProtocolRun", "protocol_settings", "grid",
           "SENSITIVITY_EPS0_GRID"]

SCALES = ("smoke", "small", "medium", "paper")
DATASETS = ("animals", "fashion_mnist", "planted")
PROTOCOLS = ("convergence", "sensitivity", "case_study", "f_measure")

#: eps_0 values of our paper-scale sensitivity grid (the paper's are lost; it names only 1)
SENSITIVITY_EPS0_GRID = (0.1, 0.5, 1.0, 2.0, 5.0)


@dataclass(frozen=True)
class ProtocolRun:
    """How one protocol is run on one data set.

    Attributes:
        protocol: one of :data:`PROTOCOLS`.
        settings: the RBHMC ``(C, eps_0)`` pairs; BHMC runs beside them as the baseline.
        chains: chains per setting and method (convergence, case study, F-measure).
        repeats: independent runs per setting (sensitivity; 1 otherwise).
        burn_in: iterations before the kept draws (0 where the paper keeps the last tree).
        draws: iterations kept (the total for sensitivity, whose last tree is scored).
        selection: ``"best"`` (highest RCDL, BHMC: CDL, after burn-in) or ``"last"``.
        paper: whether every number is the paper's (``False``: scaled down or our choice).
    """

    protocol: str
    settings: tuple[tuple[float, float], ...]
    chains: int
    repeats: int
    burn_in: int
    draws: int
    selection: str
    paper: bool


def grid(c_values, eps0_values) -> tuple[tuple[float, float], ...]:
    """Every ``(C, eps_0)`` pair, ``C`` outer.

    Example:
        >>> grid((0.1, 1.0), (1.0,))
        ((0.1, 1.0), (1.0, 1.0))
    """
    return tuple((float(c), float(e)) for c in c_values for e in eps0_values)


_FIG = {("animals", "convergence"): "fig3", ("animals", "sensitivity"): "fig4",
        ("animals", "case_study"): "fig5", ("animals", "f_measure"): "fig6",
        ("fashion_mnist", "convergence"): "fig7", ("fashion_mnist", "sensitivity"): "fig8",
        ("fashion_mnist", "case_study"): "fig9", ("fashion_mnist", "f_measure"): "fig10"}

# Scaled-down runs: (chains, repeats, burn_in, draws, settings) per protocol.
_SCALED = {
    "smoke": {"convergence": (1, 1, 0, 6, ((1.0, 1.0),)),
              "sensitivity": (1, 2, 0, 6, grid((0.01, 1.0), (1.0,))),
              "case_study": (2, 1, 2, 4, ((1.0, 1.0),)),
              "f_measure": (2, 1, 2, 4, ((0.1, 1.0),))},
    "small": {"convergence": (2, 1, 0, 1000, ((0.01, 1.0), (1.0, 1.0))),
              "sensitivity": (1, 3, 0, 500, grid((0.01, 1.0), (1.0,))),
              "case_study": (2, 1, 250, 500, ((0.01, 1.0), (1.0, 1.0))),
              "f_measure": (3, 1, 250, 500, ((0.1, 1.0),))},
    "medium": {"convergence": (3, 1, 0, 3000, ((0.01, 1.0), (1.0, 1.0))),
               "sensitivity": (1, 5, 0, 2000, grid((0.001, 0.1, 1.0), (0.5, 1.0, 2.0))),
               "case_study": (3, 1, 1000, 2000, ((0.01, 1.0), (1.0, 1.0))),
               "f_measure": (5, 1, 1000, 2000, ((0.1, 1.0),))},
}


def _paper(dataset: str, protocol: str) -> ProtocolRun:
    fig = FIGURES[_FIG[(dataset, protocol)]]
    if protocol == "sensitivity":  # grid lost with the figure: ours
        return ProtocolRun(protocol, grid(C_VALUES_MENTIONED, SENSITIVITY_EPS0_GRID), 1,
                           fig.repeats, 0, fig.draws, "last", False)
    settings, stated = fig.settings, True
    if not settings:  # Fig. 10: "the same methodology" as Fig. 6
        settings, stated = FIGURES["fig6"].settings, False
    chains = fig.chains
    if chains is None:  # Fig. 3: chains per setting not stated
        chains, stated = 1, False
    burn_in, draws = fig.burn_in, fig.draws
    if draws is None:  # Fig. 9: run lengths not stated; Fig. 5's
        burn_in, draws, stated = FIGURES["fig5"].burn_in, FIGURES["fig5"].draws, False
    selection = "last" if protocol == "convergence" else "best"
    return ProtocolRun(protocol, settings, chains, 1, burn_in or 0, draws, selection, stated)


def protocol_settings(dataset: str, protocol: str, scale: str) -> ProtocolRun:
    """The run of ``protocol`` on ``dataset`` at ``scale``.

    The planted synthetic set (no paper counterpart) uses the Animals settings at the paper
    scale.

    Args:
        dataset: one of :data:`DATASETS`.
        protocol: one of :data:`PROTOCOLS`.
        scale: one of :data:`SCALES`.

    Returns:
        :class:`ProtocolRun`.

    Raises:
        ValueError: an unknown name.
    """
    check_in(dataset, "dataset", DATASETS)
    check_in(protocol, "protocol", PROTOCOLS)
    check_in(scale, "scale", SCALES)
    if scale == "paper":
        run = _paper("animals" if dataset == "planted" else dataset, protocol)
        return replace(run, paper=False) if dataset == "planted" else run
    chains, repeats, burn_in, draws, settings = _SCALED[scale][protocol]
    selection = "last" if protocol in ("convergence", "sensitivity") else "best"
    return ProtocolRun(protocol, settings, chains, repeats, burn_in, draws, selection, False)
