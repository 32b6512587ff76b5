"""Parameters, points and sampling arguments: every malformed input raises a clear error."""

import numpy as np
import pytest
import torch

from pyromodels.trees import (
    LatentTree,
    TreeParams,
    prepare_points,
    sample_tree,
    tree_log_likelihood,
    tree_posterior,
)

TREE = LatentTree([2, 3], [None, 0], [[0, 1], [2]], [0, 1], names=["A", "B"])


def good():
    """Valid float64 parameters of TREE."""
    f64 = torch.float64
    return dict(root_probs=torch.tensor([0.4, 0.6], dtype=f64),
                cpts=[None, torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]], dtype=f64)],
                means=[torch.zeros(2, 2, dtype=f64), torch.zeros(3, 1, dtype=f64)],
                scale_trils=[torch.eye(2, dtype=f64).expand(2, 2, 2).clone(),
                             torch.ones(3, 1, 1, dtype=f64)])


def with_(**changes):
    return {**good(), **changes}


def test_good_parameters_are_accepted_by_index_or_name():
    a = TreeParams(TREE, **good())
    b = TreeParams(TREE, **with_(cpts={"B": good()["cpts"][1]}))
    assert torch.equal(a.cpts[1], b.cpts[1]) and a.cpts[0] is None
    assert a.dtype == torch.float64 and len(a.tensors()) == 6


BAD_PARAMS = [
    (lambda: with_(root_probs=torch.tensor([0.5, 0.6])), ValueError, "root_probs must .*sum to 1"),
    (lambda: with_(root_probs=torch.tensor([0.5, 0.3, 0.2])),
      ValueError, r"root_probs must have shape \(2,\)"),
    (lambda: with_(cpts=[None, torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.2, 0.3]])]), ValueError,
     r"cpts\['B'\] must have rows summing to 1"),
    (lambda: with_(cpts=[None, torch.full((3, 2), 0.5)]),
      ValueError, r"cpts\['B'\] must have shape \(2, 3\)"),
    (lambda: with_(cpts=[torch.tensor([0.4, 0.6]), good()["cpts"][1]]),
      ValueError, "must be None: 'A' is the root"),
    (lambda: with_(cpts=[None, None]), ValueError, "lacks the CPT of latent node 'B'"),
    (lambda: with_(cpts={"C": torch.eye(2)}), ValueError, r"unknown latent nodes \['C'\]"),
    (lambda: with_(cpts=[None]), ValueError, "one entry per latent node"),
    (lambda: with_(means=[torch.zeros(2, 2)]), ValueError, "means must have one entry per pouch"),
    (lambda: with_(means=[torch.zeros(2, 3), torch.zeros(3, 1)]),
      ValueError, r"means\[0\] must have shape \(2, 2\)"),
    (lambda: with_(means=[torch.full((2, 2), float("nan")), torch.zeros(3, 1)]),
      ValueError, r"means\[0\] must be finite"),
    (lambda: with_(means=torch.zeros(2, 2)), TypeError, "means must be a sequence"),
    (lambda: with_(scale_trils=[torch.ones(2, 2, 2), torch.ones(3, 1, 1)]),
      ValueError, "lower triangular"),
    (lambda: with_(scale_trils=[torch.eye(2).expand(2, 2, 2).clone(), -torch.ones(3, 1, 1)]),
      ValueError,
     r"scale_trils\[1\] must have a positive diagonal"),
    (lambda: with_(means=[torch.zeros(2, 2, dtype=torch.float32), good()["means"][1]]), ValueError,
     r"means\[0\] has dtype torch.float32"),
]


@pytest.mark.parametrize("kwargs,error,message", BAD_PARAMS)
def test_malformed_parameters_raise_clear_errors(kwargs, error, message):
    kwargs = kwargs()  # built inside the test, where float64 is the default dtype
    with pytest.raises(error, match=message):
        TreeParams(TREE, **kwargs)


def test_bad_covariances_and_random_arguments():
    g = good()
    with pytest.raises(ValueError, match=r"covariances\[0\] must be positive definite"):
        TreeParams.from_covariances(TREE, g["root_probs"], g["cpts"], g["means"],
                                    [torch.tensor([[[1.0, 2.0], [2.0, 1.0]]] * 2),
                                     torch.ones(3, 1, 1)])
    with pytest.raises(ValueError, match=r"covariances\[0\] must be symmetric"):
        TreeParams.from_covariances(TREE, g["root_probs"], g["cpts"], g["means"],
                                    [torch.tensor([[[1.0, 0.5], [0.0, 1.0]]] * 2),
                                     torch.ones(3, 1, 1)])
    with pytest.raises(TypeError, match="tree must be a LatentTree"):
        TreeParams.random("tree")
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        TreeParams.random(TREE, 0)
    with pytest.raises(ValueError, match="concentration must be > 0"):
        TreeParams.random(TREE, concentration=0.0)


def test_from_covariances_gives_the_cholesky_factors():
    params = TreeParams.random(TREE, torch.Generator().manual_seed(0))
    again = TreeParams.from_covariances(TREE, params.root_probs, params.cpts, params.means,
                                        params.covariances)
    for a, b in zip(again.scale_trils, params.scale_trils):
        assert torch.allclose(a, b, atol=1e-12)


def test_malformed_points_raise_clear_errors():
    params = TreeParams.random(TREE)
    with pytest.raises(ValueError, match="z must have 3 columns"):
        tree_log_likelihood(params, torch.zeros(4, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="z must be 2-dimensional"):
        tree_posterior(params, torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="z must be finite"):
        tree_log_likelihood(params, torch.tensor([[0.0, float("inf"), 0.0]]))
    with pytest.raises(ValueError, match="z has dtype torch.float32"):
        tree_log_likelihood(params, torch.zeros(2, 3, dtype=torch.float32))
    with pytest.raises(TypeError, match="params must be TreeParams"):
        prepare_points(TREE, torch.zeros(2, 3))
    with pytest.raises(TypeError, match="z must hold real numbers"):
        prepare_points(params, torch.zeros(2, 3, dtype=torch.bool))
    ok = prepare_points(params, np.zeros((2, 3), dtype=np.float32))
    assert ok.dtype == torch.float64


def test_bad_sampling_arguments():
    params = TreeParams.random(TREE)
    with pytest.raises(ValueError, match="num_samples must be an integer >= 1"):
        sample_tree(params, 0)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        sample_tree(params, 3, generator=1)
    with pytest.raises(ValueError, match="node 'C' is not a latent node"):
        sample_tree(params, 3, condition={"C": 0})
    with pytest.raises(ValueError, match=r"condition\['B'\] must be an integer <= 2"):
        sample_tree(params, 3, condition={"B": 3})
    with pytest.raises(TypeError, match="condition must be a mapping"):
        sample_tree(params, 3, condition=[("B", 0)])
    zero = TreeParams(TREE, **with_(cpts=[None, torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])]))
    with pytest.raises(ValueError, match="has probability 0"):
        sample_tree(zero, 3, condition={"B": 2})


def test_parameters_move_between_dtypes():
    params = TreeParams.random(TREE, torch.Generator().manual_seed(1))
    low = params.to(dtype=torch.float32)
    assert all(t.dtype == torch.float32 for t in low.tensors()) and low.tree == TREE
    with pytest.raises(TypeError, match="dtype must be a floating torch.dtype"):
        params.to(dtype=torch.int64)
    # float32 probabilities summing to 1 only within float32's rounding move to float64
    off = torch.tensor([0.4, 0.6000001], dtype=torch.float32)
    assert abs(float(off.double().sum()) - 1) > 1e-8
    single = {k: (v.float() if isinstance(v, torch.Tensor) else [None if t is None else
                                                                 t.float() for t in v])
              for k, v in with_(root_probs=off).items()}
    high = TreeParams(TREE, **single).to(dtype=torch.float64)
    assert high.root_probs.dtype == torch.float64
    torch.testing.assert_close(high.root_probs.sum(), torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(high.root_probs, off.double(), rtol=1e-6, atol=0)


def test_random_parameters_depend_only_on_the_generator():
    a = TreeParams.random(TREE, torch.Generator().manual_seed(5))
    torch.manual_seed(123)
    b = TreeParams.random(TREE, torch.Generator().manual_seed(5))
    c = TreeParams.random(TREE, torch.Generator().manual_seed(6))
    assert all(torch.equal(x, y) for x, y in zip(a.tensors(), b.tensors()))
    assert not torch.equal(a.means[0], c.means[0])


def test_the_pyro_program_needs_a_number_of_points_to_draw():
    from pyromodels.trees import tree_model

    params = TreeParams.random(TREE)
    with pytest.raises(TypeError, match="num_points must be an integer"):
        tree_model(params)
    with pytest.raises(ValueError, match="num_points must be an integer >= 1"):
        tree_model(params, None, 0)
    with pytest.raises(ValueError, match="num_points \\(3\\) contradicts z's 2 rows"):
        tree_model(params, torch.zeros(2, 3, dtype=torch.float64), 3)
