"""Checks for people who write their own models: is each hand-written path the program's?

* :func:`check_conditional` -- condition-and-score: a Gibbs block's conditional log density
  minus the program's log joint must be constant in the block's sites.
* :func:`check_discrete_conditional` -- the same for a discrete block, by brute force over
  every value of one element.
* :func:`assert_monotone` -- an objective (EM's) never moves the wrong way.
* :func:`assert_engines_agree` -- engines give the same statistic within a tolerance.
* :func:`geweke_test` -- "getting it right": a Gibbs sweep plus a data simulator must
  reproduce the prior joint (Geweke 2004).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from pyro import poutine
from pyro.poutine.util import site_is_subsample

from .checks import check_int
from .core.gibbs import GibbsBlock, GibbsSweep
from .core.seeding import make_generator, seeded

__all__ = [
    "check_conditional",
    "check_discrete_conditional",
    "assert_monotone",
    "assert_engines_agree",
    "simulate_joint",
    "geweke_test",
    "GewekeResult",
    "assert_mc_mean",
]


def _block_values(block: GibbsBlock, state, data, num_values: int, seed: int) -> list[dict]:
    gen = make_generator(seed)
    values = []
    for _ in range(num_values):
        new = block(state, data, gen)
        values.append({**state, **new})
    return values


def check_conditional(model, data, block: GibbsBlock, state: dict, num_values: int = 5, seed: int = 0):
    """Condition-and-score for a block with a ``log_density``.

    Draws ``num_values`` values of the block's sites from the block itself and returns the
    spread (max - min) of ``log_density(values) - model.log_joint(values)`` over them, which is
    zero (to rounding) when the block's conditional is the program's.
    """
    if block.log_density is None:
        raise ValueError(f"block {block.name!r} has no log_density to check")
    num_values = check_int(num_values, "num_values", minimum=2)
    diffs = []
    for full in _block_values(block, state, data, num_values, seed):
        own = block.log_density({k: full[k] for k in block.sites}, full, data)
        diffs.append(float(own) - float(model.log_joint(data, full)))
    return max(diffs) - min(diffs)


def check_discrete_conditional(model, data, block: GibbsBlock, state: dict, site: str, index, support):
    """Brute force for one element of a discrete site: the block's conditional probabilities of
    ``state[site][index]`` against the normalised joint over every value in ``support``.

    Returns ``(block_probs, joint_probs)`` as float64 tensors over ``support``.
    """
    if block.log_density is None:
        raise ValueError(f"block {block.name!r} has no log_density to check")
    own, joint = [], []
    for v in support:
        value = state[site].clone()
        value[index] = v
        full = {**state, site: value}
        own.append(float(block.log_density({k: full[k] for k in block.sites}, full, data)))
        joint.append(float(model.log_joint(data, full)))
    own = torch.tensor(own, dtype=torch.float64)
    joint = torch.tensor(joint, dtype=torch.float64)
    return torch.softmax(own, 0), torch.softmax(joint, 0)


def assert_monotone(history, direction: str = "increase", rtol: float = 1e-10) -> None:
    """Raise ``AssertionError`` at the first step where ``history`` moves the wrong way by more
    than ``rtol * max(1, |value|)``."""
    h = [float(v) for v in history]
    for i in range(1, len(h)):
        change = h[i] - h[i - 1] if direction == "increase" else h[i - 1] - h[i]
        if change < -rtol * max(1.0, abs(h[i - 1])):
            raise AssertionError(
                f"objective should {direction} but went from {h[i - 1]!r} to {h[i]!r} at step {i}"
            )


def assert_engines_agree(values: dict, tol: float, reference: str | None = None) -> None:
    """Raise unless every engine's statistic is within ``tol`` (max absolute difference) of the
    reference engine's (default: the first)."""
    names = list(values)
    ref = reference or names[0]
    base = torch.as_tensor(values[ref], dtype=torch.float64)
    bad = []
    for name in names:
        diff = float((torch.as_tensor(values[name], dtype=torch.float64) - base).abs().max())
        if diff > tol:
            bad.append(f"{name} differs from {ref} by {diff:.4g}")
    if bad:
        raise AssertionError(f"engines disagree beyond tol={tol}: " + "; ".join(bad))


def simulate_joint(model, data, latents: dict | None = None) -> dict:
    """One draw of every sample site from the program (observed sites simulated too).

    With ``latents``, those sites are held fixed and the rest drawn given them.
    """
    fn = poutine.uncondition(model.model)
    if latents:
        fn = poutine.condition(fn, data=latents)
    with torch.no_grad():
        tr = poutine.trace(fn).get_trace(data)
    return {
        n: s["value"] for n, s in tr.nodes.items() if s["type"] == "sample" and not site_is_subsample(s)
    }


class GewekeResult:
    """Per-statistic z-scores of the Geweke test, with the threshold they are judged against."""

    def __init__(self, names, z, threshold, marginal_means, successive_means):
        self.names = list(names)
        self.z = np.asarray(z)
        self.threshold = float(threshold)
        self.marginal_means = np.asarray(marginal_means)
        self.successive_means = np.asarray(successive_means)

    @property
    def passed(self) -> bool:
        return bool(np.all(np.abs(self.z) < self.threshold))

    def __repr__(self):
        rows = ", ".join(f"{n}: z={z:+.2f}" for n, z in zip(self.names, self.z))
        return f"GewekeResult(passed={self.passed}, threshold={self.threshold:.2f}, {rows})"


def _batch_means_se(x: np.ndarray, num_batches: int = 40) -> np.ndarray:
    n = (len(x) // num_batches) * num_batches
    b = x[:n].reshape(num_batches, -1, *x.shape[1:]).mean(1)
    return b.std(0, ddof=1) / math.sqrt(num_batches)


def geweke_test(
    model,
    data,
    stats: Callable[[dict], torch.Tensor],
    *,
    observed: Callable[[object, dict], object],
    sweep: GibbsSweep | None = None,
    num_marginal: int = 2000,
    num_successive: int = 4000,
    num_burn: int = 100,
    family_alpha: float = 1e-3,
    seed: int = 0,
) -> GewekeResult:
    """Geweke's joint-distribution test of a Gibbs sweep.

    The marginal-conditional simulator draws ``(theta, y)`` from the program independently;
    the successive-conditional simulator alternates ``y ~ p(y | theta)`` (the program) and one
    sweep ``theta ~ p(theta | y)``. Both target the same joint, so the means of ``stats`` must
    agree. Each statistic's z-score uses the i.i.d. standard error for the first simulator and
    a batch-means standard error (40 batches) for the autocorrelated second one. The threshold
    is the two-sided normal quantile at ``family_alpha`` split across the statistics
    (Bonferroni), so a correct sampler fails with probability at most ``family_alpha``.

    Args:
        model: a model object (program and ``gibbs_sweep``).
        data: prepared data fixing the sizes and the prior.
        stats: ``stats(values) -> 1-D tensor`` of test functions of a full draw.
        observed: ``observed(data, values) -> new data`` with the simulated observations.
        sweep: the sweep under test (default ``model.gibbs_sweep(data)``).
    """
    from scipy.stats import norm

    sweep = sweep if sweep is not None else model.gibbs_sweep(data)
    gen = make_generator(seed)
    with seeded(seed):
        marg = np.stack([stats(simulate_joint(model, data)).double().numpy() for _ in range(num_marginal)])
        values = simulate_joint(model, data)
        succ = []
        latent = set(sweep.sites)
        for it in range(num_burn + num_successive):
            theta = {k: v for k, v in values.items() if k in latent}
            values = simulate_joint(model, data, theta)
            new_data = observed(data, values)
            theta = sweep(theta, new_data, gen)
            values = {**values, **theta}
            if it >= num_burn:
                succ.append(stats(values).double().numpy())
    succ = np.stack(succ)
    se = np.sqrt(marg.var(0, ddof=1) / len(marg) + _batch_means_se(succ) ** 2)
    z = (succ.mean(0) - marg.mean(0)) / se
    threshold = norm.ppf(1 - family_alpha / (2 * marg.shape[1]))
    names = [f"stat[{i}]" for i in range(marg.shape[1])]
    return GewekeResult(names, z, threshold, marg.mean(0), succ.mean(0))


def assert_mc_mean(samples, exact, n_se: float = 5.0) -> None:
    """Assert Monte Carlo means lie within ``n_se`` standard errors of the exact values.

    With ``N`` draws ``x_1..x_N`` along axis 0, the mean ``x_bar`` of each entry is compared
    with its exact value ``mu`` using the Monte Carlo standard error

    .. math::

        \\mathrm{se} = s / \\sqrt{N}, \\qquad
        s^2 = \\tfrac{1}{N - 1} \\sum_i (x_i - \\bar x)^2,

    and the check passes when ``|x_bar - mu| <= n_se * se`` for every entry. For a correct
    sampler each entry fails with probability about ``2 (1 - Phi(n_se))`` (``5.7e-7`` at the
    default ``n_se = 5``). A NaN mean fails.

    Args:
        samples: array-like (numpy array or CPU tensor) of shape ``(N, ...)``, ``N >= 2``.
        exact: the exact means, broadcastable to ``samples.shape[1:]``.
        n_se: the allowed number of standard errors (> 0).

    Raises:
        AssertionError: naming how many entries are off and the worst one (index, Monte Carlo
            mean, exact value, error in standard errors).
        ValueError: fewer than 2 draws, a non-positive ``n_se`` or an ``exact`` that does not
            broadcast to the shape of one draw.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> assert_mc_mean(rng.normal(1.0, 2.0, size=(10_000, 3)), [1.0, 1.0, 1.0])
    """
    from .checks import check_positive

    n_se = check_positive(n_se, "n_se")
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim < 1 or x.shape[0] < 2:
        raise ValueError(
            f"samples must hold at least 2 draws along axis 0, got shape {tuple(x.shape)}"
        )
    mean = x.mean(axis=0)
    target = np.asarray(exact, dtype=np.float64)
    try:
        target = np.broadcast_to(target, mean.shape)
    except ValueError:
        raise ValueError(
            f"exact must broadcast to the shape of one draw {mean.shape}, got shape {target.shape}"
        ) from None
    se = x.std(axis=0, ddof=1) / math.sqrt(x.shape[0])
    err = np.abs(mean - target)
    ok = err <= n_se * se
    if not np.all(ok):
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(np.isnan(err), np.inf, err / se)
        flat = int(np.argmax(np.where(ok, -np.inf, z)))
        worst = tuple(int(i) for i in np.unravel_index(flat, mean.shape))
        raise AssertionError(
            f"Monte Carlo mean is more than {n_se:g} standard errors from the exact value at "
            f"{int((~ok).sum())} of {ok.size} entries; worst at index {worst}: mean "
            f"{mean[worst]:.6g}, exact {target[worst]:.6g}, |error| {err[worst]:.3g} = "
            f"{z[worst]:.3g} standard errors of {se[worst]:.3g} (N = {x.shape[0]})"
        )
