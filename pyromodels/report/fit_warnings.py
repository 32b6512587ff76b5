"""Warnings a report gives about a fit that may have failed, and the thresholds behind them.

Each check returns plain sentences; :func:`with_warnings` puts them into a
:class:`~pyromodels.report.DemoResult` twice: as summary paragraphs that start with
:data:`WARNING_PREFIX` (the page shows them highlighted) and as the list
``metrics[method]["warnings"]`` of ``metrics.json``, so that scripts can read them too.

Thresholds:

* the Markov chain diagnostics (R-hat above 1.01, bulk or tail effective sample size below
  100 per chain, divergent transitions, E-BFMI below 0.3) are those of
  :mod:`pyromodels.core.diagnostic_warnings`, the checks behind the
  :class:`~pyromodels.core.SamplingWarning` an MCMC fit emits: :func:`mcmc_warnings` turns
  them into report lines;
* no active latent unit in a deep latent-variable fit (``diagnostics["active_units"] == 0``),
  or a clustering fit whose code carries less than one bit about its items
  (``diagnostics["collapsed"]``), the rules of :mod:`pyromodels.core.latent_activity`, the
  check behind the
  :class:`~pyromodels.core.PosteriorCollapseWarning` of VAE, LTVAE, SCDC and BayesSCDC fits):
  :func:`collapse_warnings`;
* a worker confusion matrix whose every row lies within total-variation distance
  :data:`UNIFORM_TV` (0.1) of the uniform row ``1/K``: that worker's answers say almost
  nothing about the true class;
* accuracy on gold labels below that of majority vote on the same tasks;
* a pairwise (two-coin) worker whose weight ``logit alpha + logit beta`` is at or below
  :data:`CHANCE_WEIGHT` (0): the fit reads that worker's links at chance or against what they
  say, the mark of a fit that settled on another partition than the workers' (in SCDC, from
  random starting coins).

Example:
    >>> baseline_warnings(0.7, 0.8, 50)[0][:40]
    'accuracy on gold (0.700) is below majori'
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core.diagnostic_warnings import BFMI_LIMIT, ESS_PER_CHAIN, RHAT_LIMIT, sampling_findings

__all__ = [
    "WARNING_PREFIX",
    "RHAT_LIMIT",
    "ESS_PER_CHAIN",
    "BFMI_LIMIT",
    "UNIFORM_TV",
    "with_warnings",
    "extend_summary",
    "mcmc_warnings",
    "collapse_warnings",
    "near_uniform_workers",
    "near_uniform_warnings",
    "baseline_warnings",
    "CHANCE_WEIGHT",
    "pairwise_worker_warnings",
]

#: the start of every warning paragraph of a report's summary
WARNING_PREFIX = "Warning: "
#: a confusion row within this total-variation distance of uniform counts as uniform
UNIFORM_TV = 0.1
#: a pairwise worker whose weight logit alpha + logit beta is at or below this reads at chance
CHANCE_WEIGHT = 0.0


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


def mcmc_warnings(posterior) -> list[str]:
    """The sentences of :func:`~pyromodels.core.diagnostic_warnings.sampling_findings`: R-hat,
    bulk/tail ESS, divergences and E-BFMI of Markov chain draws (none for EM, SVI)."""
    return [finding.message for finding in sampling_findings(posterior)]


def collapse_warnings(posterior) -> list[str]:
    """One sentence when the fit recorded no active latent unit, or (a clustering fit) a code
    of less than one bit about its items (posterior collapse), else none.

    Example:
        >>> from types import SimpleNamespace
        >>> fit = SimpleNamespace(diagnostics={"active_units": 0, "latent_dim": 10})
        >>> collapse_warnings(fit)[0][:46]
        'posterior collapse: 0 of 10 latent units are a'
    """
    diagnostics = getattr(posterior, "diagnostics", None) or {}
    dim = diagnostics.get("latent_dim", "?")
    advice = ("the recognition network encodes every item alike, so the fit's clusters and "
              "codes say nothing about the data. Refit with a smaller learning rate or a "
              "warm-up (the fit's PosteriorCollapseWarning names the options).")
    if diagnostics.get("active_units") == 0:
        return [f"posterior collapse: 0 of {dim} latent units are active (their recognition "
                "means vary across the training items by less than 0.01 times their scale): "
                + advice]
    if diagnostics.get("collapsed"):
        information = diagnostics.get("code_information", float("nan"))
        return [f"posterior collapse: the items' latent posteriors carry at most "
                f"{information:.3g} nats about which item they encode, less than one bit: "
                + advice]
    return []


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


def pairwise_worker_warnings(workers, weights) -> list[str]:
    """A sentence naming the pairwise workers whose weight ``logit alpha + logit beta`` is at
    or below :data:`CHANCE_WEIGHT`, or none.

    Args:
        workers: the worker ids.
        weights: ``(M,)`` their weights.

    Example:
        >>> pairwise_worker_warnings(["a", "b"], [4.4, -0.3])[0][:44]
        '1 of 2 workers have a weight logit alpha + l'
    """
    weights = np.asarray(weights, dtype=np.float64)
    low = [str(w) for w, v in zip(workers, weights, strict=True) if not v > CHANCE_WEIGHT]
    if not low:
        return []
    shown = ", ".join(low[:5]) + (", ..." if len(low) > 5 else "")
    return [f"{len(low)} of {len(weights)} workers have a weight logit alpha + logit beta at "
            f"or below {CHANCE_WEIGHT:g} ({shown}): the fit reads their links at chance or "
            "against what they say. If the workers are better than chance, the fit may have "
            "settled on another partition than theirs; start them as reliable (SCDC: "
            "--coin-init 0.9) or try other seeds."]
