r"""Euclidean projection onto the probability simplex and simplex-constrained least squares.

The projection of :math:`v \in \mathbb R^D` onto :math:`\{x \ge 0, \sum_j x_j = 1\}` is
:math:`x_j = \max(v_j - \theta, 0)` with the threshold :math:`\theta` found by sorting
(Duchi, Shalev-Shwartz, Singer & Chandra 2008, Fig. 1): with :math:`u` sorted decreasingly,
:math:`\rho = \max\{r : u_r - (\sum_{s \le r} u_s - 1)/r > 0\}` and
:math:`\theta = (\sum_{s \le \rho} u_s - 1)/\rho`. Here it runs on every row of a matrix at
once.

:func:`simplex_least_squares` minimises the convex quadratic

.. math::
    f(X) = \langle X, L X R \rangle - 2 \langle X, H \rangle

over matrices :math:`X` whose rows each lie on a simplex (``L`` and ``R`` symmetric positive
semi-definite). Every block of the moment-matching fits has this form: a confusion block
(``L`` = Gram matrix of the design, ``R = I``), the class prior and the joint law of two
consecutive labels (one row, ``L = [1]``, ``R`` = the Hessian). It runs accelerated projected
gradient (FISTA, Beck & Teboulle 2009) with function-value restarts (O'Donoghue & Candès
2015): a step that would raise the objective is discarded and the momentum reset, so the
iterates never go uphill (beyond rounding). Steps are row-wise, :math:`1/(\mathrm{Lip}\,
L_{rr})` with :math:`\mathrm{Lip} = 2\lambda_{\max}(D^{-1/2} L D^{-1/2})\lambda_{\max}(R)`,
:math:`D = \mathrm{diag}(L)` (a diagonal metric over rows keeps the projection row-wise
Euclidean). A row with a tiny :math:`L_{rr}` (in the moment fits, a class whose prior is a
rounding residue such as :math:`10^{-32}`) has almost no curvature, and its step moves it by
about :math:`|H_r| / L_{rr}`, far outside the simplex: the projection lands on the vertex or face
that minimises the row's linear part, where the row's minimiser goes as :math:`L_{rr} \to 0`.
The projection is computed shift-invariantly so that such rows are projected accurately
(:func:`project_rows`), and the scaling avoids products of two small diagonal entries, which
underflow. The solver stops on the Frank–Wolfe gap
:math:`g(X) = \langle \nabla f(X), X\rangle - \sum_r \min_j \nabla f(X)_{rj}`, which bounds
:math:`f(X) - \min f` from above (convexity), so the tolerance is a certificate.
"""

from __future__ import annotations

import torch

from ...checks import as_float_tensor, check_finite, check_int, check_positive

__all__ = ["project_simplex", "simplex_least_squares", "quadratic_value", "frank_wolfe_gap"]

_STEP = ("the gradient step Y - 2 (L Y R - H) / (lip L_rr) of simplex_least_squares (a diagonal "
         "entry of left too small for its row of target)")


def project_rows(v: torch.Tensor, name: str = "v") -> torch.Tensor:
    r"""Row-wise projection onto the simplex (last axis), for finite rows of any magnitude.

    The projection commutes with adding a constant to a row, so each row is first shifted by
    its maximum: with :math:`w = v - \max_j v_j` the sorted row starts at :math:`u_1 = 0`, and
    the test for :math:`r = 1`, :math:`u_1 - (u_1 - 1)/1 = 1 > 0`, holds exactly however large
    the entries are. (Unshifted, a row whose entries are about :math:`2^{53}` or more in
    absolute value loses the :math:`-1` to rounding, no index passes the test and
    :math:`\rho` would be 0.) So :math:`\rho \ge 1` and :math:`\theta \in [-1, 0]` for every
    finite row.

    Only the shapes are assumed; the values are checked: a row holding NaN or an infinity
    has no projection.

    Args:
        v: ``(..., D)`` floating tensor, ``D >= 1``.
        name: what ``v`` is, for the error message.

    Raises:
        ValueError: ``v`` holds NaN or infinite values.

    Example:
        >>> project_rows(torch.tensor([[1e17, 1e17, -1e17]], dtype=torch.float64)).tolist()
        [[0.5, 0.5, 0.0]]
    """
    check_finite(v, name)
    w = v - v.amax(-1, keepdim=True)
    u = torch.sort(w, dim=-1, descending=True).values
    css = torch.cumsum(u, -1) - 1
    r = torch.arange(1, v.shape[-1] + 1, dtype=v.dtype, device=v.device)
    rho = (u - css / r > 0).sum(-1, keepdim=True)
    theta = css.gather(-1, rho - 1) / rho.to(v.dtype)
    return (w - theta).clamp_min(0)


def project_simplex(v) -> torch.Tensor:
    r"""Euclidean projection of each row (last axis) of ``v`` onto the probability simplex.

    Args:
        v: finite array-like ``(..., D)``, ``D >= 1``.

    Returns:
        Tensor of the same shape, every row non-negative and summing to one: the closest such
        row in Euclidean distance.

    Example:
        >>> project_simplex(torch.tensor([[0.25, 1.0, 0.5], [2.0, 0.0, -1.0]])).tolist()
        [[0.0, 0.75, 0.25], [1.0, 0.0, 0.0]]
    """
    x = as_float_tensor(v, "v")
    if x.dim() == 0:
        raise ValueError("v must have at least one dimension (the simplex axis)")
    return project_rows(x)


def quadratic_value(x, left, right, target) -> torch.Tensor:
    """``<X, L X R> - 2 <X, H>`` (a 0-dim tensor)."""
    return (x * (left @ x @ right - 2 * target)).sum()


def frank_wolfe_gap(x, grad) -> torch.Tensor:
    """``<grad, X> - sum over rows of min_j grad``: an upper bound on ``f(X) - min f``."""
    return (grad * x).sum() - grad.amin(-1).sum()


def simplex_least_squares(left, right, target, start, *, tol: float = 1e-13,
                          max_iter: int = 1000) -> tuple[torch.Tensor, float, int]:
    r"""Minimise :math:`\langle X, L X R\rangle - 2\langle X, H\rangle` over row-simplex ``X``.

    Args:
        left: ``(R, R)`` symmetric PSD matrix ``L``.
        right: ``(D, D)`` symmetric PSD matrix ``R``.
        target: ``(R, D)`` matrix ``H``.
        start: ``(R, D)`` feasible starting point (rows on the simplex).
        tol: stop once the Frank–Wolfe gap (an upper bound on the distance to the optimal
            value) is ``<= tol``.
        max_iter: iteration budget.

    Returns:
        ``(X, gap, iterations)``. The objective never increases along the iterations (up to
        its rounding error), so ``f(X) <= f(start)``. Rows with ``L[r, r] = 0`` do not enter
        the quadratic; they go to the vertex of their largest ``H`` entry (or stay put when
        ``H[r]`` is constant). Rows with a tiny positive ``L[r, r]`` (down to the smallest
        subnormal) are solved like the others: their long steps are projected accurately.

    Raises:
        ValueError: a gradient step is not finite: some ``L[r, r] > 0`` is so small against
            ``H[r]`` that ``|H[r]| / L[r, r]`` overflows (rescale the problem, or set the row
            and column ``r`` of ``left`` to zero to make the row linear).

    Example:
        >>> f64 = dict(dtype=torch.float64)
        >>> x, gap, _ = simplex_least_squares(torch.eye(1, **f64), torch.eye(2, **f64),
        ...                                   torch.tensor([[0.9, 0.3]], **f64),
        ...                                   torch.tensor([[0.5, 0.5]], **f64))
        >>> [round(v, 6) for v in x[0].tolist()], gap < 1e-12
        ([0.8, 0.2], True)
    """
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", minimum=0)
    diag = torch.diagonal(left)
    flat = diag <= 0  # rows L leaves out (L PSD): linear in X, minimised at a vertex
    x = start
    if bool(flat.any()):
        spread = target.amax(-1) > target.amin(-1)
        vertex = torch.zeros_like(x).scatter_(-1, target.argmax(-1, keepdim=True), 1.0)
        x = torch.where((flat & spread)[:, None], vertex, x)
    lx = left @ x @ right
    gap = float(frank_wolfe_gap(x, 2 * (lx - target)))
    if gap <= tol or bool(flat.all()):
        return x, max(gap, 0.0), 0
    # Jacobi scaling by s = sqrt(diag): dividing by s_r and s_c in turn rather than by
    # sqrt(L_rr L_cc) keeps the product of two small diagonals from underflowing to 0.
    s = torch.sqrt(torch.where(flat, torch.ones_like(diag), diag))
    scaled = left / s[:, None] / s[None, :]
    lip = 2 * float(torch.linalg.eigvalsh(scaled)[-1]) * float(torch.linalg.eigvalsh(right)[-1])
    if lip <= 0:
        return x, max(gap, 0.0), 0
    # The gradient is divided by lip * L_rr rather than multiplied by its reciprocal, which
    # overflows for a subnormal L_rr; rows left out divide by infinity and stay put.
    denom = torch.where(flat, torch.full_like(diag, float("inf")), lip * diag)[:, None]
    value = float((x * (lx - 2 * target)).sum())
    # Changes below the rounding error of the objective count as ties, so that the iterates
    # keep moving once the objective has converged to machine precision.
    size = float((x * lx).abs().sum() + 2 * (x * target).abs().sum())
    slack = 16 * torch.finfo(x.dtype).eps * size
    # y is a linear combination of iterates, so L y R is the same combination of theirs.
    y, ly, t = x, lx, 1.0
    for it in range(1, max_iter + 1):
        z = project_rows(y - 2 * (ly - target) / denom, _STEP)
        lz = left @ z @ right
        value_z = float((z * (lz - 2 * target)).sum())
        if value_z <= value + slack:
            t_next = (1 + (1 + 4 * t * t) ** 0.5) / 2
            beta = (t - 1) / t_next
            y, ly = z + beta * (z - x), lz + beta * (lz - lx)
            x, lx, value, t = z, lz, value_z, t_next
        else:  # adaptive restart: drop the momentum and step from the best point
            y, ly, t = x, lx, 1.0
        gap = float(frank_wolfe_gap(x, 2 * (lx - target)))
        if gap <= tol:
            return x, max(gap, 0.0), it
    return x, max(gap, 0.0), max_iter
