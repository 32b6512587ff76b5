"""Per-chain block state: ``run_gibbs`` starts each chain's stateful blocks afresh, saves their
state with the chain in a checkpoint and restores it on resume, so a resumed run equals the
uninterrupted one; a checkpoint without block states still resumes (the blocks start afresh)."""

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import MCMC

from pyromodels.core import GibbsBlock, GibbsKernel, run_gibbs
from pyromodels.core.checkpoint import _write_sealed, load_checkpoint

from .test_checkpoint import _interrupt_at

Y = torch.tensor(0.3, dtype=torch.float64)


def program(y):
    m = pyro.sample("m", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 1.0))
    pyro.sample("y", dist.Normal(m, 1.0), obs=y)


class Counter:
    """A block whose draw moves with the number of calls in the chain so far, kept as its
    per-chain state (a picklable callable); ``starts`` records each ``set_state`` argument."""

    def __init__(self):
        self.calls, self.starts = 0, []

    def __call__(self, state, data, generator):
        self.calls += 1
        noise = torch.randn((), generator=generator, dtype=torch.float64)
        return {"m": noise + self.calls}

    def get_state(self):
        return {"calls": self.calls}

    def set_state(self, state):
        self.starts.append(state)
        self.calls = 0 if state is None else state["calls"]


def _block(counter):
    return GibbsBlock("m", ("m",), counter, get_state=counter.get_state, set_state=counter.set_state)


def _run(counter, **kw):
    opts = dict(num_samples=6, num_warmup=3, num_chains=2, seed=4, progress=False,
                diagnostic_warnings=False)
    return run_gibbs(program, [_block(counter)], Y, **{**opts, **kw})


def test_each_chain_starts_its_blocks_afresh():
    counter = Counter()
    post = _run(counter)
    assert counter.starts == [None, None]
    # each chain's kept draws sit near the call counts 4..9 of that chain
    means = torch.arange(4, 10, dtype=torch.float64)
    assert float((post.samples["m"] - means).abs().max()) < 5.0
    assert counter.calls == 9


def test_gibbs_kernel_starts_the_blocks_afresh_at_each_setup():
    counter = Counter()
    kernel = GibbsKernel(program, [_block(counter)], seed=0)
    for _ in range(2):
        MCMC(kernel, num_samples=2, warmup_steps=1, disable_progbar=True).run(Y)
    assert counter.starts == [None, None] and counter.calls == 3


@pytest.mark.parametrize("stop", [3, 9])  # in the first chain, in the second
def test_interrupted_and_resumed_equals_the_uninterrupted_run(tmp_path, stop):
    full = _run(Counter())
    ck = tmp_path / "gibbs.ckpt"
    with pytest.raises(KeyboardInterrupt):
        _run(Counter(), checkpoint=ck, callbacks=[_interrupt_at(stop)])
    saved = load_checkpoint(ck)["state"]
    assert saved["blocks"] == {0: {"calls": saved["done"]}}
    fresh = Counter()
    resumed = _run(fresh, resume=ck)
    assert fresh.starts[0] == {"calls": saved["done"]}
    assert torch.equal(full.samples["m"], resumed.samples["m"])


def test_a_checkpoint_without_block_states_resumes_with_fresh_blocks(tmp_path):
    ck = tmp_path / "gibbs.ckpt"
    with pytest.raises(KeyboardInterrupt):
        _run(Counter(), checkpoint=ck, callbacks=[_interrupt_at(3)])
    payload = load_checkpoint(ck)
    del payload["state"]["blocks"]  # as written before block states were saved
    _write_sealed(ck, payload)
    fresh = Counter()
    resumed = _run(fresh, resume=ck)
    assert fresh.starts == [None, None]
    assert not torch.equal(_run(Counter()).samples["m"][0], resumed.samples["m"][0])


@pytest.mark.slow  # worker processes start in about 10 s
def test_chains_in_workers_checkpoint_their_block_states(tmp_path):
    ck = tmp_path / "gibbs.ckpt"
    parallel = _run(Counter(), n_jobs=2, checkpoint=ck)
    assert torch.equal(parallel.samples["m"], _run(Counter()).samples["m"])
    assert load_checkpoint(ck)["state"]["blocks"] == {0: {"calls": 9}}


def test_get_state_and_set_state_go_together():
    counter = Counter()
    with pytest.raises(TypeError, match="get_state and set_state go together"):
        GibbsBlock("m", ("m",), counter, get_state=counter.get_state)
    with pytest.raises(TypeError, match="set_state must be callable"):
        GibbsBlock("m", ("m",), counter, get_state=counter.get_state, set_state=3)
    assert _block(counter).stateful and not GibbsBlock("m", ("m",), counter).stateful
