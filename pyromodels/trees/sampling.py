r"""Forward sampling of a latent tree model, and generation given chosen latent states.

:func:`sample_tree` draws :math:`y \sim p(y)` along the tree (root first) and then each pouch
:math:`z_b \sim N(\mu_{b, y_{\pi(b)}}, \Sigma_{b, y_{\pi(b)}})`. With ``condition={node:
state}`` the latent states are drawn from :math:`p(y \mid Y_{\text{node}} = \text{state})`
exactly: the evidence is passed up the tree first (an upward pass without data) and the states
are then drawn root first from the resulting conditionals, so ancestors of the conditioned
node follow their posterior, not their prior (spec ``ltvae.md`` §3.7, App. B of the paper).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from ..checks import check_int
from .params import TreeParams

__all__ = ["sample_tree"]


def _condition_weights(params: TreeParams, condition) -> list[torch.Tensor]:
    """Per latent node, a 0/1 evidence vector ``(K_j,)`` (all ones where unconditioned)."""
    tree = params.tree
    weights = [params.root_probs.new_ones(k) for k in tree.cardinalities]
    if condition is None:
        return weights
    if not isinstance(condition, Mapping):
        raise TypeError(f"condition must be a mapping {{node: state}}, got "
                        f"{type(condition).__name__}")
    for node, state in condition.items():
        j = tree.index(node)
        k = check_int(state, f"condition[{node!r}]", 0, tree.cardinalities[j] - 1)
        w = torch.zeros_like(weights[j])
        w[k] = 1
        weights[j] = w
    return weights


def sample_tree(params: TreeParams, num_samples: int, generator: torch.Generator | None = None,
                condition: Mapping[int | str, int] | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Draw ``(z, y)`` from the model, optionally given the states of some latent nodes.

    Args:
        params: the parameters (and structure).
        num_samples: ``N >= 1``.
        generator: the random stream (default: a fresh one seeded 0, never the global one);
            on the parameters' device.
        condition: ``{node: state}`` with nodes by index or name; the other latent states are
            drawn from their exact conditional law given these.

    Returns:
        ``(z, y)``: ``z`` ``(N, J)`` in the parameters' dtype, ``y`` ``(N, l)`` long.

    Raises:
        ValueError: an unknown node, a state out of range, or a condition of probability 0.

    Example:
        >>> from pyromodels.trees import LatentTree, TreeParams
        >>> params = TreeParams.random(LatentTree.single(3, 2))
        >>> z, y = sample_tree(params, 5, condition={"Y": 1})
        >>> y[:, 0].tolist()
        [1, 1, 1, 1, 1]
    """
    if not isinstance(params, TreeParams):
        raise TypeError(f"params must be TreeParams, got {type(params).__name__}")
    n = check_int(num_samples, "num_samples", minimum=1)
    if generator is None:
        generator = torch.Generator(device=params.device).manual_seed(0)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    tree = params.tree
    with torch.no_grad():
        weights = _condition_weights(params, condition)
        up: list[torch.Tensor | None] = [None] * tree.num_latents
        for j in reversed(tree.order):
            u = weights[j].clone()
            for c in tree.children[j]:
                u = u * (params.cpts[c] @ up[c])
            up[j] = u / u.sum() if float(u.sum()) > 0 else u
        root = tree.root
        probs = params.root_probs * up[root]
        if float(probs.sum()) <= 0:
            raise ValueError(f"condition {dict(condition)} has probability 0 under the "
                             f"parameters")
        y = torch.empty(n, tree.num_latents, dtype=torch.long, device=params.device)
        y[:, root] = torch.multinomial(probs.expand(n, -1), 1, replacement=True,
                                       generator=generator).squeeze(1)
        for j in tree.order[1:]:
            rows = params.cpts[j][y[:, tree.parents[j]]] * up[j]  # (N, K_j)
            y[:, j] = torch.multinomial(rows, 1, replacement=True,
                                        generator=generator).squeeze(1)
        z = params.root_probs.new_empty(n, tree.num_coordinates)
        for block, p, mean, tril in zip(tree.pouches, tree.pouch_parents, params.means,
                                        params.scale_trils):
            state = y[:, p]
            eps = torch.randn(n, len(block), 1, generator=generator, dtype=params.dtype,
                              device=params.device)
            draw = mean[state] + (tril[state] @ eps).squeeze(-1)
            z[:, torch.as_tensor(block, device=params.device)] = draw
    return z, y
