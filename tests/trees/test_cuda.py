"""The trees part on a GPU: the same results as on the CPU (run only where CUDA exists)."""

import pytest
import torch

from pyromodels.trees import pyro_log_likelihood, sample_tree, tree_map, tree_posterior

from .conftest import random_case

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.float64, 1e-10)])
def test_inference_on_cuda_equals_the_cpu(shape, dtype, tol):
    params, z = random_case(shape, 0, num_points=50)
    cpu = params.to(dtype=dtype)
    gpu = cpu.to(device="cuda")
    post = tree_posterior(gpu, z.to(dtype=dtype, device="cuda"))
    ref = tree_posterior(cpu, z.to(dtype=dtype))
    assert post.log_likelihood.device.type == "cuda"
    assert torch.allclose(post.log_likelihood.cpu(), ref.log_likelihood, atol=tol, rtol=tol)
    for a, b in zip(post.edge_marginals, ref.edge_marginals):
        if a is not None:
            assert torch.allclose(a.cpu(), b, atol=tol)
    states, _ = tree_map(gpu, z.to(dtype=dtype, device="cuda"))
    assert torch.equal(states.cpu(), tree_map(cpu, z.to(dtype=dtype))[0])
    lp = pyro_log_likelihood(gpu, z.to(dtype=dtype, device="cuda"))
    assert abs(float(lp) - float(ref.log_likelihood.sum())) < 100 * tol * z.shape[0]


def test_sampling_on_cuda():
    params, _ = random_case("chain", 1)
    gpu = params.to(device="cuda")
    z, y = sample_tree(gpu, 1000, torch.Generator(device="cuda").manual_seed(0),
                       condition={1: 0})
    assert z.device.type == "cuda" and y.device.type == "cuda"
    assert (y[:, 1] == 0).all()
