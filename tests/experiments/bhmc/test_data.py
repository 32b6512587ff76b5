"""The RBHMC data sets: PCA against scikit-learn, Table 1 joined by name, the Fashion-MNIST
subset, and the planted hierarchy against its construction."""

import gzip
import math
from collections import Counter

import numpy as np
import pytest
import torch
from sklearn.decomposition import PCA

from pyromodels.bnp import Tree
from pyromodels.data import load_animals
from pyromodels.experiments.bhmc.data import (
    FASHION_MNIST_CLASSES,
    animals,
    balanced_subset,
    fashion_mnist,
    images_to_hierarchy_data,
    match_labels,
    pca,
    planted_hierarchy,
)
from pyromodels.experiments.bhmc.paper_numbers import ANIMAL_CLASS_NAMES, ANIMAL_CLASSES
from pyromodels.metrics import aid, aod, node_statistics


def _assert_same_up_to_column_sign(a, b, tol=1e-10):
    a, b = np.asarray(a), np.asarray(b)
    signs = np.sign((a * b).sum(0))
    assert (signs != 0).all()
    np.testing.assert_allclose(a, b * signs, atol=tol, rtol=0)


@pytest.mark.parametrize("seed", range(3))
def test_pca_agrees_with_sklearn_and_fixes_signs(seed):
    x = np.random.default_rng(seed).normal(size=(40, 9)) @ np.diag(np.arange(9, 0, -1))
    scores, comps, ratio = pca(torch.from_numpy(x), 4)
    ref = PCA(4, svd_solver="full").fit(x)
    _assert_same_up_to_column_sign(scores, ref.transform(x))
    np.testing.assert_allclose(ratio, ref.explained_variance_ratio_, rtol=1e-12)
    lead = comps.abs().argmax(1)
    assert bool((comps[torch.arange(4), lead] > 0).all())
    # The sign rule makes the components depend on the data only: negated data, permuted rows.
    _, comps_neg, _ = pca(torch.from_numpy(-x), 4)
    torch.testing.assert_close(comps_neg, comps, rtol=0, atol=1e-12)
    perm = np.random.default_rng(seed + 10).permutation(40)
    scores_perm, comps_perm, _ = pca(torch.from_numpy(x[perm]), 4)
    torch.testing.assert_close(comps_perm, comps, rtol=0, atol=1e-12)
    torch.testing.assert_close(scores_perm, scores[perm], rtol=0, atol=1e-10)


def test_pca_bad_input():
    with pytest.raises(ValueError, match="n_components must be an integer <= 3"):
        pca(torch.zeros(3, 5), 4)
    with pytest.raises(ValueError, match="n_components must be an integer >= 1"):
        pca(torch.zeros(3, 5), 0)
    with pytest.raises(ValueError, match="x must be 2-dimensional"):
        pca(torch.zeros(5), 1)
    with pytest.raises(ValueError, match="x must be finite"):
        pca(torch.full((3, 2), math.nan), 1)


def test_animals_joined_to_table_1_by_name():
    data = animals()
    frame = load_animals()
    assert data.x.shape == (33, 7) and data.x.dtype == torch.float64
    assert data.names == tuple(frame.index)  # the data's row order, not Table 1's
    table = dict(ANIMAL_CLASSES)
    assert [data.class_names[c] for c in data.labels.tolist()] == [table[n] for n in data.names]
    assert data.class_names[data.labels[data.names.index("Chimp")]] == "land mammals"
    assert data.class_names[data.labels[data.names.index("Lion")]] == "predators"
    counts = Counter(data.class_names[c] for c in data.labels.tolist())
    assert counts == {"land mammals": 9, "predators": 5, "birds": 5, "water animals": 4,
                      "insects": 4, "mouse": 2, "fish": 2, "amphibians": 2}
    ref = PCA(7, svd_solver="full").fit(frame.to_numpy().astype(float))
    _assert_same_up_to_column_sign(data.x, ref.transform(frame.to_numpy().astype(float)))
    np.testing.assert_allclose(data.info["explained_variance_ratio"],
                               ref.explained_variance_ratio_, rtol=1e-10)


def test_animal_labels_that_do_not_match_the_rows_are_errors():
    renamed = tuple(("Chimpanzee", c) if n == "Chimp" else (n, c) for n, c in ANIMAL_CLASSES)
    with pytest.raises(ValueError, match=r"data rows without a label \['Chimp'\], labels "
                                         r"matching no data row \['Chimpanzee'\]"):
        animals(table=renamed)
    with pytest.raises(ValueError, match=r"labels matching no data row \[\]"):
        animals(table=ANIMAL_CLASSES[:-1])
    with pytest.raises(ValueError, match=r"table must name each animal once, repeated: \['Cow'\]"):
        animals(table=ANIMAL_CLASSES + (("Cow", "birds"),))
    with pytest.raises(ValueError, match=r"names must name each animal once, repeated: \['a'\]"):
        match_labels(["a", "a"], [("a", "x")], ("x",))
    unknown = tuple(("Cow", "mammals") if n == "Cow" else (n, c) for n, c in ANIMAL_CLASSES)
    with pytest.raises(ValueError, match=r"classes \['mammals'\] that are not in class_names"):
        animals(table=unknown)
    assert set(ANIMAL_CLASS_NAMES) == {c for _, c in ANIMAL_CLASSES}


def test_balanced_subset():
    labels = torch.tensor([0, 1, 2] * 7 + [2, 2])
    idx = balanced_subset(labels, 5, torch.Generator().manual_seed(3))
    assert idx.tolist() == sorted(idx.tolist()) and len(set(idx.tolist())) == 15
    assert Counter(labels[idx].tolist()) == {0: 5, 1: 5, 2: 5}
    again = balanced_subset(labels, 5, torch.Generator().manual_seed(3))
    other = balanced_subset(labels, 5, torch.Generator().manual_seed(4))
    assert torch.equal(idx, again) and not torch.equal(idx, other)
    with pytest.raises(ValueError, match="class 0 has 7 items, fewer than n_per_class = 8"):
        balanced_subset(labels, 8, torch.Generator())
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        balanced_subset(labels, 2, 0)


def _images(n_per_class=15, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(10), n_per_class)
    rng.shuffle(labels)
    return rng.integers(0, 256, size=(len(labels), 28, 28)).astype(np.uint8), labels


def test_images_to_hierarchy_data_is_pca_of_the_scaled_subset():
    images, labels = _images()
    data = images_to_hierarchy_data(images, labels, n_per_class=10, seed=1, n_components=10)
    idx = np.array(data.info["indices"])
    assert data.x.shape == (100, 10)
    assert Counter(data.labels.tolist()) == {c: 10 for c in range(10)}
    np.testing.assert_array_equal(data.labels.numpy(), labels[idx])
    assert data.names[0] == f"image[{idx[0]}]" and data.class_names == FASHION_MNIST_CLASSES
    pixels = images[idx].reshape(100, -1) / 255.0
    _assert_same_up_to_column_sign(data.x, PCA(10, svd_solver="full").fit_transform(pixels))
    same = images_to_hierarchy_data(images, labels, n_per_class=10, seed=1)
    assert torch.equal(same.x, data.x)


@pytest.mark.parametrize(
    ("images", "labels", "match"),
    [
        (np.zeros((4,)), np.zeros(4), r"images must have shape \(M, H, W\) or \(M, H \* W\)"),
        (np.full((4, 2, 2), 256), np.zeros(4), "images must hold pixel values in 0..255"),
        (np.zeros((4, 2, 2)), np.zeros(3), r"labels must have shape \(4,\) \(one per image\)"),
        (np.zeros((4, 2, 2)), np.array([0, 1, 2, 10]), r"labels must lie in 0..9"),
    ],
)
def test_images_bad_input(images, labels, match):
    with pytest.raises(ValueError, match=match):
        images_to_hierarchy_data(images, labels, n_per_class=1, n_components=1)


def _idx(arr):
    header = bytes([0, 0, 0x08, arr.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
    return header + arr.astype(np.uint8).tobytes()


def test_fashion_mnist_reads_the_t10k_files(tmp_path):
    images, labels = _images(n_per_class=12, seed=5)
    for part, arr, ndim in (("images", images, 3), ("labels", labels, 1)):
        (tmp_path / f"t10k-{part}-idx{ndim}-ubyte.gz").write_bytes(gzip.compress(_idx(arr)))
    data = fashion_mnist(path=tmp_path, seed=2)
    ref = images_to_hierarchy_data(images, labels, 10, 2, 10, prefix="t10k")
    assert torch.equal(data.x, ref.x) and data.names == ref.names
    assert data.names[0].startswith("t10k[") and data.info["source"] == "Fashion-MNIST t10k split"


def test_planted_hierarchy_geometry_and_truth():
    data = planted_hierarchy(n_top=2, n_sub=3, n_per_leaf=200, dim=5, top_distance=8.0,
                             sub_distance=4.0, noise=1.0, seed=0)
    tree = Tree.from_paths(data.true_paths)
    assert tree.children(0) == (1, 2) and tree.children(1) == (3, 4, 5)
    assert tree.children(2) == (6, 7, 8)
    assert torch.equal(data.labels, data.true_paths[:, 2] - 3)
    assert data.info["top_labels"] == (data.true_paths[:, 1] - 1).tolist()
    centres = torch.unique(data.info["centres"], dim=0)
    d2 = torch.cdist(centres, centres).square()
    assert sorted({round(v, 9) for v in d2.flatten().tolist()}) == [0.0, 16.0, 64.0, 80.0]
    # Within a leaf the mean squared pair distance estimates 2 D sigma^2 = 10. Per leaf the
    # estimate 2 * sum_d s_d^2 (unbiased variances, n = 200) has variance 8 D / (n - 1) = 0.201;
    # the mean of the 6 leaves has sd sqrt(0.201 / 6) = 0.183: allow 5 sd = 0.92.
    stats = node_statistics(data.x, data.true_paths)
    leaves = stats.inner[stats.level == 2]
    assert abs(float(leaves.mean()) - 10.0) < 0.92
    # The truth scores better than the same tree with its data shuffled.
    shuffled = data.true_paths[torch.randperm(1200, generator=torch.Generator().manual_seed(1))]
    assert aid(data.x, data.true_paths) < aid(data.x, shuffled)
    assert aod(data.x, data.true_paths) > aod(data.x, shuffled)


def test_planted_hierarchy_seeds_and_bad_input():
    a, b = planted_hierarchy(seed=0), planted_hierarchy(seed=0)
    assert torch.equal(a.x, b.x) and not torch.equal(a.x, planted_hierarchy(seed=1).x)
    with pytest.raises(ValueError, match=r"dim must be >= n_top \+ n_sub = 5"):
        planted_hierarchy(dim=4)
    with pytest.raises(ValueError, match="noise must be"):
        planted_hierarchy(noise=0.0)
    with pytest.raises(TypeError, match="n_per_leaf must be an integer"):
        planted_hierarchy(n_per_leaf=2.0)
    with pytest.raises(ValueError, match="n_top must be an integer >= 1"):
        planted_hierarchy(n_top=0)


def test_fashion_mnist_real_files_when_installed():
    try:
        data = fashion_mnist()
    except FileNotFoundError:
        pytest.skip("Fashion-MNIST IDX files are not installed")
    from pyromodels.data import load_fashion_mnist

    _, y = load_fashion_mnist(kind="t10k")
    assert data.x.shape == (100, 10)
    np.testing.assert_array_equal(data.labels.numpy(), y[data.info["indices"]])
    assert Counter(data.labels.tolist()) == {c: 10 for c in range(10)}
