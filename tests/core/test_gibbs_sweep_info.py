"""Blocks that ask for it learn where the chain stands (sweep index, warm-up length) from
``run_gibbs`` and ``GibbsKernel``; other blocks are called as before."""

import pyro
import pyro.distributions as dist
import torch
from pyro.infer import MCMC

from pyromodels.core import GibbsBlock, GibbsKernel, GibbsSweep, SweepInfo, run_gibbs
from pyromodels.core.seeding import make_generator


def program(y):
    m = pyro.sample("m", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 1.0))
    pyro.sample("y", dist.Normal(m, 1.0), obs=y)


class Recorder:
    """A block that keeps what it was told (a picklable callable)."""

    def __init__(self):
        self.infos = []

    def __call__(self, state, data, generator, info):
        self.infos.append(info)
        return {"m": torch.randn((), generator=generator, dtype=torch.float64)}


def test_run_gibbs_tells_each_sweep_its_index_and_the_warmup_length():
    recorder = Recorder()
    block = GibbsBlock("m", ("m",), recorder, wants_sweep_info=True)
    run_gibbs(program, [block], torch.tensor(0.3, dtype=torch.float64), num_samples=3,
              num_warmup=2, num_chains=2, seed=0, progress=False, diagnostic_warnings=False)
    assert recorder.infos == [SweepInfo(i, 2) for i in range(5)] * 2
    assert [i.warmup for i in recorder.infos[:5]] == [True, True, False, False, False]


def test_gibbs_kernel_counts_the_sweeps_of_each_chain_from_setup():
    recorder = Recorder()
    kernel = GibbsKernel(program, [GibbsBlock("m", ("m",), recorder, wants_sweep_info=True)], seed=0)
    MCMC(kernel, num_samples=2, warmup_steps=3, disable_progbar=True).run(
        torch.tensor(0.3, dtype=torch.float64))
    assert recorder.infos == [SweepInfo(i, 3) for i in range(5)]


def test_a_sweep_run_outside_an_engine_passes_none_and_plain_blocks_get_three_arguments():
    recorder = Recorder()
    sweep = GibbsSweep([GibbsBlock("m", ("m",), recorder, wants_sweep_info=True)])
    sweep({"m": torch.tensor(0.0)}, None, make_generator(0))
    assert recorder.infos == [None]
    plain = GibbsBlock("m", ("m",), lambda state, data, generator: {"m": state["m"]})
    assert GibbsSweep([plain])({"m": torch.tensor(1.0)}, None, make_generator(0),
                               SweepInfo(0, 1))["m"] == 1.0
