"""The crowd models' device paths on a GPU equal the CPU's (run only where CUDA exists)."""

import pytest
import torch

from pyromodels.crowd.ds import em
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.crowd.hmm.inference import forward_backward
from pyromodels.data import WorkerPopulation, simulate_annotations

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_dawid_skene_em_on_cuda_equals_the_compiled_cpu_pass():
    table, _ = simulate_annotations(500, WorkerPopulation(20, labels_per_item=5), 4, seed=0)
    kwargs = {"method": "em", "seed": 0, "progress": False, "max_iter": 50, "tol": 1e-10,
              "warn_not_converged": False}
    cpu = DawidSkene().fit(table, **kwargs)
    gpu = DawidSkene().fit(table, device="cuda", **kwargs)
    assert gpu.params["confusion"].device.type == "cuda"
    # float64 sums in another order: ~1e-15 per step, over 50 steps
    torch.testing.assert_close(gpu.losses, cpu.losses, rtol=1e-10, atol=0)
    for key in ("prior", "confusion", "probas"):
        torch.testing.assert_close(gpu.params[key].cpu(), cpu.params[key], rtol=0, atol=1e-8)
    data = DawidSkene().prepare(table, device="cuda")
    with pytest.raises(ValueError, match="CPU only"):
        em.e_step(data, {k: v.cuda() for k, v in em.majority_start(
            DawidSkene().prepare(table)).items()}, backend="numba")


def test_forward_backward_scan_on_cuda_equals_the_scaled_cpu_kernel():
    g = torch.Generator().manual_seed(0)
    K, lengths = 6, torch.tensor([300, 1, 57, 1000])
    e = torch.log_softmax(torch.randn(int(lengths.sum()), K, generator=g, dtype=torch.float64), -1)
    a = torch.log_softmax(torch.randn(K, generator=g, dtype=torch.float64), -1)
    tr = torch.log_softmax(torch.randn(K, K, generator=g, dtype=torch.float64), -1)
    ref = forward_backward(e, a, tr, lengths, pairwise="sum", backend="numba")
    out = forward_backward(e.cuda(), a.cuda(), tr.cuda(), lengths.cuda(), pairwise="sum",
                           backend="auto")
    assert out.posterior.device.type == "cuda"
    torch.testing.assert_close(out.log_likelihood.cpu(), ref.log_likelihood, rtol=1e-10, atol=0)
    torch.testing.assert_close(out.posterior.cpu(), ref.posterior, rtol=0, atol=1e-8)
    torch.testing.assert_close(out.pairwise.cpu(), ref.pairwise, rtol=0, atol=1e-8)
