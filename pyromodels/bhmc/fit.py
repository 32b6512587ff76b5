r"""Fitting BHMC and RBHMC: chains of the samplers gathered into a
:class:`~pyromodels.core.Posterior` with label-invariant draws.

Node ids, component labels and the order of children are not identifiable, so the draws that
go to ArviZ are statistics that do not depend on them, recorded after every sweep
past warm-up:

==================  ====================  ===============================================
site                shape                 meaning
==================  ====================  ===============================================
``cdl``             ``(chain, draw)``     :math:`\log p(X, c, V \mid B, \Theta)` (Fig. 2)
``rcdl``            ``(chain, draw)``     CDL plus :math:`\sum_n -2C\max(0, \zeta_{n s_n})`
                                          (Sec. 4.5; RBHMC only)
``num_leaves``      ``(chain, draw)``     living leaves (level ``L``)
``nodes_per_level`` ``(chain, draw, L)``  living nodes at levels ``1..L``
==================  ====================  ===============================================

``sample_stats`` holds ``lp`` (the selection criterion: CDL for BHMC, RCDL for RBHMC) and
``acceptance_rate`` (of the path moves). The output hierarchy is the tree of highest criterion
after warm-up (Sec. 4.5), per chain and over all chains; ``params`` holds it with its weights,
components, labels (and RBHMC's ``eta``), plus the full traces including warm-up.

Chains run one after another, chain ``i`` from the seed ``derive_seed(seed, "chain", i)``; with
``checkpoint=`` each runs in pieces of ``checkpoint_every`` sweeps with the run's state written
after every piece, and ``resume=`` continues a written run to the same result
(:mod:`pyromodels.bhmc.resume`).

Example:
    >>> import torch
    >>> from pyromodels.bhmc import BHMC, BHMCPrior
    >>> model = BHMC(BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=4))
    >>> x = model.simulate(12, 2, torch.Generator().manual_seed(0)).x
    >>> post = model.fit(x, num_warmup=2, num_samples=3, num_chains=2, seed=0, progress=False)
    >>> post.samples["nodes_per_level"].shape, post.params["paths"].shape
    (torch.Size([2, 3, 2]), torch.Size([12, 3]))
"""

from __future__ import annotations

import functools
import time
import warnings

import torch

from ..checks import as_float_tensor, check_bool, check_in, check_int, check_positive
from ..core.checkpoint import Checkpointer, read_checkpoint
from ..core.diagnostic_warnings import warn_sampling_problems
from ..core.parallel import check_n_jobs, resolve_n_jobs, run_jobs
from ..core.posterior import Posterior, make_attrs
from ..core.progress import progress_bar
from ..core.seeding import derive_seed, make_generator, resolve_seed
from ..metrics import HierarchyMetricWarning, aid, aod
from .resume import run_config, run_pieces

__all__ = ["fit_bhmc", "run_chain"]


def run_chain(x: torch.Tensor, prior, num_warmup: int, num_samples: int, seed: int, C=None,
              eps0: float = 1.0, paper_literal: bool = False):
    """One chain of BHMC (``C is None``) or RBHMC of ``num_warmup + num_samples`` sweeps from
    ``make_generator(seed)``, the best state selected after ``num_warmup`` sweeps.

    Returns:
        The sampler's record (:class:`~pyromodels.bhmc.BHMCChain` or
        :class:`~pyromodels.bhmc.RBHMCChain`).
    """
    return run_pieces(x, prior, num_warmup, num_samples, make_generator(seed), None, C, eps0,
                      paper_literal)


def _piece_done(keeper, bar, records: list, chain: int, total: int, gen, shown: list,
                sweeps: int, record) -> None:
    """After a piece of chain ``chain``: advance the bar to ``sweeps`` (``shown[0]`` holds what
    it shows) and hand the run's state to the checkpointer."""
    bar.update(sweeps - shown[0])
    shown[0] = sweeps
    keeper.commit(chain * total + sweeps, {"records": list(records), "partial": record,
                                           "done": sweeps, "generator": gen.get_state()})


def _bhmc_chain(task, shared):
    """Chain ``i`` of :func:`fit_bhmc` from its own seed (or from the checkpoint's partial
    chain): the sampler's record (a :func:`~pyromodels.core.parallel.run_jobs` function)."""
    i, chain_seed, partial, report = task
    gen = make_generator(chain_seed)
    start, done = None, 0
    if partial is not None:  # the chain the checkpoint stopped in
        start, done = partial["partial"], partial["done"]
        gen.set_state(partial["generator"])
    if report is not None:
        report = functools.partial(report, gen, [done])
    return run_pieces(shared["x"], shared["prior"], shared["warm"], shared["draws"], gen,
                      shared["every"] if report is not None else None, shared["C"],
                      shared["eps0"], shared["paper_literal"], start, done, report)


def _run_chains(model, x, prior, warm, draws, chains, seed, C, eps0, paper_literal, progress,
                checkpoint, checkpoint_every, resume, n_jobs):
    """The records of every chain, in pieces of ``checkpoint_every`` sweeps with a checkpoint
    after each when they run in this process (see :mod:`pyromodels.bhmc.resume`), or after
    each chain with several workers; ``(seed, records)``."""
    config = run_config(prior, C, eps0, paper_literal, warm, draws, chains)
    saved = {"records": [], "partial": None, "done": 0, "generator": None}
    if resume is not None:
        seed, saved = read_checkpoint(resume, engine="bhmc", model=model, seed=seed,
                                      config=config, data=x)
    seed = resolve_seed(seed)
    keeper = Checkpointer(checkpoint, checkpoint_every, engine="bhmc", model=model, seed=seed,
                          config=config, data=x, build=lambda snapshot: snapshot)
    workers = resolve_n_jobs(n_jobs)
    records, total = list(saved["records"]), warm + draws
    first = len(records)
    shared = {"x": x, "prior": prior, "warm": warm, "draws": draws, "C": C, "eps0": eps0,
              "paper_literal": paper_literal,
              "every": checkpoint_every if keeper.enabled else None}
    label = "BHMC sweeps" if C is None else "RBHMC sweeps"
    with progress_bar(chains * total, label, progress and workers == 1) as bar:
        bar.update(first * total)
        tasks = [(i, derive_seed(seed, "chain", i),
                  saved if i == first and saved["partial"] is not None else None,
                  functools.partial(_piece_done, keeper, bar, records, i, total)
                  if workers == 1 else None)
                 for i in range(first, chains)]
        if tasks and tasks[0][2] is not None:
            bar.update(saved["done"])
        finished: dict = {}

        def on_result(index, record):  # the finished chains, in chain order
            finished[index] = record
            while len(records) - first in finished:
                records.append(finished.pop(len(records) - first))
                keeper.commit(len(records) * total, {"records": list(records),
                                                     "partial": None, "done": 0,
                                                     "generator": None})
                if workers > 1:
                    keeper.write()

        with keeper.guard():
            run_jobs(_bhmc_chain, tasks, n_jobs=n_jobs, shared=shared, progress=progress,
                     desc=label.replace("sweeps", "chains"),
                     labels=[f"chain {t[0]}" for t in tasks], on_result=on_result)
        keeper.write()
    return seed, records


def _tree_scores(x, paths) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HierarchyMetricWarning)
        return aid(x, paths), aod(x, paths)


def fit_bhmc(model, data, method: str = "gibbs", C=None, eps0: float | None = None,
             num_warmup: int = 200, num_samples: int = 500, num_chains: int = 2,
             seed: int | None = None, progress: bool = True, paper_literal: bool = False,
             device=None, checkpoint=None, checkpoint_every: int | None = None,
             resume=None, diagnostic_warnings: bool = True,
             n_jobs: int | None = None) -> Posterior:
    r"""Run ``num_chains`` chains of BHMC, or of RBHMC when ``C`` is given.

    Args:
        model: the :class:`~pyromodels.bhmc.BHMC` (its ``prior``).
        data: ``(N, D)`` observations.
        method: ``"gibbs"`` (the Metropolis-within-Gibbs samplers).
        C: regularisation constant ``> 0`` of RBHMC, or ``None`` for BHMC.
        eps0: margin :math:`\varepsilon_0 \ge 0` of RBHMC (default 1); only with ``C``.
        num_warmup: sweeps before the recorded draws (``>= 0``).
        num_samples: recorded sweeps per chain (``>= 1``).
        num_chains: chains (``>= 1``), each from its own seed derived from ``seed``.
        seed: the fit's seed (``None`` draws one; recorded in ``attrs``).
        progress: show a progress bar over the sweeps of every chain.
        paper_literal: RBHMC's path ratio as printed (datum ``n``'s kernel only) instead of
            the exact one (see :mod:`pyromodels.bhmc.regularised`).
        device: ``None`` or ``"cpu"`` (the samplers are sequential CPU code).
        checkpoint, checkpoint_every, resume: write the run's state every
            ``checkpoint_every`` sweeps (and after each chain, at the end, and on
            ``KeyboardInterrupt``) to the file ``checkpoint``; continue the run saved in the
            file ``resume`` (same model class, seed, data and settings), which then ends
            exactly as the uninterrupted run (see :mod:`pyromodels.bhmc.resume`).
        diagnostic_warnings: after the fit, emit a
            :class:`~pyromodels.core.SamplingWarning` when R-hat or the effective sample size
            of the label-invariant draws (``cdl``, ``rcdl``, ``num_leaves``,
            ``nodes_per_level``) says they are not yet reliable (see
            :mod:`pyromodels.core.diagnostic_warnings`); ``False`` silences it.
        n_jobs: chains run at once, joblib's meaning (``None``: one after another, or the
            ``n_jobs`` of an enclosing ``joblib.parallel_config``; ``-1``: all cores; see
            :mod:`pyromodels.core.parallel`); the result does not depend on it. With several
            workers a checkpoint is written after each finished chain (in chain order)
            rather than every ``checkpoint_every`` sweeps.

    Returns:
        :class:`~pyromodels.core.Posterior` (``method="gibbs"``; see the module doc). ``params``:
        ``paths`` ``(N, L + 1)``, ``weights`` (``{node id: (K,)}``), ``theta`` ``(K, D)``, ``c``
        ``(N,)`` (and ``eta`` for RBHMC) of the best state over chains; ``num_samples``;
        ``best_chain``;
        ``criterion`` (``"cdl"`` or ``"rcdl"``); ``best_score``; ``aid`` and ``aod`` of the best
        tree; per chain ``chain_paths``, ``chain_best_scores`` and ``last_paths``;
        ``cdl_trace`` (and ``rcdl_trace``) ``(chain, warmup + samples)``.

    Raises:
        ValueError: a bad count, ``C <= 0``, ``eps0 < 0``, ``eps0`` without ``C`` (BHMC has no
            margin), non-finite data, a device other than the CPU, or a ``resume`` file of
            another run.
    """
    start = time.perf_counter()
    check_in(method, "method", ("gibbs",))
    x = as_float_tensor(data, "data", ndim=2, dtype=torch.float64)
    warm = check_int(num_warmup, "num_warmup", minimum=0)
    draws = check_int(num_samples, "num_samples", minimum=1)
    chains = check_int(num_chains, "num_chains", minimum=1)
    if C is not None:
        C = check_positive(C, "C")
    elif eps0 is not None:
        raise ValueError(f"eps0 is the margin of RBHMC and needs C (the regularisation "
                         f"constant); BHMC has no margin, got eps0={eps0!r} without C")
    eps0 = check_positive(1.0 if eps0 is None else eps0, "eps0", strict=False)
    paper_literal = check_bool(paper_literal, "paper_literal")
    progress = check_bool(progress, "progress")
    diagnostic_warnings = check_bool(diagnostic_warnings, "diagnostic_warnings")
    if device is not None and torch.device(device).type != "cpu":
        raise ValueError(f"device must be the CPU (the samplers are sequential), got {device}")
    n_jobs = check_n_jobs(n_jobs)
    seed, records = _run_chains(model, x, model.prior, warm, draws, chains, seed, C, eps0,
                                paper_literal, progress, checkpoint, checkpoint_every, resume,
                                n_jobs)
    criterion = "cdl" if C is None else "rcdl"
    keep = slice(warm, warm + draws)
    samples = {"cdl": torch.stack([r.cdl[keep] for r in records])}
    if C is not None:
        samples["rcdl"] = torch.stack([r.rcdl[keep] for r in records])
    levels = torch.stack([r.nodes_per_level[keep] for r in records])
    samples["num_leaves"] = levels[..., -1].clone()
    samples["nodes_per_level"] = levels
    accept = torch.stack([r.acceptance[keep] if r.acceptance.dim() == 1
                          else r.acceptance[keep, 0] for r in records])
    scores = [r.best_cdl if C is None else r.best_rcdl for r in records]
    best_chain = max(range(chains), key=lambda i: scores[i])
    best = records[best_chain].best_state
    paths = best.tree.paths.clone()
    best_aid, best_aod = _tree_scores(x, paths)
    params = {"paths": paths, "num_samples": draws,
              "weights": {z: w.clone() for z, w in best.weights.items()},
              "theta": best.theta.clone(), "c": best.c.clone(), "best_chain": best_chain,
              "criterion": criterion, "best_score": scores[best_chain],
              "aid": best_aid, "aod": best_aod,
              "chain_paths": [r.best_state.tree.paths.clone() for r in records],
              "chain_best_scores": scores,
              "last_paths": [r.state.tree.paths.clone() for r in records],
              "cdl_trace": torch.stack([r.cdl for r in records])}
    if C is not None:
        params["eta"] = {z: e.clone() for z, e in best.eta.items()}
        params["rcdl_trace"] = torch.stack([r.rcdl for r in records])
    diagnostics = {"path_acceptance": float(accept.mean()),
                   "chains": "sequential" if resolve_n_jobs(n_jobs) == 1 else "parallel",
                   "num_warmup": warm}
    attrs = make_attrs("gibbs", seed, "cpu", start, model="RBHMC" if C is not None else "BHMC",
                       C=float("nan") if C is None else C, eps0=eps0,
                       paper_literal=int(paper_literal), num_warmup=warm,
                       label_invariant_sites=list(samples))
    return warn_sampling_problems(Posterior(
        samples=samples, method="gibbs",
        sample_stats={"lp": samples[criterion].clone(), "acceptance_rate": accept},
        params=params, diagnostics=diagnostics, attrs=attrs, model=model, data=x,
    ), diagnostic_warnings)
