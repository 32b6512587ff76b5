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


def _run_chains(model, x, prior, warm, draws, chains, seed, C, eps0, paper_literal, bar,
                checkpoint, checkpoint_every, resume):
    """The records of every chain, in pieces of ``checkpoint_every`` sweeps with a checkpoint
    after each (see :mod:`pyromodels.bhmc.resume`); ``(seed, records)``."""
    config = run_config(prior, C, eps0, paper_literal, warm, draws, chains)
    saved = {"records": [], "partial": None, "done": 0, "generator": None}
    if resume is not None:
        seed, saved = read_checkpoint(resume, engine="bhmc", model=model, seed=seed,
                                      config=config, data=x)
    seed = resolve_seed(seed)
    keeper = Checkpointer(checkpoint, checkpoint_every, engine="bhmc", model=model, seed=seed,
                          config=config, data=x, build=lambda snapshot: snapshot)
    every = checkpoint_every if keeper.enabled else None
    records, total = list(saved["records"]), warm + draws
    bar.update(len(records) * total)
    with keeper.guard():
        for i in range(len(records), chains):
            gen = make_generator(derive_seed(seed, "chain", i))
            start, done = None, 0
            if saved["partial"] is not None:  # the chain the checkpoint stopped in
                start, done = saved["partial"], saved["done"]
                gen.set_state(saved["generator"])
                saved["partial"] = None
                bar.update(done)
            report = functools.partial(_piece_done, keeper, bar, records, i, total, gen, [done])
            records.append(run_pieces(x, prior, warm, draws, gen, every, C, eps0,
                                      paper_literal, start, done, report))
            keeper.commit((i + 1) * total, {"records": list(records), "partial": None,
                                            "done": 0, "generator": None})
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
             resume=None, diagnostic_warnings: bool = True) -> Posterior:
    r"""Run ``num_chains`` chains of BHMC, or of RBHMC when ``C`` is given.

    Args:
        model: the :class:`~pyromodels.bhmc.BHMC` (its ``prior``).
        data: ``(N, D)`` observations.
        method: ``"gibbs"`` (the Metropolis-within-Gibbs samplers).
        C: regularisation constant ``> 0`` of RBHMC, or ``None`` for BHMC.
        eps0: margin :math:`\varepsilon_0 \ge 0` of RBHMC (default 1); only with ``C``.
        num_warmup: sweeps before the recorded draws (``>= 0``).
        num_samples: recorded sweeps per chain (``>= 1``).
        num_chains: chains (``>= 1``), run one after another.
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
    prior = model.prior
    label = "BHMC sweeps" if C is None else "RBHMC sweeps"
    with progress_bar(chains * (warm + draws), label, progress) as bar:
        seed, records = _run_chains(model, x, prior, warm, draws, chains, seed, C, eps0,
                                    paper_literal, bar, checkpoint, checkpoint_every, resume)
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
    diagnostics = {"path_acceptance": float(accept.mean()), "chains": "sequential",
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
