"""n_jobs on the DP mixture: Monte Carlo EM restarts and Gibbs chains in loky workers equal
the runs one after another, bit for bit."""

import pytest
import torch

from pyromodels.ddpm import DPMixture, DPMixturePrior
from pyromodels.ddpm.mcem import MCEMSettings
from pyromodels.nn import NICE

PRIOR = DPMixturePrior(kappa0=0.1, alpha0=20.0, beta0=20.0, alpha=1.0)


def _blobs(n_per=12, seed=0):
    gen = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[-6.0, 0.0], [6.0, 0.0], [0.0, 8.0]], dtype=torch.float64)
    labels = torch.arange(3).repeat_interleave(n_per)
    return centres[labels] + torch.randn(3 * n_per, 2, generator=gen, dtype=torch.float64)


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_mcem_restarts_in_workers_equal_the_serial_restarts(tmp_path):
    y = _blobs()
    settings = MCEMSettings(rounds=2, gibbs_sweeps=1, flow_epochs=1, batch_size=16,
                            init_clusters=4, restarts=3)

    def fit(**kw):
        flow = NICE(2, num_layers=2, hidden=(8,), seed=0, dtype=torch.float64)
        return DPMixture(PRIOR, flow).fit(y, settings=settings, seed=3, progress=False, **kw)

    serial, parallel = fit(), fit(n_jobs=2, checkpoint=tmp_path / "mcem.ckpt")
    assert torch.equal(serial.losses, parallel.losses)
    assert torch.equal(serial.sample_stats["lp"], parallel.sample_stats["lp"])
    assert torch.equal(serial.params["labels"], parallel.params["labels"])
    assert serial.params["best_restart"] == parallel.params["best_restart"]
    assert not torch.equal(serial.losses[0], serial.losses[1])  # the restarts differ
    resumed = fit(resume=tmp_path / "mcem.ckpt")  # every restart is in the checkpoint
    assert torch.equal(serial.losses, resumed.losses)


def test_dp_gibbs_chains_in_workers_equal_the_serial_chains():
    x = _blobs(seed=1)
    opts = dict(method="gibbs", algorithm=3, num_warmup=2, num_samples=3, num_chains=2,
                seed=5, progress=False, diagnostic_warnings=False, backend="torch")
    serial = DPMixture(PRIOR).fit(x, **opts)
    parallel = DPMixture(PRIOR).fit(x, n_jobs=2, **opts)
    for k in serial.samples:
        assert torch.equal(serial.samples[k], parallel.samples[k]), k
    assert torch.equal(serial.sample_stats["lp"], parallel.sample_stats["lp"])
