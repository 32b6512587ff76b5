"""A fitted estimator whose re-fit fails or is interrupted is left unfitted, never holding the
earlier fit's results under the new parameters (or a mix of both fits' results)."""

import pytest

from pyromodels.core import NotFittedError, em
from pyromodels.crowd.estimators import DawidSkeneEstimator, array_fit
from pyromodels.crowd.estimators.base import CrowdAggregator

from .test_estimators import COLUMNS, string_frame


def _raise(error):
    def fail(*args, **kwargs):
        raise error

    return fail


@pytest.mark.filterwarnings("ignore::pyromodels.core.ConvergenceWarning")
@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("engine failed")],
                         ids=["interrupt", "exception"])
@pytest.mark.parametrize("where", ["engine", "after-labels"])
def test_a_failed_refit_leaves_the_estimator_unfitted(monkeypatch, error, where):
    df, _, _ = string_frame(n=40, m=4)
    est = DawidSkeneEstimator(**COLUMNS, n_iter=5).fit(df)
    assert est.labels_ is not None and est.confusions_ is not None
    est.set_params(n_iter=7)
    if where == "engine":  # the engine stops mid-fit (the torch path's or the arrays')
        monkeypatch.setattr(em, "run_em", _raise(error))
        monkeypatch.setattr(array_fit, "fit_em", _raise(error))
    else:  # the new labels are stored, the confusions are not
        monkeypatch.setattr(CrowdAggregator, "_store_confusions", _raise(error))
    with pytest.raises(type(error)):
        est.fit(df)
    for name in ("labels_", "probas_", "table_"):
        with pytest.raises(NotFittedError):
            getattr(est, name)
    assert not [n for n in vars(est) if n.endswith("_") and not n.startswith("_")]
    monkeypatch.undo()
    assert est.fit(df).n_iter_ <= 7  # a later fit works as usual
