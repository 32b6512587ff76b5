r"""The automatic Gibbs plan's sweep against the families' hand-written Gibbs sweeps, on the
families' own Pyro programs (the target: at most 2x slower, a ratio of at least 0.5).

* ``autogibbs.hand_written[model=gaussian-mixture]`` (seconds per sweep): ours, the sweep of
  ``plan(GaussianMixtureModel(3).model, data)`` on 1,000 two-dimensional points around three
  centres (quick: 200); peer ``hand-written``: the family's own sweep,
  ``GaussianMixtureModel(3).gibbs_sweep(data)`` (assignments, weights, and the means with the
  precision matrices from their Normal-Wishart conditional).
* ``autogibbs.hand_written[model=dawid-skene]`` (seconds per sweep): ours, the plan of
  ``DawidSkene().for_engine("gibbs").model`` on :func:`pyromodels.data.simulate_annotations`
  with 1,000 items, 10 workers and 3 classes (quick: 200 items); peer: its hand-written sweep
  (classes, class prior, confusion rows; the counts in compiled code).

Each side starts from the family's ``init_state`` and runs ``WARMUP_SWEEPS`` sweeps before the
timing (so that the plan's recorded traces are verified and in use, as in a fit of more than
a few dozen sweeps); each timed call then runs ``SWEEPS`` sweeps, on the CPU. ``ratio`` is
hand-written time / ours: 0.5 is the target, 1 parity.

Check ``blocks``: 1 when the plan's blocks update the same groups of sites as the hand-written
sweep's (the mixture's means and precisions in one block), 0 otherwise.
"""

from __future__ import annotations

import torch

from pyromodels.autogibbs import plan
from pyromodels.core.bound import ModelArgs
from pyromodels.core.seeding import make_generator
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import simulate_annotations
from pyromodels.mixture import GaussianMixtureModel

from .harness import Case, agreement

__all__ = ["cases"]

SEED = 20261129
SWEEPS = 50
#: sweeps before timing: past the plan's recording of its whole updates and their checks
WARMUP_SWEEPS = 60


def _mixture(n: int):
    gen = torch.Generator().manual_seed(SEED)
    centres = torch.tensor([[-4.0, 0.0], [0.0, 3.0], [4.0, -1.0]], dtype=torch.float64)
    x = centres[torch.randint(0, 3, (n,), generator=gen)] \
        + 0.7 * torch.randn(n, 2, generator=gen, dtype=torch.float64)
    model = GaussianMixtureModel(3)
    return model, model.prepare(x)


def _dawid_skene(n: int):
    table, _ = simulate_annotations(n, 10, 3, seed=SEED % 1000)
    model = DawidSkene().for_engine("gibbs")
    return model, model.prepare(table)


_MODELS = {"gaussian-mixture": _mixture, "dawid-skene": _dawid_skene}


def _runner(model, data, sweep, wrap):
    """A call running ``SWEEPS`` sweeps from where the last call stopped (the first call
    starts from the family's ``init_state`` and runs the warm-up sweeps first)."""
    box = {}

    def run():
        if not box:
            box["state"] = model.init_state(data, make_generator(1))
            box["generator"] = make_generator(2)
            for _ in range(WARMUP_SWEEPS):
                box["state"] = sweep(box["state"], wrap(data), box["generator"])
        for _ in range(SWEEPS):
            box["state"] = sweep(box["state"], wrap(data), box["generator"])
        return box["state"]
    return run


def _sites(blocks) -> set:
    return {frozenset(b.sites) for b in blocks}


def _case(name: str, n: int, quick: bool) -> Case:
    model, data = _MODELS[name](n)
    auto = plan(model.model, data).sweep()
    hand = model.gibbs_sweep(data)

    def check():
        same = _sites(auto.blocks) == _sites(hand.blocks)
        return {"blocks": agreement(1.0 if same else 0.0, 1.0, 0.0, "the hand-written sweep's blocks")}

    return Case("autogibbs.hand_written", {"model": name, "N": n, "sweeps": SWEEPS},
                ours=_runner(model, data, auto, lambda d: ModelArgs((d,), {})),
                peers={"hand-written": _runner(model, data, hand, lambda d: d)},
                metric="seconds_per_iter", iterations=SWEEPS, check=check, warmup=1,
                repeats=2 if quick else 5)


def cases(quick: bool, device=None) -> list[Case]:
    """The two families' cases (CPU only: the hand-written sweeps' counts run there)."""
    if device is not None and device.type != "cpu":
        return []
    n = 200 if quick else 1_000
    return [_case(name, n, quick) for name in _MODELS]
