"""Warnings a report gives about a fit that may have failed, and the thresholds behind them.

Each check returns plain sentences; :func:`with_warnings` puts them into a
:class:`~pyromodels.report.DemoResult` twice: as summary paragraphs that start with
:data:`WARNING_PREFIX` (the page shows them highlighted) and as the list
``metrics[method]["warnings"]`` of ``metrics.json``, so that scripts can read them too.

Thresholds:

* R-hat above :data:`RHAT_LIMIT` (1.01) and a bulk or tail effective sample size (ESS) below
  :data:`ESS_PER_CHAIN` (100) times the number of chains, as recommended by Vehtari, Gelman,
  Simpson, Carpenter and Bürkner (2021), "Rank-normalization, folding, and localization: an
  improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16(2), Sec. 4;
* any divergent transition of NUTS/HMC (the draws are then biased where the posterior curves
  sharply);
* a worker confusion matrix whose every row lies within total-variation distance
  :data:`UNIFORM_TV` (0.1) of the uniform row ``1/K``: that worker's answers say almost
  nothing about the true class;
* accuracy on gold labels below that of majority vote on the same tasks.

Example:
    >>> divergence_warnings(3, 1000)[0][:45]
    '3 of 1000 transitions diverged (NUTS): the dr'
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

__all__ = [
    "WARNING_PREFIX",
    "RHAT_LIMIT",
    "ESS_PER_CHAIN",
    "UNIFORM_TV",
    "with_warnings",
    "extend_summary",
    "convergence_warnings",
    "divergence_warnings",
    "near_uniform_workers",
    "near_uniform_warnings",
    "baseline_warnings",
]

#: the start of every warning paragraph of a report's summary
WARNING_PREFIX = "Warning: "
#: R-hat above this says the chains have not mixed (Vehtari et al. 2021)
RHAT_LIMIT = 1.01
#: an ESS below this times the number of chains is too small to trust (Vehtari et al. 2021)
ESS_PER_CHAIN = 100
#: a confusion row within this total-variation distance of uniform counts as uniform
UNIFORM_TV = 0.1


def with_warnings(result, method: str, lines: list[str]):
    """``result`` with ``lines`` added to its summary (one paragraph each, starting with
    :data:`WARNING_PREFIX`) and to ``metrics[method]["warnings"]``; ``result`` itself when
    ``lines`` is empty."""
    if not lines:
        return result
    metrics = {**result.metrics}
    entry = {**metrics.get(method, {})}
    entry["warnings"] = [*entry.get("warnings", []), *lines]
    metrics[method] = entry
    paragraphs = "\n\n".join(WARNING_PREFIX + line for line in lines)
    summary = f"{result.summary}\n\n{paragraphs}" if result.summary else paragraphs
    return replace(result, summary=summary, metrics=metrics)


def extend_summary(summary: str, text: str) -> str:
    r"""``summary`` with ``text`` appended to its last paragraph before the warnings (the
    warning paragraphs stay at the end).

    Example:
        >>> extend_summary("Fitted.\n\nWarning: bad R-hat.", " Labels in labels.csv.")
        'Fitted. Labels in labels.csv.\n\nWarning: bad R-hat.'
    """
    paragraphs = summary.split("\n\n")
    first = next((i for i, p in enumerate(paragraphs) if p.startswith(WARNING_PREFIX)),
                 len(paragraphs))
    if first == 0:
        return "\n\n".join([text.strip(), *paragraphs])
    paragraphs[first - 1] += text
    return "\n\n".join(paragraphs)


def _worst(table: pd.DataFrame, column: str, largest: bool) -> tuple[str, float] | None:
    values = pd.to_numeric(table[column], errors="coerce").dropna() if column in table else None
    if values is None or values.empty:
        return None
    label = values.idxmax() if largest else values.idxmin()
    return str(label), float(values[label])


def convergence_warnings(table: pd.DataFrame, num_chains: int) -> list[str]:
    """Warnings from the R-hat and ESS columns (``r_hat``, ``ess_bulk``, ``ess_tail``) of an
    ArviZ summary ``table`` of Markov chain draws; columns it lacks are skipped.

    Example:
        >>> t = pd.DataFrame({"r_hat": [1.0, 1.3], "ess_bulk": [900.0, 12.0]}, index=["a", "b"])
        >>> for line in convergence_warnings(t, 2):
        ...     print(line.split(":")[0])
        R-hat (potential scale reduction) reaches 1.30 at b
        the effective sample size (ESS, bulk) falls to 12 at b
    """
    lines = []
    worst = _worst(table, "r_hat", largest=True)
    if worst is not None and worst[1] > RHAT_LIMIT:
        bad = int((pd.to_numeric(table["r_hat"], errors="coerce") > RHAT_LIMIT).sum())
        lines.append(
            f"R-hat (potential scale reduction) reaches {worst[1]:.2f} at {worst[0]}: "
            f"{bad} of {len(table)} quantities are above {RHAT_LIMIT}, so the chains disagree "
            "and have not reached one distribution (they may sit at different, possibly "
            "label-switched, modes). Run longer chains or check the trace plot; do not trust "
            "these estimates yet.")
    need = ESS_PER_CHAIN * num_chains
    for kind in ("bulk", "tail"):
        worst = _worst(table, f"ess_{kind}", largest=False)
        if worst is not None and worst[1] < need:
            lines.append(
                f"the effective sample size (ESS, {kind}) falls to {worst[1]:.0f} at "
                f"{worst[0]}: below {need} ({ESS_PER_CHAIN} per chain), too few independent "
                f"draws for reliable {'means' if kind == 'bulk' else 'intervals'}. Draw more "
                "samples or improve mixing.")
    return lines


def divergence_warnings(num_divergent: int, num_transitions: int) -> list[str]:
    """A warning when any of ``num_transitions`` NUTS/HMC transitions diverged."""
    if num_divergent <= 0:
        return []
    return [f"{num_divergent} of {num_transitions} transitions diverged (NUTS): the draws are "
            "biased where the posterior curves sharply; raise the target acceptance "
            "probability or reparametrise the model."]


def near_uniform_workers(confusion: np.ndarray) -> np.ndarray:
    """Boolean ``(M,)``: the workers whose ``(K, K)`` confusion matrix (rows = true class)
    has every row within total-variation distance :data:`UNIFORM_TV` of uniform.

    Example:
        >>> near_uniform_workers(np.array([[[0.4, 0.3, 0.3]] * 3, np.eye(3)])).tolist()
        [True, False]
    """
    confusion = np.asarray(confusion, dtype=np.float64)
    k = confusion.shape[-1]
    distance = 0.5 * np.abs(confusion - 1.0 / k).sum(-1)  # (M, K) per-row TV distance
    return (distance < UNIFORM_TV).all(-1)


def near_uniform_warnings(confusion: np.ndarray, workers) -> list[str]:
    """A warning naming the workers whose confusion matrix is near uniform (see
    :func:`near_uniform_workers`); it says the fit has likely failed when they are at least
    half of all workers."""
    flat = near_uniform_workers(confusion)
    count = int(flat.sum())
    if count == 0:
        return []
    names = ", ".join(str(w) for w in np.asarray(workers)[flat][:5])
    more = ", ..." if count > 5 else ""
    text = (f"{count} of {len(flat)} worker confusion matrices are near uniform (every row "
            f"within total variation {UNIFORM_TV} of 1/K; workers {names}{more}): their "
            "answers say almost nothing about the true class.")
    if 2 * count >= len(flat):
        text += (" With so many, the fit has most likely failed rather than found a crowd of "
                 "random workers: the chains switched class labels and their average washed "
                 "the matrices out, or the data are too few for the prior. Compare with "
                 "majority vote, check R-hat, or strengthen the diagonal prior.")
    return [text]


def baseline_warnings(accuracy: float, baseline: float, num_scored: int) -> list[str]:
    """A warning when the fit's ``accuracy`` on gold is below majority vote's ``baseline``
    on the same ``num_scored`` tasks."""
    if not accuracy < baseline:
        return []
    return [f"accuracy on gold ({accuracy:.3f}) is below majority vote's ({baseline:.3f}) on "
            f"the same {num_scored} tasks: the model does worse than counting votes, which "
            "points to a failed fit (chains that switched class labels, too weak a prior for "
            "this little data, or a model that does not fit these workers)."]
