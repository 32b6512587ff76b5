"""A plain Pyro callable against the same program as a ``Model`` subclass, on the same engine.

The program: a scalar mean ``mu``, a vector ``loc`` (2,) and plated latents ``s`` (``N``,),
with Gaussian observations, in float64. Both sides run the same engine with the same seed
and settings; "ours" is the plain callable (``run_nuts(program, x, z, y=y)``), the peer
``model_subclass`` is a one-argument :class:`~pyromodels.core.Model` (``model.fit((x, z, y))``).
A ratio near 1 says the callable path costs nothing extra.

* ``callables.nuts_step``: a whole one-chain NUTS run (warm-up and draws, no ``lp`` trace,
  no progress bar), divided by its transitions: the per-step cost with the set-up amortised.
* ``callables.gibbs_sweep``: a whole one-chain Gibbs run (``lp_every=0``) of three
  conjugate blocks, divided by its sweeps.

Agreement: the two sides' draws are equal (``max_abs_diff`` 0).
"""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import torch

from pyromodels.core import GibbsBlock, GibbsSweep, Model, run_gibbs, run_nuts
from pyromodels.core.seeding import derive_seed, make_generator

from .harness import Case, agreement

__all__ = ["cases", "program"]

SEED = 20261128


def program(x, z, y=None):
    """The benchmark's Pyro program."""
    mu = pyro.sample("mu", dist.Normal(torch.tensor(0.0, dtype=x.dtype), 1.0))
    loc = pyro.sample("loc", dist.Normal(torch.zeros(2, dtype=x.dtype), 1.0).to_event(1))
    pyro.sample("z", dist.Normal(loc, 1.0).to_event(1), obs=z)
    with pyro.plate("n", x.shape[0]):
        s = pyro.sample("s", dist.Normal(mu + 0.1 * x, 1.0))
        pyro.sample("y", dist.Normal(s, 1.0), obs=y)


def _draw(mean, precision, generator):
    return mean + torch.randn(mean.shape, generator=generator, dtype=mean.dtype) / precision.sqrt()


def _observed(data):
    if isinstance(data, tuple):
        return data
    return (*data.args, data.kwargs["y"])


def _mu(state, data, gen):
    x, _, _ = _observed(data)
    s = state["s"]
    n = torch.tensor(float(len(s)), dtype=s.dtype)
    return {"mu": _draw((s - 0.1 * x).sum() / (1 + n), 1 + n, gen)}


def _s(state, data, gen):
    x, _, y = _observed(data)
    return {"s": _draw((state["mu"] + 0.1 * x + y) / 2, torch.tensor(2.0, dtype=y.dtype), gen)}


def _loc(state, data, gen):
    _, z, _ = _observed(data)
    return {"loc": _draw(z / 2, torch.tensor(2.0, dtype=z.dtype), gen)}


BLOCKS = (GibbsBlock("mu", ("mu",), _mu), GibbsBlock("s", ("s",), _s), GibbsBlock("loc", ("loc",), _loc))


class Subclass(Model):
    """The same program as a one-argument Model with the same Gibbs start and blocks."""

    engines = ("nuts", "gibbs")

    def model(self, data):
        x, z, y = data
        return program(x, z, y=y)

    def init_state(self, data, generator):
        seed = int(torch.randint(0, 2**62, (), generator=generator))
        from pyromodels.core import seeded

        with seeded(seed), pyro.poutine.block():
            tr = pyro.poutine.trace(self.model).get_trace(data)
        return {k: tr.nodes[k]["value"] for k in ("mu", "loc", "s")}

    def gibbs_sweep(self, data):
        return GibbsSweep(BLOCKS)


def _data(N: int):
    gen = make_generator(derive_seed(SEED, "data", N))
    x = torch.randn(N, generator=gen, dtype=torch.float64)
    z = torch.randn(2, generator=gen, dtype=torch.float64)
    y = 0.5 + 0.1 * x + 1.4 * torch.randn(N, generator=gen, dtype=torch.float64)
    return x, z, y


def _runs(engine: str, N: int, steps: int):
    x, z, y = _data(N)
    half = {"num_warmup": steps // 2, "num_samples": steps - steps // 2, "num_chains": 1,
            "progress": False, "seed": SEED}
    if engine == "nuts":
        ours = lambda: run_nuts(program, x, z, y=y, lp=False, **half)  # noqa: E731
        peer = lambda: Subclass().fit((x, z, y), method="nuts", lp=False, **half)  # noqa: E731
    else:
        ours = lambda: run_gibbs(program, BLOCKS, x, z, y=y, lp_every=0, **half)  # noqa: E731
        peer = lambda: Subclass().fit((x, z, y), method="gibbs", lp_every=0, **half)  # noqa: E731
    return ours, peer


def _check(ours, peer):
    def check():
        a, b = ours(), peer()
        flat = [torch.cat([p.samples[k].reshape(-1) for k in sorted(a.samples)]) for p in (a, b)]
        return {"same_draws": agreement(flat[0], flat[1], 0.0, "model_subclass")}
    return check


def cases(quick: bool) -> list[Case]:
    """The NUTS and Gibbs cases; ``quick`` gives a tiny size and few steps."""
    out = []
    for engine, N, steps in ((("nuts", 20, 10), ("gibbs", 20, 20)) if quick
                             else (("nuts", 200, 200), ("gibbs", 200, 2000))):
        ours, peer = _runs(engine, N, steps)
        name = "callables.nuts_step" if engine == "nuts" else "callables.gibbs_sweep"
        out.append(Case(
            name, {"N": N, "dtype": "float64", "iterations_per_call": steps},
            ours=ours, peers={"model_subclass": peer}, metric="seconds_per_iter",
            iterations=steps, check=_check(ours, peer), warmup=1, repeats=2 if quick else 5,
        ))
    return out
