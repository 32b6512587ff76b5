r"""Starting a VAE's encoder and decoder from a pretrained stacked autoencoder.

DEC, VaDE and the LTVAE initialise their networks from a stacked autoencoder pretrained as in
DEC (:func:`~pyromodels.nn.pretrain_autoencoder`). A :class:`~pyromodels.nn.GaussianEncoder`
with hidden widths ``(h_1, ..., h_{L-1})`` and latent dimension ``h_L`` has the autoencoder's
encoder layers plus a second output head: its mean head takes the autoencoder's bottleneck
layer and its log-scale head starts at zero (weights and bias), so that :math:`q(z \mid x)`
starts with unit scale for every input. An :class:`~pyromodels.nn.ObservationDecoder` with
hidden widths ``(h_{L-1}, ..., h_1)`` takes the autoencoder's decoder layers; its output
layer's first ``D`` rows (the Bernoulli logits or the Gaussian mean) take the reconstruction
layer and a Gaussian decoder's log-variance rows start at zero (unit variance).

The zero heads matter because the pretrained hidden layers' activations grow with the scale
of the data: a freshly drawn head fed them gives log scales of either sign and many units
(about -5 to 4 on the digits' pixels in [0, 5.1]), and the first draws of ``z`` then lie in the
hundreds and the first steps diverge. The LTVAE authors' code leaves the head freshly drawn.
"""

from __future__ import annotations

import torch
from torch import nn

from .amortized import GaussianEncoder, ObservationDecoder
from .autoencoder import StackedAutoencoder

__all__ = ["init_from_autoencoder"]


def _linears(module: nn.Module) -> list[nn.Linear]:
    return [m for m in module.modules() if isinstance(m, nn.Linear)]


def _copy(targets: list[nn.Linear], sources: list[nn.Linear], what: str) -> None:
    shapes = [tuple(t.weight.shape) for t in targets]
    wanted = [tuple(s.weight.shape) for s in sources]
    # every layer but the last matches exactly; the last has the source's rows and more
    if len(shapes) != len(wanted) or shapes[:-1] != wanted[:-1] or \
            shapes[-1][1] != wanted[-1][1] or shapes[-1][0] < wanted[-1][0]:
        raise ValueError(f"the {what}'s layers {shapes} do not match the autoencoder's {wanted}")
    with torch.no_grad():
        for t, s in zip(targets, sources):
            rows = s.weight.shape[0]
            t.weight[:rows].copy_(s.weight.to(t.weight))
            t.bias[:rows].copy_(s.bias.to(t.bias))
            t.weight[rows:].zero_()  # the heads the autoencoder has none of (module docstring)
            t.bias[rows:].zero_()


def init_from_autoencoder(autoencoder: StackedAutoencoder, encoder: GaussianEncoder | None = None,
                          decoder: ObservationDecoder | None = None) -> None:
    """Copy ``autoencoder``'s weights into ``encoder`` and ``decoder`` in place and zero their
    other output heads (module docstring); either may be ``None`` (left out).

    Args:
        autoencoder: the pretrained autoencoder (ReLU hidden layers: the networks should use
            ``activation="relu"``).
        encoder: a Gaussian encoder whose hidden widths and latent dimension are the
            autoencoder's ``dims[1:-1]`` and ``dims[-1]``.
        decoder: an observation decoder whose hidden widths are ``dims[-2:0:-1]``.

    Raises:
        TypeError: arguments of other types.
        ValueError: layer shapes that differ from the autoencoder's.

    Example:
        >>> ae = StackedAutoencoder((6, 8, 2), seed=0)
        >>> enc, dec = GaussianEncoder(6, 2, (8,)), ObservationDecoder(2, 6, "normal", (8,))
        >>> init_from_autoencoder(ae, enc, dec)
        >>> x = torch.randn(3, 6)
        >>> bool(torch.allclose(enc(x)[0], ae.encode(x)))
        True
        >>> bool(torch.allclose(dec(enc(x)[0])[0], ae(x)))
        True
    """
    if not isinstance(autoencoder, StackedAutoencoder):
        raise TypeError(f"autoencoder must be a StackedAutoencoder, got {type(autoencoder).__name__}")
    if encoder is not None:
        if not isinstance(encoder, GaussianEncoder):
            raise TypeError(f"encoder must be a GaussianEncoder, got {type(encoder).__name__}")
        if encoder.latent_dim != autoencoder.latent_dim:
            raise ValueError(f"the encoder's latent dimension {encoder.latent_dim} is not the "
                             f"autoencoder's bottleneck width {autoencoder.latent_dim}")
        _copy(_linears(encoder), _linears(autoencoder.encoder), "encoder")
    if decoder is not None:
        if not isinstance(decoder, ObservationDecoder):
            raise TypeError(f"decoder must be an ObservationDecoder, got {type(decoder).__name__}")
        _copy(_linears(decoder), _linears(autoencoder.decoder), "decoder")
