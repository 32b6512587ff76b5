"""The records of a structure search: its phases, the candidates it weighs, its steps and its
result (see :func:`pyromodels.core.search.run_search`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from ..checks import check_bool, check_name

__all__ = ["Phase", "SearchCandidate", "SearchStep", "SearchResult", "gain_rank", "score_rank",
           "check_real", "check_scored"]


@dataclasses.dataclass(frozen=True)
class SearchCandidate:
    """A state of the search with its score, and the move that made it.

    Attributes:
        move: the proposal's description of the move (``None`` for the start).
        state: the state (for a fitted candidate, as ``score`` returned it).
        score: its score, higher is better (a screened candidate's cheap score until it is
            refined).
    """

    move: object
    state: object
    score: float


def score_rank(current: SearchCandidate, candidate: SearchCandidate) -> float:
    """The default ranking of a phase's candidates: the candidate's own score."""
    return candidate.score


def gain_rank(current: SearchCandidate, candidate: SearchCandidate) -> float:
    """Rank by the gain over the current state (the same order as :func:`score_rank`; a
    base for per-unit rules such as ``gain / extra parameters``)."""
    return candidate.score - current.score


@dataclasses.dataclass(frozen=True)
class Phase:
    """One phase of a search: a named proposal of moves, how its candidates are ranked and
    which of them may be accepted.

    Args:
        name: the phase's name, shown in progress lines and the history.
        propose: ``propose(state, generator) -> iterable of (move, candidate_state)``: the
            moves from ``state`` (``move`` is any description, such as ``("SI", "Y1")``).
            ``generator`` is a ``torch.Generator`` for proposals that draw at random; draw
            from nothing else, or the search is not reproducible from its seed.
        rank: ``rank(current, candidate) -> float`` (both :class:`SearchCandidate`), higher is
            better; orders the screened candidates and picks the best refined one.
            The default is the candidate's score; PLTM-EAST's expand phase ranks by the unit
            improvement ``(score' - score) / (d' - d)``.
        accept: ``accept(current, candidate) -> bool``: a rule of the phase's own that the
            best candidate must pass besides beating the current score by more than the
            search's ``tol`` (an improvement-ratio rule, a cap on the model's size); ``None``
            (default) adds no rule.
        repeat: whether the phase runs again after it accepts a move, until a round accepts
            nothing (``True``, PLTM-EAST's rule), or hands over to the next phase after one
            accepted move (``False``).
    """

    name: str
    propose: Callable
    rank: Callable = score_rank
    accept: Callable | None = None
    repeat: bool = True

    def __post_init__(self):
        check_name(self.name, "Phase name")
        for what in ("propose", "rank"):
            if not callable(getattr(self, what)):
                raise TypeError(f"Phase {self.name!r}: {what} must be callable, got "
                                f"{getattr(self, what)!r}")
        if self.accept is not None and not callable(self.accept):
            raise TypeError(f"Phase {self.name!r}: accept must be callable or None, got "
                            f"{self.accept!r}")
        check_bool(self.repeat, f"Phase {self.name!r}: repeat")


@dataclasses.dataclass(frozen=True)
class SearchStep:
    """One accepted move of a search.

    Attributes:
        step: its number (1, 2, ...).
        phase: the name of the phase that proposed it.
        move: the proposal's description of the move.
        score: the score after the move.
        gain: the score after the move minus the score before it.
        round: the round (one proposal, screening and refinement; 0, 1, ...) that accepted it.
        seconds: wall-clock seconds of that round.
    """

    step: int
    phase: str
    move: object
    score: float
    gain: float
    round: int
    seconds: float


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """What :func:`~pyromodels.core.search.run_search` found.

    Attributes:
        state: the best state (the last accepted one, or the start).
        score: its score.
        start_score: the score of the start.
        history: the accepted moves, in order.
        stopped: why the search ended: ``"converged"`` (every phase in turn found nothing
            to accept from the final state), ``"schedule"`` (the one pass of a search with
            ``cycle=False`` ended before that), ``"max_steps"`` (the budget of accepted moves
            was spent) or ``"callback"`` (a callback asked to stop).
        n_rounds: rounds run (each proposes, screens, refines and accepts or not).
        n_screened: calls of ``screen``.
        n_scored: calls of ``score`` (the start's included).
        seed: the search's seed.
        seconds: wall-clock seconds of the whole search (with the runs it resumed).
    """

    state: object
    score: float
    start_score: float
    history: tuple[SearchStep, ...]
    stopped: str
    n_rounds: int
    n_screened: int
    n_scored: int
    seed: int
    seconds: float

    @property
    def converged(self) -> bool:
        """Whether the search ended because no phase could improve the score (a local
        optimum of the phases' moves)."""
        return self.stopped == "converged"

    @property
    def moves(self) -> list:
        """The accepted moves' descriptions, in order."""
        return [s.move for s in self.history]


def check_real(score, what: str) -> float:
    """``score`` as a float: a real number, not NaN nor ``+inf`` (``-inf`` is a score that
    loses to any other)."""
    if isinstance(score, bool | str | bytes):
        raise TypeError(f"{what} must be a real score, got {type(score).__name__} {score!r}")
    try:
        score = float(score)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a real score, got {type(score).__name__}") from None
    if math.isnan(score) or score == math.inf:
        raise FloatingPointError(f"{what} is {score}, not a usable score")
    return score


def check_scored(value, what: str) -> tuple[float, object]:
    """``(score, state)`` from what ``score`` or ``screen`` returned, with clear errors."""
    if not isinstance(value, tuple) or len(value) != 2:
        raise TypeError(f"{what} must return a pair (score, state), got {type(value).__name__}")
    return check_real(value[0], f"the score returned by {what}"), value[1]
