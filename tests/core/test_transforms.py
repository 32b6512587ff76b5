import pyro.distributions as dist
import torch
from torch.distributions import biject_to, constraints

from pyromodels.conjugate.random import sample_wishart
from pyromodels.core import VechToPositiveDefinite


def test_registered_for_positive_definite():
    assert isinstance(biject_to(constraints.positive_definite), VechToPositiveDefinite)


def test_round_trip_and_jacobian_against_autograd():
    t = VechToPositiveDefinite()
    torch.manual_seed(0)
    for d in (1, 2, 4):
        u = torch.randn(d * (d + 1) // 2)
        m = t(u)
        assert torch.allclose(t.inv(m), u, atol=1e-10)
        assert torch.linalg.eigvalsh(m).min() > 0
        rows, cols = torch.tril_indices(d, d)
        jac = torch.autograd.functional.jacobian(lambda v, r=rows, c=cols: t(v)[r, c], u)
        assert torch.allclose(torch.logdet(jac), t.log_abs_det_jacobian(u, m), atol=1e-10)


def test_shapes_batch():
    t = VechToPositiveDefinite()
    u = torch.randn(5, 3, 6)
    assert t(u).shape == (5, 3, 3, 3)
    assert t.forward_shape((5, 6)) == (5, 3, 3) and t.inverse_shape((5, 3, 3)) == (5, 6)


def test_round_trip_on_wishart_draws():
    w = dist.Wishart(torch.tensor(5.0), covariance_matrix=torch.tensor([[1.0, 0.3], [0.3, 2.0]]))
    t = biject_to(w.support)
    # Bartlett draws: torch's own Wishart sampler warns about valid draws
    tril = torch.linalg.cholesky(w.covariance_matrix).expand(2000, 2, 2)
    draws = sample_wishart(w.df, tril, torch.Generator().manual_seed(0)).to(torch.float32)
    assert torch.allclose(t(t.inv(draws)), draws, atol=1e-8)
