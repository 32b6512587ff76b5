"""The stationary law of a Markov chain against an eigenvector and against long runs."""

import pytest
import torch

from pyromodels.conjugate.markov import stationary_distribution
from pyromodels.data import simulate_sequential_annotations


def test_stationary_law_is_the_left_eigenvector_of_eigenvalue_one():
    g = torch.Generator().manual_seed(0)
    transition = torch.softmax(torch.randn(3, 5, 5, generator=g, dtype=torch.float64), -1)
    pi = stationary_distribution(transition)
    for a, p in zip(transition, pi, strict=True):
        vals, vecs = torch.linalg.eig(a.T)
        v = vecs[:, torch.argmin((vals - 1).abs())].real
        torch.testing.assert_close(p, v / v.sum(), rtol=0, atol=1e-12)
        torch.testing.assert_close(p @ a, p, rtol=0, atol=1e-14)


def test_reducible_chains_are_an_error_with_and_without_the_hmm_hint():
    from pyromodels.crowd.hmm import stationary_distribution as hmm_stationary

    eye = torch.eye(3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"no unique stationary distribution \(the chain is "
                                         r"reducible or degenerate\)$"):
        stationary_distribution(eye)
    with pytest.raises(ValueError, match="use initial='learned' or 'fixed'"):
        hmm_stationary(eye)
    with pytest.raises(ValueError, match="no unique stationary distribution"):
        simulate_sequential_annotations([10], 2, 3, transition=eye, seed=0)
