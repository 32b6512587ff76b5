"""A fit with a NUTS block interrupted and resumed from its checkpoint equals the uninterrupted
fit bit for bit, whether it stopped during warm-up or after it: the checkpoint holds the NUTS
adaptation state. A checkpoint without it still resumes, with a warning."""

import warnings

import pytest
import torch

from pyromodels.autogibbs import fit_gibbs
from pyromodels.autogibbs.continuous import NutsUpdate
from pyromodels.core.checkpoint import _write_sealed, load_checkpoint

from .models import f64, with_lognormal

C = f64([1.0, 4.0, 2.0])
# the Gamma site by its conjugate block, the LogNormal one by NUTS (a NUTS block between others)
OPTS = dict(num_samples=4, warmup=30, num_chains=2, seed=3, progress=False,
            diagnostic_warnings=False, joint_nuts=False)


@pytest.fixture(scope="module")
def uninterrupted():
    return fit_gibbs(with_lognormal, C, **OPTS)


def _interrupt_nuts_after(monkeypatch, n):
    """Make the ``n``-th NUTS update raise KeyboardInterrupt once its transitions are done
    (the kernel has moved on, the sweep is not complete)."""
    calls, original = [0], NutsUpdate.__call__

    def call(self, *args):
        out = original(self, *args)
        calls[0] += 1
        if calls[0] == n:
            raise KeyboardInterrupt
        return out

    monkeypatch.setattr(NutsUpdate, "__call__", call)


# 34 sweeps a chain, 30 of warm-up: Pyro adapts the step size over all of them and the mass
# matrix over sweeps 4..26. Stops in chain 0 at sweep 14 (in the mass window) and 32 (after
# warm-up), in chain 1 at sweep 19.
@pytest.mark.parametrize("stop", [15, 33, 54])
def test_resumed_fit_equals_the_uninterrupted_fit(uninterrupted, tmp_path, monkeypatch, stop):
    ck = tmp_path / "ck.pt"
    with monkeypatch.context() as patch:
        _interrupt_nuts_after(patch, stop)
        with pytest.raises(KeyboardInterrupt):
            fit_gibbs(with_lognormal, C, checkpoint=ck, **OPTS)
    saved = load_checkpoint(ck)["state"]
    assert (saved["chain"], saved["done"]) == divmod(stop - 1, 34)
    nuts = saved["blocks"][1]
    assert nuts["next_sweep"] == saved["done"] and nuts["t"] == saved["done"]
    mass = nuts["inverse_mass_matrix"][("s",)]
    assert torch.equal(mass, torch.ones_like(mass)) == (saved["done"] < 27)  # adapted after
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "adapting afresh" warning
        resumed = fit_gibbs(with_lognormal, C, resume=ck, **OPTS)
    for site in ("lam", "s"):
        assert torch.equal(resumed.samples[site], uninterrupted.samples[site]), site


def test_a_checkpoint_without_the_nuts_state_resumes_with_a_warning(uninterrupted, tmp_path,
                                                                    monkeypatch):
    ck = tmp_path / "ck.pt"
    with monkeypatch.context() as patch:
        _interrupt_nuts_after(patch, 15)
        with pytest.raises(KeyboardInterrupt):
            fit_gibbs(with_lognormal, C, checkpoint=ck, **OPTS)
    payload = load_checkpoint(ck)
    del payload["state"]["blocks"]  # as written before block states were saved
    _write_sealed(ck, payload)
    with pytest.warns(RuntimeWarning, match="continues at sweep 14 without this block's adaptation"):
        resumed = fit_gibbs(with_lognormal, C, resume=ck, **OPTS)
    assert not torch.equal(resumed.samples["s"][0], uninterrupted.samples["s"][0])  # adapted afresh
    assert torch.equal(resumed.samples["s"][1], uninterrupted.samples["s"][1])  # a chain begun anew
