"""NotFittedError subclasses scikit-learn's, yet importing the core does not load scikit-learn
(about a second): the class is loaded on first use."""

import pickle

import sklearn.exceptions


def test_importing_the_core_and_the_mixture_leaves_scikit_learn_unloaded(fresh_python):
    code = ("import sys, pyromodels, pyromodels.core, pyromodels.mixture, pyromodels.data\n"
            "print('sklearn' in sys.modules)")
    assert fresh_python(code) == "False"


def test_not_fitted_error_is_scikit_learns_from_every_import_path():
    from pyromodels.core import NotFittedError
    from pyromodels.core.errors import NotFittedError as from_errors

    assert from_errors is NotFittedError
    assert issubclass(NotFittedError, sklearn.exceptions.NotFittedError)
    err = pickle.loads(pickle.dumps(NotFittedError("call fit first")))
    assert type(err) is NotFittedError and str(err) == "call fit first"
