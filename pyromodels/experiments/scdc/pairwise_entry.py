"""``pyromodels fit pairwise-dawid-skene --pairs FILE``: items clustered from links alone.

The model (:class:`~pyromodels.scdc.PairwiseDawidSkene`) has no features, so the entry reads
only the links: a CSV with columns ``item_a``, ``item_b`` (any item ids), ``worker`` and
``link`` (1 = same cluster, 0 = different). ``--data`` is refused, since there is nothing the
model could do with it (the models that use features and links are ``scdc``, ``bayes-scdc``
and ``observed-bayes-scdc``), and so is a fit without ``--pairs``.

The report holds, besides the generic one, ``labels.csv`` (each item's id, its most probable
cluster and that probability, items in the sorted order of their ids) and ``workers.csv``
(each worker's posterior mean sensitivity ``alpha``, specificity ``beta`` and weight
``logit alpha + logit beta``), with a warning for a worker whose weight is at or below 0.
The labels are arbitrary up to a permutation of the clusters, and independently so in each
part of the link graph that no link joins to the others.
"""

from __future__ import annotations

import pandas as pd

from ...registry import FitOutput, register
from ..catalogue import PAIRWISE_DAWID_SKENE
from .fit_entries import _with_workers

__all__ = ["pairwise_factory", "links_loader", "describe_pairwise", "ENTRY"]

#: the default number of clusters
DEFAULT_CLUSTERS = 5


def pairwise_factory(num_clusters: int = DEFAULT_CLUSTERS, pi_concentration: float = 1.0):
    """The registered :class:`~pyromodels.scdc.PairwiseDawidSkene` with ``K`` clusters and a
    symmetric Dirichlet of concentration ``pi_concentration`` on the weights."""
    from ...scdc import PairwiseDawidSkene

    return PairwiseDawidSkene(num_clusters, pi_concentration)


def links_loader(path: str | None, pairs: str | None = None):
    """The links of the CSV ``pairs``
    (:meth:`~pyromodels.data.pairwise.PairwiseAnnotations.from_dataframe`); ``path`` (the
    features) must be ``None``: the model reads none."""
    from ...data.pairwise import PairwiseAnnotations

    if path is not None:
        raise ValueError("pairwise-dawid-skene clusters items from their links alone and reads "
                         "no features: give --pairs FILE without --data (to use features too, "
                         "fit scdc, bayes-scdc or observed-bayes-scdc)")
    if pairs is None:
        raise ValueError("pairwise-dawid-skene needs the links: give --pairs FILE (a CSV with "
                         "columns item_a, item_b, worker, link)")
    return PairwiseAnnotations.from_dataframe(pd.read_csv(pairs))


def describe_pairwise(posterior, data, *, name: str) -> FitOutput:
    """The report of a fit: the generic one, ``labels.csv`` and ``workers.csv``."""
    from dataclasses import replace

    from ...report import result_from_posterior

    params = posterior.params
    probas = params["probas"].detach().cpu().double()
    labels = pd.DataFrame({"item": list(data.items),
                           "cluster": params["labels"].cpu().numpy(),
                           "probability": probas.max(-1).values.numpy()})
    result = result_from_posterior(posterior, name)
    used = int(labels["cluster"].nunique())
    summary = (f" The fit puts the {len(labels)} items in {used} clusters; labels.csv gives "
               "each item's cluster (clusters are named arbitrarily, independently in each "
               "part of the link graph).")
    output = FitOutput(replace(result, summary=(result.summary + summary).strip()),
                       {"labels.csv": labels})
    columns = {"alpha": "alpha", "beta": "beta", "weight": "weights"}
    workers = pd.DataFrame({"worker": list(data.workers),
                            **{column: params[key].detach().cpu().double().numpy()
                               for column, key in columns.items()}})
    return _with_workers(output, posterior.method, workers)


ENTRY = register(PAIRWISE_DAWID_SKENE.entry(factory=pairwise_factory, loader=links_loader,
                                            describe=describe_pairwise))
