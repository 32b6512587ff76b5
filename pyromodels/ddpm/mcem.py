r"""Monte Carlo EM for DDPM (the paper's Algorithm 1): a DP mixture on flow features.

The flow ``z = f(y; theta)`` is a point estimate; the partition ``c`` and the cluster
parameters ``H = {(mu_k, lambda_k)}`` are latent. One **round** is

1. **E-step** (``gibbs_sweeps`` = the paper's ``E_dpm``): ``z = f(y)`` with the current flow,
   then that many sweeps of a DP-mixture Gibbs sampler on ``z``, continuing the chain of the
   previous round (a persistent chain: the partition carries over, the cluster statistics are
   recomputed for the new ``z``). The state after the sweeps, with its parameters drawn, is
   the round's one Monte Carlo sample (``G = 1``, eq. 13).
2. **M-step** (``flow_epochs`` = ``E_flow``): that many passes of Adam over minibatches of
   the negative complete-data log joint's part that depends on ``theta`` (eq. 17-21):

   .. math::
       L(\theta) = \frac{1}{B}\sum_{i \in \text{batch}} \Big[\frac{\lambda_{c_i}}{2}
       \|f(y_i; \theta) - \mu_{c_i}\|^2 - \log\Big|\det \frac{\partial f}{\partial y_i}\Big|\Big],

   whose gradient is eq. 21 (the log-determinant is zero for NICE without its scaling layer
   and enters only with it; dividing by ``B`` rescales the step only).

Each round records label-invariant statistics: the number of clusters ``K``, the size of the
largest cluster and the complete-data log joint (eq. 16-19, the flow's log-determinant
included). ``restarts`` independent runs (the paper's 10 random restarts) each start from a
fresh copy of the initial flow and a k-means partition of ``f(y)`` into ``init_clusters``
clusters, with their own seeds; the run with the highest final log joint is returned. Without
a flow (``flow=None``) the rounds are Gibbs sweeps on ``y`` alone: the paper's DPM baseline.

The sampler is :func:`pyromodels.bnp.sweep` (``algorithm="alg2"``: Neal's Algorithm 2 as in
the paper; ``"alg3"``: collapsed, parameters drawn once per round for the M-step).
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, fields

import torch

from ..bnp import DPState, canonical_labels, init_state, log_joint, resample_params, run_chain
from ..checks import as_float_tensor, check_bool, check_in, check_int, check_positive
from ..core.checkpoint import Checkpointer, clone_tree, read_checkpoint
from ..core.parallel import check_n_jobs, resolve_n_jobs, run_jobs
from ..core.posterior import Posterior, make_attrs
from ..core.progress import progress_bar
from ..core.seeding import derive_seed, make_generator, resolve_seed
from ..core.threads import with_fit_threads
from .baselines import kmeans
from .prior import DPMixturePrior

__all__ = ["MCEMSettings", "fit_mcem", "flow_loss", "round_trace_names", "trainable_parameters"]

ALGORITHMS = ("alg2", "alg3")


@dataclass(frozen=True)
class MCEMSettings:
    """The schedule of a Monte Carlo EM run.

    Args:
        rounds: EM rounds (the paper's ``EPOCHS``; not stated in the paper).
        gibbs_sweeps: Gibbs sweeps per round (``E_dpm``: 2 for MNIST in Appendix B).
        flow_epochs: passes of the flow's optimiser over the data per round (``E_flow``).
        batch_size: minibatch size of the M-step (``B``; not stated in the paper).
        lr: Adam's learning rate (the paper's ``lambda_s``; its optimiser is not stated).
        init_clusters: clusters of the k-means partition each restart starts from (the
            paper does not say how it initialises ``c``; with a tiny ``alpha`` the final
            ``K`` depends on it).
        restarts: independent runs; the one with the highest final log joint is kept.
        algorithm: ``"alg2"`` (Neal's Algorithm 2, the paper's sampler) or ``"alg3"``
            (collapsed).
        paper_literal: use eq. 24 as printed for a new cluster's weight (the (1/2) term).
        backend: the sampler's backend, ``"auto"``, ``"numba"`` or ``"torch"``.
        alpha_prior: ``(shape, rate)`` of a Gamma hyperprior on the concentration, which is
            then redrawn after every sweep (Escobar and West 1995) and carried across rounds;
            ``None`` (default) keeps the prior's ``alpha`` fixed, as the paper does.
        feature_snapshots: keep ``z = f(y)`` of the first ``snapshot_points`` points at this
            many rounds spread evenly from the first to the last (0: none), for views of the
            features over the rounds.
        snapshot_points: how many points a snapshot keeps.
    """

    rounds: int = 20
    gibbs_sweeps: int = 2
    flow_epochs: int = 1
    batch_size: int = 256
    lr: float = 1e-3
    init_clusters: int = 50
    restarts: int = 1
    algorithm: str = "alg2"
    paper_literal: bool = False
    backend: str = "auto"
    alpha_prior: tuple[float, float] | None = None
    feature_snapshots: int = 0
    snapshot_points: int = 2000

    def __post_init__(self):
        for name in ("rounds", "gibbs_sweeps", "flow_epochs", "batch_size", "init_clusters",
                     "restarts"):
            check_int(getattr(self, name), name, minimum=1)
        check_positive(self.lr, "lr")
        check_in(self.algorithm, "algorithm", ALGORITHMS)
        check_bool(self.paper_literal, "paper_literal")
        check_in(self.backend, "backend", ("auto", "numba", "torch"))
        check_int(self.feature_snapshots, "feature_snapshots", minimum=0)
        check_int(self.snapshot_points, "snapshot_points", minimum=1)
        if self.alpha_prior is not None:
            if not isinstance(self.alpha_prior, tuple) or len(self.alpha_prior) != 2:
                raise TypeError(f"alpha_prior must be a (shape, rate) tuple or None, got "
                                f"{self.alpha_prior!r}")
            for value, name in zip(self.alpha_prior, ("alpha_prior[0]", "alpha_prior[1]")):
                check_positive(value, name)

    def snapshot_rounds(self) -> tuple[int, ...]:
        """The rounds (from 0) whose features are kept (see ``feature_snapshots``)."""
        if self.feature_snapshots == 0:
            return ()
        steps = torch.linspace(0, self.rounds - 1, self.feature_snapshots)
        return tuple(sorted({int(round(float(v))) for v in steps}))


def round_trace_names() -> tuple[str, ...]:
    """The per-round statistics every run records, in order."""
    return ("num_clusters", "largest_cluster", "sorted_sizes", "log_joint", "flow_loss", "alpha")


#: how many of the largest cluster sizes each round records (zeros when fewer clusters)
SIZES_RECORDED = 5


def _features(flow, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(z, log|det df/dy|)`` per point, without gradients, as float64."""
    if flow is None:
        return y.to(torch.float64), y.new_zeros(y.shape[0], dtype=torch.float64)
    with torch.no_grad():
        z = flow(y)
        log_det = flow.log_abs_det_jacobian(y, z).expand(y.shape[0])
    return z.to(torch.float64), log_det.to(torch.float64)


def flow_loss(flow, y: torch.Tensor, mu: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    r"""The M-step's minibatch loss: the mean over the batch of
    :math:`\frac{\lambda_i}{2}\|f(y_i) - \mu_i\|^2 - \log|\det \partial f / \partial y_i|`,
    with ``mu`` ``(B, d)`` and ``lam`` ``(B,)`` the parameters of each point's cluster.

    Its gradient is the paper's eq. 21 (divided by ``-B``).

    Example:
        >>> import torch
        >>> loss = flow_loss(None, torch.zeros(2, 3), torch.ones(2, 3), torch.ones(2))
        >>> float(loss)
        1.5
    """
    if flow is None:
        z, log_det = y, y.new_zeros(y.shape[0])
    else:
        z = flow(y)
        log_det = flow.log_abs_det_jacobian(y, z).expand(y.shape[0])
    squared = ((z - mu.to(z.dtype)) ** 2).sum(-1)
    return (0.5 * lam.to(z.dtype) * squared - log_det).mean()


def _m_step(flow, optimiser, y, state: DPState, settings: MCEMSettings,
            generator: torch.Generator) -> float:
    """``flow_epochs`` passes of Adam over shuffled minibatches; the mean minibatch loss."""
    mu = state.mu[state.slot].to(y.dtype)
    lam = state.lam[state.slot].to(y.dtype)
    n, total, steps = y.shape[0], 0.0, 0
    for _ in range(settings.flow_epochs):
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, settings.batch_size):
            idx = order[start:start + settings.batch_size].to(y.device)
            optimiser.zero_grad()
            loss = flow_loss(flow, y[idx], mu[idx], lam[idx])
            loss.backward()
            loss = loss.detach()
            optimiser.step()
            total += loss.item()
            steps += 1
    return total / steps


def trainable_parameters(flow) -> list:
    """The parameters of ``flow`` that the M-step fits (none for ``None`` or a fixed
    transform)."""
    if not isinstance(flow, torch.nn.Module):
        return []
    return [p for p in flow.parameters() if p.requires_grad]


def _init_run(y, flow0, prior: DPMixturePrior, settings, seed: int):
    """A restart's flow, optimiser, generator and starting state (k-means on ``f(y)``)."""
    flow = None if flow0 is None else copy.deepcopy(flow0)
    params = trainable_parameters(flow)
    optimiser = torch.optim.Adam(params, lr=settings.lr) if params else None
    generator = make_generator(seed)
    z, _ = _features(flow, y)
    k = min(settings.init_clusters, z.shape[0])
    labels = kmeans(z, k, seed=derive_seed(seed, "kmeans") % 2**32, n_init=1).labels
    base = prior.normal_gamma(z.shape[1], data=z)
    state = init_state(z, labels, base, generator, algorithm=settings.algorithm)
    return flow, optimiser, generator, state


def _round(y, run, prior, settings, index: int) -> dict:
    """Round ``index`` of ``run``: one E-step and one M-step; the round's label-invariant
    statistics (``run``'s chain, flow, concentration and snapshots move on)."""
    z, log_det = _features(run.flow, y)
    if index in settings.snapshot_rounds():
        run.snapshots[index] = z[:settings.snapshot_points].to(torch.float32).clone()
    base = prior.normal_gamma(z.shape[1], data=z)
    state = run.state
    chain = run_chain(z, state, base, run.alpha, run.generator, settings.gibbs_sweeps,
                      algorithm=settings.algorithm, backend=settings.backend,
                      paper_literal=settings.paper_literal, alpha_prior=settings.alpha_prior)
    run.alpha = chain.alpha
    if not state.has_params:  # the collapsed sampler draws the parameters once, for the M-step
        resample_params(z, state, base, run.generator)
    joint = float(log_joint(z, state, base, run.alpha)) + float(log_det.sum())
    loss = float("nan")
    if run.optimiser is not None:
        loss = _m_step(run.flow, run.optimiser, y, state, settings, run.generator)
    sizes = torch.sort(state.cluster_sizes, descending=True).values[:SIZES_RECORDED]
    top = sizes.tolist() + [0] * (SIZES_RECORDED - sizes.shape[0])
    return {"num_clusters": state.num_clusters, "largest_cluster": top[0], "sorted_sizes": top,
            "log_joint": joint, "flow_loss": loss, "alpha": run.alpha}


def _state_dict(state: DPState) -> dict:
    return {f.name: clone_tree(getattr(state, f.name)) for f in fields(state)}


class _Run:
    """One restart in progress: its flow, optimiser, chain, generator and traces."""

    def __init__(self, y, flow0, prior, settings, seed: int, saved: dict | None = None):
        self.flow, self.optimiser, self.generator, self.state = _init_run(
            y, flow0, prior, settings, seed)
        self.traces = {name: [] for name in round_trace_names()}
        self.alpha, self.snapshots = prior.alpha, {}
        if saved is not None:
            self.alpha, self.snapshots = saved["alpha"], dict(saved["snapshots"])
            self.state = DPState(**saved["state"])
            self.generator.set_state(saved["generator"])
            self.traces = {k: list(v) for k, v in saved["traces"].items()}
            if self.optimiser is not None:
                self.flow.load_state_dict(saved["flow"])
                self.optimiser.load_state_dict(saved["optimiser"])

    @property
    def rounds_done(self) -> int:
        return len(self.traces["log_joint"])

    def snapshot(self) -> dict:
        """The restart after a complete round, for a checkpoint: copies of its chain, flow and
        optimiser, and its traces by reference with their lengths then (traces only grow, so
        :func:`_saved_state` cuts them when it writes). Its cost does not grow with the
        rounds."""
        return {"state": _state_dict(self.state), "generator": self.generator.get_state(),
                "alpha": self.alpha, "snapshots": dict(self.snapshots),
                "traces": {name: (trace, len(trace)) for name, trace in self.traces.items()},
                "flow": (None if self.optimiser is None
                         else clone_tree(self.flow.state_dict())),
                "optimiser": (None if self.optimiser is None
                              else copy.deepcopy(self.optimiser.state_dict()))}


def _outcome(run: _Run, y) -> dict:
    """What is kept of a finished restart: its traces and, for the best one, its result."""
    z, _ = _features(run.flow, y)
    ids, mu, lam = run.state.cluster_params()
    return {"traces": copy.deepcopy(run.traces), "log_joint": run.traces["log_joint"][-1],
            "assignments": run.state.assignments.clone(), "ids": ids.clone(), "mu": mu.clone(),
            "lam": lam.clone(), "z": z, "flow": run.flow, "snapshots": dict(run.snapshots)}


def _saved_state(snapshot: dict) -> dict:
    """The state a checkpoint saves from a snapshot taken after a complete round: the
    finished restarts' traces, the best restart so far and the running restart, its traces
    cut to their lengths at the snapshot."""
    current = snapshot["current"]
    if current is not None:
        traces = {name: list(trace[:n]) for name, (trace, n) in current["traces"].items()}
        current = {**current, "traces": traces}
    return {"done": snapshot["done"], "best": snapshot["best"], "current": current}


def _label_order(assignments: torch.Tensor, ids: torch.Tensor):
    """``(labels, order)``: the canonical labels ``0..K-1`` (by first appearance) of the
    cluster ids ``assignments``, and the rows of ``ids`` (the clusters' ids in the sampler's
    order) that put label ``k``'s cluster in row ``k``."""
    labels = canonical_labels(assignments)
    id_of_label = torch.empty(int(labels.max()) + 1, dtype=assignments.dtype)
    id_of_label[labels] = assignments
    row = {int(i): r for r, i in enumerate(ids.tolist())}
    return labels, torch.tensor([row[int(i)] for i in id_of_label.tolist()], dtype=torch.long)


def _mcem_restart(task, shared) -> dict:
    """Restart ``r`` of :func:`fit_mcem` from its own seed (or from the checkpoint's partial
    restart), run for every round: its outcome (a
    :func:`~pyromodels.core.parallel.run_jobs` function)."""
    r, restart_seed, partial, commit, bar = task
    y, prior, settings = shared["y"], shared["prior"], shared["settings"]
    run = _Run(y, shared["flow"], prior, settings, restart_seed, partial)
    if bar is not None:
        bar.update(run.rounds_done)
    for t in range(run.rounds_done, settings.rounds):
        for name, value in _round(y, run, prior, settings, t).items():
            run.traces[name].append(value)
        if bar is not None:
            bar.update()
            bar.set_postfix(K=run.traces["num_clusters"][-1])
        if commit is not None:
            commit(t + 1, run.snapshot())
    return _outcome(run, y)


@with_fit_threads(data="y")
def fit_mcem(model, y, prior: DPMixturePrior, flow=None, settings: MCEMSettings | None = None,
             *, seed: int | None = None, progress: bool = True, checkpoint=None,
             checkpoint_every: int | None = None, resume=None,
             num_threads: int | None = None, n_jobs: int | None = None) -> Posterior:
    """Run Monte Carlo EM (see the module doc) and return the best restart as a Posterior.

    Args:
        model: the model object the run belongs to (named in checkpoints).
        y: ``(N, d)`` features (float tensor, on the flow's device).
        prior: the DP mixture's hyperparameters.
        flow: a flow module ``z = f(y)`` with ``log_abs_det_jacobian`` (for example
            :class:`~pyromodels.nn.NICE`), copied for every restart; ``None`` gives DPM.
        settings: the schedule (default :class:`MCEMSettings()`).
        seed: the run's seed (``None`` draws one; recorded in ``attrs``).
        progress: show a progress bar over the rounds.
        checkpoint, checkpoint_every, resume: write the run's state after every
            ``checkpoint_every`` rounds (and at the end, and on ``KeyboardInterrupt``) to
            ``checkpoint``; continue the run saved in ``resume`` (same model class, seed and
            settings) to the result of the uninterrupted run.
        num_threads: CPU threads of the fit: ``None`` (default) chooses them for the data's
            size, never more than the caller's ``torch.get_num_threads()``; an integer
            ``>= 1`` fixes them (see :mod:`pyromodels.core.threads`).
        n_jobs: restarts run at once, joblib's meaning (``None``: one after another, or the
            ``n_jobs`` of an enclosing ``joblib.parallel_config``; ``-1``: all cores; see
            :mod:`pyromodels.core.parallel`); the result does not depend on it. With several
            workers a checkpoint is written after each finished restart (in restart order)
            rather than every ``checkpoint_every`` rounds.

    Returns:
        A :class:`~pyromodels.core.Posterior` with ``method="mcem"``: ``samples``
        ``num_clusters``, ``largest_cluster``, ``sorted_sizes`` (the
        :data:`SIZES_RECORDED` largest cluster sizes, zero-padded: a third axis) and ``alpha``
        and ``sample_stats["lp"]`` (the
        complete-data log joint) shaped ``(restart, round)``, ``losses`` the mean M-step loss per round
        ``(restart, round)``, and ``params``: ``labels`` ``(N,)`` (canonical, ``0..K-1`` by
        first appearance) and, row ``k`` for label ``k``, ``cluster_ids`` (the sampler's
        stable ids), ``mu`` ``(K, d)`` and ``lam`` ``(K,)``; ``z`` (the final features),
        ``flow`` (the best restart's flow), ``best_restart`` and ``feature_snapshots``
        (``{round: z of the first snapshot_points points}``, rounds counted from 1).
    """
    import time

    start = time.perf_counter()
    settings = MCEMSettings() if settings is None else settings
    if not isinstance(settings, MCEMSettings):
        raise TypeError(f"settings must be MCEMSettings, got {type(settings).__name__}")
    if not isinstance(prior, DPMixturePrior):
        raise TypeError(f"prior must be a DPMixturePrior, got {type(prior).__name__}")
    y = as_float_tensor(y, "y", ndim=2)
    n_jobs = check_n_jobs(n_jobs)
    params = trainable_parameters(flow)
    if params:
        y = y.to(dtype=params[0].dtype, device=params[0].device)
    config = {**asdict(settings), "num_points": int(y.shape[0]), "dim": int(y.shape[1]),
              "prior": repr(prior), "flow": None if flow is None else repr(flow)}
    saved = None
    if resume is not None:
        seed, saved = read_checkpoint(resume, engine="mcem", model=model, seed=seed,
                                      config=config, data=y)
    seed = resolve_seed(seed)
    done: list[dict] = [] if saved is None else saved["done"]
    keeper = Checkpointer(checkpoint, checkpoint_every, engine="mcem", model=model, seed=seed,
                          config=config, data=y, build=_saved_state)
    total = settings.restarts * settings.rounds
    best = None if saved is None else saved["best"]
    workers = resolve_n_jobs(n_jobs)
    first = len(done)
    partial = saved["current"] if saved is not None and saved["current"] else None

    def commit_rounds(r):  # the per-round checkpoint of restart r, run in this process
        def commit(rounds, snapshot):
            # finished restarts' traces are never changed: no copies
            keeper.commit(r * settings.rounds + rounds,
                          {"done": list(done), "best": best, "current": snapshot})
        return commit

    def on_result(index, outcome):  # the finished restarts, in restart order
        nonlocal best
        finished[index] = outcome
        while len(done) - first in finished:
            outcome = finished.pop(len(done) - first)
            r = len(done)
            done.append(outcome["traces"])
            if best is None or outcome["log_joint"] > best["log_joint"]:
                best = {k: v for k, v in outcome.items() if k != "traces"}
                best["restart"] = r
            keeper.commit((r + 1) * settings.rounds,
                          {"done": list(done), "best": best, "current": None})
            if workers > 1:
                keeper.write()

    finished: dict = {}
    with keeper.guard(), progress_bar(total, "mcem rounds", progress and workers == 1) as bar:
        bar.update(first * settings.rounds)
        serial = workers == 1
        tasks = [(r, derive_seed(seed, "restart", r), partial if r == first else None,
                  commit_rounds(r) if serial and keeper.enabled else None,
                  bar if serial else None) for r in range(first, settings.restarts)]
        run_jobs(_mcem_restart, tasks, n_jobs=n_jobs, progress=progress,
                 shared={"y": y, "flow": flow, "prior": prior, "settings": settings},
                 desc="mcem restarts", labels=[f"restart {t[0]}" for t in tasks],
                 on_result=on_result)
        keeper.write()
    labels, order = _label_order(best["assignments"], best["ids"])
    traces = {name: torch.tensor([d[name] for d in done], dtype=torch.float64)
              for name in round_trace_names()}
    return Posterior(
        samples={"num_clusters": traces["num_clusters"].long(),
                 "largest_cluster": traces["largest_cluster"].long(),
                 "sorted_sizes": traces["sorted_sizes"].long(),
                 "alpha": traces["alpha"]},
        method="mcem",
        sample_stats={"lp": traces["log_joint"].double()},
        losses=traces["flow_loss"].double(),
        params={"labels": labels, "cluster_ids": best["ids"][order], "mu": best["mu"][order],
                "lam": best["lam"][order], "z": best["z"], "flow": best["flow"],
                "best_restart": best["restart"], "log_joint": best["log_joint"],
                "feature_snapshots": {t + 1: v for t, v in best["snapshots"].items()}},
        diagnostics={"final_log_joint": [d["log_joint"][-1] for d in done],
                     "best_restart": best["restart"]},
        attrs=make_attrs("mcem", seed, y.device, start, settings=asdict(settings),
                         label_invariant_sites=["num_clusters", "largest_cluster",
                                                "sorted_sizes", "alpha"]),
        model=model,
    )
