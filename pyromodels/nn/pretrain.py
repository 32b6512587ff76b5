"""DEC-style pretraining of a stacked autoencoder, with the trained weights cached on disk.

Two stages (Xie, Girshick and Farhadi 2016, sec. 3.2; Jiang et al. 2017 for VaDE):

1. Greedy layer-wise denoising pretraining. For ``i = 0 .. L-1`` the shallow autoencoder
   (encoder block ``i``, decoder block ``L-1-i``) is trained to reconstruct its clean input
   ``h_i`` (``h_0 = x``, ``h_{i+1} = encoder block i (h_i)``) from a dropout-corrupted copy
   ``h_i * b / (1 - p)``, ``b_j ~ Bernoulli(1 - p)``, minimising the mean squared error.
2. End-to-end fine-tuning of the whole autoencoder on clean inputs, minimising
   ``mean ||h_d(h_e(x)) - x||^2 / D``.

Every random draw (initial weights, minibatch order, corruption masks) comes from generators
seeded from ``seed``, so a seed gives the same weights every time on one device and torch
version.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch.nn import functional as F

from ..checks import as_float_tensor, check_bool, check_in, check_int, check_positive, check_probability
from ..core.device import resolve_device, resolve_dtype
from ..core.progress import progress_bar
from ..core.seeding import derive_seed, make_generator
from .autoencoder import PretrainingRecord, StackedAutoencoder
from .cache import WeightCache, cache_key, data_fingerprint, resolve_cache_dir
from .mlp import check_dims

__all__ = ["pretrain_autoencoder", "DEFAULT_LR"]

DEFAULT_LR = {"adam": 1e-3, "sgd": 1e-2}
_SGD_MOMENTUM = 0.9
_ALGORITHM = 1  # bump when the training procedure changes, so old cache entries miss


def pretrain_autoencoder(x, dims: Sequence[int] = (500, 500, 2000, 10), *, layerwise_epochs: int = 10,
                         finetune_epochs: int = 40, batch_size: int = 256, lr: float | None = None,
                         optimizer: str = "adam", noise: float = 0.2, seed: int = 0, device=None,
                         dtype: torch.dtype | None = None, cache: bool | str | Path = True,
                         progress: bool = True) -> StackedAutoencoder:
    """Pretrain a stacked denoising autoencoder ``D - dims[0] - ... - dims[-1]`` on ``x``.

    Greedy layer-wise denoising pretraining (``layerwise_epochs`` passes over the data per
    layer, dropout corruption ``noise``), then ``finetune_epochs`` passes of end-to-end
    fine-tuning of the whole autoencoder (MSE), as in DEC and VaDE. With the defaults, 5,000
    MNIST digits (784-500-500-2000-10, float32) take about 70 s on one CPU thread; a cache hit
    takes well under a second. These epoch counts are modest (DEC trains far longer): raise
    them for better features when time allows.

    With a cache (the default), the trained weights are stored under a key made of the data
    (its bytes, shape and dtype), every setting below except ``device`` and ``progress``, and
    the torch release; a later call with the same key loads them instead of training, and two
    processes asking at once train once (:class:`~pyromodels.nn.cache.WeightCache`). Weights
    trained on one device are loaded on any other.

    Args:
        x: the data, a finite tensor of shape ``(N, D)``.
        dims: the widths after the input: hidden widths, then the bottleneck width.
        layerwise_epochs: passes over the data for each shallow autoencoder (0 skips the stage).
        finetune_epochs: passes over the data for end-to-end fine-tuning (0 skips it).
        batch_size: minibatch size (a last, smaller batch takes the remainder).
        lr: the learning rate; ``None`` takes ``DEFAULT_LR[optimizer]`` (Adam ``1e-3``, SGD
            ``1e-2``).
        optimizer: ``"adam"`` or ``"sgd"`` (with momentum 0.9); a fresh one per stage.
        noise: the dropout corruption probability in ``[0, 1)`` of layer-wise pretraining.
        seed: the source of every random draw (an int >= 0).
        device: where to train (``None``: ``x``'s device).
        dtype: the floating dtype of the network and of training; ``None`` takes ``x``'s
            (``torch.float32`` is much faster than the ``float64`` of numpy data).
        cache: ``True`` (the cache directory, see
            :func:`~pyromodels.nn.cache.resolve_cache_dir`: ``$PYROMODELS_CACHE/autoencoders``
            or the user's cache directory), ``False`` (no cache) or a directory path.
        progress: show a progress bar over epochs (drawn only on a terminal).

    Returns:
        A :class:`~pyromodels.nn.autoencoder.StackedAutoencoder` on ``device`` in eval mode;
        ``.encoder`` is ``h_e`` and ``.decoder`` is ``h_d``; ``.pretraining`` records the
        settings, the per-epoch losses and whether the weights came from the cache.

    Example:
        >>> x = torch.randn(64, 6, generator=torch.Generator().manual_seed(0))
        >>> ae = pretrain_autoencoder(x, dims=(8, 2), layerwise_epochs=1, finetune_epochs=2,
        ...                           batch_size=16, cache=False, progress=False)
        >>> ae.encode(x).shape, len(ae.pretraining.finetune_losses)
        (torch.Size([64, 2]), 2)
    """
    x = as_float_tensor(x, "x", ndim=2, dtype=None if dtype is None else resolve_dtype(dtype))
    full_dims = (x.shape[1],) + check_dims(dims, "dims", minimum_length=1)
    check_in(optimizer, "optimizer", tuple(DEFAULT_LR))
    noise = check_probability(noise, "noise")
    if noise >= 1:
        raise ValueError(f"noise must lie in [0, 1), got {noise}")
    settings = {
        "dims": list(full_dims),
        "layerwise_epochs": check_int(layerwise_epochs, "layerwise_epochs", minimum=0),
        "finetune_epochs": check_int(finetune_epochs, "finetune_epochs", minimum=0),
        "batch_size": check_int(batch_size, "batch_size", minimum=1),
        "lr": DEFAULT_LR[optimizer] if lr is None else check_positive(lr, "lr"),
        "optimizer": optimizer,
        "momentum": _SGD_MOMENTUM if optimizer == "sgd" else 0.0,
        "noise": noise,
        "seed": check_int(seed, "seed", minimum=0),
        "dtype": str(x.dtype),
        "algorithm": _ALGORITHM,
    }
    check_bool(progress, "progress")
    directory = resolve_cache_dir(cache, "autoencoders")
    device = resolve_device(device, x)
    x = x.to(device)
    model = StackedAutoencoder(full_dims, seed=derive_seed(settings["seed"], "init"), dtype=x.dtype,
                               device=device)

    def create() -> dict:
        start = time.perf_counter()
        layerwise, finetune = _train(model, x, settings, progress)
        return {"state_dict": {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()},
                "settings": settings, "layerwise_losses": layerwise, "finetune_losses": finetune,
                "seconds": time.perf_counter() - start, "device": str(device)}

    path, hit = None, False
    if directory is None:
        record = create()
    else:
        store = WeightCache(directory)
        key = cache_key(data_fingerprint(x), settings)
        record, hit = store.load_or_create(key, create, check=_state_check(model))
        path = str(store.path(key)) if store.path(key).exists() else None  # None: not written
        if hit:
            model.load_state_dict(record["state_dict"])
    model.eval()
    model.pretraining = PretrainingRecord(
        settings=dict(settings), layerwise_losses=[list(map(float, r)) for r in record["layerwise_losses"]],
        finetune_losses=list(map(float, record["finetune_losses"])), from_cache=hit, cache_path=path,
        seconds=float(record["seconds"]))
    return model


def _state_check(model: StackedAutoencoder) -> Callable[[dict], None]:
    """A check that a cached record's state dict fits ``model`` (names, shapes, dtypes)."""
    reference = {k: (v.shape, v.dtype) for k, v in model.state_dict().items()}

    def check(record: dict) -> None:
        state = record.get("state_dict")
        if not isinstance(state, dict) or set(state) != set(reference):
            raise ValueError("the stored weights do not name this network's parameters")
        for k, (shape, dtype) in reference.items():
            if not isinstance(state[k], torch.Tensor) or state[k].shape != shape or state[k].dtype != dtype:
                raise ValueError(f"the stored {k} does not have shape {tuple(shape)} and dtype {dtype}")
        for name in ("layerwise_losses", "finetune_losses", "seconds"):
            if name not in record:
                raise ValueError(f"the record has no {name!r}")

    return check


def _train(model: StackedAutoencoder, x: torch.Tensor, settings: dict, progress: bool):
    """Both stages in place on ``model``; returns (layer-wise losses, fine-tuning losses)."""
    seed, depth = settings["seed"], model.depth
    shuffle = make_generator(derive_seed(seed, "shuffle"))
    corrupt = make_generator(derive_seed(seed, "corrupt"), x.device)
    total = depth * settings["layerwise_epochs"] + settings["finetune_epochs"]
    model.train()
    layerwise: list[list[float]] = []
    with progress_bar(total, "pretraining autoencoder", progress) as bar:
        h = x
        for i in range(depth if settings["layerwise_epochs"] > 0 else 0):
            enc, dec = model.layer_pair(i)
            params = list(enc.parameters()) + list(dec.parameters())
            layerwise.append(_fit(lambda t, enc=enc, dec=dec: dec(enc(t)), params, h, settings,
                                  settings["layerwise_epochs"], settings["noise"], shuffle, corrupt, bar))
            with torch.no_grad():
                h = enc(h)  # the clean input of the next shallow autoencoder
        finetune = _fit(model, list(model.parameters()), x, settings, settings["finetune_epochs"], 0.0,
                        shuffle, corrupt, bar)
    return layerwise, finetune


def _fit(forward, params, data, settings, epochs, noise, shuffle, corrupt, bar) -> list[float]:
    """``epochs`` passes of minibatch MSE training of ``forward`` on ``data``; the per-epoch
    mean losses."""
    if epochs == 0:
        return []
    if settings["optimizer"] == "adam":
        opt = torch.optim.Adam(params, lr=settings["lr"])
    else:
        opt = torch.optim.SGD(params, lr=settings["lr"], momentum=settings["momentum"])
    n, size = data.shape[0], settings["batch_size"]
    losses = []
    for _ in range(epochs):
        order = torch.randperm(n, generator=shuffle).to(data.device)
        total = data.new_zeros(())
        for start in range(0, n, size):
            batch = data[order[start:start + size]]
            inputs = batch
            if noise > 0:
                keep = torch.empty_like(batch).bernoulli_(1.0 - noise, generator=corrupt)
                inputs = batch * keep / (1.0 - noise)
            loss = F.mse_loss(forward(inputs), batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total = total + loss.detach() * batch.shape[0]
        losses.append(float(total) / n)
        bar.update()
        bar.set_postfix(loss=f"{losses[-1]:.4g}", refresh=False)
    return losses
