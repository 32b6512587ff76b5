"""The amortised encoders and decoders, and networks whose weights live in the param store."""

import pyro
import pytest
import torch
import torch.distributions as D

from pyromodels.nn import (
    CategoricalEncoder,
    ConditionalGaussianEncoder,
    GaussianEncoder,
    GaussianPotentialEncoder,
    ObservationDecoder,
    ParamNetwork,
    mlp,
    observation_distribution,
    resolve_likelihood,
)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_encoder_shapes_and_the_enumerated_broadcast():
    o = torch.randn(4, 5, generator=_gen())
    assert CategoricalEncoder(5, 3, (8,), generator=_gen())(o).shape == (4, 3)
    enc = ConditionalGaussianEncoder(5, 3, 2, (8,), generator=_gen())
    loc, log_scale = enc(o, torch.eye(3).unsqueeze(1))
    assert loc.shape == log_scale.shape == (3, 4, 2)
    # cluster k's row equals the encoder on concat(o, e_k) for every item
    for k in range(3):
        joint = torch.cat([o, torch.eye(3)[k].expand(4, 3)], -1)
        torch.testing.assert_close(loc[k], enc.net(joint)[:, :2])
        torch.testing.assert_close(log_scale[k], enc.net(joint)[:, 2:])


def test_gaussian_encoder_splits_one_mlp_into_a_mean_and_a_log_scale():
    o = torch.randn(4, 5, generator=_gen())
    enc = GaussianEncoder(5, 2, (8,), generator=_gen())
    loc, log_scale = enc(o)
    assert loc.shape == log_scale.shape == (4, 2)
    torch.testing.assert_close(torch.cat([loc, log_scale], -1), enc.net(o))
    # no hidden layer: both outputs are affine in o
    affine = GaussianEncoder(5, 2, (), generator=_gen())
    torch.testing.assert_close(affine(2 * o)[0] - affine(o)[0], affine(o)[0] - affine(0 * o)[0])


def test_resolve_likelihood_reads_binary_data_and_refuses_bernoulli_on_real_data():
    assert resolve_likelihood("auto", torch.tensor([[0.0, 1.0]])) == "bernoulli"
    assert resolve_likelihood("auto", torch.tensor([[0.5, 1.0]])) == "normal"
    with pytest.raises(ValueError, match="x holds other values"):
        resolve_likelihood("bernoulli", torch.tensor([[0.5]]), "x")


def test_decoder_likelihoods_and_their_distributions():
    x, o = torch.randn(4, 2, generator=_gen(1)), torch.randn(4, 5, generator=_gen(2))
    normal = ObservationDecoder(2, 5, "normal", (8,), generator=_gen())
    loc, log_var = normal(x)
    expected = D.Normal(loc, log_var.mul(0.5).exp()).log_prob(o).sum(-1)
    torch.testing.assert_close(observation_distribution("normal", (loc, log_var)).log_prob(o),
                               expected)
    bern = ObservationDecoder(2, 5, "bernoulli", (8,), generator=_gen())
    (logits,) = bern(x)
    b = (o > 0).float()
    torch.testing.assert_close(observation_distribution("bernoulli", (logits,)).log_prob(b),
                               D.Bernoulli(logits=logits).log_prob(b).sum(-1))
    with pytest.raises(ValueError, match="likelihood must be one of"):
        ObservationDecoder(2, 5, "poisson")


def test_potential_has_a_positive_softplus_precision():
    rec = GaussianPotentialEncoder(5, 3, (8,), generator=_gen())
    o = torch.randn(6, 5, generator=_gen(3))
    h, precision = rec(o)
    raw = rec.net(o)
    torch.testing.assert_close(h, raw[:, :3])
    torch.testing.assert_close(precision, torch.nn.functional.softplus(raw[:, 3:]))
    assert bool((precision > 0).all())


def _net():
    return ParamNetwork("f", lambda g, dtype, device: mlp(3, (4,), 2, generator=g, dtype=dtype,
                                                          device=device))


def test_param_network_weights_live_in_the_store_and_start_fresh_per_scope():
    net, x = _net(), torch.randn(5, 3, generator=_gen())
    with pyro.get_param_store().scope():
        torch.manual_seed(0)
        first = net(x)
        params = {k: v.detach().clone() for k, v in pyro.get_param_store().items()}
        # a change in the store is what the network computes with
        pyro.get_param_store()["f.2.bias"] = torch.ones(2)
        torch.testing.assert_close(net(x) - first, torch.ones(5, 2) - params["f.2.bias"])
    with pyro.get_param_store().scope():
        torch.manual_seed(0)
        torch.testing.assert_close(net(x), first)  # same seed, same fresh weights
        torch.manual_seed(1)
    with pyro.get_param_store().scope():
        torch.manual_seed(1)
        assert not torch.equal(net(x), first)
    torch.testing.assert_close(net(x, params=net.stored(params)), first)
    with pytest.raises(KeyError, match="no 'f.0.weight'"):
        net.stored({})


def test_param_network_gradients_reach_the_store():
    net = _net()
    with pyro.get_param_store().scope():
        net(torch.randn(5, 3, generator=_gen())).sum().backward()
        assert all(p.grad is not None for p in pyro.get_param_store().values())
