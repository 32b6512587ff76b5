"""Hill-climbing search over opaque states in phases, with screening, checkpoints and resume.

The engine knows nothing of what a state is: a structure with its parameters, a vector of
integers, anything picklable. The problem reaches it through callables:

* each :class:`~pyromodels.core.search_types.Phase` proposes moves from the current state;
* an optional ``screen(candidate, generator) -> (cheap_score, candidate)`` (a local EM of the
  changed part for a few steps) ranks all of a round's candidates;
* ``score(candidate, generator) -> (score, fitted_candidate)`` (a full EM and the BIC)
  refines the ``refine_top`` best of them (all of them without ``screen``).

A **round** runs one phase once: propose, screen, refine, then take the best refined candidate
by the phase's ``rank`` and accept it when its score beats the current one by more than
``tol`` and the phase's own ``accept`` rule holds. The **schedule** runs the phases in the
order given; a phase with ``repeat=True`` runs rounds while they accept moves (PLTM-EAST's
expand, adjust and simplify phases each do), and with ``cycle=True`` the list runs again and
again until every phase in turn has found nothing to accept from the current state (the inner
loop of LTVAE's Algorithm 1, without running again a phase that has already failed from the
same state).

Randomness comes only from ``seed``: round ``r``'s proposals draw from a ``torch.Generator``
seeded with ``derive_seed(seed, "propose", r)``, and candidate ``i`` of that round is screened
and scored with generators of its own (``derive_seed(seed, "screen", r, i)`` and
``derive_seed(seed, "score", r, i)``), so a candidate's fit does not depend on the others.

With ``checkpoint=`` the state after each round (current state and score, history, counters,
the position in the schedule) is written every ``checkpoint_every`` rounds, at the end and on
``KeyboardInterrupt`` (see :mod:`pyromodels.core.checkpoint`); ``resume=`` continues it, and
the result equals the uninterrupted search's, bit for bit but for the recorded seconds.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import sys
import time
import warnings
from collections.abc import Callable, Sequence

from ..checks import check_bool, check_int, check_positive
from .checkpoint import Checkpointer, clone_tree, read_checkpoint
from .errors import ConvergenceWarning
from .progress import check_callbacks, progress_bar, run_callbacks
from .search_types import Phase, SearchCandidate, SearchResult, SearchStep, check_real, check_scored
from .seeding import derive_seed, make_generator, resolve_seed

__all__ = ["run_search"]

logger = logging.getLogger("pyromodels")


@dataclasses.dataclass
class _Cursor:
    """Where the search is: everything a checkpoint must hold to continue it."""

    current: SearchCandidate
    start_score: float
    history: list
    phase: int = 0  # the phase of the next round
    rejections: int = 0  # rounds in a row that accepted nothing
    round: int = 0  # rounds run
    n_screened: int = 0
    n_scored: int = 0
    stopped: str | None = None  # set once the search has ended
    seconds: float = 0.0


class _Problem:
    """What the checkpoint header names as the model: the ``score`` callable."""

    def __init__(self, score: Callable):
        module = getattr(score, "__module__", None) or type(score).__module__
        name = getattr(score, "__qualname__", None) or type(score).__qualname__
        self.qualified_name = f"{module}.{name}"


def _check_phases(phases) -> tuple[Phase, ...]:
    if isinstance(phases, Phase):
        phases = (phases,)
    if not isinstance(phases, Sequence) or isinstance(phases, str):
        raise TypeError(f"phases must be a sequence of Phase, got {type(phases).__name__}")
    phases = tuple(phases)
    if not phases:
        raise ValueError("phases must hold at least one Phase, got none")
    for i, phase in enumerate(phases):
        if not isinstance(phase, Phase):
            raise TypeError(f"phases[{i}] must be a Phase, got {type(phase).__name__}")
    names = [p.name for p in phases]
    if len(set(names)) != len(names):
        raise ValueError(f"phases must have distinct names, got {names}")
    return phases


def _check_callable(value, name: str, optional: bool = False):
    if (value is None and optional) or callable(value):
        return value
    expected = "callable or None" if optional else "callable"
    raise TypeError(f"{name} must be {expected}, got {type(value).__name__} {value!r}")


def _proposals(phase: Phase, state, gen) -> list[tuple[object, object]]:
    moves = phase.propose(state, gen)
    try:
        moves = list(moves)
    except TypeError:
        raise TypeError(f"phase {phase.name!r}: propose must return an iterable of "
                        f"(move, state) pairs, got {type(moves).__name__}") from None
    for i, pair in enumerate(moves):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"phase {phase.name!r}: proposal {i} must be a pair (move, state), "
                            f"got {type(pair).__name__}")
    return moves


def _rank(phase: Phase, current: SearchCandidate, candidate: SearchCandidate) -> float:
    value = phase.rank(current, candidate)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"phase {phase.name!r}: rank must return a real number, "
                        f"got {type(value).__name__}") from None
    if math.isnan(value):
        raise FloatingPointError(f"phase {phase.name!r}: rank returned NaN for move "
                                 f"{candidate.move!r}")
    return value


def _best(phase: Phase, current: SearchCandidate, candidates: list[SearchCandidate]) -> list[int]:
    """The indices of ``candidates`` from best to worst by the phase's rank; ties keep the
    order of the proposals."""
    keys = [_rank(phase, current, c) for c in candidates]
    return sorted(range(len(candidates)), key=lambda i: -keys[i])


def _accepts(phase: Phase, current: SearchCandidate, best: SearchCandidate, tol: float) -> bool:
    if not best.score > current.score + tol:
        return False
    if phase.accept is None:
        return True
    verdict = phase.accept(current, best)
    if not isinstance(verdict, bool):
        raise TypeError(f"phase {phase.name!r}: accept must return a bool, "
                        f"got {type(verdict).__name__}")
    return verdict


def _round(cur: _Cursor, phase: Phase, screen, score, refine_top: int, tol: float, seed: int,
           device) -> SearchCandidate | None:
    """Run one round of ``phase`` from ``cur.current``; the accepted candidate or ``None``."""
    r = cur.round
    moves = _proposals(phase, cur.current.state, make_generator(derive_seed(seed, "propose", r), device))
    if not moves:
        return None
    chosen = range(len(moves))
    if screen is not None:
        screened = []
        for i, (move, state) in enumerate(moves):
            value = screen(state, make_generator(derive_seed(seed, "screen", r, i), device))
            cheap, state = check_scored(value, f"screen (phase {phase.name!r}, move {move!r})")
            screened.append(SearchCandidate(move, state, cheap))
            moves[i] = (move, state)
        cur.n_screened += len(moves)
        chosen = _best(phase, cur.current, screened)[:refine_top]
    refined = []
    for i in chosen:
        move, state = moves[i]
        value = score(state, make_generator(derive_seed(seed, "score", r, i), device))
        value, state = check_scored(value, f"score (phase {phase.name!r}, move {move!r})")
        refined.append(SearchCandidate(move, state, value))
    cur.n_scored += len(refined)
    best = refined[_best(phase, cur.current, refined)[0]]
    return best if _accepts(phase, cur.current, best, tol) else None


def _advance(cur: _Cursor, phases: tuple[Phase, ...], accepted: bool, cycle: bool) -> None:
    """Move the schedule on after a round; set ``cur.stopped`` when it is done.

    The search has converged once every phase in turn has found nothing to accept from the
    current state (as many rejected rounds in a row as there are phases).
    """
    cur.rejections = 0 if accepted else cur.rejections + 1
    if accepted and phases[cur.phase].repeat:
        return
    if cur.rejections >= len(phases):
        cur.stopped = "converged"
        return
    cur.phase += 1
    if cur.phase == len(phases):
        if not cycle:
            cur.stopped = "schedule"
            return
        cur.phase = 0


def _snapshot(cur: _Cursor) -> dict:
    """The checkpoint's record of ``cur``: references, copied only when written."""
    record = {f.name: getattr(cur, f.name) for f in dataclasses.fields(cur)}
    return {**record, "history": tuple(cur.history)}


def _restore(saved: dict) -> _Cursor:
    return _Cursor(**{**saved, "history": list(saved["history"])})


def run_search(
    start,
    phases,
    score,
    *,
    screen=None,
    refine_top: int = 3,
    tol: float = 0.0,
    max_steps: int = 1000,
    cycle: bool = True,
    start_score: float | None = None,
    seed: int | None = None,
    device=None,
    progress: bool = True,
    callbacks=None,
    warn_not_converged: bool = True,
    checkpoint=None,
    checkpoint_every: int | None = None,
    resume=None,
    data=None,
    settings: dict | None = None,
) -> SearchResult:
    """Hill-climb from ``start`` through ``phases`` until no phase improves the score.

    Args:
        start: the state to start from (any picklable object; states are never changed in
            place: proposals, ``screen`` and ``score`` return new ones).
        phases: a :class:`Phase` or a sequence of them with distinct names, run in this order.
        score: ``score(state, generator) -> (score, fitted_state)``, higher is better (a
            BIC after a full EM); ``generator`` is a ``torch.Generator`` on ``device``.
        screen: ``screen(state, generator) -> (cheap_score, state)`` (a short local EM), or
            ``None``: every candidate is then scored. ``score`` refines the states that
            ``screen`` returned (a full EM warm-started from the local one).
        refine_top: how many of the best screened candidates ``score`` refines (>= 1).
        tol: the least gain of score that a move must exceed to be accepted (>= 0;
            PLTM-EAST uses ``1e-2`` on the BIC).
        max_steps: the most moves to accept (>= 0); the search stops there with a
            ``ConvergenceWarning``.
        cycle: run the list of phases again and again until every phase in turn has found
            nothing to accept (``True``), or pass through it once (``False``).
        start_score: the score of ``start`` if already known (a warm start from a fitted
            state); ``None`` scores it first.
        seed: the search's seed; ``None`` draws one (recorded in the result).
        device: the device of the generators handed to the callables (``None``: the CPU).
        progress: show a progress bar over the rounds, and a line per accepted move (the
            lines also go to the ``"pyromodels"`` logger at level INFO).
        callbacks: callables ``f(step, info)`` called after accepted move ``step`` (1, 2,
            ...) with ``info`` holding ``"phase"``, ``"move"``, ``"score"``, ``"gain"``,
            ``"round"`` and ``"state"``; ``True`` stops the search (a checkpoint written then
            resumes where it stopped).
        warn_not_converged: warn when ``max_steps`` ends the search.
        checkpoint: a file to write the search's state to, between rounds (see
            :mod:`pyromodels.core.checkpoint`).
        checkpoint_every: rounds between checkpoint writes (``None``: only the end and an
            interrupt).
        resume: a checkpoint of a search with the same ``score`` callable, phase names,
            settings, seed and ``data``; ``max_steps`` may be larger. ``start`` and
            ``start_score`` are then ignored: the search continues from the saved state.
        data: what the search is fitted to (tensors, arrays, numbers, in lists, tuples or
            dicts), fingerprinted in the checkpoint so that ``resume`` refuses a run on other
            data; ``None`` when the callables hold their data themselves.
        settings: the problem's own settings that change what ``score`` and ``screen``
            compute (``{name: number, string or tuple}``, such as an EM's step budget),
            recorded in the checkpoint so that ``resume`` refuses a run with other ones.

    Returns:
        A :class:`SearchResult`.

    Raises:
        TypeError, ValueError: a bad argument (named in the message), or a callable that
            returns something other than what is documented.
        FloatingPointError: a score is NaN or ``+inf`` (``-inf`` is allowed: never accepted).

    Example:
        >>> best = lambda s, g: (-float((s - 3) ** 2), s)
        >>> step = Phase("step", lambda s, g: [("+1", s + 1), ("-1", s - 1)])
        >>> result = run_search(0, [step], best, seed=0, progress=False)
        >>> result.state, result.moves
        (3, ['+1', '+1', '+1'])
    """
    phases = _check_phases(phases)
    _check_callable(score, "score")
    _check_callable(screen, "screen", optional=True)
    refine_top = check_int(refine_top, "refine_top", minimum=1)
    tol = check_positive(tol, "tol", strict=False)
    max_steps = check_int(max_steps, "max_steps", minimum=0)
    cycle = check_bool(cycle, "cycle")
    check_bool(warn_not_converged, "warn_not_converged")
    if start_score is not None:
        start_score = check_real(start_score, "start_score")
    callbacks = check_callbacks(callbacks)
    problem = _Problem(score)
    config = {"phases": tuple(p.name for p in phases), "repeat": tuple(p.repeat for p in phases),
              "screen": screen is not None, "refine_top": refine_top, "tol": tol,
              "max_steps": max_steps, "cycle": cycle}
    if settings is not None:
        if not isinstance(settings, dict):
            raise TypeError(f"settings must be a dict or None, got {type(settings).__name__}")
        clash = sorted(set(settings) & set(config))
        if clash:
            raise ValueError(f"settings may not name the search's own settings {clash}")
        config.update(settings)
    seed = None if seed is None else resolve_seed(seed)
    cur = None
    if resume is not None:
        seed, saved = read_checkpoint(resume, engine="search", model=problem, seed=seed,
                                      config=config, data=data, extendable=("max_steps",))
        cur = _restore(saved)
        if cur.stopped == "max_steps" and len(cur.history) < max_steps:
            cur.stopped = None  # a larger budget continues the search
    seed = resolve_seed(seed)
    ckpt = Checkpointer(checkpoint, checkpoint_every, engine="search", model=problem, seed=seed,
                        config=config, data=data, build=clone_tree)
    began = time.perf_counter()
    if cur is None:
        if start_score is None:
            start_score, start = check_scored(
                score(start, make_generator(derive_seed(seed, "start"), device)), "score (start)")
            scored = 1
        else:
            scored = 0
        cur = _Cursor(current=SearchCandidate(None, start, start_score), start_score=start_score,
                      history=[], n_scored=scored)
    elapsed = cur.seconds
    with ckpt.guard(), progress_bar(None, "search", progress) as bar:
        while cur.stopped is None:
            if len(cur.history) >= max_steps:
                cur.stopped = "max_steps"
                break
            phase = phases[cur.phase]
            tick = time.perf_counter()
            best = _round(cur, phase, screen, score, refine_top, tol, seed, device)
            seconds = time.perf_counter() - tick
            if best is not None:
                step = SearchStep(len(cur.history) + 1, phase.name, best.move, best.score,
                                  best.score - cur.current.score, cur.round, seconds)
                cur.history.append(step)
                cur.current = best
            cur.round += 1
            _advance(cur, phases, best is not None, cycle)
            cur.seconds = elapsed + time.perf_counter() - began
            if ckpt.enabled:
                ckpt.commit(cur.round, _snapshot(cur))
            bar.update()
            if best is None:
                continue
            line = (f"search step {step.step} [{phase.name}] {best.move!r}: "
                    f"score {best.score:.6g} (+{step.gain:.3g})")
            logger.info(line)
            if not bar.disable:
                bar.set_postfix(score=f"{best.score:.6g}", refresh=False)
                bar.write(line, file=sys.stderr)  # beside the bar, not in the output
            info = {"phase": phase.name, "move": best.move, "score": best.score,
                    "gain": step.gain, "round": step.round, "state": best.state}
            if callbacks and run_callbacks(callbacks, step.step, info) and cur.stopped is None:
                cur.stopped = "callback"
                break
    resumable = cur.stopped == "callback"
    if resumable:  # the checkpoint continues the search, which a callback only paused
        cur.stopped = None
    if ckpt.enabled:
        ckpt.commit(cur.round, _snapshot(cur))
        ckpt.write()
    stopped = "callback" if resumable else cur.stopped
    if stopped == "max_steps" and warn_not_converged:
        warnings.warn(f"the search accepted max_steps={max_steps} moves and stopped before a "
                      "pass of its phases found no improvement; increase max_steps",
                      ConvergenceWarning, stacklevel=2)
    return SearchResult(state=cur.current.state, score=cur.current.score,
                        start_score=cur.start_score, history=tuple(cur.history), stopped=stopped,
                        n_rounds=cur.round, n_screened=cur.n_screened, n_scored=cur.n_scored,
                        seed=seed, seconds=elapsed + time.perf_counter() - began)
