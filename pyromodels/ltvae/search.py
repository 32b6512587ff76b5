r"""A ready-made structure search for :meth:`~pyromodels.ltvae.LTVAE.fit`: PLTM-EAST's BIC
hill-climbing (:func:`~pyromodels.trees.learn_structure`) continued from the current tree.

Algorithm 1 of the LTVAE paper (spec ``ltvae.md`` §3.6) searches, every few epochs, from the
current structure and parameters :math:`(S^{t-1}, \Theta^{t-1})` on the encoder means
:math:`D_z = \mu_D` (the release warm-starts its search from the previous model). The search
learns full covariances (BIC counts them, spec §3.5); with ``covariance="fixed"`` the LTVAE
then resets them to :math:`\alpha I` (spec §2.3, the release's ``setCovariances(alpha)``).

A fit searches every few epochs, and each search may warn alike (most often that it accepted
``max_steps`` moves before converging): :func:`searched_quietly` runs one search and keeps its
warnings, and :func:`warn_summaries` emits them once per message at the end of the fit, with
how many searches gave each. A ``max_steps`` the user gave to :class:`StructureSearch` is
taken as a deliberate budget: its searches do not warn on reaching it (``stopped`` in
:attr:`StructureSearch.results` still says so).
"""

from __future__ import annotations

import hashlib
import inspect
import warnings
from collections.abc import Callable

import torch

from ..core.errors import ConvergenceWarning
from ..core.seeding import derive_seed, resolve_seed
from ..trees.learner import StructureResult, check_points, learn_structure
from ..trees.params import TreeParams
from ..trees.structure import LatentTree

__all__ = ["StructureSearch", "structure_search", "SEARCHES", "searched_quietly",
           "warn_summaries"]

#: the names :meth:`~pyromodels.ltvae.LTVAE.fit` accepts for ``search`` (besides a callable)
SEARCHES = ("east",)

# set per call by the search itself
_RESERVED = ("z", "start", "seed")
_SETTINGS = tuple(name for name in inspect.signature(learn_structure).parameters
                  if name not in _RESERVED)
# a file written by every call would be overwritten by the next one
_PER_RUN = ("checkpoint", "checkpoint_every", "resume")
# the start of the search driver's warning on reaching its budget of accepted moves
_MAX_STEPS_WARNING = "the search accepted max_steps="


class StructureSearch:
    r"""``search(z, tree, params) -> (tree, params)`` for :meth:`~pyromodels.ltvae.LTVAE.fit`:
    :func:`~pyromodels.trees.learn_structure` on ``z`` started from ``params`` (the current
    tree and its parameters, refined by EM before the first move).

    Each call is seeded with ``derive_seed(seed, digest of z)``: a call on the same codes
    repeats itself, so a fit and its resumption from a checkpoint search alike, and calls
    on different codes (every search of a fit) get their own streams.

    Args:
        seed: the base seed; ``None`` draws one (kept as ``self.seed``).
        **settings: keyword arguments of :func:`~pyromodels.trees.learn_structure` other
            than ``z``, ``start``, ``seed``, ``checkpoint``, ``checkpoint_every`` and
            ``resume`` (``covariance`` defaults to ``"full"``, as the spec's search;
            ``progress`` to ``False``, quiet inside a fit). A ``max_steps`` given here is
            a deliberate budget: a search that reaches it does not warn.

    Attributes:
        results: the :class:`~pyromodels.trees.StructureResult` of every call, in order.

    Raises:
        TypeError: an unknown or reserved setting (named).
    """

    def __init__(self, seed: int | None = None, **settings):
        for name in settings:
            if name in _RESERVED or name in _PER_RUN:
                raise TypeError(f"structure_search sets {name!r} itself for every search; "
                                f"it cannot be given")
            if name not in _SETTINGS:
                raise TypeError(f"structure_search got an unknown setting {name!r}; expected "
                                f"keyword arguments of learn_structure: {list(_SETTINGS)}")
        self.seed = resolve_seed(seed)
        self.settings = {"progress": False, **settings}
        self.results: list[StructureResult] = []

    def __repr__(self) -> str:
        return f"StructureSearch(seed={self.seed}, settings={self.settings!r})"

    def __call__(self, z, tree: LatentTree, params: TreeParams) -> tuple[LatentTree, TreeParams]:
        """Search from ``params`` (whose structure must be ``tree``) on the points ``z``
        ``(N, J)``; returns the structure found and its fitted parameters (float64)."""
        if not isinstance(tree, LatentTree):
            raise TypeError(f"tree must be a LatentTree, got {type(tree).__name__}")
        if not isinstance(params, TreeParams):
            raise TypeError(f"params must be TreeParams, got {type(params).__name__}")
        if params.tree != tree:
            raise ValueError(f"params must be parameters of the tree {tree!r}, got parameters "
                             f"of {params.tree!r}")
        points = check_points(z)
        digest = hashlib.sha256(points.numpy().tobytes()).hexdigest()
        with warnings.catch_warnings():
            if "max_steps" in self.settings:  # a deliberate budget
                warnings.filterwarnings("ignore", message=_MAX_STEPS_WARNING,
                                        category=ConvergenceWarning)
            result = learn_structure(points,
                                     start=params.to(dtype=torch.float64, device="cpu"),
                                     seed=derive_seed(self.seed, "structure-search", digest),
                                     **self.settings)
        self.results.append(result)
        return result.tree, result.params


def structure_search(seed: int | None = None, **settings) -> StructureSearch:
    r"""A structure search for ``LTVAE.fit(search=...)``: :class:`StructureSearch`.

    Example:
        >>> search = structure_search(seed=0, em_restarts=1, refine_top=1)
        >>> search.settings["progress"]
        False
    """
    return StructureSearch(seed, **settings)


def searched_quietly(search: Callable, *args) -> tuple[object, list[warnings.WarningMessage]]:
    """``(search(*args), the warnings it emitted)``: the warnings are kept, not shown (every
    one of them, whatever the filters say; :func:`warn_summaries` shows them later)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = search(*args)
    return out, list(caught)


def warn_summaries(caught: list[tuple[int, list[warnings.WarningMessage]]],
                   stacklevel: int = 2) -> None:
    """Emit each distinct warning of a fit's searches once, saying how many searches gave it.

    Args:
        caught: ``(epoch, warnings)`` of every search of the fit (from
            :func:`searched_quietly`), in order.
        stacklevel: as :func:`warnings.warn`'s, counted from the caller.
    """
    epochs: dict[tuple[type, str], list[int]] = {}
    for epoch, found in caught:
        for w in found:
            seen = epochs.setdefault((w.category, str(w.message)), [])
            if not seen or seen[-1] != epoch:
                seen.append(epoch)
    for (category, message), at in epochs.items():
        warnings.warn(f"{message} [{len(at)} of the fit's {len(caught)} structure searches "
                      f"warned this, before epochs {', '.join(map(str, at))}]", category,
                      stacklevel=stacklevel + 1)
