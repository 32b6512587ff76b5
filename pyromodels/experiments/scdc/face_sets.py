"""The Face protocol's offline stand-ins for the UCI faces, which cannot be downloaded here:
scikit-learn's 8x8 digits and a Fashion-MNIST subset, each through PCA to 20 dimensions as
the paper does for the faces; the reproduction and the demo read them."""

from __future__ import annotations

import numpy as np

__all__ = ["face_data"]


def _pca(x: np.ndarray, dims: int) -> np.ndarray:
    from sklearn.decomposition import PCA

    return PCA(dims, random_state=0).fit_transform(x)


def face_data(name: str, points: int | None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A Face-protocol stand-in: ``"digits"`` (scikit-learn's 1,797 8x8 digits) or
    ``"fashion"`` (the first 2,000 Fashion-MNIST test images), scaled to [0, 1], PCA to 20
    dimensions and standardised; ``points`` of them drawn at random (``None``: all)."""
    if name == "digits":
        from sklearn.datasets import load_digits

        x, y = load_digits(return_X_y=True)
        x = x / 16.0
    elif name == "fashion":
        from ...data.image_sets import load_fashion_mnist

        images, y = load_fashion_mnist(kind="t10k")
        x, y = images[:2000].reshape(2000, -1) / 255.0, y[:2000]
    else:
        raise ValueError(f"name must be 'digits' or 'fashion', got {name!r}")
    if points is not None and points < len(y):
        keep = np.sort(np.random.default_rng(seed).choice(len(y), points, replace=False))
        x, y = x[keep], y[keep]
    f = _pca(x, 20)
    return (f - f.mean(0)) / f.std(0), np.asarray(y, dtype=np.int64)
