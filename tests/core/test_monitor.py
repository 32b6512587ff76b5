import pytest

from pyromodels.core import ConvergenceMonitor, ConvergenceWarning


def test_converges_on_small_relative_change():
    mon = ConvergenceMonitor(tol=1e-3, max_iter=50)
    stops = [mon.update(v) for v in (-100.0, -50.0, -49.99)]
    assert stops == [False, False, True]
    assert mon.converged and mon.n_iter == 3 and mon.best == -49.99


def test_stops_at_budget_without_converging_and_warns():
    mon = ConvergenceMonitor(tol=1e-12, max_iter=3)
    stops = [mon.update(v) for v in (1.0, 2.0, 3.0)]
    assert stops[-1] and not mon.converged
    with pytest.warns(ConvergenceWarning, match="did not converge in 3 iterations"):
        mon.finish("EM")


def test_decrease_of_monotone_objective_warns_and_is_recorded():
    mon = ConvergenceMonitor(tol=1e-6, max_iter=10)
    mon.update(-10.0)
    with pytest.warns(ConvergenceWarning, match="should not decrease"):
        mon.update(-10.5)
    assert mon.violations == [1]


def test_minimised_objective_direction():
    mon = ConvergenceMonitor(tol=1e-6, max_iter=10, direction="decrease")
    mon.update(5.0)
    with pytest.warns(ConvergenceWarning, match="should not increase"):
        mon.update(6.0)
    assert mon.best == 5.0


def test_nan_objective_raises():
    mon = ConvergenceMonitor()
    with pytest.raises(FloatingPointError, match="NaN at iteration 1"):
        mon.update(float("nan"))


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"tol": -1e-3}, ValueError, "tol must be >= 0"),
        ({"max_iter": 0}, ValueError, "max_iter must be an integer >= 1"),
        ({"max_iter": 2.0}, TypeError, "max_iter must be an integer"),
        ({"direction": "up"}, ValueError, "direction must be one of"),
    ],
)
def test_bad_arguments(kwargs, err, match):
    with pytest.raises(err, match=match):
        ConvergenceMonitor(**kwargs)


def test_tol_zero_never_declares_convergence():
    # a flat objective converges at any tol > 0, never at tol = 0: the loop runs its budget
    mon = ConvergenceMonitor(tol=0, max_iter=4)
    assert [mon.update(-5.0) for _ in range(4)] == [False, False, False, True]
    assert not mon.converged
    positive = ConvergenceMonitor(tol=1e-12, max_iter=4)
    assert [positive.update(-5.0) for _ in range(2)] == [False, True]


def test_the_caller_s_stopping_rule_must_hold_as_well():
    mon = ConvergenceMonitor(tol=1e-3, max_iter=10, rule="labels unchanged")
    steps = [(-5.0, True), (-5.0, False), (-5.0, False), (-5.0, True)]
    assert [mon.update(v, settled=s) for v, s in steps] == [False, False, False, True]
    assert mon.converged and mon.n_iter == 4
    # the rule alone is not enough either
    mon = ConvergenceMonitor(tol=1e-3, max_iter=10)
    assert [mon.update(v, settled=True) for v in (-5.0, -4.0, -3.999)] == [False, False, True]


def test_budget_spent_with_the_rule_unmet_says_so():
    mon = ConvergenceMonitor(tol=1e-3, max_iter=3, rule="labels unchanged")
    for s in (True, False, False):
        mon.update(1.0, settled=s)
    assert not mon.converged
    with pytest.warns(ConvergenceWarning, match=r"last change of objective: 0, within tol, but the "
                                                r"stopping rule \(labels unchanged\) did not hold"):
        mon.finish("EM")
    plain = ConvergenceMonitor(tol=1e-12, max_iter=2, rule="labels unchanged")
    plain.update(1.0)
    plain.update(2.0, settled=False)
    with pytest.warns(ConvergenceWarning) as caught:
        plain.finish("EM")
    assert "stopping rule" not in str(caught[0].message)  # the objective had not settled


def test_settled_must_be_a_bool():
    with pytest.raises(TypeError, match="settled must be a bool, got int"):
        ConvergenceMonitor().update(1.0, settled=1)
