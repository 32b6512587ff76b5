r"""Parameters :math:`\Theta` of a latent tree model with Gaussian pouch leaves.

For a :class:`~pyromodels.trees.structure.LatentTree`:

* the root prior :math:`\rho_k = P(Y_r = k)`, shape ``(K_r,)``;
* a CPT :math:`A_j[k', k] = P(Y_j = k \mid Y_{\pi(j)} = k')` for each non-root node, shape
  ``(K_{\pi(j)}, K_j)``, rows summing to one;
* for each pouch :math:`b` a Gaussian :math:`N(z_b; \mu_{b,k}, \Sigma_{b,k})` per state
  :math:`k` of its parent: means ``(K_{\pi(b)}, d_b)`` and the Cholesky factors
  :math:`L_{b,k}` (:math:`\Sigma_{b,k} = L_{b,k} L_{b,k}^\top`), shape
  ``(K_{\pi(b)}, d_b, d_b)``, lower triangular with a positive diagonal.

(LTVAE paper §2; spec ``ltvae.md`` §2.1-2.2.) Nothing here is a ``pyro.param``: the tensors
are plain, and may require gradients.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from ..checks import as_float_tensor, check_positive, check_stochastic
from .structure import LatentTree

__all__ = ["TreeParams"]


def _per_node(values, tree: LatentTree, name: str) -> list:
    """``values`` (a sequence with one entry per latent node, ``None`` at the root, or a
    mapping by node name without the root) as a list indexed by node."""
    if isinstance(values, Mapping):
        unknown = sorted(set(values) - set(tree.names))
        if unknown:
            raise ValueError(f"{name} names unknown latent nodes {unknown}")
        return [values.get(n) for n in tree.names]
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence (one entry per latent node) or a mapping "
                        f"by node name, got {type(values).__name__}")
    if len(values) != tree.num_latents:
        raise ValueError(f"{name} must have one entry per latent node ({tree.num_latents}; "
                         f"None at the root), got {len(values)}")
    return list(values)


def _per_pouch(values, tree: LatentTree, name: str) -> list:
    if isinstance(values, (str, bytes, torch.Tensor)) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a sequence with one tensor per pouch, got "
                        f"{type(values).__name__}")
    if len(values) != len(tree.pouches):
        raise ValueError(f"{name} must have one entry per pouch ({len(tree.pouches)}), got "
                         f"{len(values)}")
    return list(values)


class TreeParams:
    r"""Parameters :math:`\Theta` of a latent tree model, bound to its structure.

    Args:
        tree: the structure.
        root_probs: :math:`\rho`, shape ``(K_r,)``, on the simplex.
        cpts: one CPT per latent node (``None`` at the root), or ``{name: CPT}`` for the
            non-root nodes; CPT ``j`` has shape ``(K_{parent(j)}, K_j)``, rows on the simplex.
        means: one tensor per pouch, shape ``(K_{parent(b)}, d_b)``.
        scale_trils: one tensor per pouch, shape ``(K_{parent(b)}, d_b, d_b)``: lower
            triangular Cholesky factors of the covariances with a positive diagonal.

    Every tensor takes the dtype and device of ``root_probs`` (a floating tensor, or float64
    from other input); a tensor of another dtype or device is an error, not converted.

    Raises:
        TypeError, ValueError: wrong shapes, probabilities off the simplex, non-finite
            values, a factor that is not lower triangular or has a non-positive diagonal,
            mixed dtypes or devices.

    Example:
        >>> tree = LatentTree.single(2, 1)
        >>> p = TreeParams(tree, [0.5, 0.5], [None], [[[0.0], [1.0]]], [[[[1.0]], [[1.0]]]])
        >>> tuple(p.covariances[0].shape)
        (2, 1, 1)
    """

    def __init__(self, tree: LatentTree, root_probs, cpts, means, scale_trils):
        if not isinstance(tree, LatentTree):
            raise TypeError(f"tree must be a LatentTree, got {type(tree).__name__}")
        self.tree = tree
        cards = tree.cardinalities
        raw = root_probs if isinstance(root_probs, torch.Tensor) else None
        dtype = raw.dtype if raw is not None and raw.is_floating_point() else torch.float64
        device = raw.device if raw is not None else torch.device("cpu")
        self.root_probs = self._tensor(root_probs, "root_probs", dtype, device, stochastic=True,
                                       shape=(cards[tree.root],))
        cpt_list = _per_node(cpts, tree, "cpts")
        for j, p in enumerate(tree.parents):
            if p is None and cpt_list[j] is not None:
                raise ValueError(f"cpts[{tree.names[j]!r}] must be None: {tree.names[j]!r} is "
                                 f"the root (its law is root_probs)")
            if p is not None and cpt_list[j] is None:
                raise ValueError(f"cpts lacks the CPT of latent node {tree.names[j]!r}")
        self.cpts: tuple[torch.Tensor | None, ...] = tuple(
            None if p is None else self._cpt(tree, j, cpt_list[j], dtype, device)
            for j, p in enumerate(tree.parents))
        mean_list = _per_pouch(means, tree, "means")
        tril_list = _per_pouch(scale_trils, tree, "scale_trils")
        self.means = tuple(self._mean(tree, b, m, dtype, device) for b, m in enumerate(mean_list))
        self.scale_trils = tuple(self._tril(tree, b, t, dtype, device)
                                 for b, t in enumerate(tril_list))

    @classmethod
    def _cpt(cls, tree: LatentTree, j: int, x, dtype, device) -> torch.Tensor:
        shape = (tree.cardinalities[tree.parents[j]], tree.cardinalities[j])
        return cls._tensor(x, f"cpts[{tree.names[j]!r}]", dtype, device, stochastic=True,
                           shape=shape)

    @classmethod
    def _mean(cls, tree: LatentTree, b: int, x, dtype, device) -> torch.Tensor:
        shape = (tree.cardinalities[tree.pouch_parents[b]], len(tree.pouches[b]))
        return cls._tensor(x, f"means[{b}]", dtype, device, shape=shape)

    @classmethod
    def _tril(cls, tree: LatentTree, b: int, x, dtype, device) -> torch.Tensor:
        d = len(tree.pouches[b])
        tril = cls._tensor(x, f"scale_trils[{b}]", dtype, device,
                           shape=(tree.cardinalities[tree.pouch_parents[b]], d, d))
        if bool((tril.detach().triu(1) != 0).any()):
            raise ValueError(f"scale_trils[{b}] must be lower triangular (Cholesky "
                             f"factors), found non-zero entries above the diagonal")
        diag = tril.detach().diagonal(dim1=-2, dim2=-1)
        if bool((diag <= 0).any()):
            raise ValueError(f"scale_trils[{b}] must have a positive diagonal, found "
                             f"{float(diag.min()):.3g}")
        return tril

    def replace(self, *, root_probs=None, cpts=None, means=None,
                scale_trils=None) -> TreeParams:
        """A copy with some tensors replaced; only the new ones are checked (as the
        constructor checks them), the others are shared.

        Args:
            root_probs: the new root prior; ``None`` keeps it.
            cpts: ``{node index: CPT}`` of the non-root nodes to replace.
            means, scale_trils: ``{pouch index: tensor}`` to replace.

        Raises:
            TypeError, ValueError: as the constructor, for a replaced tensor; an index that
                names no non-root node or no pouch.

        Example:
            >>> params = TreeParams.random(LatentTree.single(2, 2))
            >>> moved = params.replace(means={1: torch.zeros(2, 1, dtype=torch.float64)})
            >>> moved.means[0] is params.means[0], moved.means[1].abs().max().item()
            (True, 0.0)
        """
        tree, dtype, device = self.tree, self.dtype, self.device
        new = object.__new__(TreeParams)
        new.tree = tree
        new.root_probs = self.root_probs if root_probs is None else self._tensor(
            root_probs, "root_probs", dtype, device, stochastic=True,
            shape=(tree.cardinalities[tree.root],))
        spots = (("cpts", cpts, [j for j, p in enumerate(tree.parents) if p is not None]),
                 ("means", means, range(len(tree.pouches))),
                 ("scale_trils", scale_trils, range(len(tree.pouches))))
        check = {"cpts": self._cpt, "means": self._mean, "scale_trils": self._tril}
        for name, given, allowed in spots:
            values = list(getattr(self, name))
            if given:
                if not isinstance(given, dict):
                    raise TypeError(f"{name} must be a dict {{index: tensor}}, got "
                                    f"{type(given).__name__}")
                bad = sorted(set(given) - set(allowed), key=repr)
                if bad:
                    raise ValueError(f"{name} must be keyed by indices among "
                                     f"{list(allowed)}, got {bad}")
                for i, x in given.items():
                    values[i] = check[name](tree, i, x, dtype, device)
            setattr(new, name, tuple(values))
        return new

    @staticmethod
    def _tensor(x, name, dtype, device, shape, stochastic=False):
        if isinstance(x, torch.Tensor):
            if x.is_floating_point() and x.dtype != dtype:
                raise ValueError(f"{name} has dtype {x.dtype}, the parameters' dtype is {dtype}"
                                 f" (convert with .to(dtype))")
            if x.device != device:
                raise ValueError(f"{name} is on {x.device}, the parameters are on {device}")
        if stochastic:
            if isinstance(x, torch.Tensor) and x.requires_grad:  # check the values, keep the graph
                check_stochastic(x.detach(), name, shape=shape, dtype=dtype, device=device)
                return x
            return check_stochastic(x, name, shape=shape, dtype=dtype, device=device)
        t = as_float_tensor(x, name, dtype=dtype, device=device)
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(t.shape)}")
        return t

    # -- constructors ---------------------------------------------------------------------

    @classmethod
    def from_covariances(cls, tree: LatentTree, root_probs, cpts, means,
                         covariances) -> TreeParams:
        """Parameters from covariance matrices instead of their Cholesky factors.

        Raises:
            ValueError: a covariance that is not symmetric positive definite (named).
        """
        trils = []
        for b, cov in enumerate(_per_pouch(covariances, tree, "covariances")):
            c = as_float_tensor(cov, f"covariances[{b}]", ndim=3)
            if not torch.allclose(c, c.transpose(-1, -2)):
                raise ValueError(f"covariances[{b}] must be symmetric")
            tril, info = torch.linalg.cholesky_ex(c)
            if bool((info != 0).any()):
                raise ValueError(f"covariances[{b}] must be positive definite (Cholesky failed "
                                 f"for parent state {int(torch.nonzero(info)[0])})")
            trils.append(tril)
        return cls(tree, root_probs, cpts, means, trils)

    @classmethod
    def random(cls, tree: LatentTree, generator: torch.Generator | None = None, *,
               concentration: float = 1.0, mean_scale: float = 2.0, scale: float = 1.0,
               dtype: torch.dtype = torch.float64, device=None) -> TreeParams:
        r"""Random parameters: Dirichlet(``concentration``) root prior and CPT rows, means
        :math:`N(0, \text{mean\_scale}^2)`, Cholesky factors ``scale * (I + 0.3 * strictly
        lower Gaussian)`` with diagonals in ``scale * [0.5, 1.5]``.

        Args:
            tree: the structure.
            generator: the random stream (default: a fresh one seeded 0, so the result does
                not depend on the global state).
            concentration, mean_scale, scale: positive reals, as above.
            dtype, device: of the tensors.
        """
        if not isinstance(tree, LatentTree):
            raise TypeError(f"tree must be a LatentTree, got {type(tree).__name__}")
        if generator is None:
            generator = torch.Generator().manual_seed(0)
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got "
                            f"{type(generator).__name__}")
        concentration = check_positive(concentration, "concentration")
        mean_scale = check_positive(mean_scale, "mean_scale", strict=False)
        scale = check_positive(scale, "scale")
        gen = generator
        gdev = gen.device

        def simplex(*shape):
            # Dirichlet rows as normalised Gamma draws; torch's public Gamma takes no generator
            g = torch._standard_gamma(torch.full(shape, concentration, dtype=torch.float64,
                                                 device=gdev), generator=gen)
            g = g.clamp_min(1e-12)
            return (g / g.sum(-1, keepdim=True)).to(dtype=dtype, device=device)

        def normal(*shape):
            return torch.randn(shape, generator=gen, dtype=torch.float64, device=gdev)

        cards = tree.cardinalities
        root = simplex(cards[tree.root])
        cpts = [None if p is None else simplex(cards[p], cards[j])
                for j, p in enumerate(tree.parents)]
        means, trils = [], []
        for block, p in zip(tree.pouches, tree.pouch_parents):
            d, k = len(block), cards[p]
            means.append((mean_scale * normal(k, d)).to(dtype=dtype, device=device))
            diag = 0.5 + torch.rand((k, d), generator=gen, dtype=torch.float64, device=gdev)
            tril = 0.3 * normal(k, d, d).tril(-1) + torch.diag_embed(diag)
            trils.append((scale * tril).to(dtype=dtype, device=device))
        return cls(tree, root, cpts, means, trils)

    # -- views and movement -----------------------------------------------------------------

    @property
    def dtype(self) -> torch.dtype:
        """The parameters' floating dtype."""
        return self.root_probs.dtype

    @property
    def device(self) -> torch.device:
        """The parameters' device."""
        return self.root_probs.device

    @property
    def covariances(self) -> tuple[torch.Tensor, ...]:
        r""":math:`\Sigma_{b,k} = L_{b,k} L_{b,k}^\top` per pouch, ``(K, d_b, d_b)``."""
        return tuple(t @ t.transpose(-1, -2) for t in self.scale_trils)

    def tensors(self) -> list[torch.Tensor]:
        """Every parameter tensor (root prior, CPTs in node order, means, factors)."""
        return [self.root_probs, *(c for c in self.cpts if c is not None), *self.means,
                *self.scale_trils]

    def to(self, dtype: torch.dtype | None = None, device=None) -> TreeParams:
        """A copy with every tensor moved to ``dtype`` and/or ``device``.

        Moved to a finer dtype, the probabilities are renormalised: a float32 simplex may sum
        to 1 only within float32's rounding, which the finer dtype's check would reject.
        """
        if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")

        def move(t):
            return None if t is None else t.to(dtype=dtype or t.dtype, device=device or t.device)

        def move_probs(t):
            moved = move(t)
            if moved is None or torch.finfo(moved.dtype).eps >= torch.finfo(t.dtype).eps:
                return moved
            return moved / moved.sum(-1, keepdim=True)

        return TreeParams(self.tree, move_probs(self.root_probs),
                          [move_probs(c) for c in self.cpts],
                          [move(m) for m in self.means], [move(t) for t in self.scale_trils])

    def detach(self) -> TreeParams:
        """A copy with every tensor detached from the autograd graph."""
        return TreeParams(self.tree, self.root_probs.detach(),
                          [None if c is None else c.detach() for c in self.cpts],
                          [m.detach() for m in self.means],
                          [t.detach() for t in self.scale_trils])

    def __repr__(self) -> str:
        return f"TreeParams({self.tree!r}, dtype={self.dtype}, device={self.device})"
