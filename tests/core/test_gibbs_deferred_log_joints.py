"""A sweep with ``log_joints`` has its kept draws' log joints computed after the chain's last
sweep, all at once: the same values as one call per draw, with ``lp_every``, across an
interrupted and resumed run, and per draw again where callbacks need each draw's value."""

import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.core import GibbsBlock, GibbsSweep, run_gibbs

F64 = torch.float64
Y = torch.tensor([0.3, -1.2, 0.8, 2.0], dtype=F64)


def program(y):
    m = pyro.sample("m", dist.Normal(torch.tensor(0.0, dtype=F64), 1.0))
    with pyro.plate("n", len(y)):
        pyro.sample("y", dist.Normal(m, 1.0), obs=y)


def exact(m):
    """The program's log joint at ``m`` (any shape), written out."""
    return dist.Normal(torch.tensor(0.0, dtype=F64), 1.0).log_prob(m) + \
        dist.Normal(m[..., None], 1.0).log_prob(Y).sum(-1)


def draw_m(state, data, generator):
    n = len(Y)
    mean, sd = Y.sum() / (n + 1), (n + 1) ** -0.5
    return {"m": mean + sd * torch.randn((), generator=generator, dtype=F64)}


class Recorded:
    """``log_joint`` and ``log_joints`` that count their calls (picklable)."""

    def __init__(self, interrupt_after=None):
        self.single, self.batches, self.interrupt_after = 0, [], interrupt_after

    def log_joint(self, data, state):
        self.single += 1
        return exact(state["m"])

    def log_joints(self, data, draws):
        self.batches.append(draws["m"].shape)
        return exact(draws["m"])


def sweep(recorded, block=draw_m):
    return GibbsSweep([GibbsBlock("m", ("m",), block)], log_joint=recorded.log_joint,
                      log_joints=recorded.log_joints)


OPTS = dict(num_samples=7, num_warmup=3, num_chains=2, seed=4, progress=False, diagnostic_warnings=False)


def test_the_log_joints_are_computed_once_per_chain_after_its_sweeps_with_the_per_draw_values():
    recorded = Recorded()
    post = run_gibbs(program, sweep(recorded), Y, **OPTS)
    assert recorded.single == 0 and recorded.batches == [torch.Size([7])] * 2
    lp = post.sample_stats["lp"]
    assert torch.allclose(lp, exact(post.samples["m"]), rtol=0, atol=1e-12)


def test_lp_every_keeps_every_other_draw_and_leaves_the_rest_nan():
    recorded = Recorded()
    post = run_gibbs(program, sweep(recorded), Y, lp_every=2, **OPTS)
    assert recorded.batches == [torch.Size([4])] * 2  # draws 0, 2, 4, 6
    lp = post.sample_stats["lp"]
    assert torch.isnan(lp[:, 1::2]).all()
    assert torch.allclose(lp[:, ::2], exact(post.samples["m"][:, ::2]), rtol=0, atol=1e-12)
    off = Recorded()
    assert torch.isnan(run_gibbs(program, sweep(off), Y, lp_every=0, **OPTS).sample_stats["lp"]).all()
    assert off.batches == [] and off.single == 0


def test_callbacks_get_each_draws_log_joint_as_it_is_drawn():
    recorded, seen = Recorded(), []
    post = run_gibbs(program, sweep(recorded), Y, callbacks=[lambda step, info: seen.append(info["lp"])],
                     **OPTS)
    assert recorded.batches == [] and recorded.single == 14
    assert seen == pytest.approx(post.sample_stats["lp"].reshape(-1).tolist(), abs=1e-12)


class Interrupting:
    """``draw_m`` that raises ``KeyboardInterrupt`` once, at its ``n``-th call."""

    def __init__(self, n):
        self.calls, self.n = 0, n

    def __call__(self, state, data, generator):
        self.calls += 1
        if self.calls == self.n:
            raise KeyboardInterrupt
        return draw_m(state, data, generator)


def test_an_interrupted_and_resumed_run_has_every_draws_log_joint(tmp_path):
    full = run_gibbs(program, sweep(Recorded()), Y, **OPTS)
    path = tmp_path / "chain.ckpt"
    with pytest.raises(KeyboardInterrupt):  # mid-way through the second chain's kept draws
        run_gibbs(program, sweep(Recorded(), Interrupting(17)), Y, checkpoint=path, checkpoint_every=1,
                  **OPTS)
    recorded = Recorded()
    resumed = run_gibbs(program, sweep(recorded), Y, resume=path, **OPTS)
    assert recorded.batches == [torch.Size([7])]  # the second chain's, kept and new draws together
    assert torch.equal(resumed.samples["m"], full.samples["m"])
    assert torch.allclose(resumed.sample_stats["lp"], full.sample_stats["lp"], rtol=0, atol=1e-12)
    assert not torch.isnan(resumed.sample_stats["lp"]).any()


def test_log_joints_must_be_callable():
    with pytest.raises(TypeError, match="log_joints must be callable"):
        GibbsSweep([GibbsBlock("m", ("m",), draw_m)], log_joints=3)


def test_log_joints_given_as_floats_or_another_dtype_are_recorded_in_float64():
    class Plain(Recorded):
        def log_joints(self, data, draws):
            return exact(draws["m"]).to(torch.float32).tolist()

    post = run_gibbs(program, sweep(Plain()), Y, **OPTS)
    assert post.sample_stats["lp"].dtype == torch.float64
    assert torch.allclose(post.sample_stats["lp"], exact(post.samples["m"]), rtol=1e-6, atol=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_log_joints_computed_on_the_gpu_are_recorded():
    class OnDevice(Recorded):
        def log_joints(self, data, draws):
            return exact(draws["m"].cuda().cpu()).cuda()

    post = run_gibbs(program, sweep(OnDevice()), Y, **OPTS)
    assert torch.allclose(post.sample_stats["lp"], exact(post.samples["m"]), rtol=0, atol=1e-12)
