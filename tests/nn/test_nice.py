"""NICE flows: exact inverses, log-determinants against autograd Jacobians, densities against
the change-of-variables formula, parameter registration and pinned errors."""

import copy
import math

import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.nn import NICE, AdditiveCoupling, Permutation, Scaling


def points(n, d, dtype=torch.float64, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=dtype) * 2


def autograd_slogdet(transform, y):
    """(sign, log|det|) of the Jacobian of ``transform`` at each row of ``y``, by autograd."""
    out = [torch.linalg.slogdet(torch.autograd.functional.jacobian(transform, row)) for row in y]
    return torch.stack([o.sign for o in out]), torch.stack([o.logabsdet for o in out])


FLOWS = [
    dict(permutation="reverse", scaling=False),
    dict(permutation="alternate", scaling=False),
    dict(permutation="random", scaling=True),
    dict(permutation="reverse", scaling=True, split=2),
]


@pytest.mark.parametrize("options", FLOWS)
@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
def test_inverse_undoes_forward(options, dtype, tol):
    flow = NICE.random(5, num_layers=4, hidden=(32, 32), seed=1, dtype=dtype, **options)
    y = points(200, 5, dtype)
    z = flow.forward(y)
    assert z.dtype == dtype and z.shape == y.shape
    assert (z - y).abs().max() > 0.1  # the random flow really moves the points
    assert torch.allclose(flow.inverse(z), y, atol=tol, rtol=0)
    assert torch.allclose(flow.forward(flow.inverse(y)), y, atol=tol, rtol=0)
    # the Transform interface: flow.inv is the inverse map
    assert torch.allclose(flow.inv(z), y, atol=tol, rtol=0)


def test_any_batch_shape_and_a_single_point():
    flow = NICE.random(4, num_layers=2, hidden=(8,), seed=0)
    y = points(6, 4).reshape(2, 3, 4)
    z = flow.forward(y)
    assert z.shape == (2, 3, 4)
    assert torch.allclose(z[1, 2], flow.forward(y[1, 2]), atol=1e-14)
    assert flow.log_abs_det_jacobian(y, z).shape == (2, 3)


@pytest.mark.parametrize("options", FLOWS)
def test_log_det_equals_the_autograd_jacobian(options):
    flow = NICE.random(5, num_layers=3, hidden=(16,), seed=2, dtype=torch.float64, **options)
    y = points(4, 5)
    sign, logdet = autograd_slogdet(flow.forward, y)
    ours = flow.log_abs_det_jacobian(y, flow.forward(y))
    assert torch.allclose(ours, logdet, atol=1e-10)
    assert torch.all(sign == 1)
    if options["scaling"]:
        s = flow.parts[-1].log_scale
        assert abs(float(s.detach().sum())) > 0.05  # a non-trivial scaling is checked
        assert torch.allclose(ours, s.sum().expand(4), atol=1e-12)
    else:
        assert torch.all(ours == 0)


def test_each_layer_log_det_equals_the_autograd_jacobian():
    gen = torch.Generator().manual_seed(3)
    y = points(3, 5)
    for swap in (False, True):
        layer = AdditiveCoupling(5, (8,), split=2, swap=swap, init="random", generator=gen)
        jac = torch.autograd.functional.jacobian(layer, y[0])
        assert not torch.allclose(jac, torch.eye(5))  # the coupling is not the identity
        assert torch.allclose(autograd_slogdet(layer, y)[1], layer.log_abs_det_jacobian(y, layer(y)))
    perm = Permutation([2, 0, 4, 1, 3])
    sign, logdet = autograd_slogdet(perm, y)
    assert torch.all(logdet.abs() < 1e-14) and torch.all(perm.log_abs_det_jacobian(y, perm(y)) == 0)
    scale = Scaling(5, init="random", generator=gen)
    assert torch.allclose(autograd_slogdet(scale, y)[1], scale.log_abs_det_jacobian(y, scale(y)), atol=1e-12)


@pytest.mark.parametrize("swap", [False, True])
def test_coupling_keeps_the_conditioning_block_and_shifts_the_other(swap):
    layer = AdditiveCoupling(5, (8,), split=2, swap=swap, init="random",
                             generator=torch.Generator().manual_seed(0))
    y = points(10, 5)
    out = layer(y)
    kept, shifted = (slice(2, 5), slice(0, 2)) if swap else (slice(0, 2), slice(2, 5))
    assert torch.equal(out[:, kept], y[:, kept])
    assert torch.allclose(out[:, shifted], y[:, shifted] + layer.net(y[:, kept]), atol=1e-14)


def test_transformed_distribution_log_prob_is_the_change_of_variables():
    flow = NICE.random(3, num_layers=3, hidden=(16,), scaling=True, seed=4, dtype=torch.float64)
    loc, scale = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.5, 0.7, 2.0])
    base = dist.Normal(loc, scale).to_event(1)
    y = points(5, 3)
    log_prob = dist.TransformedDistribution(base, [flow.inv]).log_prob(y)
    # independent oracle: the base density at f(y) plus log|det| of the autograd Jacobian
    manual = dist.Normal(loc, scale).log_prob(flow.forward(y)).sum(-1) + autograd_slogdet(flow.forward, y)[1]
    assert torch.allclose(log_prob, manual, atol=1e-10)
    # and the closed form, written out
    z = flow.forward(y)
    closed = (-0.5 * ((z - loc) / scale) ** 2 - scale.log() - 0.5 * math.log(2 * math.pi)).sum(-1)
    assert torch.allclose(log_prob, closed + flow.parts[-1].log_scale.sum(), atol=1e-10)


def test_transformed_distribution_samples_through_the_inverse():
    flow = NICE.random(2, num_layers=2, hidden=(8,), seed=5, dtype=torch.float64)
    base = dist.Normal(torch.zeros(2), 1.0).to_event(1)
    y = dist.TransformedDistribution(base, [flow.inv]).sample((7,))
    assert y.shape == (7, 2)
    assert torch.allclose(flow.inverse(flow.forward(y)), y, atol=1e-12)


@pytest.mark.parametrize("permutation", ["reverse", "alternate", "random"])
@pytest.mark.parametrize("num_layers", [1, 2, 3, 4])
def test_a_new_flow_is_the_identity(permutation, num_layers):
    flow = NICE(5, num_layers, hidden=(8,), scaling=True, seed=0, permutation=permutation)
    y = points(6, 5)
    assert torch.equal(flow.forward(y), y) and torch.equal(flow.inverse(y), y)


def test_parameters_are_registered_with_torch_and_pyro():
    flow = NICE(4, num_layers=3, hidden=(8, 8), scaling=True, seed=0)
    # per coupling: 3 linear layers (weight + bias); plus the log-scales
    assert len(list(flow.parameters())) == 3 * 3 * 2 + 1
    n_params = sum(p.numel() for p in flow.parameters())
    assert n_params == 3 * ((2 * 8 + 8) + (8 * 8 + 8) + (8 * 2 + 2)) + 4
    pyro.module("flow", flow)
    store = pyro.get_param_store()
    assert len(store.keys()) == len(list(flow.parameters()))
    assert all(k.startswith("flow$$$") for k in store.keys())


def test_training_moves_the_zero_initialised_flow():
    flow = NICE(2, num_layers=2, hidden=(16,), seed=0)
    y = points(64, 2)
    target = y + torch.tensor([1.0, -2.0])
    opt = torch.optim.Adam(flow.parameters(), lr=1e-2)
    first = None
    for _ in range(200):
        loss = ((flow.forward(y) - target) ** 2).mean()
        first = float(loss.detach()) if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert first == pytest.approx(2.5, rel=1e-12)  # ||(1, -2)||^2 / 2: a new flow is the identity
    assert float(loss.detach()) < 0.05 * first
    assert torch.allclose(flow.inverse(flow.forward(y)), y, atol=1e-10)


def test_seeding_is_reproducible_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a = NICE.random(4, 2, hidden=(8,), seed=7)
    b = NICE.random(4, 2, hidden=(8,), seed=7)
    c = NICE.random(4, 2, hidden=(8,), seed=8)
    assert torch.equal(torch.random.get_rng_state(), state)
    y = points(5, 4)
    assert torch.equal(a.forward(y), b.forward(y))
    assert not torch.allclose(a.forward(y), c.forward(y))


def test_copies_and_state_dicts_give_the_same_map():
    flow = NICE.random(4, 3, hidden=(8,), scaling=True, seed=1, permutation="random")
    other = NICE(4, 3, hidden=(8,), scaling=True, seed=2, permutation="random")
    other.load_state_dict(flow.state_dict())  # permutations are buffers: they are copied too
    y = points(5, 4)
    assert torch.equal(other.forward(y), flow.forward(y))
    assert torch.equal(copy.deepcopy(flow).forward(y), flow.forward(y))


def test_dtype_conversion_with_to():
    flow = NICE.random(3, 2, hidden=(8,), seed=0, dtype=torch.float32)
    y = points(4, 3)
    assert flow.to(torch.float64).forward(y).dtype == torch.float64


def test_bad_input_is_reported():
    with pytest.raises(ValueError, match="dim must be an integer >= 2, got 1"):
        NICE(1)
    with pytest.raises(TypeError, match="dim must be an integer, got float"):
        NICE(4.0)
    with pytest.raises(ValueError, match="num_layers must be an integer >= 1, got 0"):
        NICE(4, 0)
    with pytest.raises(TypeError, match="scaling must be a bool"):
        NICE(4, scaling=1)
    with pytest.raises(ValueError, match="permutation must be one of"):
        NICE(4, permutation="shuffle")
    with pytest.raises(ValueError, match="init must be one of"):
        NICE(4, init="zeros")
    with pytest.raises(ValueError, match="split must be an integer <= 3, got 4"):
        NICE(4, split=4)
    with pytest.raises(ValueError, match=r"hidden\[1\] must be an integer >= 1, got 0"):
        NICE(4, hidden=(8, 0))
    flow = NICE(4, 2, hidden=(8,), seed=0)
    with pytest.raises(ValueError, match=r"y must have shape \(\.\.\., 4\) \(last axis of width 4\), "
                                         r"got shape \(3, 5\)"):
        flow.forward(torch.zeros(3, 5))
    with pytest.raises(ValueError, match=r"z must have shape \(\.\.\., 4\)"):
        flow.inverse(torch.zeros(3, 2))
    with pytest.raises(TypeError, match="y must have the flow's dtype torch.float64, got torch.float32"):
        flow.forward(torch.zeros(3, 4, dtype=torch.float32))
    with pytest.raises(TypeError, match="y must be a torch.Tensor"):
        flow.forward([[0.0] * 4])
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 4\)"):
        flow(torch.zeros(2, 3))  # the Transform call checks too
    with pytest.raises(ValueError, match=r"permutation must hold each of 0 \.\. d-1 exactly once"):
        Permutation([0, 0, 1])
    with pytest.raises(TypeError, match="permutation must be a 1-D sequence of integers"):
        Permutation([0.0, 1.0])
    with pytest.raises(ValueError, match="scale must be > 0"):
        Scaling(3, scale=0.0)


def test_pyro_svi_fits_the_flow_by_maximum_likelihood():
    """Data warped by a known random NICE; a new NICE trained with Pyro's SVI (the flow's
    parameters registered by ``pyro.module``, no latent variables) recovers its likelihood."""
    from pyro.infer import SVI, Trace_ELBO

    true = NICE.random(2, 2, hidden=(16,), scale=2.0, seed=0)
    with torch.no_grad():
        y = true.inverse(points(500, 2, seed=1) / 2)  # z ~ N(0, I)
    base = dist.Normal(torch.zeros(2), 1.0).to_event(1)
    flow = NICE(2, 2, hidden=(16,), seed=5)

    def mean_log_lik(f):
        with torch.no_grad():
            return dist.TransformedDistribution(base, [f.inv]).log_prob(y).mean().item()

    def model(y):
        pyro.module("flow", flow)
        with pyro.plate("n", y.shape[0]):
            pyro.sample("y", dist.TransformedDistribution(base, [flow.inv]), obs=y)

    svi = SVI(model, lambda y: None, pyro.optim.Adam({"lr": 1e-2}), Trace_ELBO())
    start, truth = mean_log_lik(flow), mean_log_lik(true)
    for _ in range(200):
        svi.step(y)
    # The identity flow is far off (0.8 nats per point here). The in-sample maximum lies
    # above the truth by about (number of parameters) / (2 N) = 98 / 1000 nats (Wilks), so a
    # trained flow within 0.05 nats below the truth means the optimisation has converged.
    assert start < truth - 0.5
    assert mean_log_lik(flow) > truth - 0.05
