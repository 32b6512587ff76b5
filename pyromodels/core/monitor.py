"""Convergence monitoring for iterative fits (EM, coordinate ascent, ICM)."""

from __future__ import annotations

import math
import warnings

from ..checks import check_in, check_int, check_positive
from .errors import ConvergenceWarning

__all__ = ["ConvergenceMonitor"]


class ConvergenceMonitor:
    """Track an objective across iterations and decide when it has converged.

    Convergence is declared when the absolute change of the objective between two successive
    iterations drops below ``tol * max(1, |objective|)`` (a relative tolerance that is absolute
    near zero) and, where the caller has a stopping rule of its own (for example "no label
    changed" for an EM whose E-step clamps labels), that rule holds at the same iteration: the
    caller passes its verdict as ``update(value, settled=...)``. For a ``monotone`` objective
    (EM's log posterior, a Gibbs-free energy), a step in the wrong direction by more than
    ``monotone_slack * max(1, |objective|)`` emits a :class:`ConvergenceWarning` and is
    recorded in ``violations``.

    Args:
        tol: relative tolerance, >= 0 (``0`` never declares convergence: the loop runs its
            whole budget).
        max_iter: iteration budget, >= 1.
        direction: ``"increase"`` (maximised objective) or ``"decrease"`` (minimised).
        monotone: whether the objective must never move the wrong way.
        monotone_slack: floating-point slack allowed before a move counts as a violation.
        name: what the objective is, used in messages.
        rule: a short description of the caller's own stopping rule (see :meth:`update`),
            named in the message of :meth:`finish` when the objective had settled but the rule
            did not hold; ``None`` when there is none.

    Example:
        >>> mon = ConvergenceMonitor(tol=1e-3, max_iter=10)
        >>> for value in [-10.0, -5.0, -4.999]:
        ...     stop = mon.update(value)
        >>> mon.converged, mon.n_iter
        (True, 3)

        A second rule: the objective is flat, but the iterate still moves at iteration 2.

        >>> mon = ConvergenceMonitor(tol=1e-3, max_iter=10, rule="labels unchanged")
        >>> [mon.update(v, settled=s) for v, s in [(-5.0, True), (-5.0, False), (-5.0, True)]]
        [False, False, True]
    """

    def __init__(
        self,
        tol: float = 1e-6,
        max_iter: int = 100,
        direction: str = "increase",
        monotone: bool = True,
        monotone_slack: float = 1e-9,
        name: str = "objective",
        rule: str | None = None,
    ):
        self.tol = check_positive(tol, "tol", strict=False)
        self.max_iter = check_int(max_iter, "max_iter", minimum=1)
        self.direction = check_in(direction, "direction", ("increase", "decrease"))
        self.monotone = bool(monotone)
        self.monotone_slack = check_positive(monotone_slack, "monotone_slack", strict=False)
        self.name = name
        self.rule = rule
        self.history: list[float] = []
        self.violations: list[int] = []
        self.converged = False
        self._unsettled_at_tol = False  # the last step met the tolerance but not the rule

    @property
    def n_iter(self) -> int:
        """Number of objective values recorded."""
        return len(self.history)

    @property
    def best(self) -> float:
        """Best objective value seen."""
        if not self.history:
            raise ValueError("the monitor has no history yet")
        return max(self.history) if self.direction == "increase" else min(self.history)

    def update(self, value: float, settled: bool = True) -> bool:
        """Record ``value``; return ``True`` when the loop should stop (converged or budget spent).

        Args:
            value: the objective at this iteration.
            settled: the caller's own stopping rule at this iteration (``True`` when it has
                none); convergence needs it as well as the objective's tolerance.
        """
        if not isinstance(settled, bool):
            raise TypeError(f"settled must be a bool, got {type(settled).__name__}")
        value = float(value)
        if math.isnan(value):
            raise FloatingPointError(f"{self.name} became NaN at iteration {self.n_iter + 1}")
        if self.history:
            prev = self.history[-1]
            scale = max(1.0, abs(prev))
            change = value - prev if self.direction == "increase" else prev - value
            if self.monotone and change < -self.monotone_slack * scale:
                self.violations.append(self.n_iter)
                warnings.warn(
                    f"{self.name} should not {'de' if self.direction == 'increase' else 'in'}crease "
                    f"but went from {prev:.10g} to {value:.10g} at iteration {self.n_iter + 1}",
                    ConvergenceWarning,
                    stacklevel=2,
                )
            within = abs(value - prev) < self.tol * scale
            self._unsettled_at_tol = within and not settled
            if within and settled:
                self.converged = True
        self.history.append(value)
        return self.converged or self.n_iter >= self.max_iter

    def finish(self, what: str = "fit", iterations: int | None = None) -> None:
        """Warn with :class:`ConvergenceWarning` if the loop ended without converging.

        ``iterations`` is the budget named in the message (default ``max_iter``).
        """
        if not self.converged:
            budget = self.max_iter if iterations is None else iterations
            rule = ""
            if self._unsettled_at_tol:
                rule = f", within tol, but the stopping rule ({self.rule or 'settled'}) did not hold"
            warnings.warn(
                f"{what} did not converge in {budget} iterations (tol={self.tol:g}); "
                f"last change of {self.name}: {self._last_change():.3g}{rule}. "
                "Increase max_iter or loosen tol.",
                ConvergenceWarning,
                stacklevel=2,
            )

    def _last_change(self) -> float:
        if len(self.history) < 2:
            return float("nan")
        return abs(self.history[-1] - self.history[-2])

    def __repr__(self) -> str:
        return (
            f"ConvergenceMonitor(n_iter={self.n_iter}, converged={self.converged}, "
            f"tol={self.tol:g}, last={self.history[-1] if self.history else None})"
        )
