r"""Chains of BHMC and RBHMC run in pieces, with a checkpoint after each piece.

A chain of ``S`` sweeps run as pieces of ``k`` sweeps, each starting from the last state of the
one before with the same ``torch.Generator``, is the same chain: the samplers draw nothing
when they start from a given state (:func:`~pyromodels.bhmc.sampler.run_bhmc`'s ``init``), and
the margin cache of RBHMC is rebuilt from the state at every sweep. The pieces' records are
joined (traces end to end, the best state after warm-up of the whole chain, the last state),
so a run written to a checkpoint file after every piece and resumed from it ends exactly as
the uninterrupted run.

The checkpoint (see :mod:`pyromodels.core.checkpoint`) holds the records of the finished
chains, the record so far of the running chain, its sweeps done and the state of its
generator; its header names the model, the seed, the data's fingerprint and the run's settings
(prior, ``C``, ``eps0``, ``paper_literal``, warm-up, draws, chains), all checked on resume.

Example:
    >>> import torch
    >>> from pyromodels.bhmc import BHMC, BHMCPrior
    >>> prior = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=3)
    >>> x = BHMC(prior).simulate(10, 2, torch.Generator().manual_seed(0)).x
    >>> whole = run_pieces(x, prior, 3, 4, torch.Generator().manual_seed(1), every=None)
    >>> pieces = run_pieces(x, prior, 3, 4, torch.Generator().manual_seed(1), every=2)
    >>> torch.equal(whole.cdl, pieces.cdl), whole.best_cdl == pieces.best_cdl
    (True, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

from .regularised import run_rbhmc
from .sampler import run_bhmc

__all__ = ["run_piece", "join_records", "run_pieces", "run_config"]


def run_piece(x, prior, sweeps: int, generator: torch.Generator, init, burn_in: int, C=None,
              eps0: float = 1.0, paper_literal: bool = False):
    """``sweeps`` sweeps of BHMC (``C is None``) or RBHMC from ``init`` (``None``: a state drawn
    from ``generator``), the best state chosen from sweep ``burn_in`` on."""
    if C is None:
        return run_bhmc(x, prior, sweeps, generator, init=init, burn_in=burn_in)
    return run_rbhmc(x, prior, sweeps, C, eps0, generator, init=init, burn_in=burn_in,
                     paper_literal=paper_literal)


def _score_name(record) -> str:
    return "best_cdl" if hasattr(record, "best_cdl") else "best_rcdl"


def join_records(first, second, second_counts: bool = True):
    """The record of ``first``'s sweeps followed by ``second``'s (records of one sampler):
    traces end to end, the final state of ``second``, and the best state of the two, where
    ``second``'s counts only when ``second_counts`` (it had sweeps past warm-up; ties keep
    the earlier state, as one run would)."""
    score = _score_name(first)
    joined = {}
    for field in dataclasses.fields(first):
        a, b = getattr(first, field.name), getattr(second, field.name)
        joined[field.name] = torch.cat([a, b]) if isinstance(a, torch.Tensor) else b
    later_wins = second_counts and getattr(second, score) > getattr(first, score)
    winner = second if later_wins else first
    joined["best_state"], joined[score] = winner.best_state, getattr(winner, score)
    return type(first)(**joined)


def run_pieces(x, prior, num_warmup: int, num_samples: int, generator: torch.Generator,
               every: int | None, C=None, eps0: float = 1.0, paper_literal: bool = False,
               start=None, done: int = 0,
               on_piece: Callable[[int, object], None] | None = None):
    """One chain of ``num_warmup + num_samples`` sweeps in pieces of ``every`` sweeps
    (``None``: one piece), the best state chosen after ``num_warmup`` sweeps.

    Args:
        start: the record of the chain's first ``done`` sweeps (``None`` with ``done=0``):
            the chain continues from its last state with ``generator`` as it stood then.
        on_piece: called with ``(sweeps done, record so far)`` after every piece.

    Returns:
        The whole chain's record, as the sampler would have returned it in one run.
    """
    total = num_warmup + num_samples
    record = start
    while done < total:
        size = total - done if every is None else min(every, total - done)
        counts = done + size > num_warmup  # some sweep of this piece is past warm-up
        burn_in = min(max(num_warmup - done, 0), size - 1)
        init = None if record is None else record.state
        piece = run_piece(x, prior, size, generator, init, burn_in, C, eps0, paper_literal)
        if record is None and not counts:  # a warm-up piece has no best state to keep
            piece = dataclasses.replace(piece, **{_score_name(piece): float("-inf")})
        record = piece if record is None else join_records(record, piece, counts)
        done += size
        if on_piece is not None:
            on_piece(done, record)
    return record


def run_config(prior, C, eps0: float, paper_literal: bool, num_warmup: int, num_samples: int,
               num_chains: int) -> dict:
    """The settings a checkpoint of :func:`~pyromodels.bhmc.fit.fit_bhmc` must share with the
    run that resumes it (the checkpoint binds the data by their fingerprint, as every
    checkpoint does)."""
    return {"prior": repr(prior),
            "C": None if C is None else float(C), "eps0": float(eps0),
            "paper_literal": bool(paper_literal), "num_warmup": num_warmup,
            "num_samples": num_samples, "num_chains": num_chains}
