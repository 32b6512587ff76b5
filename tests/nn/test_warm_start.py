"""Starting a VAE's encoder and decoder from a pretrained stacked autoencoder."""

import pytest
import torch

from pyromodels.nn import GaussianEncoder, ObservationDecoder, StackedAutoencoder, init_from_autoencoder


def test_the_mean_heads_reproduce_the_autoencoder_and_the_other_heads_start_at_zero():
    ae = StackedAutoencoder((6, 10, 7, 3), seed=0)
    enc = GaussianEncoder(6, 3, (10, 7), generator=torch.Generator().manual_seed(1))
    dec = ObservationDecoder(3, 6, "normal", (7, 10), generator=torch.Generator().manual_seed(2))
    init_from_autoencoder(ae, enc, dec)
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(enc(x)[0], ae.encode(x))
    torch.testing.assert_close(dec(ae.encode(x))[0], ae.decode(ae.encode(x)))
    # unit scale and unit variance whatever the input's size
    torch.testing.assert_close(enc(100.0 * x)[1], torch.zeros(5, 3))
    torch.testing.assert_close(dec(100.0 * ae.encode(x))[1], torch.zeros(5, 6))
    bern = ObservationDecoder(3, 6, "bernoulli", (7, 10))
    init_from_autoencoder(ae, decoder=bern)
    torch.testing.assert_close(bern(ae.encode(x))[0], ae.decode(ae.encode(x)))


def test_mismatched_networks_are_reported():
    ae = StackedAutoencoder((6, 10, 3), seed=0)
    with pytest.raises(ValueError, match="do not match the autoencoder"):
        init_from_autoencoder(ae, GaussianEncoder(6, 3, (9,)))
    with pytest.raises(ValueError, match="latent dimension 2"):
        init_from_autoencoder(ae, GaussianEncoder(6, 2, (10,)))
    with pytest.raises(ValueError, match="do not match the autoencoder"):
        init_from_autoencoder(ae, decoder=ObservationDecoder(3, 6, "normal", (10, 10)))
    with pytest.raises(TypeError, match="autoencoder must be a StackedAutoencoder"):
        init_from_autoencoder(object(), GaussianEncoder(6, 3, (10,)))
    with pytest.raises(TypeError, match="encoder must be a GaussianEncoder"):
        init_from_autoencoder(ae, ObservationDecoder(3, 6))
