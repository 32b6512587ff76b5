r"""Gibbs sampling of the DP mixture as a model engine: ``DPMixture.fit(method="gibbs")``.

Three samplers of the same posterior over partitions, picked by ``algorithm``:

* ``3``: Neal's Algorithm 3, the cluster parameters integrated out (collapsed);
* ``2``: Neal's Algorithm 2, the parameters instantiated and redrawn after each sweep (the DDPM
  paper's sampler, eqs. 22-24);
* ``"blocked"``: the blocked sampler of the model truncated at ``truncation`` sticks (Ishwaran
  and James), every label drawn at once.

Each chain starts from ``init``: ``"sequential"`` (default) seats the points one after another,
each drawn from its collapsed conditional given the points before it
(:func:`~pyromodels.bnp.sequential_init`), which on separated clusters lands near the
posterior's partition in one pass; ``"one"`` puts every point in one cluster. The data, prior
and settings are checked once per chain (:func:`~pyromodels.bnp.chain_sweeps`,
:func:`~pyromodels.bnp.blocked_chain`), never inside a sweep. With a flow the sampler runs on
``z = f(y)`` with the flow held fixed (:func:`~pyromodels.ddpm.mcem.fit_mcem` trains it).

Draws are recorded as label-invariant quantities and canonical labels: ``c`` is each point's
cluster numbered ``0, 1, ...`` in order of first appearance (so two draws of one partition are
equal), ``num_clusters`` and ``alpha``; ``sample_stats["lp"]`` is the collapsed log joint
``log p(z, c)`` of the CRP model (the parameters integrated out), comparable across the three
samplers.

Example:
    >>> import torch
    >>> from pyromodels.ddpm import DPMixture, DPMixturePrior
    >>> g = torch.Generator().manual_seed(0)
    >>> z = torch.cat([torch.randn(30, 2, generator=g, dtype=torch.float64) - 4,
    ...                torch.randn(30, 2, generator=g, dtype=torch.float64) + 4])
    >>> model = DPMixture(DPMixturePrior(kappa0=0.05, alpha0=2.0, beta0=2.0))
    >>> post = model.fit(z, method="gibbs", algorithm=3, num_warmup=5, num_samples=10,
    ...                  num_chains=1, seed=0, progress=False)
    >>> post["c"].shape, int(post["num_clusters"][0, -1])
    (torch.Size([1, 10, 60]), 2)
"""

from __future__ import annotations

import time

import torch

from ..bnp import (
    blocked_chain,
    blocked_init,
    canonical_labels,
    chain_sweeps,
    collapsed_log_joint,
    init_state,
    sequential_init,
)
from ..checks import check_bool, check_in, check_int, check_positive
from ..core.diagnostic_warnings import warn_sampling_problems
from ..core.parallel import check_n_jobs, resolve_n_jobs, run_jobs
from ..core.posterior import Posterior, make_attrs, stack_chains
from ..core.progress import progress_bar
from ..core.seeding import derive_seed, make_generator, resolve_seed
from ..core.threads import with_fit_threads

__all__ = ["fit_gibbs", "GIBBS_ALGORITHMS", "GIBBS_INITS"]

#: ``algorithm`` values and the sampler each names
GIBBS_ALGORITHMS = {2: "alg2", 3: "alg3", "blocked": "blocked"}
GIBBS_INITS = ("sequential", "one")


def _check_alpha_prior(alpha_prior):
    if alpha_prior is None:
        return None
    if not isinstance(alpha_prior, tuple) or len(alpha_prior) != 2:
        raise TypeError(f"alpha_prior must be a (shape, rate) tuple or None, got {alpha_prior!r}")
    return tuple(check_positive(v, f"alpha_prior[{i}]") for i, v in enumerate(alpha_prior))


def _start_labels(z, base, alpha, gen, init, backend, paper_literal) -> torch.Tensor:
    if init == "one":
        return torch.zeros(z.shape[0], dtype=torch.int64)
    return sequential_init(z, base, alpha, gen, "alg3", backend, paper_literal).assignments


def _neal_chain(z, base, alpha, gen, sampler, init, total, opts):
    """Yield ``(labels (N,) ids, alpha)`` after each sweep of Algorithm 2 or 3."""
    if init == "one":
        state = init_state(z, torch.zeros(z.shape[0], dtype=torch.int64), base, gen,
                           algorithm=sampler)
    else:
        state = sequential_init(z, base, alpha, gen, sampler, opts["backend"],
                                opts["paper_literal"])
    for current, a in chain_sweeps(z, state, base, alpha, gen, total, sampler, **opts):
        yield current.assignments, a


def _blocked_chain(z, base, alpha, gen, init, total, truncation, opts):
    """Yield ``(labels (N,), alpha)`` after each blocked sweep."""
    labels = _start_labels(z, base, alpha, gen, init, opts["backend"], opts["paper_literal"])
    k = int(labels.max()) + 1
    if k > truncation:
        raise ValueError(f"the start holds {k} clusters, more than truncation = {truncation}: "
                         "pass a larger truncation")
    state = blocked_init(z, labels, base, alpha, truncation, gen)
    for current in blocked_chain(z, state, base, gen, total, resample_alpha=opts["alpha_prior"]):
        yield current.labels, float(current.alpha)


def _dp_chain(task, shared) -> tuple[dict, torch.Tensor]:
    """One chain of :func:`fit_gibbs` from its own seed: its kept draws and collapsed log
    joints (a :func:`~pyromodels.core.parallel.run_jobs` function)."""
    chain_seed, bar = task
    z, base, alpha, opts = shared["z"], shared["base"], shared["alpha"], shared["opts"]
    num_warmup, thin, total = shared["num_warmup"], shared["thin"], shared["total"]
    gen = make_generator(chain_seed)
    if shared["sampler"] == "blocked":
        steps = _blocked_chain(z, base, alpha, gen, shared["init"], total, shared["truncation"],
                               opts)
    else:
        steps = _neal_chain(z, base, alpha, gen, shared["sampler"], shared["init"], total, opts)
    kept = {"c": [], "num_clusters": [], "alpha": []}
    lp = []
    for t, (labels, a) in enumerate(steps):
        if bar is not None:
            bar.update()
        if t < num_warmup or (t - num_warmup) % thin:
            continue
        labels = canonical_labels(labels)
        kept["c"].append(labels)
        kept["num_clusters"].append(int(labels.max()) + 1)
        kept["alpha"].append(float(a))
        lp.append(float(collapsed_log_joint(z, labels, base, a)))
    return ({"c": torch.stack(kept["c"]), "num_clusters": torch.tensor(kept["num_clusters"]),
             "alpha": torch.tensor(kept["alpha"], dtype=torch.float64)},
            torch.tensor(lp, dtype=torch.float64))


@with_fit_threads(data="x")
def fit_gibbs(model, x: torch.Tensor, *, algorithm=3, num_samples: int = 200,
              num_warmup: int = 50, num_chains: int = 2, thin: int = 1, seed: int | None = None,
              init: str = "sequential", truncation: int = 50,
              alpha_prior: tuple[float, float] | None = None, backend: str = "auto",
              paper_literal: bool = False, progress: bool = True,
              num_threads: int | None = None, diagnostic_warnings: bool = True,
              n_jobs: int | None = None) -> Posterior:
    """Gibbs sampling of a :class:`~pyromodels.ddpm.DPMixture` (see the module doc).

    Args:
        model: the :class:`~pyromodels.ddpm.DPMixture` (its prior and flow).
        x: ``(N, d)`` observed points, prepared by the model (``y`` with a flow).
        algorithm: ``3`` (collapsed, default), ``2`` or ``"blocked"``.
        num_samples: kept draws per chain (>= 1).
        num_warmup: discarded sweeps per chain (>= 0).
        num_chains: chains, each with its own seed derived from ``seed``.
        thin: keep every ``thin``-th sweep after warm-up.
        seed: the fit's seed (``None`` draws one; recorded in ``attrs``).
        init: ``"sequential"`` or ``"one"`` (module doc).
        truncation: sticks of the blocked sampler (ignored otherwise); the start must not
            hold more clusters.
        alpha_prior: ``(shape, rate)`` of a Gamma hyperprior on the concentration, redrawn
            after each sweep; ``None`` keeps the prior's ``alpha``.
        backend: ``"auto"``, ``"numba"`` or ``"torch"`` for Algorithms 2 and 3 and the
            sequential start.
        paper_literal: the new-cluster weight of eq. 24 as printed.
        progress: show a progress bar over the sweeps.
        num_threads: CPU threads of the fit: ``None`` (default) chooses them for the data's
            size, never more than the caller's ``torch.get_num_threads()``; an integer
            ``>= 1`` fixes them (see :mod:`pyromodels.core.threads`).
        diagnostic_warnings: after the fit, emit a
            :class:`~pyromodels.core.SamplingWarning` when R-hat or the effective sample size
            of the label-invariant draws (``num_clusters`` and ``alpha``) says they are not yet reliable (see
            :mod:`pyromodels.core.diagnostic_warnings`); ``False`` silences it.
        n_jobs: chains run at once, joblib's meaning (``None``: one after another, or the
            ``n_jobs`` of an enclosing ``joblib.parallel_config``; ``-1``: all cores; see
            :mod:`pyromodels.core.parallel`); the result does not depend on it.

    Returns:
        A :class:`~pyromodels.core.Posterior` with ``method="gibbs"``: samples ``c``
        ``(chain, draw, N)`` int64 canonical labels, ``num_clusters`` ``(chain, draw)``
        int64, ``alpha`` ``(chain, draw)``; ``sample_stats["lp"]`` the collapsed log joint;
        ``attrs`` with the seed, ``algorithm`` and ``init``.

    Raises:
        ValueError / TypeError: a bad setting (named); a start with more clusters than
            ``truncation`` (blocked).
    """
    start = time.perf_counter()
    check_in(algorithm, "algorithm", tuple(GIBBS_ALGORITHMS))
    if isinstance(algorithm, bool):
        raise TypeError("algorithm must be 2, 3 or 'blocked', got a bool")
    sampler = GIBBS_ALGORITHMS[algorithm]
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    num_warmup = check_int(num_warmup, "num_warmup", minimum=0)
    num_chains = check_int(num_chains, "num_chains", minimum=1)
    n_jobs = check_n_jobs(n_jobs)
    thin = check_int(thin, "thin", minimum=1)
    truncation = check_int(truncation, "truncation", minimum=1)
    check_in(init, "init", GIBBS_INITS)
    check_bool(progress, "progress")
    check_in(backend, "backend", ("auto", "numba", "torch"))
    check_bool(paper_literal, "paper_literal")
    diagnostic_warnings = check_bool(diagnostic_warnings, "diagnostic_warnings")
    opts = {"backend": backend, "paper_literal": paper_literal,
            "alpha_prior": _check_alpha_prior(alpha_prior)}
    seed = resolve_seed(seed)
    z = model.transform(x)[0].detach().to(device="cpu", dtype=torch.float64)
    prior = model.prior_for(z)
    base = prior.normal_gamma(z.shape[1], data=z)
    alpha = prior.alpha
    total = num_warmup + num_samples * thin
    workers = resolve_n_jobs(n_jobs)
    shared = {"z": z, "base": base, "alpha": alpha, "sampler": sampler, "init": init,
              "total": total, "truncation": truncation, "opts": opts,
              "num_warmup": num_warmup, "thin": thin}
    with progress_bar(num_chains * total, f"DP mixture gibbs ({sampler})",
                      progress and workers == 1) as bar:
        tasks = [(derive_seed(seed, "chain", c), bar if workers == 1 else None)
                 for c in range(num_chains)]
        out = run_jobs(_dp_chain, tasks, n_jobs=n_jobs, shared=shared, progress=progress,
                       desc=f"DP mixture gibbs ({sampler}) chains",
                       labels=[f"chain {c}" for c in range(num_chains)])
    chains, lps = [c for c, _ in out], [lp for _, lp in out]
    extra = {"truncation": truncation} if sampler == "blocked" else {}
    return warn_sampling_problems(Posterior(
        samples=stack_chains(chains),
        method="gibbs",
        sample_stats={"lp": torch.stack(lps)},
        diagnostics={"algorithm": str(algorithm), "init": init},
        attrs=make_attrs("gibbs", seed, "cpu", start, algorithm=str(algorithm), init=init,
                         num_warmup=num_warmup, thin=thin,
                         label_invariant_sites=["num_clusters", "alpha"], **extra),
        model=model,
        data=x,
    ), diagnostic_warnings)
