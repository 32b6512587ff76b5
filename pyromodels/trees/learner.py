r"""Learning the structure of a pouch latent tree model by BIC hill-climbing (PLTM-EAST).

:func:`learn_structure` runs the generic engine :func:`~pyromodels.core.run_search` over the
operators of :mod:`.operators` in EAST's three phases (spec ``ltvae.md`` §3.5):

1. **expand** (``SI``, ``NI``, ``PO``): candidates ranked by the *unit improvement*
   :math:`[\mathrm{BIC}(m') - \mathrm{BIC}(m)] / [d(m') - d(m)]` (every expand move adds
   parameters; a move that added none would be ranked by its plain gain);
2. **adjust** (``NR``) and 3. **simplify** (``UP``, ``ND``, ``SD``): ranked by BIC.

A phase repeats while it accepts moves, and the three cycle until none improves the BIC by
more than ``tol`` (EAST's ``1e-2``). The best candidate of a round is accepted only when its
BIC beats the current one by more than ``tol``, so the BIC never decreases along the history.

A state of the search is a :class:`~pyromodels.trees.params.TreeParams` (its ``tree`` is the
structure). Each candidate starts from the current parameters through
:func:`~pyromodels.trees.extend_params` and is then

* **screened**: at most ``screen_steps`` EM steps from that start (stopping earlier once the
  log-likelihood moves by less than ``em_tol``), scored by BIC. With ``screen="local"`` (the
  default) this is EAST's *local EM* (:mod:`.local_em`): every step computes the exact
  posterior of the whole tree but re-estimates only the parameters the move changed
  (:func:`~pyromodels.trees.local_em.changed_part`: the CPTs of nodes with a new parent or
  cardinality, the root prior if the root changed, the pouches that are new or have a new
  or resized parent), the rest held at the current model's values. A local step costs one
  inference pass and the M-step of a few tensors, and the likelihood still never decreases;
  the held pouches' Gaussian leaf terms are computed once per candidate and shared by its
  steps, so the pass computes only the changed pouches' densities.
  ``screen="full"`` runs batch EM over *all* parameters instead: each candidate then adapts
  the whole model to the move, at more than twice the cost of a step on wide tables (the
  statistics and M-step of every pouch). The two rank candidates differently and the
  search may take other paths; neither is better on every table. A node introduction is
  screened from two starts, the carried one and :func:`fresh_node_start`, as two candidates
  of the same move;
* **refined** (the ``refine_top`` best by the phase's rank): batch EM to convergence
  (``em_steps``, ``em_tol``) warm-started from the screened parameters, scored by BIC.

The start (by default one latent node with two states over every coordinate as its own leaf,
the release's start with ``K = 2``) is fitted by EM from ``em_restarts`` random starts. Node
names never change along the search: a node keeps its name, ``NI`` adds a fresh one.

The candidates are EAST's, unrestricted (spec §3.5 from PLTM-EAST's source): ``NI`` takes
every pair of neighbours of a node with more than three, ``PO`` every pair of pouches under
the same latent node, ``NR`` moves a pouch or subtree under any latent node (not only a
neighbour of its parent). Their number grows with the square of the number of pouches
under one node, which is what makes the first rounds on wide tables long: from the one-node
start over ``J`` columns an expand round screens ``J(J - 1)/2`` node introductions (each from
two starts) and as many pouchings.
"""

from __future__ import annotations

import dataclasses

import torch

from ..checks import check_in, check_int, check_positive
from ..core.em import run_em
from ..core.kmeanspp import kmeanspp_indices
from ..core.search import run_search
from ..core.search_types import Phase, SearchCandidate, SearchResult, SearchStep
from ..core.seeding import derive_seed, make_generator
from ..data.tables import check_numeric_table
from .bic import free_parameters, tree_bic
from .carry_over import extend_params
from .em import ParameterPart, check_covariance_settings
from .local_em import LocalTreeModel, changed_part
from .message_passing import tree_log_likelihood
from .model import LatentTreeModel
from .moves import NodeIntroduction
from .operators import PHASES, candidate_moves
from .params import TreeParams
from .structure import LatentTree

__all__ = ["StructureResult", "learn_structure", "fit_structure", "fresh_node_start",
           "check_points", "SCREENS"]


@dataclasses.dataclass(frozen=True)
class StructureResult:
    """What :func:`learn_structure` found.

    Attributes:
        tree: the learned :class:`~pyromodels.trees.LatentTree`.
        params: its fitted :class:`~pyromodels.trees.TreeParams`.
        bic: its BIC on the data.
        log_likelihood: its total log-likelihood :math:`\\sum_n \\log p(z_n)`.
        history: the accepted moves (:class:`~pyromodels.core.search_types.SearchStep`:
            phase, move record, BIC after it, gain), in order.
        search: the engine's full :class:`~pyromodels.core.search_types.SearchResult`
            (rounds, candidates screened and scored, seed, seconds, why it stopped).
    """

    tree: LatentTree
    params: TreeParams
    bic: float
    log_likelihood: float
    history: tuple[SearchStep, ...]
    search: SearchResult

    def describe(self) -> list[str]:
        """One line per accepted move: phase, move and BIC."""
        return [f"{s.step}. [{s.phase}] {s.move.describe()}: BIC {s.score:.6g} (+{s.gain:.3g})"
                for s in self.history]


def check_points(z, name: str = "z") -> torch.Tensor:
    """``z`` (a table of numbers, an array or a tensor ``(N, J)``) checked by
    :func:`~pyromodels.data.tables.check_numeric_table` and returned as a float64 tensor."""
    if isinstance(z, torch.Tensor):
        z = z.detach().cpu().numpy()
    values, _ = check_numeric_table(z, name)
    return torch.from_numpy(values)


SCREENS = ("local", "full")
"""The screening modes of :func:`learn_structure` (see the module docstring)."""


@dataclasses.dataclass(frozen=True)
class _Candidate:
    """A proposal before screening: its carried-over parameters and the part the move
    changed."""

    params: TreeParams
    part: ParameterPart


class _Fitter:
    """The search's ``score`` and ``screen``: EM on the fixed data, BIC as the score.

    ``score`` on a :class:`LatentTree` (the start) fits it from ``restarts`` random starts; on
    :class:`TreeParams` it runs EM to convergence from them. ``screen`` runs ``screen_steps``
    EM steps on a :class:`_Candidate`: local (its changed part only) or full.
    """

    def __init__(self, z: torch.Tensor, covariance: tuple, screen_steps: int, em_steps: int,
                 em_tol: float, restarts: int, screen: str = "local",
                 screen_rows: torch.Tensor | None = None):
        self.z, self.covariance = z, covariance  # (mode, alpha, floor)
        self.screen_steps, self.em_steps = screen_steps, em_steps
        self.em_tol, self.restarts, self.mode = em_tol, restarts, screen
        self.screen_z = z if screen_rows is None else z[screen_rows]

    def settings(self, operators: dict) -> dict:
        """What a search checkpoint records of the learner (beside the search's own
        settings): a resumed search must screen and fit as the interrupted one did."""
        mode, alpha, floor = self.covariance
        rows = None if self.screen_z is self.z else int(self.screen_z.shape[0])
        return {"covariance": mode, "alpha": alpha, "floor": floor, "screening": self.mode,
                "screen_steps": self.screen_steps, "screen_points": rows,
                "em_steps": self.em_steps, "em_tol": self.em_tol, "em_restarts": self.restarts,
                "operators": tuple((name, (codes,) if isinstance(codes, str) else tuple(codes))
                                   for name, codes in operators.items())}

    def _em(self, tree: LatentTree, start: TreeParams | None, generator, max_iter: int,
            part: ParameterPart | None = None, data: torch.Tensor | None = None
            ) -> tuple[float, TreeParams]:
        mode, alpha, floor = self.covariance
        if part is None:
            model = LatentTreeModel(tree, covariance=mode, alpha=alpha, floor=floor)
        else:
            model = LocalTreeModel(tree, part, covariance=mode, alpha=alpha, floor=floor)
        init = None if start is None else model.em_start(self._start(start))
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        # n_jobs=1: a candidate's few short starts cost less than sending them to workers
        fit = run_em(model, self.z if data is None else data, max_iter=max_iter, tol=self.em_tol,
                     n_init=self.restarts if init is None else 1, init=init, seed=seed,
                     progress=False, warn_not_converged=False, n_jobs=1)
        return float(fit.params["bic"]), model.tree_params(fit)

    def _start(self, params: TreeParams) -> TreeParams:
        """``params`` as EM's start; with fixed covariances, those set to ``alpha * I`` (a
        carried-over start may hold moment-matched ones, which the first M-step would reset
        while lowering the likelihood)."""
        mode, alpha, _ = self.covariance
        if mode == "fixed":
            trils = [torch.eye(t.shape[-1], dtype=t.dtype, device=t.device).expand_as(t)
                     * alpha ** 0.5 for t in params.scale_trils]
            params = TreeParams(params.tree, params.root_probs, list(params.cpts),
                                list(params.means), trils)
        return params

    def __call__(self, state, generator) -> tuple[float, TreeParams]:
        if isinstance(state, LatentTree):
            return self._em(state, None, generator, self.em_steps)
        return self._em(state.tree, state, generator, self.em_steps)

    def screen(self, state: _Candidate, generator) -> tuple[float, TreeParams]:
        params = state.params
        part = state.part if self.mode == "local" else None
        bic, fitted = self._em(params.tree, params, generator, self.screen_steps, part,
                               self.screen_z)
        if self.screen_z is not self.z:  # scored on every row, comparable with the others
            bic = tree_bic(fitted, self.z, self.covariance[0])
        return bic, fitted


def _flat_dirichlet(rows: int, cols: int, generator, like: torch.Tensor) -> torch.Tensor:
    g = -torch.log(torch.rand(rows, cols, generator=generator, dtype=torch.float64))
    return (g / g.sum(1, keepdim=True)).to(dtype=like.dtype, device=like.device)


def fresh_node_start(params: TreeParams, node: str, z: torch.Tensor, generator) -> TreeParams:
    """``params`` with latent node ``node`` started afresh, the rest kept: its CPT and its
    latent children's CPTs from a flat Dirichlet, the means of its pouches at data points
    chosen by k-means++ seeding on their columns (the covariances are kept).

    A node introduction's carried-over start makes the new node a near copy of the old one,
    which a few EM steps seldom pull apart when the new node should capture another facet of
    the data; this start lets the screening see that facet (EAST's local EM re-estimates the
    new node from random starts for the same reason).
    """
    tree = params.tree
    j = tree.index(node)
    cards = tree.cardinalities
    root = params.root_probs
    if tree.parents[j] is None:
        root = _flat_dirichlet(1, cards[j], generator, root)[0]
    cpts = list(params.cpts)
    for c in [j, *tree.children[j]]:
        if tree.parents[c] is not None:
            cpts[c] = _flat_dirichlet(cards[tree.parents[c]], cards[c], generator, root)
    means = list(params.means)
    blocks = tree.leaves[j]
    if blocks:
        cols = [c for b in blocks for c in tree.pouches[b]]
        rows = kmeanspp_indices(z[:, cols], cards[j], generator)
        for b in blocks:
            means[b] = z[rows][:, list(tree.pouches[b])].to(means[b])
    return TreeParams(tree, root, cpts, means, list(params.scale_trils))


def _proposer(operators: tuple[str, ...], z: torch.Tensor):
    """Every move of ``operators`` with its carried-over start; a node introduction also
    with a fresh start of the new node (two candidates for the same move)."""
    def propose(state: TreeParams, generator):
        out = []
        for move in candidate_moves(state.tree, operators):
            carried = extend_params(move, state, generator)
            part = changed_part(state.tree, carried.tree)
            out.append((move, _Candidate(carried, part)))
            if isinstance(move, NodeIntroduction):  # the fresh start changes only the part
                fresh = fresh_node_start(carried, move.name, z, generator)
                out.append((move, _Candidate(fresh, part)))
        return out
    return propose


class _UnitImprovement:
    """EAST's expand rank: BIC gain per added free parameter (counted for ``covariance``)."""

    def __init__(self, covariance: str):
        self.covariance = covariance

    def __call__(self, current: SearchCandidate, candidate: SearchCandidate) -> float:
        added = (free_parameters(candidate.state.tree, self.covariance)
                 - free_parameters(current.state.tree, self.covariance))
        gain = candidate.score - current.score
        return gain / added if added > 0 else gain


def _phases(operators, covariance: str, z: torch.Tensor) -> list[Phase]:
    if operators is None:
        operators = PHASES
    if not isinstance(operators, dict) or not operators:
        raise TypeError(f"operators must be a non-empty dict {{phase name: operator codes}}, "
                        f"got {operators!r}")
    phases = []
    for name, codes in operators.items():
        codes = (codes,) if isinstance(codes, str) else tuple(codes)
        candidate_moves(LatentTree.single(2, 1), codes)  # a clear error for an unknown code
        if name == "expand":
            phases.append(Phase(name, _proposer(codes, z), rank=_UnitImprovement(covariance)))
        else:
            phases.append(Phase(name, _proposer(codes, z)))
    return phases


def learn_structure(z, *, start=None, covariance: str = "full", alpha: float = 1.0,
                    floor: float = 0.01, operators=None,
                    screen: str = "local", screen_steps: int = 10,
                    screen_points: int | None = None, refine_top: int = 3, em_steps: int = 200,
                    em_tol: float = 1e-6, em_restarts: int = 5, tol: float = 1e-2,
                    max_steps: int = 50, seed: int | None = None, progress: bool = True,
                    callbacks=None, checkpoint=None, checkpoint_every: int | None = None,
                    resume=None) -> StructureResult:
    """Learn a pouch latent tree over the columns of ``z`` by EAST's BIC hill-climbing.

    Args:
        z: the points ``(N, J)``: a DataFrame of numeric columns, an array or a tensor
            (checked by :func:`~pyromodels.data.tables.check_numeric_table`; used as
            float64, not rescaled).
        start: the structure to start from (a :class:`LatentTree`, fitted from
            ``em_restarts`` random starts) or fitted :class:`TreeParams` (a warm start,
            refined by EM); ``None``: ``LatentTree.single(2, J)``.
        covariance: ``"full"`` (pouch covariances learned; BIC counts them) or ``"fixed"``
            (held at ``alpha * I``; means only).
        alpha: the fixed covariances' scale (see :class:`~pyromodels.trees.LatentTreeModel`).
        floor: the least eigenvalue of a learned covariance.
        operators: ``{phase name: operator codes}`` run in this order; ``None``:
            :data:`~pyromodels.trees.PHASES` (expand, adjust, simplify). A phase named
            ``"expand"`` ranks by unit improvement, the others by BIC.
        screen: how a candidate is screened: ``"local"`` (EAST's local EM: only the
            parameters the move changed are re-estimated) or ``"full"`` (every parameter);
            see the module docstring.
        screen_steps: the most EM steps of the screening of every candidate (>= 1; it
            stops earlier once the log-likelihood moves by less than ``em_tol``).
        screen_points: screen on a fixed random subset of this many rows (drawn once from
            ``seed``, or from ``0`` when ``seed`` is ``None``), each screened candidate
            then scored by its BIC on all the rows (one more inference pass); ``None`` or
            at least ``N``: all the rows. The refinement always uses all the rows.
        refine_top: how many of the best screened candidates are fitted to convergence.
        em_steps: the most EM steps of a full fit.
        em_tol: EM's relative tolerance on the log-likelihood.
        em_restarts: random starts of the fit of ``start`` (when it is a structure).
        tol: the least BIC gain of an accepted move (EAST: ``1e-2``).
        max_steps: the most moves to accept.
        seed: the search's seed; ``None`` draws one (recorded in ``result.search.seed``).
        progress: show the search's progress bar and a line per accepted move.
        callbacks: ``f(step, info)`` after each accepted move (see
            :func:`~pyromodels.core.run_search`).
        checkpoint, checkpoint_every, resume: write the search's state to a file and continue
            from it; a resumed search gives the uninterrupted search's result.

    Returns:
        A :class:`StructureResult`.

    Raises:
        TypeError, ValueError: bad data (non-numeric, NaN or infinite values, constant
            columns, named by the table check) or a bad setting (named).

    Example:
        >>> from pyromodels.trees import LatentTree, TreeParams, sample_tree
        >>> truth = LatentTree.from_edges({"A": 2, "B": 2}, [("A", "B")],
        ...                               [("A", [0]), ("A", [1]), ("B", [2]), ("B", [3])])
        >>> z, _ = sample_tree(TreeParams.random(truth, torch.Generator().manual_seed(0),
        ...                                      mean_scale=6.0), 300,
        ...                    torch.Generator().manual_seed(1))
        >>> result = learn_structure(z, seed=0, progress=False, em_restarts=2)
        >>> result.tree.num_latents
        2
    """
    return fit_structure(check_points(z), start=start, covariance=covariance, alpha=alpha,
                         floor=floor,
                         operators=operators, screen=screen, screen_steps=screen_steps,
                         screen_points=screen_points, refine_top=refine_top,
                         em_steps=em_steps, em_tol=em_tol, em_restarts=em_restarts, tol=tol,
                         max_steps=max_steps, seed=seed, progress=progress,
                         callbacks=callbacks, checkpoint=checkpoint,
                         checkpoint_every=checkpoint_every, resume=resume)


def _screen_rows(points, n: int, seed) -> torch.Tensor | None:
    """The sorted rows the screening uses: ``points`` of the ``n`` drawn without replacement
    from ``seed`` (``0`` for ``None``); ``None`` for all of them."""
    if points is None:
        return None
    points = check_int(points, "screen_points", minimum=2)
    if points >= n:
        return None
    base = 0 if seed is None else check_int(seed, "seed", minimum=0)
    generator = make_generator(derive_seed(base, "screen_points"))
    return torch.randperm(n, generator=generator)[:points].sort().values


def fit_structure(z: torch.Tensor, *, start, covariance, alpha, floor, operators,
                  screen="local", screen_steps, screen_points=None, refine_top, em_steps,
                  em_tol, em_restarts, tol, max_steps, seed, progress, callbacks, checkpoint,
                  checkpoint_every, resume) -> StructureResult:
    """:func:`learn_structure` on points already checked (a float64 tensor ``(N, J)``)."""
    settings = check_covariance_settings(covariance, alpha, floor)
    covariance = settings[0]
    fitter = _Fitter(z, settings, check_int(screen_steps, "screen_steps", minimum=1),
                     check_int(em_steps, "em_steps", minimum=1),
                     check_positive(em_tol, "em_tol", strict=False),
                     check_int(em_restarts, "em_restarts", minimum=1),
                     check_in(screen, "screen", SCREENS),
                     _screen_rows(screen_points, z.shape[0], seed))
    if start is None:
        start = LatentTree.single(2, z.shape[1])
    if not isinstance(start, LatentTree | TreeParams):
        raise TypeError(f"start must be a LatentTree, TreeParams or None, got "
                        f"{type(start).__name__}")
    width = (start.tree if isinstance(start, TreeParams) else start).num_coordinates
    if width != z.shape[1]:
        raise ValueError(f"start covers {width} coordinates but z has {z.shape[1]} columns")
    if isinstance(start, TreeParams):
        start = start.to(dtype=z.dtype)
    phases = _phases(operators, covariance, z)
    search = run_search(start, phases, fitter, screen=fitter.screen, refine_top=refine_top,
                        tol=tol, max_steps=max_steps, seed=seed, progress=progress,
                        callbacks=callbacks, checkpoint=checkpoint,
                        checkpoint_every=checkpoint_every, resume=resume, data=z,
                        settings=fitter.settings(PHASES if operators is None else operators))
    params = search.state
    loglik = float(tree_log_likelihood(params, z).sum())
    return StructureResult(params.tree, params, search.score, loglik, search.history, search)

