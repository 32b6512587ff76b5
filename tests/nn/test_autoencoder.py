"""The stacked autoencoder: architecture against a hand-written forward pass, the two
pretraining stages, determinism, and pinned errors."""

import pytest
import torch
from torch.nn import functional as F

from pyromodels.nn import StackedAutoencoder, pretrain_autoencoder
from pyromodels.nn.pretrain import DEFAULT_LR

TINY = dict(dims=(16, 16, 2), layerwise_epochs=3, finetune_epochs=10, batch_size=32, progress=False,
            cache=False)


def same_weights(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_architecture_relu_hidden_linear_bottleneck_and_output():
    ae = StackedAutoencoder((6, 5, 4, 3), seed=0)
    s = {k: v for k, v in ae.state_dict().items()}
    x = torch.randn(7, 6, generator=torch.Generator().manual_seed(1))

    def lin(h, prefix):
        return h @ s[prefix + ".weight"].T + s[prefix + ".bias"]

    h = torch.relu(lin(x, "encoder.0.0"))
    h = torch.relu(lin(h, "encoder.1.0"))
    z = lin(h, "encoder.2.0")  # linear bottleneck
    g = torch.relu(lin(z, "decoder.0.0"))
    g = torch.relu(lin(g, "decoder.1.0"))
    out = lin(g, "decoder.2.0")  # linear output
    assert torch.allclose(ae.encode(x), z, atol=1e-14)
    assert torch.allclose(ae(x), out, atol=1e-14)
    assert torch.allclose(ae.decode(z), out, atol=1e-14)
    assert (z < 0).any() and (out < 0).any()  # no activation after the bottleneck or output
    assert [tuple(b[0].weight.shape) for b in ae.encoder] == [(5, 6), (4, 5), (3, 4)]
    assert [tuple(b[0].weight.shape) for b in ae.decoder] == [(4, 3), (5, 4), (6, 5)]
    enc, dec = ae.layer_pair(1)  # the second shallow autoencoder: 5 -> 4 -> 5
    assert enc is ae.encoder[1] and dec is ae.decoder[1]
    assert ae.input_dim == 6 and ae.latent_dim == 3 and ae.depth == 3


def test_encode_in_batches_equals_all_at_once():
    ae = StackedAutoencoder((6, 5, 2), seed=0)
    x = torch.randn(23, 6, generator=torch.Generator().manual_seed(1))
    assert torch.allclose(ae.encode(x, batch_size=5), ae.encode(x), atol=1e-14)
    assert not ae.encode(x).requires_grad and ae(x).requires_grad


def test_pretraining_reduces_the_reconstruction_error(manifold_data):
    x = manifold_data
    ae = pretrain_autoencoder(x, **dict(TINY, finetune_epochs=20, lr=1e-2))
    rec = ae.pretraining
    assert len(rec.layerwise_losses) == 3 and all(len(r) == 3 for r in rec.layerwise_losses)
    assert len(rec.finetune_losses) == 20
    assert all(r[-1] < r[0] for r in rec.layerwise_losses)
    # The data lie within noise of sd 0.05 of a 2-D manifold, which a 2-wide bottleneck can
    # represent: the error can fall far below that of the best constant (the mean, whose MSE
    # is the mean variance, 0.72) towards the noise floor 0.0025.
    assert rec.finetune_losses[-1] < 0.1 * rec.finetune_losses[0]
    mse = F.mse_loss(ae(x), x).item()
    assert mse < 0.1 * x.var(dim=0, unbiased=False).mean().item()
    assert ae.encode(x).shape == (200, 2) and not ae.training
    assert rec.from_cache is False and rec.cache_path is None


def test_the_recorded_loss_is_the_mse_of_the_network_being_trained(manifold_data):
    x = manifold_data
    n = x.shape[0]
    settings = dict(TINY, batch_size=n)
    layerwise_only = pretrain_autoencoder(x, **dict(settings, finetune_epochs=0))
    assert layerwise_only.pretraining.finetune_losses == []
    one_step = pretrain_autoencoder(x, **dict(settings, finetune_epochs=1))
    # one full batch: the epoch's loss is the MSE of the layer-wise pretrained network
    expected = F.mse_loss(layerwise_only(x), x).item()
    assert one_step.pretraining.finetune_losses[0] == pytest.approx(expected, rel=1e-12)
    assert not same_weights(one_step, layerwise_only)


def test_without_layerwise_epochs_only_fine_tuning_runs(manifold_data):
    ae = pretrain_autoencoder(manifold_data, **dict(TINY, layerwise_epochs=0, finetune_epochs=2))
    assert ae.pretraining.layerwise_losses == [] and len(ae.pretraining.finetune_losses) == 2


def test_pretraining_is_deterministic_for_a_seed(manifold_data):
    state = torch.random.get_rng_state()
    a = pretrain_autoencoder(manifold_data, seed=3, **TINY)
    b = pretrain_autoencoder(manifold_data, seed=3, **TINY)
    c = pretrain_autoencoder(manifold_data, seed=4, **TINY)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert same_weights(a, b) and a.pretraining.finetune_losses == b.pretraining.finetune_losses
    assert not same_weights(a, c)


def test_corruption_and_optimiser_settings_are_used(manifold_data):
    base = pretrain_autoencoder(manifold_data, **TINY)
    clean = pretrain_autoencoder(manifold_data, noise=0.0, **TINY)
    assert not same_weights(base, clean)
    sgd = pretrain_autoencoder(manifold_data, optimizer="sgd", **TINY)
    assert sgd.pretraining.settings["lr"] == DEFAULT_LR["sgd"]
    assert sgd.pretraining.settings["momentum"] == 0.9
    assert sgd.pretraining.finetune_losses[-1] < sgd.pretraining.finetune_losses[0]


def test_training_runs_in_the_data_dtype_or_the_one_asked_for(manifold_data):
    ae = pretrain_autoencoder(manifold_data.float(), **TINY)
    assert next(ae.parameters()).dtype == torch.float32
    assert ae.encode(manifold_data.float()).dtype == torch.float32
    cast = pretrain_autoencoder(manifold_data, dtype=torch.float32, **TINY)
    assert cast.pretraining.settings["dtype"] == "torch.float32" and same_weights(ae, cast)
    assert next(pretrain_autoencoder(manifold_data, **TINY).parameters()).dtype == torch.float64
    with pytest.raises(TypeError, match="dtype must be a floating torch dtype"):
        pretrain_autoencoder(manifold_data, dtype=torch.int64, **TINY)


def test_bad_input_is_reported(manifold_data):
    x = manifold_data
    with pytest.raises(ValueError, match="x must be 2-dimensional, got shape"):
        pretrain_autoencoder(x[0], **TINY)
    bad = x.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="x must be finite"):
        pretrain_autoencoder(bad, **TINY)
    with pytest.raises(ValueError, match=r"dims must hold at least 1 width\(s\)"):
        pretrain_autoencoder(x, **dict(TINY, dims=()))
    with pytest.raises(ValueError, match=r"noise must lie in \[0, 1\), got 1.0"):
        pretrain_autoencoder(x, noise=1.0, **TINY)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        pretrain_autoencoder(x, optimizer="rmsprop", **TINY)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got 0"):
        pretrain_autoencoder(x, **dict(TINY, batch_size=0))
    with pytest.raises(ValueError, match="finetune_epochs must be an integer >= 0"):
        pretrain_autoencoder(x, **dict(TINY, finetune_epochs=-1))
    with pytest.raises(ValueError, match="lr must be > 0"):
        pretrain_autoencoder(x, lr=0.0, **TINY)
    with pytest.raises(TypeError, match="seed must be an integer, got NoneType"):
        pretrain_autoencoder(x, seed=None, **TINY)
    with pytest.raises(TypeError, match="cache must be True, False or a directory path, got int 3"):
        pretrain_autoencoder(x, **dict(TINY, cache=3))
    ae = StackedAutoencoder((8, 4, 2), seed=0)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 8\), got shape \(3, 7\)"):
        ae.encode(torch.zeros(3, 7))
    with pytest.raises(ValueError, match=r"z must have shape \(\.\.\., 2\)"):
        ae.decode(torch.zeros(3, 3))
    with pytest.raises(TypeError, match="x must have the network's dtype torch.float64, got torch.float32"):
        ae(torch.zeros(3, 8, dtype=torch.float32))
    with pytest.raises(ValueError, match=r"dims must hold at least 2 width\(s\)"):
        StackedAutoencoder((8,))
