"""Checks for people who write their own models: is each hand-written path the program's?

* :func:`check_conditional` -- condition-and-score: a Gibbs block's conditional log density
  minus the program's log joint must be constant in the block's sites.
* :func:`check_discrete_conditional` -- the same for a discrete block, by brute force over
  every value of one element.
* :func:`assert_monotone` -- an objective (EM's) never moves the wrong way.
* :func:`assert_engines_agree` -- engines give the same statistic within a tolerance.
* :func:`geweke_test` -- "getting it right": a Gibbs sweep plus a data simulator must
  reproduce the prior joint (Geweke 2004).
* :func:`sbc_test` -- simulation-based calibration: the rank of a prior draw among the
  posterior draws fitted to its simulated data must be uniform (Talts et al. 2018).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from pyro import poutine
from pyro.poutine.util import site_is_subsample

from .checks import check_bool, check_int
from .core.gibbs import GibbsBlock, GibbsSweep
from .core.progress import progress_bar
from .core.seeding import derive_seed, make_generator, seeded

__all__ = [
    "check_conditional",
    "check_discrete_conditional",
    "assert_monotone",
    "assert_engines_agree",
    "simulate_joint",
    "assert_draws_scored_apart",
    "geweke_test",
    "GewekeResult",
    "assert_mc_mean",
    "sbc_test",
    "SBCResult",
    "rank_statistic",
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


def assert_draws_scored_apart(model, data, draws: list, site: str, plated) -> None:
    """Under a plate of ``len(draws)`` draws left of the program's plates, each draw's
    ``site`` is scored with that draw's values: its ``log_prob`` row equals the unbatched
    program's at that draw (to 1e-12). A program that indexes a site drawn outside every plate
    by plain indexing, not ``Vindex``, scores every draw against every other instead.

    Args:
        model: a pyromodels model (its ``model(data)`` and ``max_plate_nesting``).
        data: its prepared data.
        draws: joint draws of every site (``simulate_joint``).
        site: the observed site to compare.
        plated: the sites drawn inside a plate (stacked as they are); the others get a
            size-one dimension per plate of the program, as Pyro lays them out.
    """
    import pyro

    num, nesting = len(draws), model.max_plate_nesting

    def batched(d):
        with pyro.plate("draws", num, dim=-nesting - 1):
            model.model(d)

    values = {}
    for name in draws[0]:
        stacked = torch.stack([d[name] for d in draws])
        if name not in plated:
            stacked = stacked.reshape((num,) + (1,) * nesting + tuple(stacked.shape[1:]))
        values[name] = stacked
    tr = poutine.trace(poutine.condition(batched, data=values)).get_trace(data)
    got = tr.nodes[site]["fn"].log_prob(tr.nodes[site]["value"])
    for s, draw in enumerate(draws):
        one = poutine.trace(poutine.condition(model.model, data=draw)).get_trace(data)
        want = one.nodes[site]["fn"].log_prob(one.nodes[site]["value"])
        assert got[s].shape == want.shape, (tuple(got.shape), tuple(want.shape))
        torch.testing.assert_close(got[s], want, rtol=0, atol=1e-12)


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


class SBCResult:
    """The ranks of a simulation-based calibration run and their chi-square test.

    Attributes:
        names: the quantities' names.
        ranks: ``(num_replicates, num_quantities)`` integer ranks in ``0..num_draws``.
        num_draws: ``L``, the posterior draws each true value was ranked among.
        num_bins: ``B``, the rank bins of the test.
        counts: ``(num_quantities, B)`` replicates per bin.
        statistics: each quantity's chi-square statistic (``B - 1`` degrees of freedom).
        p_values: each quantity's p-value.
        alpha: the family-wise level; ``threshold = alpha / num_quantities`` (Bonferroni).
    """

    def __init__(self, names, ranks, num_draws, num_bins, alpha):
        from scipy.stats import chi2

        self.names = list(names)
        self.ranks = np.asarray(ranks, dtype=np.int64)
        self.num_draws, self.num_bins, self.alpha = int(num_draws), int(num_bins), float(alpha)
        width = (self.num_draws + 1) // self.num_bins
        self.counts = np.stack([np.bincount(r // width, minlength=self.num_bins) for r in self.ranks.T])
        expected = len(self.ranks) / self.num_bins
        self.statistics = ((self.counts - expected) ** 2 / expected).sum(1)
        self.p_values = chi2.sf(self.statistics, self.num_bins - 1)

    @property
    def threshold(self) -> float:
        """The per-quantity level: ``alpha`` split across the quantities."""
        return self.alpha / len(self.names)

    @property
    def passed(self) -> bool:
        """No quantity's p-value falls below :attr:`threshold`."""
        return bool(np.all(self.p_values >= self.threshold))

    def __repr__(self):
        rows = ", ".join(f"{n}: p={p:.3g}" for n, p in zip(self.names, self.p_values))
        return (f"SBCResult(passed={self.passed}, replicates={len(self.ranks)}, draws={self.num_draws}, "
                f"bins={self.num_bins}, threshold={self.threshold:.3g}, {rows})")


def rank_statistic(truth, draws, rng: np.random.Generator) -> np.ndarray:
    """The rank of each true value among its draws, ties broken at random.

    The rank of ``t`` among ``x_1..x_L`` is ``#{x_l < t} + U`` with ``U`` uniform on
    ``0..#{x_l = t}``, so a discrete quantity whose true value equals some draws gets a uniform
    rank too when the draws and the truth share a law.

    Args:
        truth: ``(Q,)`` true values.
        draws: ``(L, Q)`` draws.
        rng: the generator of the tie-breaking.

    Returns:
        ``(Q,)`` integer ranks in ``0..L``.
    """
    truth, draws = np.asarray(truth, dtype=np.float64), np.asarray(draws, dtype=np.float64)
    less = (draws < truth).sum(0)
    ties = (draws == truth).sum(0)
    return less + rng.integers(0, ties + 1)


def _quantity_vector(quantities, values: dict, what: str, size: int | None) -> np.ndarray:
    out = quantities(values)
    q = np.asarray(out.detach().cpu() if isinstance(out, torch.Tensor) else out, dtype=np.float64)
    if q.ndim != 1 or q.size == 0 or (size is not None and q.size != size):
        want = "a non-empty 1-D vector" if size is None else f"a 1-D vector of {size} values"
        raise ValueError(f"quantities({what}) must return {want}, got shape {tuple(q.shape)}")
    if not np.all(np.isfinite(q)):
        raise ValueError(f"quantities({what}) returned a value that is not finite: {q}")
    return q


def _pooled_draws(result, num_draws: int) -> dict:
    samples = getattr(result, "samples", None)
    if samples is not None:  # a Posterior: (chain, draw, ...), chains pooled
        samples = {k: v.reshape((-1,) + tuple(v.shape[2:])) for k, v in samples.items()}
    elif isinstance(result, dict):
        samples = {k: torch.as_tensor(v) for k, v in result.items()}
    else:
        raise TypeError(f"sampler must return a Posterior or a dict {{site: draws}}, got "
                        f"{type(result).__name__}")
    for name, v in samples.items():
        if v.dim() == 0 or v.shape[0] != num_draws:
            raise ValueError(f"sampler returned {tuple(v.shape)} draws of site {name!r}; expected "
                             f"num_draws={num_draws} along the first axis (chains and draws pooled)")
    return samples


def sbc_test(
    model,
    *args,
    sampler: Callable[[tuple, int], object],
    observed: Callable[[dict], tuple],
    quantities: Callable[[dict], torch.Tensor],
    names=None,
    num_replicates: int = 100,
    num_draws: int = 19,
    num_bins: int = 5,
    alpha: float = 1e-3,
    seed: int = 0,
    model_kwargs: dict | None = None,
    progress: bool = True,
) -> SBCResult:
    """Simulation-based calibration (Talts et al. 2018) of a sampler for a Pyro program.

    Each replicate draws the latent sites ``theta`` and the data ``y`` from the program (the
    prior predictive, seeded), fits ``y`` with ``sampler`` to get ``L = num_draws`` posterior
    draws, and ranks each scalar quantity of interest at ``theta`` among its ``L`` values at the
    draws (:func:`rank_statistic`; ties, as in a discrete quantity, broken at random with a
    seeded generator). When the sampler draws from the posterior and its ``L`` draws are
    independent, each rank is uniform on ``0..L``. The ranks are counted in ``B = num_bins``
    equal bins and each quantity gets a chi-square test of uniformity (``B - 1`` degrees of
    freedom, expected count ``num_replicates / B``). The thresholds are fixed in advance: the
    run fails when some p-value is below ``alpha / num_quantities`` (Bonferroni), so a correct,
    independent sampler fails with probability at most ``alpha`` (``1e-3`` by default) up to
    the chi-square approximation. Draws that are still autocorrelated pile the ranks at the
    ends: thin a Markov chain until its kept draws are close to independent.

    Args:
        model: the Pyro program, called as ``model(*args, **model_kwargs)``.
        *args: arguments that fix its sizes; their observed values are replaced each replicate.
        sampler: ``sampler(args, seed) -> posterior`` fits the program to the arguments
            ``args`` (a tuple) with its own ``seed``; returns a
            :class:`~pyromodels.core.Posterior` (chains and draws pooled) or a dict
            ``{site: (L, ...) draws}``, ``L = num_draws``.
        observed: ``observed(values) -> args``: the program's positional arguments holding the
            simulated data, from the dict of every simulated site.
        quantities: ``quantities(values) -> (Q,)`` scalar quantities of the latent sites
            (applied to the simulated truth and to each draw; use label-invariant quantities
            where the posterior is symmetric in labels).
        names: the quantities' names (default ``q[0], q[1], ...``).
        num_replicates: ``R`` simulated data sets; at least 5 per bin.
        num_draws: ``L`` draws per fit; ``L + 1`` must be a multiple of ``num_bins``.
        num_bins: ``B`` bins, at least 2.
        alpha: the family-wise level, in ``(0, 1)``.
        seed: the seed of the simulations, the fits (each replicate's derived from it) and the
            tie-breaking.
        model_kwargs: the program's keyword arguments (not simulated).
        progress: show a bar over the replicates (when standard error is a terminal).

    Returns:
        An :class:`SBCResult` (``passed``, ``p_values``, ``ranks``, ``counts``).

    Raises:
        TypeError: ``model``, ``sampler``, ``observed`` or ``quantities`` not callable, or a
            sampler returning neither a Posterior nor a dict.
        ValueError: bad sizes (``(L + 1) % B != 0``, fewer than 5 replicates per bin), an
            ``alpha`` outside ``(0, 1)``, a program without latent sites, quantities that are
            not a finite 1-D vector of fixed length, or draws not ``(L, ...)``.

    Example:
        >>> import pyro, pyro.distributions as dist
        >>> def normal(y):
        ...     mu = pyro.sample("mu", dist.Normal(0.0, 1.0))
        ...     pyro.sample("y", dist.Normal(mu, 1.0), obs=y)
        >>> def exact(args, seed):
        ...     g = make_generator(seed)
        ...     return {"mu": args[0] / 2 + torch.randn(9, generator=g) * 0.5 ** 0.5}
        >>> result = sbc_test(normal, torch.tensor(0.0), sampler=exact,
        ...                   observed=lambda v: (v["y"],), quantities=lambda v: v["mu"][None],
        ...                   num_replicates=50, num_draws=9, num_bins=5)
        >>> result.passed
        True
    """
    from .checks import check_probability
    from .core.bound import CallableModel, ModelArgs

    for fn, what in ((model, "model"), (sampler, "sampler"), (observed, "observed"),
                     (quantities, "quantities")):
        if not callable(fn):
            raise TypeError(f"{what} must be callable, got {type(fn).__name__}")
    num_replicates = check_int(num_replicates, "num_replicates", minimum=1)
    num_draws = check_int(num_draws, "num_draws", minimum=1)
    num_bins = check_int(num_bins, "num_bins", minimum=2)
    seed = check_int(seed, "seed", minimum=0)
    progress = check_bool(progress, "progress")
    alpha = check_probability(alpha, "alpha")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if (num_draws + 1) % num_bins:
        raise ValueError(f"num_draws + 1 must be a multiple of num_bins (ranks take num_draws + 1 "
                         f"values), got num_draws={num_draws}, num_bins={num_bins}")
    if num_replicates < 5 * num_bins:
        raise ValueError(f"num_replicates must be at least 5 * num_bins = {5 * num_bins} for the "
                         f"chi-square test, got {num_replicates}")
    bound = ModelArgs(args, dict(model_kwargs or {}))
    program = CallableModel(model, bound)
    with seeded(0), torch.no_grad():
        trace = poutine.trace(model).get_trace(*bound.args, **bound.kwargs)
    latent = [n for n, s in trace.nodes.items()
              if s["type"] == "sample" and not s["is_observed"] and not site_is_subsample(s)]
    if not latent:
        raise ValueError("the model has no latent sample sites: there is nothing to calibrate")
    rng = np.random.default_rng(derive_seed(seed, "sbc", "ties"))
    ranks, size = [], None
    with progress_bar(num_replicates, "SBC replicates", progress) as bar:
        for r in range(num_replicates):
            simulate_seed = derive_seed(seed, "sbc", "simulate", r)
            fit_seed = derive_seed(seed, "sbc", "fit", r)
            with seeded(simulate_seed):
                values = simulate_joint(program, bound)
            truth = _quantity_vector(quantities, {k: values[k] for k in latent}, "truth", size)
            if size is None:
                size = truth.size
                names = [f"q[{i}]" for i in range(size)] if names is None else list(names)
                if len(names) != size:
                    raise ValueError(f"names must give one name per quantity ({size}), got {len(names)}")
            new_args = observed(values)
            if not isinstance(new_args, tuple):
                raise TypeError(f"observed must return the program's positional arguments as a "
                                f"tuple, got {type(new_args).__name__}")
            draws = _pooled_draws(sampler(new_args, fit_seed), num_draws)
            at = np.stack([_quantity_vector(quantities, {k: v[i] for k, v in draws.items()},
                                            "a draw", size) for i in range(num_draws)])
            ranks.append(rank_statistic(truth, at, rng))
            bar.update()
    return SBCResult(names, np.stack(ranks), num_draws, num_bins, alpha)
