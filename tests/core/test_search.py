"""The phased hill-climbing engine: it reaches known optima, honours tol, the phases' rules and
the screening budget, records every accepted move, and a stopped or interrupted search resumed
from its checkpoint ends exactly where the uninterrupted one does."""

import dataclasses
import io
import logging
import math
import sys

import pytest
import torch

from pyromodels.core import ConvergenceWarning, Phase, SearchCandidate, run_search

TARGET = (3, -2, 5)


def _convex(state, gen):
    """Minus a convex quadratic with its maximum 0 at ``TARGET``."""
    return -float(sum((s - t) ** 2 for s, t in zip(state, TARGET, strict=True))), state


def _steps(state, gen):
    """Every move of one coordinate by +1 or -1."""
    moves = []
    for i in range(len(state)):
        for d in (1, -1):
            new = list(state)
            new[i] += d
            moves.append(((i, d), tuple(new)))
    return moves


def _random_steps(state, gen):
    """Every move, in a random order: the order of equal candidates, and so the path, depends
    on the generators."""
    moves = _steps(state, gen)
    return [moves[int(k)] for k in torch.randperm(len(moves), generator=gen)]


def _noisy_screen(state, gen):
    """A cheap score: the exact one plus noise drawn from the candidate's generator (small
    beside the gap of 2 between an improving move and a worsening one)."""
    exact, state = _convex(state, gen)
    return exact + 0.3 * float(torch.randn((), generator=gen, dtype=torch.float64)), state


def _same(a, b):
    """Two results are equal in everything but the recorded seconds."""
    assert (a.state, a.score, a.start_score, a.stopped) == (b.state, b.score, b.start_score, b.stopped)
    assert (a.n_rounds, a.n_screened, a.n_scored, a.seed) == (b.n_rounds, b.n_screened, b.n_scored, b.seed)
    strip = [dataclasses.replace(s, seconds=0.0) for s in a.history]
    assert strip == [dataclasses.replace(s, seconds=0.0) for s in b.history]


def _counting(fn):
    calls = []

    def counted(state, gen):
        calls.append(state)
        return fn(state, gen)

    counted.calls = calls
    return counted


def test_reaches_the_optimum_of_a_convex_score():
    res = run_search((0, 0, 0), [Phase("step", _steps)], _convex, seed=1, progress=False)
    assert res.state == TARGET and res.score == 0.0 and res.converged
    assert res.start_score == -38.0
    # each accepted move is one unit along one coordinate, in the direction of the target
    assert len(res.history) == sum(abs(t) for t in TARGET)


def test_history_records_every_accepted_move():
    res = run_search((0, 0, 0), [Phase("step", _steps)], _convex, seed=1, progress=False)
    assert [s.step for s in res.history] == list(range(1, len(res.history) + 1))
    assert all(s.phase == "step" for s in res.history)
    assert all(s.gain > 0 for s in res.history)
    state = [0, 0, 0]
    for s in res.history:  # replaying the moves gives each recorded score
        i, d = s.move
        state[i] += d
        assert s.score == _convex(tuple(state), None)[0]
    assert tuple(state) == res.state
    assert math.isclose(sum(s.gain for s in res.history), res.score - res.start_score)
    rounds = [s.round for s in res.history]
    assert rounds == sorted(set(rounds)) and res.n_rounds == len(res.history) + 1


def test_screening_refines_only_the_top_candidates():
    screen, score = _counting(_noisy_screen), _counting(_convex)
    res = run_search((0, 0, 0), [Phase("step", _steps)], score, screen=screen, refine_top=2,
                     seed=3, progress=False)
    assert res.state == TARGET
    assert len(screen.calls) == res.n_screened == 6 * res.n_rounds
    assert len(score.calls) == res.n_scored == 1 + 2 * res.n_rounds
    # the refined candidates are among the screened ones
    assert set(score.calls[1:]) <= set(screen.calls)


def _deceptive_screen(state, gen):
    """Screening that overrates moving down: the exact score of ``-(s - 5)^2`` plus 25 below
    the start."""
    (s,) = state
    return -float((s - 5) ** 2) + (25.0 if s < 0 else 0.0), state


def _line(state, gen):
    (s,) = state
    return [("+1", (s + 1,)), ("-1", (s - 1,))]


def _parabola(state, gen):
    return -float((state[0] - 5) ** 2), state


def test_a_deceptive_screen_stops_the_search_unless_more_candidates_are_refined():
    kw = {"screen": _deceptive_screen, "seed": 0, "progress": False}
    fooled = run_search((0,), [Phase("line", _line)], _parabola, refine_top=1, **kw)
    assert fooled.state == (0,) and fooled.history == () and fooled.converged
    assert fooled.n_scored == 2  # the start and the one overrated candidate
    found = run_search((0,), [Phase("line", _line)], _parabola, refine_top=2, **kw)
    assert found.state == (5,) and found.moves == ["+1"] * 5


def _halving(state, gen):
    """Gains of 1, 1/2, 1/4, ... for each step up."""
    (s,) = state
    return 2.0 - 2.0 ** (1 - s), state


def _up(state, gen):
    return [("+1", (state[0] + 1,))] if state[0] < 20 else []


def test_tol_is_the_least_gain_a_move_must_exceed():
    def run(tol):
        return run_search((0,), [Phase("up", _up)], _halving, tol=tol, seed=0, progress=False)

    assert run(0.2).state == (3,)  # gains 1, 0.5, 0.25 exceed 0.2; 0.125 does not
    assert run(0.25).state == (2,)  # a gain equal to tol is not enough
    assert run(0.0).state == (20,)  # every gain counts, up to the last proposal


def test_the_phase_acceptance_rule_is_honoured():
    seen = []

    def accept(current, candidate):
        seen.append((current, candidate))
        return candidate.state[0] <= 2

    res = run_search((0,), [Phase("up", _up, accept=accept)], _halving, seed=0, progress=False)
    assert res.state == (2,) and res.converged
    assert all(isinstance(c, SearchCandidate) for pair in seen for c in pair)
    current, candidate = seen[-1]  # the rejected move, with the scores the rule was given
    assert (current.state, current.score, candidate.state, candidate.move) == ((2,), 1.5, (3,), "+1")
    assert candidate.score == 1.75


def test_the_phase_rank_chooses_among_refined_candidates():
    # from 0: "big" gains more score, "small" gains more score per unit of size
    table = {"start": 0.0, "big": 10.0, "small": 6.0}
    size = {"start": 0, "big": 10, "small": 2}

    def propose(state, gen):
        return [("big", "big"), ("small", "small")] if state == "start" else []

    def per_unit(current, candidate):
        return (candidate.score - current.score) / (size[candidate.state] - size[current.state])

    def score(state, gen):
        return table[state], state

    plain = run_search("start", [Phase("grow", propose)], score, seed=0, progress=False)
    unit = run_search("start", [Phase("grow", propose, rank=per_unit)], score, seed=0,
                      progress=False)
    assert (plain.state, unit.state) == ("big", "small")


def _pair_score(state, gen):
    x, y = state
    return (float(x + y) if abs(x - y) <= 1 else -math.inf), state


def _move(axis):
    def propose(state, gen):
        if state[axis] >= 3:
            return []
        new = list(state)
        new[axis] += 1
        return [(f"{'xy'[axis]}+1", tuple(new))]

    return propose


@pytest.mark.parametrize(("repeat", "cycle", "end", "phases", "rounds", "stopped"), [
    # x+1, x rejects, y+1 twice, y rejects, x+1 twice, x rejects, y+1, y and x reject
    (True, True, (3, 3), "xyyxxy", 11, "converged"),
    (True, False, (1, 2), "xyy", 5, "schedule"),
    (False, True, (3, 3), "xyxyxy", 8, "converged"),
    (False, False, (1, 1), "xy", 2, "schedule"),
])
def test_the_schedule_runs_phases_in_order_and_cycles_until_none_improves(
        repeat, cycle, end, phases, rounds, stopped):
    steps = [Phase("x", _move(0), repeat=repeat), Phase("y", _move(1), repeat=repeat)]
    res = run_search((0, 0), steps, _pair_score, cycle=cycle, seed=0, progress=False)
    assert (res.state, res.stopped, res.n_rounds) == (end, stopped, rounds)
    assert "".join(s.phase for s in res.history) == phases


def test_start_score_skips_scoring_the_start():
    score = _counting(_convex)
    res = run_search(TARGET, [Phase("step", _steps)], score, start_score=0.0, seed=0,
                     progress=False)
    assert res.state == TARGET and res.history == ()
    assert score.calls == list(dict.fromkeys(s for _, s in _steps(TARGET, None)))
    assert res.n_scored == 6


def test_the_seed_fixes_the_path_and_each_callable_gets_its_own_generator():
    gens = []

    def screen(state, gen):
        gens.append(gen)
        return _noisy_screen(state, gen)

    kw = {"screen": screen, "refine_top": 1, "progress": False}
    a = run_search((0, 0, 0), [Phase("step", _random_steps)], _convex, seed=5, **kw)
    b = run_search((0, 0, 0), [Phase("step", _random_steps)], _convex, seed=5, **kw)
    c = run_search((0, 0, 0), [Phase("step", _random_steps)], _convex, seed=6, **kw)
    _same(a, b)
    assert a.moves != c.moves
    assert all(isinstance(g, torch.Generator) for g in gens)
    assert len({id(g) for g in gens}) == len(gens)


_SCORED = []  # the states _counted_convex scored


def _counted_convex(state, gen):
    _SCORED.append(state)
    return _convex(state, gen)


def _run_random(**kw):
    kw = {"screen": _noisy_screen, "refine_top": 2, "seed": 11, "progress": False, **kw}
    return run_search((0, 0, 0), [Phase("step", _random_steps)], _counted_convex, **kw)


def test_a_search_stopped_by_a_callback_resumes_to_the_uninterrupted_result(tmp_path):
    full = _run_random()
    assert full.state == TARGET and len(full.history) == 10
    info_seen = []

    def stop_at_three(step, info):
        info_seen.append((step, info["phase"], info["move"], info["score"], info["state"]))
        return step == 3

    ckpt = tmp_path / "search.ckpt"
    stopped = _run_random(callbacks=[stop_at_three], checkpoint=ckpt)
    assert stopped.stopped == "callback" and len(stopped.history) == 3
    assert [i[0] for i in info_seen] == [1, 2, 3]
    assert [(i[2], i[3]) for i in info_seen] == [(s.move, s.score) for s in full.history[:3]]
    _SCORED.clear()
    resumed = _run_random(resume=ckpt)
    _same(resumed, full)
    assert len(_SCORED) == full.n_scored - stopped.n_scored  # it continued, not restarted


def test_resume_checks_the_problems_own_settings(tmp_path):
    ckpt = tmp_path / "search.ckpt"
    _run_random(callbacks=[lambda step, info: step == 2], checkpoint=ckpt,
                settings={"em_steps": 10})
    with pytest.raises(ValueError, match="em_steps=10"):
        _run_random(resume=ckpt, settings={"em_steps": 20})
    assert _run_random(resume=ckpt, settings={"em_steps": 10}).state == TARGET
    with pytest.raises(ValueError, match="search's own settings"):
        _run_random(settings={"tol": 1.0})
    with pytest.raises(TypeError, match="settings must be a dict"):
        _run_random(settings=[("em_steps", 10)])


def test_an_interrupted_search_resumes_from_its_checkpoint(tmp_path):
    full = _run_random()
    calls = [0]

    def score(state, gen):
        calls[0] += 1
        if calls[0] == 9:
            raise KeyboardInterrupt
        return _convex(state, gen)

    ckpt = tmp_path / "search.ckpt"
    with pytest.raises(KeyboardInterrupt):
        run_search((0, 0, 0), [Phase("step", _random_steps)], score, screen=_noisy_screen,
                   refine_top=2, seed=11, progress=False, checkpoint=ckpt)
    # the checkpoint's model is the score callable: resume with the same one
    resumed = run_search((0, 0, 0), [Phase("step", _random_steps)], score,
                         screen=_noisy_screen, refine_top=2, progress=False, resume=ckpt)
    _same(resumed, full)
    # call 1 scored the start, rounds take two each: call 9 interrupted round 4, whose two
    # calls ran again; the start and the three rounds before were not repeated
    assert calls[0] == full.n_scored + 2 and full.n_scored > 9


def test_resume_with_a_larger_step_budget_continues(tmp_path):
    full = _run_random()
    ckpt = tmp_path / "search.ckpt"
    with pytest.warns(ConvergenceWarning, match="max_steps=2"):
        short = _run_random(max_steps=2, checkpoint=ckpt, checkpoint_every=1)
    assert short.stopped == "max_steps" and len(short.history) == 2
    _SCORED.clear()
    _same(_run_random(resume=ckpt), full)
    assert len(_SCORED) == full.n_scored - short.n_scored


def test_resuming_a_finished_search_returns_it_without_calling_anything(tmp_path):
    ckpt = tmp_path / "search.ckpt"
    full = _run_random(checkpoint=ckpt)

    def refuse(state, gen):
        raise AssertionError("a finished search calls nothing")

    again = run_search((0, 0, 0), [Phase("step", refuse)], _counted_convex, screen=refuse,
                       refine_top=2, progress=False, resume=ckpt)
    _same(again, full)


def test_resume_refuses_other_settings_or_data(tmp_path):
    ckpt = tmp_path / "search.ckpt"
    _run_random(checkpoint=ckpt, data=torch.zeros(3))
    with pytest.raises(ValueError, match="tol"):
        _run_random(resume=ckpt, tol=0.5, data=torch.zeros(3))
    with pytest.raises(ValueError, match="other data"):
        _run_random(resume=ckpt, data=torch.ones(3))
    with pytest.raises(ValueError, match="seed"):
        _run_random(resume=ckpt, seed=12, data=torch.zeros(3))


def test_a_progress_line_per_accepted_move(caplog):
    with caplog.at_level(logging.INFO, logger="pyromodels"):
        res = run_search((0,), [Phase("line", _line)], _parabola, seed=0, progress=False)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("search step")]
    assert len(lines) == len(res.history) == 5
    assert lines[0] == "search step 1 [line] '+1': score -16 (+9)"


def test_a_drawn_bar_prints_each_accepted_move_beside_it(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    run_search((0,), [Phase("line", _line)], _parabola, seed=0, progress=True)
    lines = [t for t in terminal.getvalue().replace("\r", "\n").splitlines()
             if t.startswith("search step")]
    assert lines[-1] == "search step 5 [line] '+1': score -0 (+1)" and len(lines) == 5


def _phase():
    return Phase("step", _steps)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"phases": []}, ValueError, "at least one Phase"),
    ({"phases": [_steps]}, TypeError, r"phases\[0\] must be a Phase"),
    ({"phases": "step"}, TypeError, "phases must be a sequence"),
    ({"phases": [_phase(), _phase()]}, ValueError, "distinct names"),
    ({"refine_top": 0}, ValueError, "refine_top"),
    ({"refine_top": 1.5}, TypeError, "refine_top"),
    ({"score": 3.0}, TypeError, "score must be callable"),
    ({"screen": "local-em"}, TypeError, "screen must be callable or None"),
    ({"tol": -1.0}, ValueError, "tol"),
    ({"max_steps": -1}, ValueError, "max_steps"),
    ({"cycle": 1}, TypeError, "cycle"),
    ({"start_score": "high"}, TypeError, "start_score"),
    ({"start_score": float("nan")}, FloatingPointError, "start_score"),
    ({"checkpoint_every": 2}, ValueError, "checkpoint_every needs checkpoint"),
    ({"score": lambda s, g: -1.0}, TypeError, r"must return a pair \(score, state\)"),
    ({"score": lambda s, g: (float("nan"), s)}, FloatingPointError, "nan"),
    ({"screen": lambda s, g: ("low", s)}, TypeError, "screen"),
])
def test_bad_arguments_are_refused_by_name(kwargs, error, match):
    args = {"phases": [_phase()], "score": _convex, **kwargs}
    phases, score = args.pop("phases"), args.pop("score")
    with pytest.raises(error, match=match):
        run_search((0, 0, 0), phases, score, progress=False, seed=0, **args)


@pytest.mark.parametrize(("phase", "error", "match"), [
    (lambda: Phase("step", lambda s, g: 3), TypeError, "propose must return an iterable"),
    (lambda: Phase("step", lambda s, g: [s]), TypeError, r"proposal 0 must be a pair"),
    (lambda: Phase("step", _steps, accept=lambda c, d: 1), TypeError, "accept must return a bool"),
    (lambda: Phase("step", _steps, rank=lambda c, d: "best"), TypeError, "rank must return"),
    (lambda: Phase("step", _steps, rank=lambda c, d: math.nan), FloatingPointError, "rank"),
    (lambda: Phase("two words", _steps), ValueError, "Phase name"),
    (lambda: Phase("step", None), TypeError, "propose must be callable"),
    (lambda: Phase("step", _steps, accept=True), TypeError, "accept must be callable or None"),
    (lambda: Phase("step", _steps, repeat="yes"), TypeError, "repeat"),
])
def test_bad_phases_are_refused_by_name(phase, error, match):
    with pytest.raises(error, match=match):
        run_search((0, 0, 0), [phase()], _convex, progress=False, seed=0)


def test_score_refines_the_states_that_screen_returned():
    def propose(state, gen):
        return [("+1", ("proposed", state[1] + 1))] if state[1] < 3 else []

    def screen(state, gen):
        assert state[0] == "proposed"
        return float(state[1]), ("screened", state[1])

    def score(state, gen):
        assert state[0] in ("start", "screened")
        return float(state[1]), ("fitted", state[1])

    res = run_search(("start", 0), [Phase("up", propose)], score, screen=screen, seed=0,
                     progress=False)
    assert res.state == ("fitted", 3) and res.moves == ["+1"] * 3
