"""BayesianGaussianMixture(n_jobs=...): starts and chains through joblib, the same fit."""

import numpy as np
import pytest

from pyromodels.mixture import BayesianGaussianMixture


def _points():
    rng = np.random.default_rng(1)
    return np.vstack([rng.normal(-2, 1, (30, 2)), rng.normal(2, 1, (30, 2))])


@pytest.mark.parametrize("options", [{"method": "em", "n_init": 3, "max_iter": 5},
                                     {"method": "gibbs", "num_chains": 2, "num_warmup": 2,
                                      "num_samples": 3, "diagnostic_warnings": False}])
def test_two_workers_give_the_serial_fit(options):
    serial = BayesianGaussianMixture(2, random_state=0, **options).fit(_points())
    parallel = BayesianGaussianMixture(2, random_state=0, n_jobs=2, **options).fit(_points())
    assert np.array_equal(serial.means_, parallel.means_)
    assert np.array_equal(serial.weights_, parallel.weights_)
    assert parallel.get_params()["n_jobs"] == 2


def test_n_jobs_zero_is_a_value_error_naming_n_jobs():
    with pytest.raises(ValueError, match="^n_jobs must be None"):
        BayesianGaussianMixture(2, n_jobs=0).fit(_points())
