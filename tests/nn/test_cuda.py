"""The nn parts on a GPU: the same maps as on the CPU, and weights cached on one device load on
the other (run only where CUDA exists)."""

import pyro.distributions as dist
import pytest
import torch

from pyromodels.nn import NICE, pretrain_autoencoder

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_nice_on_cuda_equals_the_cpu(dtype, tol):
    cpu = NICE.random(6, 4, hidden=(32, 32), scaling=True, seed=0, permutation="random", dtype=dtype)
    gpu = NICE.random(6, 4, hidden=(32, 32), scaling=True, seed=0, permutation="random", dtype=dtype,
                      device="cuda")
    y = torch.randn(100, 6, generator=torch.Generator().manual_seed(1), dtype=dtype)
    z = gpu.forward(y.cuda())
    assert z.device.type == "cuda"
    assert torch.allclose(z.cpu(), cpu.forward(y), atol=tol, rtol=0)
    assert torch.allclose(gpu.inverse(z).cpu(), y, atol=tol, rtol=0)
    base = dist.Normal(torch.zeros(6, device="cuda", dtype=dtype), 1.0).to_event(1)
    log_prob = dist.TransformedDistribution(base, [gpu.inv]).log_prob(y.cuda())
    assert torch.allclose(log_prob.cpu(), dist.TransformedDistribution(
        dist.Normal(torch.zeros(6, dtype=dtype), 1.0).to_event(1), [cpu.inv]).log_prob(y), atol=10 * tol)


def test_nice_moves_to_cuda_with_its_permutations():
    flow = NICE.random(5, 3, hidden=(8,), seed=0, permutation="random").to("cuda")
    y = torch.randn(4, 5, device="cuda")
    assert torch.allclose(flow.inverse(flow.forward(y)), y, atol=1e-10)


def test_weights_trained_on_cuda_load_on_the_cpu(manifold_data, tmp_path):
    settings = dict(dims=(16, 2), layerwise_epochs=2, finetune_epochs=5, batch_size=32, progress=False,
                    cache=tmp_path)
    gpu = pretrain_autoencoder(manifold_data, device="cuda", **settings)
    assert next(gpu.parameters()).device.type == "cuda" and not gpu.pretraining.from_cache
    assert gpu.encode(manifold_data.cuda()).shape == (200, 2)
    cpu = pretrain_autoencoder(manifold_data, **settings)
    assert cpu.pretraining.from_cache and next(cpu.parameters()).device.type == "cpu"
    for k, v in gpu.state_dict().items():
        assert torch.equal(v.cpu(), cpu.state_dict()[k])
