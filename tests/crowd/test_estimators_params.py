"""The facades' parameter protocol behaves as scikit-learn's ``BaseEstimator`` does, and
importing them leaves scikit-learn unloaded."""

import pickle

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import ParameterGrid

from pyromodels.crowd.estimators import (
    DawidSkeneEstimator,
    MajorityVote,
    NetworkedDawidSkeneEstimator,
    SequentialDawidSkeneEstimator,
)
from pyromodels.crowd.estimators.params import EstimatorParams

_ONES = np.ones(2)
FACADES = [DawidSkeneEstimator, MajorityVote, NetworkedDawidSkeneEstimator,
           SequentialDawidSkeneEstimator]


def _reference(facade):
    """The same constructor on scikit-learn's BaseEstimator."""
    return type("Reference", (BaseEstimator,), {"__init__": facade.__init__})


@pytest.mark.parametrize("facade", FACADES)
def test_get_params_and_repr_match_scikit_learns(facade):
    changed = {"seed": 7, "label": "answer"}
    ours, theirs = facade(**changed), _reference(facade)(**changed)
    assert ours.get_params() == theirs.get_params()
    assert ours.get_params(deep=False) == theirs.get_params(deep=False)
    # the changed arguments only, as scikit-learn prints them
    assert repr(ours) == repr(theirs).replace("Reference", facade.__name__)
    assert repr(facade()) == f"{facade.__name__}()"


@pytest.mark.parametrize("facade", FACADES)
def test_set_params_clone_and_pickle(facade):
    est = facade().set_params(seed=3)
    assert est.seed == 3 and est.set_params() is est
    with pytest.raises(ValueError, match=r"invalid parameter 'sed'.*valid parameters are \["):
        est.set_params(sed=1)
    copy = clone(est)
    assert copy is not est and copy.get_params() == est.get_params()
    assert pickle.loads(pickle.dumps(est)).get_params() == est.get_params()
    for params in ParameterGrid({"seed": [0, 1]}):
        assert clone(est).set_params(**params).seed == params["seed"]


def test_nested_parameters_and_array_defaults():
    class Inner(EstimatorParams):
        def __init__(self, alpha=1.0):
            self.alpha = alpha

    class Outer(EstimatorParams):
        def __init__(self, inner=None, weights=_ONES):
            self.inner, self.weights = inner, weights

    outer = Outer(inner=Inner())
    assert outer.get_params()["inner__alpha"] == 1.0
    outer.set_params(inner__alpha=2.0)
    assert outer.inner.alpha == 2.0
    assert repr(Outer(weights=np.zeros(2))).startswith("Outer(weights=array(")
    assert repr(Outer()) == "Outer()"  # the default array itself is not printed


def test_variadic_constructors_are_refused():
    class Bad(EstimatorParams):
        def __init__(self, *args):
            self.args = args

    with pytest.raises(TypeError, match="named keyword arguments"):
        Bad().get_params()


def test_importing_the_facades_leaves_scikit_learn_unloaded(fresh_python):
    code = ("import sys, pyromodels.crowd.estimators as e\n"
            "import pandas as pd\n"
            "df = pd.DataFrame({'task': [1, 1, 2, 2], 'worker': [1, 2, 1, 2], 'label': [0, 0, 1, 1]})\n"
            "e.DawidSkeneEstimator(n_iter=3, progress=False).fit_predict(df)\n"
            "print('sklearn' in sys.modules)")
    assert fresh_python(code) == "False"
