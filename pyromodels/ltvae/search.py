r"""A ready-made structure search for :meth:`~pyromodels.ltvae.LTVAE.fit`: PLTM-EAST's BIC
hill-climbing (:func:`~pyromodels.trees.learn_structure`) continued from the current tree.

Algorithm 1 of the LTVAE paper (spec ``ltvae.md`` §3.6) searches, every few epochs, from the
current structure and parameters :math:`(S^{t-1}, \Theta^{t-1})` on the encoder means
:math:`D_z = \mu_D` (the release warm-starts its search from the previous model). The search
learns full covariances (BIC counts them, spec §3.5); with ``covariance="fixed"`` the LTVAE
then resets them to :math:`\alpha I` (spec §2.3, the release's ``setCovariances(alpha)``).
"""

from __future__ import annotations

import hashlib
import inspect

import torch

from ..core.seeding import derive_seed, resolve_seed
from ..trees.learner import StructureResult, check_points, learn_structure
from ..trees.params import TreeParams
from ..trees.structure import LatentTree

__all__ = ["StructureSearch", "structure_search", "SEARCHES"]

#: the names :meth:`~pyromodels.ltvae.LTVAE.fit` accepts for ``search`` (besides a callable)
SEARCHES = ("east",)

# set per call by the search itself
_RESERVED = ("z", "start", "seed")
_SETTINGS = tuple(name for name in inspect.signature(learn_structure).parameters
                  if name not in _RESERVED)
# a file written by every call would be overwritten by the next one
_PER_RUN = ("checkpoint", "checkpoint_every", "resume")


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
            ``progress`` to ``False``, quiet inside a fit).

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
        result = learn_structure(points, start=params.to(dtype=torch.float64, device="cpu"),
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
