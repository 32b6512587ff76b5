"""The BIC of latent tree models: the free-parameter count by hand (spec ltvae.md §3.5)."""

import math

import pytest
import torch

from pyromodels.trees import (
    LatentTree,
    TreeParams,
    free_parameters,
    sample_tree,
    tree_bic,
    tree_log_likelihood,
)


def test_a_gaussian_mixture_with_one_pouch():
    tree = LatentTree.single(3, 2, pouch=True)
    # root 3 - 1; pouch: 3 states x (2 means + 3 covariance entries)
    assert free_parameters(tree) == 2 + 3 * (2 + 3) == 17
    assert free_parameters(tree, "fixed") == 2 + 3 * 2 == 8


def test_a_two_level_tree():
    tree = LatentTree.from_edges({"A": 3, "B": 2}, [("A", "B")],
                                 [("A", [0, 1, 2]), ("B", [3]), ("B", [4, 5])])
    root, cpt = 3 - 1, 3 * (2 - 1)
    pouch_a = 3 * (3 + 6)  # d = 3: 3 means, 6 covariance entries
    pouch_b1 = 2 * (1 + 1)
    pouch_b2 = 2 * (2 + 3)
    assert free_parameters(tree) == root + cpt + pouch_a + pouch_b1 + pouch_b2 == 46
    assert free_parameters(tree, "fixed") == root + cpt + 3 * 3 + 2 * 1 + 2 * 2 == 20


def test_bic_is_the_log_likelihood_less_half_the_count_times_log_n():
    tree = LatentTree.from_edges({"A": 3, "B": 2}, [("A", "B")],
                                 [("A", [0, 1, 2]), ("B", [3]), ("B", [4, 5])])
    params = TreeParams.random(tree, torch.Generator().manual_seed(0))
    z, _ = sample_tree(params, 250)
    loglik = float(tree_log_likelihood(params, z).sum())
    assert tree_bic(params, z) == pytest.approx(loglik - 23 * math.log(250), rel=1e-14)
    assert tree_bic(params, z, "fixed") == pytest.approx(loglik - 10 * math.log(250),
                                                          rel=1e-14)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="tree"):
        free_parameters("Y")
    with pytest.raises(ValueError, match="covariance"):
        free_parameters(LatentTree.single(2, 1), "diagonal")
    with pytest.raises(TypeError, match="params"):
        tree_bic(LatentTree.single(2, 1), torch.zeros(3, 1))
