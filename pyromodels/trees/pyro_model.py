r"""The latent tree model as a Pyro program, with every latent node enumerated in parallel.

Inside the plate ``"points"`` (size ``N``), latent node ``j`` is the discrete site
``"y_<name>"`` (support ``{0..K_j-1}``, ``infer={"enumerate": "parallel"}``): the root drawn
from ``Categorical(root_probs)``, every other node from row ``y_parent`` of its CPT. Pouch
``b`` is the observed site ``"z_<b>"`` (event shape ``(d_b,)``), a ``MultivariateNormal``
with mean and Cholesky factor indexed by its parent's state. Summing the enumerated sites out
(``TraceEnum_ELBO`` with an empty guide) is tensor variable elimination on the tree, so it
gives the same :math:`\log p(z)` as :mod:`~pyromodels.trees.message_passing` (spec
``ltvae.md`` §3.7): a cross-check of the hand-written passes.
"""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import torch
from pyro.infer import TraceEnum_ELBO
from pyro.ops.indexing import Vindex

from ..checks import check_int
from .message_passing import prepare_points
from .params import TreeParams

__all__ = ["tree_model", "empty_guide", "pyro_log_likelihood"]


def tree_model(params: TreeParams, z: torch.Tensor | None = None, num_points: int | None = None):
    """The generative story of the tree as a Pyro program.

    Args:
        params: the parameters (plain tensors, not ``pyro.param`` sites).
        z: observed points ``(N, J)``, prepared (:func:`prepare_points`), or ``None`` to
            draw them.
        num_points: ``N`` when ``z`` is ``None``.

    Returns:
        The points ``(N, J)``: ``z`` itself, or the drawn ones.
    """
    tree = params.tree
    if z is None:
        n = check_int(num_points, "num_points", minimum=1)
    elif num_points is not None and num_points != z.shape[0]:
        raise ValueError(f"num_points ({num_points}) contradicts z's {z.shape[0]} rows")
    else:
        n = z.shape[0]
    states: list[torch.Tensor | None] = [None] * tree.num_latents
    pieces: list[torch.Tensor | None] = [None] * len(tree.pouches)
    with pyro.plate("points", n, dim=-1):
        for j in tree.order:
            p = tree.parents[j]
            probs = params.root_probs if p is None else Vindex(params.cpts[j])[states[p]]
            states[j] = pyro.sample(f"y_{tree.names[j]}", dist.Categorical(probs=probs),
                                    infer={"enumerate": "parallel"})
        for b, (block, p) in enumerate(zip(tree.pouches, tree.pouch_parents)):
            obs = None if z is None else z[:, list(block)]
            loc = Vindex(params.means[b])[states[p]]
            tril = Vindex(params.scale_trils[b])[states[p]]
            pieces[b] = pyro.sample(f"z_{b}", dist.MultivariateNormal(loc, scale_tril=tril),
                                    obs=obs)
    if z is not None:
        return z
    out = params.root_probs.new_empty(n, tree.num_coordinates)
    for block, piece in zip(tree.pouches, pieces):
        out[:, list(block)] = piece
    return out


def empty_guide(params: TreeParams, z: torch.Tensor | None = None,
                num_points: int | None = None) -> None:
    """A guide with no sites: every latent is enumerated in the model."""


def pyro_log_likelihood(params: TreeParams, z) -> torch.Tensor:
    r""":math:`\sum_n \log p(z_n)` by Pyro's enumeration (``TraceEnum_ELBO`` with the empty
    guide, exact because the guide has no sites).

    Args:
        params: the parameters.
        z: points ``(N, J)``.

    Returns:
        A scalar tensor, differentiable in ``z`` and the parameters.

    Example:
        >>> import torch
        >>> from pyromodels.trees import LatentTree, TreeParams, tree_log_likelihood
        >>> params = TreeParams.random(LatentTree([2, 3], [None, 0], [[0], [1, 2]], [0, 1]))
        >>> z = torch.ones(4, 3, dtype=torch.float64)
        >>> bool(abs(pyro_log_likelihood(params, z) - tree_log_likelihood(params, z).sum()) < 1e-10)
        True
    """
    z = prepare_points(params, z)
    elbo = TraceEnum_ELBO(max_plate_nesting=1)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (z, *params.tensors())):
        return -elbo.differentiable_loss(tree_model, empty_guide, params, z)
    # differentiable_loss refuses a loss that nothing is differentiated in: give it a leaf
    with torch.enable_grad():
        leaf = z.detach().requires_grad_()
        return -elbo.differentiable_loss(tree_model, empty_guide, params, leaf).detach()
