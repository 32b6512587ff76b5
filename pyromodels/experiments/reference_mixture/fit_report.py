"""The report of one ``pyromodels fit gaussian-mixture`` run, with label switching undone.

The mixture's likelihood does not change when the components are renamed, so the draws of a
sampled fit (Gibbs, NUTS, SVI) may name one cluster differently from chain to chain or along a
chain. R-hat and ESS of the component parameters (``locs``, ``weights``, ``precisions``) then
measure the switching, not the convergence. Before any diagnostic is computed, every draw is
relabelled (:func:`~pyromodels.diagnostics.relabel`: the renaming that best matches the
draw's labels to the last draw of chain 0, the model's ``component_sites`` permuted with it),
and the report says so.
"""

from __future__ import annotations

from dataclasses import replace

from ...registry import FitOutput

__all__ = ["describe_fit", "RELABEL_NOTE"]

RELABEL_NOTE = (
    "Label switching undone before the diagnostics: every draw's components were renamed to "
    "match the labels of the last draw of chain 0 (Hungarian matching of the point labels), "
    "and weights, locs and precisions permuted with them."
)


def describe_fit(posterior, data, *, name: str) -> FitOutput:
    """The generic report of ``posterior``, computed on the relabelled draws when the fit
    sampled labels ``z`` (every method but EM); ``metrics[method]["relabelled"]`` says which."""
    from ...diagnostics import relabel  # loads ArviZ: registering the entry stays light
    from ...report import result_from_posterior

    sampled = posterior.method != "em" and "z" in posterior.samples
    if sampled:
        posterior = relabel(posterior, component_sites=posterior.model.component_sites)
    result = result_from_posterior(posterior, name)
    metrics = {**result.metrics}
    metrics[posterior.method] = {**metrics[posterior.method], "relabelled": sampled}
    summary = result.summary + (" " + RELABEL_NOTE if sampled else "")
    return FitOutput(replace(result, metrics=metrics, summary=summary), {})
