"""The scikit-learn and crowd estimators whose method is a sampler take
``diagnostic_warnings`` and pass it to the engine: short chains warn (SamplingWarning), and
``diagnostic_warnings=False`` silences them; the crowd facades refuse it with EM, as they
refuse every sampler setting that EM would ignore."""

import warnings

import numpy as np
import pandas as pd
import pytest

from pyromodels.core import SamplingWarning
from pyromodels.crowd import (
    DawidSkeneEstimator,
    NetworkedDawidSkeneEstimator,
    SequentialDawidSkeneEstimator,
)
from pyromodels.data import WorkerPopulation, simulate_annotations, simulate_networked_annotations
from pyromodels.data.simulate_crowd import simulate_sequential_annotations
from pyromodels.ddpm import DPGaussianMixture, TruncatedDPGaussianMixture
from pyromodels.mixture import BayesianGaussianMixture

SHORT = {"num_warmup": 2, "num_samples": 6, "num_chains": 2}


def _crowd_frame():
    table, _ = simulate_annotations(30, WorkerPopulation(4, labels_per_item=3), 3, seed=0)
    return table.to_frame()


def _sequence_frame():
    seqs, _ = simulate_sequential_annotations([10, 12], 3, 3, stickiness=0.6, seed=0)
    table = seqs.data
    items = table.item_idx.numpy()
    return pd.DataFrame({"sequence": seqs.sequence_ids().numpy()[items],
                         "position": seqs.positions().numpy()[items],
                         "worker": table.worker_idx.numpy(), "label": table.label_idx.numpy()})


def _graph_frames():
    table, graph, _ = simulate_networked_annotations(
        30, WorkerPopulation(4, labels_per_item=3), 3, mean_degree=3, seed=0)
    return table.to_frame(), pd.DataFrame(graph.edges.numpy(), columns=["source", "target"])


def _points():
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(-1, 1, (20, 2)), rng.normal(1, 1, (20, 2))])


CASES = {
    "dawid-skene gibbs": (lambda **kw: DawidSkeneEstimator(method="gibbs", **SHORT, **kw),
                          lambda est: est.fit(_crowd_frame())),
    "dawid-skene nuts": (lambda **kw: DawidSkeneEstimator(method="nuts", **SHORT, **kw),
                         lambda est: est.fit(_crowd_frame())),
    "sequential gibbs": (lambda **kw: SequentialDawidSkeneEstimator(method="gibbs", **SHORT, **kw),
                         lambda est: est.fit(_sequence_frame())),
    "networked gibbs": (lambda **kw: NetworkedDawidSkeneEstimator(method="gibbs", **SHORT, **kw),
                        lambda est: est.fit(*_graph_frames())),
    "gaussian mixture gibbs": (lambda **kw: BayesianGaussianMixture(2, method="gibbs", random_state=0,
                                                                    **SHORT, **kw),
                               lambda est: est.fit(_points())),
    "dp mixture": (lambda **kw: DPGaussianMixture(random_state=0, **SHORT, **kw),
                   lambda est: est.fit(_points())),
    "truncated dp mixture": (lambda **kw: TruncatedDPGaussianMixture(4, random_state=0, **SHORT, **kw),
                             lambda est: est.fit(_points())),
}


@pytest.mark.parametrize("case", list(CASES))
def test_sampling_estimators_pass_diagnostic_warnings_on(case):
    make, fit = CASES[case]
    # 2 x 6 draws: no effective sample size reaches 100 per chain
    with pytest.warns(SamplingWarning, match="effective sample size"):
        fit(make())
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingWarning)
        fit(make(diagnostic_warnings=False))
    with pytest.raises(TypeError, match="diagnostic_warnings"):
        fit(make(diagnostic_warnings="off"))


def test_crowd_facades_refuse_diagnostic_warnings_with_em():
    with pytest.raises(ValueError, match=r"diagnostic_warnings=False is not used by method='em'"):
        DawidSkeneEstimator(diagnostic_warnings=False).fit(_crowd_frame())
