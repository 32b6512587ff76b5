"""Simplex projection and simplex-constrained least squares against brute force and SLSQP."""

import itertools

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from pyromodels.crowd.moments.simplex import (
    frank_wolfe_gap,
    project_rows,
    project_simplex,
    quadratic_value,
    simplex_least_squares,
)


def _brute_projection(v):
    """Try every support: on support S the projection is v_S - (sum v_S - 1) / |S|."""
    best, best_d = None, np.inf
    for size in range(1, len(v) + 1):
        for support in itertools.combinations(range(len(v)), size):
            x = np.zeros_like(v)
            s = list(support)
            x[s] = v[s] - (v[s].sum() - 1) / size
            if (x >= -1e-15).all():
                d = ((x - v) ** 2).sum()
                if d < best_d:
                    best, best_d = x, d
    return best


@pytest.mark.parametrize("dim", [1, 2, 3, 5, 6])
def test_projection_matches_brute_force(dim):
    rng = np.random.default_rng(dim)
    v = rng.normal(scale=2.0, size=(40, dim))
    v[0] = 1.0 / dim  # already on the simplex
    if dim > 1:
        v[1] = 0.7  # ties
    got = project_simplex(torch.from_numpy(v)).numpy()
    for row, x in zip(v, got):
        np.testing.assert_allclose(x, _brute_projection(row), atol=1e-12)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-12)


def test_projection_works_on_any_leading_shape():
    v = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    flat = project_simplex(v.reshape(-1, 5)).reshape(3, 4, 5)
    torch.testing.assert_close(project_simplex(v), flat, rtol=0, atol=0)


def _random_psd(rng, n, rank=None):
    a = rng.normal(size=(n, rank or n))
    return torch.from_numpy(a @ a.T)


def _slsqp(left, right, target):
    r, d = target.shape
    L, R, H = left.numpy(), right.numpy(), target.numpy()

    def f(v):
        x = v.reshape(r, d)
        return float((x * (L @ x @ R)).sum() - 2 * (x * H).sum())

    def grad(v):
        x = v.reshape(r, d)
        return (2 * (L @ x @ R) - 2 * H).ravel()

    cons = [{"type": "eq", "fun": (lambda v, i=i: v.reshape(r, d)[i].sum() - 1),
             "jac": (lambda v, i=i: np.eye(r)[i][:, None].repeat(d, 1).ravel())}
            for i in range(r)]
    res = minimize(f, np.full(r * d, 1.0 / d), jac=grad, method="SLSQP",
                   bounds=[(0, None)] * (r * d), constraints=cons,
                   options={"ftol": 1e-15, "maxiter": 1000})
    return res.fun


@pytest.mark.parametrize("seed", range(4))
def test_least_squares_reaches_the_slsqp_optimum(seed):
    rng = np.random.default_rng(seed)
    r, d = 3, 4
    left, right = _random_psd(rng, r), _random_psd(rng, d, rank=2 + seed % 3)
    target = torch.from_numpy(rng.normal(size=(r, d)))
    start = torch.full((r, d), 1.0 / d, dtype=torch.float64)
    x, gap, _ = simplex_least_squares(left, right, target, start, tol=1e-13, max_iter=20000)
    value = float(quadratic_value(x, left, right, target))
    reference = _slsqp(left, right, target)
    assert gap <= 1e-13
    # The Frank-Wolfe gap bounds the distance to the optimum, and SLSQP cannot beat it.
    assert value <= reference + 1e-9 * max(1, abs(reference))
    assert reference >= value - 1e-12 - 1e-9 * abs(value)
    torch.testing.assert_close(x.sum(-1), torch.ones(r, dtype=torch.float64))
    assert float(x.min()) >= 0


def test_gap_certificate_bounds_the_suboptimality():
    rng = np.random.default_rng(7)
    left, right = _random_psd(rng, 2), _random_psd(rng, 3)
    target = torch.from_numpy(rng.normal(size=(2, 3)))
    start = torch.full((2, 3), 1.0 / 3, dtype=torch.float64)
    best, _, _ = simplex_least_squares(left, right, target, start, tol=1e-14, max_iter=20000)
    f_best = float(quadratic_value(best, left, right, target))
    for it in [0, 1, 2, 5]:
        x, gap, _ = simplex_least_squares(left, right, target, start, tol=1e-14, max_iter=it)
        value = float(quadratic_value(x, left, right, target))
        grad = 2 * (left @ x @ right - target)
        assert abs(gap - float(frank_wolfe_gap(x, grad))) < 1e-12
        assert value - f_best <= gap + 1e-12


def test_iterates_never_raise_the_objective():
    rng = np.random.default_rng(3)
    left, right = _random_psd(rng, 3), torch.eye(3, dtype=torch.float64)
    target = torch.from_numpy(rng.normal(size=(3, 3)))
    start = project_simplex(torch.from_numpy(rng.normal(size=(3, 3))))
    values = []
    for i in range(30):
        x = simplex_least_squares(left, right, target, start, max_iter=i)[0]
        values.append(float(quadratic_value(x, left, right, target)))
    assert all(b <= a + 1e-15 for a, b in zip(values, values[1:]))


def test_rows_left_out_by_the_quadratic_go_to_their_best_vertex():
    left = torch.tensor([[2.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    target = torch.tensor([[0.2, 0.9, 0.1], [0.1, 0.3, 0.5]], dtype=torch.float64)
    start = torch.full((2, 3), 1.0 / 3, dtype=torch.float64)
    x, gap, _ = simplex_least_squares(left, torch.eye(3, dtype=torch.float64), target, start)
    assert x[1].tolist() == [0.0, 0.0, 1.0]
    # row 0: minimise 2 |x|^2 - 2 <x, h>, i.e. project h / 2 onto the simplex
    torch.testing.assert_close(x[0], project_simplex(target[0] / 2), rtol=0, atol=1e-12)
    assert gap <= 1e-13


@pytest.mark.parametrize("centre", [2.0**60, -(2.0**60), 1e17])
def test_projection_is_exact_for_rows_far_from_the_simplex(centre):
    # Offsets that are multiples of 512 are exact at |centre| <= 2^60 (spacing 256), so
    # v - centre is exact and the projection must equal the brute-force one of the offsets
    # (the projection commutes with adding a constant to a row); the brute force itself rounds
    # at 512 * eps, hence atol 1e-13.
    offsets = np.array([[0.0, 0.0, -512.0], [512.0, 512.0, 512.0], [-1024.0, 512.0, 0.0]])
    got = project_simplex(torch.from_numpy(centre + offsets)).numpy()
    for row, x in zip(offsets, got):
        np.testing.assert_allclose(x, _brute_projection(row), rtol=0, atol=1e-13)
    assert got[0].tolist() == [0.5, 0.5, 0.0]


def test_projection_refuses_non_finite_rows():
    v = torch.tensor([[0.2, 0.8], [float("nan"), 0.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"the step must be finite: found 1 NaN or infinite"):
        project_rows(v, "the step")
    with pytest.raises(ValueError, match=r"v must be finite: found 2 NaN or infinite"):
        project_rows(torch.tensor([[float("inf"), -float("inf")]], dtype=torch.float64))


def _block_with_small_class(tiny):
    """A confusion block of the moment fit, ``L = pi pi^T * V`` and ``H = pi[:, None] * B``,
    where class 2 has prior ``tiny``: its row of ``L`` is O(tiny^2), its row of ``H`` O(tiny)."""
    f64 = dict(dtype=torch.float64)
    prior = torch.tensor([0.6, 0.4 - tiny, tiny], **f64)
    v = torch.tensor([[2.0, 1.0, 0.5], [1.0, 2.0, 0.5], [0.5, 0.5, 2.0]], **f64)
    b = torch.tensor([[1.5, 0.2, 0.3], [0.1, 1.2, 0.7], [0.3, 0.3, 1.4]], **f64)
    return prior, v, b, torch.outer(prior, prior) * v, prior[:, None] * b


# 1e-17: the row's step moves it by ~1e17, where the unshifted projection lost the "- 1" of its
# threshold to rounding (rho = 0); 1e-100: L_rr^2 underflows, which made the Jacobi scaling
# sqrt(L_rr L_rr) zero; 1e-160: L_rr is subnormal and 1 / (lip L_rr) overflows.
@pytest.mark.parametrize("tiny", [1e-17, 1e-100, 1e-160])
def test_rows_with_a_tiny_diagonal_are_solved(tiny):
    prior, v, b, left, target = _block_with_small_class(tiny)
    right, start = torch.eye(3, dtype=torch.float64), torch.full((3, 3), 1 / 3, dtype=torch.float64)
    x, gap, _ = simplex_least_squares(left, right, target, start, tol=1e-14, max_iter=500)
    assert bool(torch.isfinite(x).all()) and float(x.min()) >= 0
    torch.testing.assert_close(x.sum(-1), torch.ones(3, dtype=torch.float64), rtol=0, atol=1e-14)
    assert gap <= 1e-14
    # Rows 0 and 1 solve the problem without class 2 up to O(tiny): compare with SLSQP on it.
    reference = _slsqp(left[:2, :2], right, target[:2])
    assert abs(float(quadratic_value(x, left, right, target)) - reference) <= 1e-9
    # Row 2 minimises tiny^2 V_22 |x|^2 + 2 tiny <x, c>, c = sum_s pi_s V_2s x_s - B_2: as
    # tiny -> 0 that is the vertex of the smallest c (a margin of 0.1375 here).
    c = (prior[:2, None] * v[2, :2, None] * x[:2]).sum(0) - b[2]
    assert float(torch.sort(c).values[1] - c.min()) > 0.1
    assert x[2].tolist() == torch.nn.functional.one_hot(c.argmin(), 3).double().tolist()


def test_a_step_that_overflows_is_refused():
    left = torch.diag(torch.tensor([1.0, 1e-320], dtype=torch.float64))
    target = torch.tensor([[0.5, 0.5, 0.0], [1e10, 0.0, 0.0]], dtype=torch.float64)
    start = torch.full((2, 3), 1 / 3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"gradient step .* must be finite"):
        simplex_least_squares(left, torch.eye(3, dtype=torch.float64), target, start)
