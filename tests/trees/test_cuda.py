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


def test_em_and_stepwise_em_on_cuda_equal_the_cpu():
    from pyromodels.core import run_em, run_stepwise_em
    from pyromodels.trees import LatentTreeModel

    params, _ = random_case("chain", 2)
    z, _ = sample_tree(params, 400, torch.Generator().manual_seed(3))
    model = LatentTreeModel(params.tree)
    start = model.em_init(z, torch.Generator().manual_seed(4))
    on_gpu = {k: v.cuda() for k, v in start.items()}
    settings = {"max_iter": 20, "tol": 0.0, "progress": False, "warn_not_converged": False}
    cpu = run_em(model, z, init=start, seed=0, **settings)
    gpu = run_em(model, z.cuda(), init=on_gpu, seed=0, **settings)
    online = {"batch_size": 50, "step_size": 0.3, "shuffle": False, "progress": False}
    cpu_online = run_stepwise_em(model, z, init=start, seed=0, **online)
    gpu_online = run_stepwise_em(model, z.cuda(), init=on_gpu, seed=0, **online)
    for key in start:
        assert gpu.params[key].device.type == "cuda"
        assert torch.allclose(gpu.params[key].cpu(), cpu.params[key], rtol=1e-8, atol=1e-8)
        assert torch.allclose(gpu_online.params[key].cpu(), cpu_online.params[key],
                              rtol=1e-8, atol=1e-8)
    # a start drawn on the device runs too
    fit = run_em(model, z.cuda(), n_init=2, seed=1, **settings)
    assert fit.params["bic"].device.type == "cuda"
