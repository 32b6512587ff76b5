"""HMM parameter checks, the stationary distribution and log-parameters.

Parameters travel as a dict ``{"initial": (K,), "transition": (K, K), "confusion": (M, K, K)}``
of probabilities (float64): ``initial`` is the law of the first label of every sequence,
``transition[i, j] = P(y_t = j | y_{t-1} = i)`` (rows = previous label) and
``confusion[m, k, j] = P(worker m answers j | true label k)``.
"""

from __future__ import annotations

import torch

from ...checks import as_float_tensor, check_stochastic
from ...conjugate import markov
from ..emissions import check_confusion

__all__ = ["INITIAL_MODES", "check_params", "stationary_distribution", "log_params"]

#: how the law of the first label is handled: updated from the posteriors, held fixed, or tied
#: to the stationary distribution of the current transition matrix
INITIAL_MODES = ("learned", "fixed", "stationary")


def stationary_distribution(transition: torch.Tensor) -> torch.Tensor:
    """:func:`pyromodels.conjugate.markov.stationary_distribution`, whose error here also says how
    to fit without it."""
    try:
        return markov.stationary_distribution(transition)
    except ValueError as err:
        raise ValueError(f"{err}; use initial='learned' or 'fixed'") from None


def check_params(params, num_classes: int, num_workers: int, *, row_stochastic_transition: bool = True,
                 name: str = "params") -> dict:
    """Validate an HMM parameter dict and return float64 copies on its device.

    Args:
        params: dict with ``"initial"`` ``(K,)``, ``"transition"`` ``(K, K)`` and
            ``"confusion"`` ``(M, K, K)``.
        num_classes, num_workers: ``K`` and ``M``.
        row_stochastic_transition: require the rows of ``transition`` to sum to one (the
            paper-literal M-step returns the transpose of a row-stochastic matrix instead).
        name: how the dict is called in error messages.
    """
    if not isinstance(params, dict):
        raise TypeError(f"{name} must be a dict with keys initial, transition, confusion")
    missing = [k for k in ("initial", "transition", "confusion") if k not in params]
    if missing:
        raise ValueError(f"{name} is missing {missing}; it needs initial, transition and confusion")
    K, M = num_classes, num_workers
    initial = check_stochastic(params["initial"], f"{name}['initial']", shape=(K,),
                               dtype=torch.float64)
    confusion = check_confusion(params["confusion"], f"{name}['confusion']", K, num_workers=M)
    if row_stochastic_transition:
        transition = check_stochastic(params["transition"], f"{name}['transition']",
                                      shape=(K, K), dtype=torch.float64)
    else:  # the paper-literal update: non-negative, normalised along neither axis in general
        transition = as_float_tensor(params["transition"], f"{name}['transition']", ndim=2,
                                     dtype=torch.float64)
        if tuple(transition.shape) != (K, K) or bool((transition < 0).any()):
            raise ValueError(f"{name}['transition'] must be a non-negative ({K}, {K}) matrix")
    return {**params, "initial": initial, "transition": transition, "confusion": confusion}


def log_params(params: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(log initial, log transition, log confusion)``; zero probabilities become ``-inf``."""
    return params["initial"].log(), params["transition"].log(), params["confusion"].log()
