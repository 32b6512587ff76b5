"""The data sets of the RBHMC experiments, prepared as the paper describes (Sec. 5).

* :func:`animals`: the 33 animals x 102 binary features (Kemp and Tenenbaum; vendored in
  :func:`pyromodels.data.load_animals`), centred and reduced to 7 principal components, with
  the 8 manual classes of the paper's Table 1 matched to the rows **by name**.
* :func:`fashion_mnist`: 100 Fashion-MNIST images, 10 per category drawn with a seeded
  generator from the 10,000 test images (the paper does not say how its 100 were chosen),
  pixels scaled to ``[0, 1]``, centred and reduced to 10 principal components.
* :func:`planted_hierarchy`: Gaussian data with a known two-level hierarchy (top clusters
  split into subclusters), its true paths and per-level classes.

Every set comes as a :class:`HierarchyData` with float64 tensors. :func:`pca` is the
projection used, with a deterministic sign for each component.

Example:
    >>> data = planted_hierarchy(n_top=2, n_sub=3, n_per_leaf=4, dim=5, seed=0)
    >>> data.x.shape, data.true_paths.shape, data.true_paths[0].tolist()
    (torch.Size([24, 5]), torch.Size([24, 3]), [0, 1, 3])
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import torch

from ...checks import as_float_tensor, check_int, check_positive
from ...data import load_animals, load_fashion_mnist
from .paper_numbers import ANIMAL_CLASS_NAMES, ANIMAL_CLASSES

__all__ = ["HierarchyData", "pca", "match_labels", "animals", "balanced_subset",
           "images_to_hierarchy_data", "fashion_mnist", "FASHION_MNIST_CLASSES",
           "planted_hierarchy"]

FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal",
                         "Shirt", "Sneaker", "Bag", "Ankle boot")


@dataclass(frozen=True)
class HierarchyData:
    """A data set for a hierarchical clustering run.

    Attributes:
        x: ``(N, D)`` float64 features (PCA scores for the real sets).
        labels: ``(N,)`` int64 reference classes, ``0 .. len(class_names) - 1`` (for the
            planted set, the leaf a datum was drawn from).
        class_names: the name of each class code.
        names: one name per datum (animal names, ``"t10k[index]"`` for images, ``"n<i>"``).
        true_paths: ``(N, L + 1)`` int64 true root-to-leaf paths where the truth is a tree
            (planted data), else ``None``.
        info: provenance and preparation details (PCA variance ratios, indices, seeds).
    """

    x: torch.Tensor
    labels: torch.Tensor
    class_names: tuple[str, ...]
    names: tuple[str, ...]
    true_paths: torch.Tensor | None = None
    info: dict = field(default_factory=dict)


def pca(x, n_components: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Principal component scores of the centred data, each component's sign fixed.

    With :math:`X_c = X - \bar x` and the SVD :math:`X_c = U S V^\top`, the scores are
    :math:`X_c V_{:, :k}`. A component is defined up to sign; the sign is chosen so that its
    loading of largest absolute value is positive (the first such feature on ties), which
    makes the result independent of the SVD routine and of the order of the rows. Features are
    centred but not scaled.

    Args:
        x: ``(N, F)`` data.
        n_components: ``k`` with ``1 <= k <= min(N, F)``.

    Returns:
        ``(scores, components, explained_variance_ratio)``: float64 tensors of shapes
        ``(N, k)``, ``(k, F)`` and ``(k,)``.

    Raises:
        ValueError: ``n_components`` out of range, ``x`` not 2-D or not finite.

    Example:
        >>> scores, comps, ratio = pca([[0.0, 0.0], [2.0, 0.0], [4.0, 1.0]], 1)
        >>> bool(comps[0, 0] > 0), round(float(ratio[0]), 3)
        (True, 0.982)
    """
    x = as_float_tensor(x, "x", ndim=2, dtype=torch.float64)
    k = check_int(n_components, "n_components", minimum=1, maximum=min(x.shape))
    a = (x - x.mean(0)).numpy()
    _, s, vt = np.linalg.svd(a, full_matrices=False)
    comps = vt[:k]
    lead = np.abs(comps).argmax(1)
    comps = comps * np.sign(comps[np.arange(k), lead])[:, None]
    total = float((s**2).sum())
    ratio = s[:k] ** 2 / total if total > 0 else np.zeros(k)
    return (torch.from_numpy(a @ comps.T), torch.from_numpy(comps.copy()),
            torch.from_numpy(np.asarray(ratio, dtype=np.float64)))


def match_labels(names, table, class_names) -> torch.Tensor:
    """Class codes of the data rows ``names``, looked up by name in ``table``.

    Args:
        names: one name per data row (unique).
        table: ``(name, class)`` pairs (each name once), e.g. the paper's Table 1.
        class_names: the classes in code order; every class of ``table`` must be one.

    Returns:
        ``(N,)`` int64 codes, ``class_names.index(class of names[n])``.

    Raises:
        ValueError: duplicate names in the rows or the table, a row without a label, a label
            whose name matches no row, or a class not in ``class_names``.

    Example:
        >>> match_labels(["b", "a"], [("a", "x"), ("b", "y")], ("x", "y")).tolist()
        [1, 0]
    """
    names = [str(n) for n in names]
    for what, items in (("names", names), ("table", [row[0] for row in table])):
        dup = sorted(n for n, c in Counter(items).items() if c > 1)
        if dup:
            raise ValueError(f"{what} must name each animal once, repeated: {dup}")
    lookup = dict(table)
    missing = [n for n in names if n not in lookup]
    unused = [n for n in lookup if n not in set(names)]
    if missing or unused:
        raise ValueError(
            f"labels and data rows must match by name: data rows without a label {missing}, "
            f"labels matching no data row {unused}")
    unknown = sorted({c for c in lookup.values()} - set(class_names))
    if unknown:
        raise ValueError(f"table holds classes {unknown} that are not in class_names "
                         f"{list(class_names)}")
    return torch.tensor([list(class_names).index(lookup[n]) for n in names], dtype=torch.int64)


def animals(n_components: int = 7, table=ANIMAL_CLASSES) -> HierarchyData:
    """The 33 animals, PCA-reduced, with the paper's 8 manual classes (Table 1).

    The 102 binary features are centred (not scaled) and projected on their first
    ``n_components`` principal components (:func:`pca`); rows keep the order of
    :func:`pyromodels.data.load_animals`, which differs from Table 1's, and the classes are
    joined by name.

    Args:
        n_components: PCA dimension (the paper's 7).
        table: ``(animal, class)`` pairs to join (default: Table 1).

    Returns:
        :class:`HierarchyData` with ``x`` ``(33, n_components)``; ``class_names`` are
        :data:`~.paper_numbers.ANIMAL_CLASS_NAMES`.

    Example:
        >>> data = animals()
        >>> data.x.shape, data.class_names[data.labels[data.names.index("Whale")]]
        (torch.Size([33, 7]), 'water animals')
    """
    frame = load_animals()
    scores, _, ratio = pca(torch.from_numpy(frame.to_numpy().astype(np.float64)), n_components)
    labels = match_labels(frame.index, table, ANIMAL_CLASS_NAMES)
    return HierarchyData(scores, labels, ANIMAL_CLASS_NAMES, tuple(frame.index),
                         info={"source": "Kemp and Tenenbaum animals, 33 x 102 binary features",
                               "explained_variance_ratio": ratio.tolist()})


def balanced_subset(labels, n_per_class: int, generator: torch.Generator) -> torch.Tensor:
    """``n_per_class`` indices of each class, drawn without replacement, in ascending order.

    Args:
        labels: ``(M,)`` integer classes.
        n_per_class: how many of each class (every class present must have that many).
        generator: the source of the random permutation of each class's indices.

    Returns:
        ``(C * n_per_class,)`` int64 indices, ascending.

    Example:
        >>> balanced_subset([0, 1, 0, 1, 1], 1, torch.Generator().manual_seed(0)).shape
        torch.Size([2])
    """
    labels = torch.as_tensor(np.asarray(labels)).to(torch.int64)
    n_per_class = check_int(n_per_class, "n_per_class", minimum=1)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    chosen = []
    for c in torch.unique(labels).tolist():
        where = torch.nonzero(labels == c).flatten()
        if len(where) < n_per_class:
            raise ValueError(f"class {c} has {len(where)} items, fewer than n_per_class = "
                             f"{n_per_class}")
        chosen.append(where[torch.randperm(len(where), generator=generator)[:n_per_class]])
    return torch.sort(torch.cat(chosen)).values


def images_to_hierarchy_data(images, labels, n_per_class: int = 10, seed: int = 0,
                             n_components: int = 10, class_names=FASHION_MNIST_CLASSES,
                             prefix: str = "image") -> HierarchyData:
    """A class-balanced subset of uint8 images, scaled to ``[0, 1]`` and PCA-reduced.

    Args:
        images: ``(M, H, W)`` or ``(M, H * W)`` pixel values in ``0..255``.
        labels: ``(M,)`` classes ``0 .. len(class_names) - 1``.
        n_per_class: images per class (the paper's 100 = 10 classes x 10).
        seed: seed of the ``torch.Generator`` that picks them.
        n_components: PCA dimension (the paper's 10).
        class_names: name of each class code.
        prefix: data names are ``f"{prefix}[{index}]"``.

    Returns:
        :class:`HierarchyData`; ``info["indices"]`` are the chosen rows of ``images``.
    """
    pixels = np.asarray(images)
    if pixels.ndim not in (2, 3) or pixels.shape[0] == 0:
        raise ValueError(f"images must have shape (M, H, W) or (M, H * W), got {pixels.shape}")
    pixels = pixels.reshape(pixels.shape[0], -1)
    if pixels.min() < 0 or pixels.max() > 255:
        raise ValueError("images must hold pixel values in 0..255")
    labels = torch.as_tensor(np.asarray(labels)).to(torch.int64)
    if labels.shape != (pixels.shape[0],):
        raise ValueError(f"labels must have shape ({pixels.shape[0]},) (one per image), got "
                         f"{tuple(labels.shape)}")
    if int(labels.min()) < 0 or int(labels.max()) >= len(class_names):
        raise ValueError(f"labels must lie in 0..{len(class_names) - 1} (one per class name)")
    seed = check_int(seed, "seed", minimum=0)
    index = balanced_subset(labels, n_per_class, torch.Generator().manual_seed(seed))
    x = torch.from_numpy(pixels[index.numpy()].astype(np.float64) / 255.0)
    scores, _, ratio = pca(x, n_components)
    return HierarchyData(scores, labels[index], tuple(class_names),
                         tuple(f"{prefix}[{i}]" for i in index.tolist()),
                         info={"indices": index.tolist(), "seed": seed,
                               "explained_variance_ratio": ratio.tolist()})


def fashion_mnist(n_per_class: int = 10, seed: int = 0, n_components: int = 10, path=None,
                  kind: str = "t10k") -> HierarchyData:
    """100 Fashion-MNIST images (10 per category, seeded), scaled to ``[0, 1]``, PCA 10.

    The paper says only that its set "has 100 samples"; this takes a class-balanced subset of
    the ``kind`` split with :func:`balanced_subset` (see :func:`images_to_hierarchy_data`).

    Args:
        n_per_class, seed, n_components: as :func:`images_to_hierarchy_data`.
        path, kind: as :func:`pyromodels.data.load_fashion_mnist` (no download).

    Raises:
        FileNotFoundError: the IDX files are not found.
    """
    images, labels = load_fashion_mnist(path, kind=kind)
    data = images_to_hierarchy_data(images, labels, n_per_class, seed, n_components,
                                    FASHION_MNIST_CLASSES, prefix=kind)
    data.info["source"] = f"Fashion-MNIST {kind} split"
    return data


def planted_hierarchy(n_top: int = 2, n_sub: int = 3, n_per_leaf: int = 5, dim: int = 5,
                      top_distance: float = 8.0, sub_distance: float = 4.0, noise: float = 1.0,
                      seed: int = 0) -> HierarchyData:
    r"""Gaussian data around a known two-level tree.

    Top cluster ``a`` has centre :math:`\mu_a = (t/\sqrt2) e_a` and its subcluster ``b`` adds
    :math:`\delta_b = (s/\sqrt2) e_{n_{top} + b}` (unit vectors :math:`e_j` of
    :math:`\mathbb R^D`), so top centres lie ``t = top_distance`` apart, subclusters of one top
    cluster ``s = sub_distance`` apart, and leaves of different top clusters
    :math:`\sqrt{t^2 + s^2}` (or ``t`` for the same ``b``). Each datum is
    :math:`x = \mu_a + \delta_b + \sigma\varepsilon`, :math:`\varepsilon \sim N(0, I_D)`, with
    ``sigma = noise`` (1 matches the model's likelihood ``N(theta, I)``).

    Args:
        n_top, n_sub: top clusters and subclusters per top cluster (``n_top + n_sub <= dim``).
        n_per_leaf: data per subcluster.
        dim: ``D``.
        top_distance, sub_distance, noise: ``t``, ``s``, ``sigma`` (> 0).
        seed: seed of the noise's ``torch.Generator``.

    Returns:
        :class:`HierarchyData` with ``N = n_top * n_sub * n_per_leaf`` data ordered leaf by
        leaf; ``true_paths`` ``(N, 3)``: root 0, top nodes ``1..n_top``, leaves
        ``n_top + 1 ..``; ``labels`` the leaf index ``a * n_sub + b`` and ``info["top_labels"]``
        the top cluster ``a``.

    Example:
        >>> data = planted_hierarchy(n_per_leaf=2)
        >>> data.labels.tolist()[:4], data.info["top_labels"][-1]
        ([0, 0, 1, 1], 1)
    """
    n_top = check_int(n_top, "n_top", minimum=1)
    n_sub = check_int(n_sub, "n_sub", minimum=1)
    n_per_leaf = check_int(n_per_leaf, "n_per_leaf", minimum=1)
    dim = check_int(dim, "dim", minimum=1)
    if n_top + n_sub > dim:
        raise ValueError(f"dim must be >= n_top + n_sub = {n_top + n_sub} (one axis per top "
                         f"cluster and per subcluster), got {dim}")
    t = check_positive(top_distance, "top_distance")
    s = check_positive(sub_distance, "sub_distance")
    sigma = check_positive(noise, "noise")
    seed = check_int(seed, "seed", minimum=0)
    top = torch.arange(n_top).repeat_interleave(n_sub * n_per_leaf)
    sub = torch.arange(n_sub).repeat_interleave(n_per_leaf).repeat(n_top)
    centres = torch.zeros(len(top), dim, dtype=torch.float64)
    centres[torch.arange(len(top)), top] = t / math.sqrt(2.0)
    centres[torch.arange(len(top)), n_top + sub] = s / math.sqrt(2.0)
    g = torch.Generator().manual_seed(seed)
    x = centres + sigma * torch.randn(len(top), dim, dtype=torch.float64, generator=g)
    leaf = top * n_sub + sub
    paths = torch.stack([torch.zeros_like(top), 1 + top, 1 + n_top + leaf], 1)
    names = tuple(f"n{i}" for i in range(len(top)))
    class_names = tuple(f"top{a}/sub{b}" for a in range(n_top) for b in range(n_sub))
    return HierarchyData(x, leaf, class_names, names, true_paths=paths,
                         info={"top_labels": top.tolist(), "centres": centres, "seed": seed})
