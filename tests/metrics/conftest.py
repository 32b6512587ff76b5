"""Random labelings shared by the metric tests (fixed seeds)."""

import numpy as np
import pytest


def _random_labelings():
    """Forty labelings with 1-6 classes, 1-13 clusters and, for some seeds, singleton blocks."""
    cases = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(20, 90))
        n_classes = 1 if seed == 7 else int(rng.integers(2, 7))
        n_clusters = 1 if seed == 11 else int(rng.integers(2, 11))
        y_true = rng.integers(0, n_classes, n)
        y_pred = rng.integers(0, n_clusters, n)
        if seed % 3 == 0:  # three singleton clusters
            where = rng.choice(n, size=3, replace=False)
            y_pred[where] = n_clusters + np.arange(3)
        if seed % 4 == 1:  # two singleton classes
            where = rng.choice(n, size=2, replace=False)
            y_true[where] = n_classes + np.arange(2)
        cases.append((y_true, y_pred))
    return cases


@pytest.fixture(scope="session")
def labelings():
    return _random_labelings()
