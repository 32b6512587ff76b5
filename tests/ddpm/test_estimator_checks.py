"""scikit-learn's estimator checks on the DP mixture facades.

The instances given to the checks carry small sampler settings (the checks fit dozens of
times); every check applies and none is expected to fail. scikit-learn itself skips
``check_array_api_input`` unless ``SCIPY_ARRAY_API=1`` is set; with it set, that check
passes too.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from pyromodels.ddpm import DPGaussianMixture, TruncatedDPGaussianMixture

ESTIMATORS = [
    DPGaussianMixture(num_warmup=5, num_samples=5),
    TruncatedDPGaussianMixture(5, num_warmup=10, num_samples=10),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
