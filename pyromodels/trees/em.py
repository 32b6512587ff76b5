r"""EM for the parameters of a latent tree model: expected sufficient statistics and the
closed-form M-step (spec ``ltvae.md`` §3.4, and §3.5 for batch EM).

The statistics of points :math:`z_1..z_N` are sums over the points of posterior expectations,
held in a plain dict of tensors (so a generic engine can average them):

* ``"node.<j>"``: :math:`\sum_i P(Y_j = k \mid z_i)`, ``(K_j,)``, for every latent node;
* ``"edge.<j>"``: :math:`\sum_i P(Y_{\pi(j)} = k', Y_j = k \mid z_i)`, ``(K_{\pi(j)}, K_j)``,
  for every non-root node;
* ``"first.<b>"``: :math:`\sum_i w_{ik} z_{ib}`, ``(K, d_b)``, and ``"second.<b>"``:
  :math:`\sum_i w_{ik} z_{ib} z_{ib}^\top`, ``(K, d_b, d_b)``, per pouch ``b``, with
  :math:`w_{ik} = P(Y_{\pi(b)} = k \mid z_i)`.

A :class:`ParameterPart` restricts both to part of the parameters (local EM, the structure
search's screening): :func:`batch_stats` then returns only the statistics that part's
M-step reads and :func:`m_step` re-estimates only it, keeping the rest of ``previous``.

The M-step (:func:`m_step`) is invariant to a common scale of the statistics (sums or
averages give the same parameters): :math:`\rho \propto` the root's counts,
:math:`A_j[k', \cdot] \propto` the edge counts' row :math:`k'`,
:math:`\mu_{b,k} = \text{first} / n_k` and :math:`\Sigma_{b,k} = \text{second} / n_k -
\mu_{b,k}\mu_{b,k}^\top` with its eigenvalues raised to at least ``floor`` (spec §2.3: 0.01),
or :math:`\Sigma_{b,k} = \alpha I` when the covariances are fixed (the released code's
training setting). A state whose count is negligible (below the working precision's epsilon
times the total) keeps its previous parameters, since the data say nothing about them.

:func:`model_stats` gives the statistics the parameters themselves imply per point (the
clique marginals with no evidence): the M-step maps them back to the parameters, and the
released code's stepwise EM mixes each minibatch with them (spec §3.4). Since
``m_step(model_stats(params))`` returns ``params`` whenever no constraint acts, that form
equals the textbook running average except where the eigenvalue floor raises a covariance
(or a state keeps its previous parameters).
"""

from __future__ import annotations

import dataclasses

import torch

from ..checks import check_in, check_positive
from .message_passing import KnownLeaves, posterior_given_leaves, tree_posterior
from .params import TreeParams
from .structure import LatentTree

__all__ = [
    "COVARIANCE_MODES",
    "ParameterPart",
    "check_covariance_settings",
    "batch_stats",
    "model_stats",
    "node_prior_marginals",
    "m_step",
    "floor_eigenvalues",
    "params_to_dict",
    "params_from_dict",
]

#: how the pouch covariances are treated: learned in full, or held at ``alpha * I``
COVARIANCE_MODES = ("full", "fixed")


def check_covariance_settings(covariance: str, alpha, floor) -> tuple[str, float, float]:
    """Validate the covariance mode, ``alpha > 0`` and ``floor >= 0``."""
    covariance = check_in(covariance, "covariance", COVARIANCE_MODES)
    alpha = check_positive(alpha, "alpha")
    floor = check_positive(floor, "floor", strict=False)
    return covariance, alpha, floor


@dataclasses.dataclass(frozen=True)
class ParameterPart:
    """A part of a tree's parameters: what a local EM step re-estimates (the rest is held).

    Attributes:
        root: whether the root prior is in the part.
        cpts: the indices of the non-root latent nodes whose CPT is in the part.
        pouches: the indices of the pouches whose means and covariances are in the part.
    """

    root: bool
    cpts: frozenset[int]
    pouches: frozenset[int]

    @classmethod
    def everything(cls, tree: LatentTree) -> ParameterPart:
        """Every parameter of ``tree``."""
        return cls(True, frozenset(j for j, p in enumerate(tree.parents) if p is not None),
                   frozenset(range(len(tree.pouches))))

    def check(self, tree: LatentTree) -> ParameterPart:
        """``self``, checked against ``tree`` (ValueError naming a node or pouch it lacks)."""
        bad = sorted(j for j in self.cpts
                     if not 0 <= j < tree.num_latents or tree.parents[j] is None)
        if bad:
            raise ValueError(f"part.cpts must hold indices of non-root latent nodes, got {bad}")
        bad = sorted(b for b in self.pouches if not 0 <= b < len(tree.pouches))
        if bad:
            raise ValueError(f"part.pouches must hold pouch indices below "
                             f"{len(tree.pouches)}, got {bad}")
        return self


def batch_stats(params: TreeParams, z: torch.Tensor, part: ParameterPart | None = None,
                known: KnownLeaves | None = None) -> tuple[dict, torch.Tensor]:
    """The expected sufficient statistics of prepared points ``z`` ``(N, J)`` (sums over the
    points) and their log-likelihoods ``(N,)`` under ``params`` (one exact inference pass).

    With ``part`` only the statistics its parameters' M-step reads: ``node.<root>`` for the
    root prior, ``edge.<j>`` for a CPT, ``node.<parent>``, ``first.<b>`` and ``second.<b>``
    for a pouch (the posterior is still computed over the whole tree). With ``known``
    (:func:`~pyromodels.trees.message_passing.known_leaves` at ``z``) the leaf terms of its
    pouches are taken from it instead of computed again.
    """
    tree = params.tree
    post = tree_posterior(params, z) if known is None else posterior_given_leaves(params, z,
                                                                                  known)
    stats: dict[str, torch.Tensor] = {}
    if part is None:
        nodes = range(tree.num_latents)
        edges = [j for j, p in enumerate(tree.parents) if p is not None]
        pouches = range(len(tree.pouches))
    else:
        pouches = sorted(part.pouches)
        nodes = sorted({tree.pouch_parents[b] for b in pouches}
                       | ({tree.root} if part.root else set()))
        edges = sorted(part.cpts)
    for j in nodes:
        stats[f"node.{j}"] = post.node_marginals[j].sum(0)
    for j in edges:
        stats[f"edge.{j}"] = post.edge_marginals[j].sum(0)
    for b in pouches:
        block, p = tree.pouches[b], tree.pouch_parents[b]
        w = post.node_marginals[p]  # (N, K)
        x = z[:, list(block)]
        stats[f"first.{b}"] = w.T @ x
        outer = (x.unsqueeze(-1) * x.unsqueeze(-2)).reshape(x.shape[0], -1)  # (N, d * d)
        stats[f"second.{b}"] = (w.T @ outer).reshape(w.shape[1], x.shape[1], x.shape[1])
    return stats, post.log_likelihood


def node_prior_marginals(params: TreeParams) -> list[torch.Tensor]:
    """:math:`P(Y_j = k)` of every latent node with no evidence (root first, down the tree)."""
    tree = params.tree
    marg: list[torch.Tensor | None] = [None] * tree.num_latents
    marg[tree.root] = params.root_probs
    for j in tree.order[1:]:
        marg[j] = marg[tree.parents[j]] @ params.cpts[j]
    return marg


def model_stats(params: TreeParams) -> dict:
    """The statistics of one point expected under the model itself (no evidence):
    node and edge prior marginals, :math:`P(k)\\mu_{b,k}` and
    :math:`P(k)(\\Sigma_{b,k} + \\mu_{b,k}\\mu_{b,k}^\\top)`."""
    tree = params.tree
    marg = node_prior_marginals(params)
    stats: dict[str, torch.Tensor] = {}
    for j, m in enumerate(marg):
        stats[f"node.{j}"] = m
        if tree.parents[j] is not None:
            stats[f"edge.{j}"] = marg[tree.parents[j]].unsqueeze(-1) * params.cpts[j]
    for b, (p, mean, cov) in enumerate(zip(tree.pouch_parents, params.means,
                                            params.covariances)):
        w = marg[p]
        stats[f"first.{b}"] = w.unsqueeze(-1) * mean
        outer = mean.unsqueeze(-1) * mean.unsqueeze(-2)
        stats[f"second.{b}"] = w[:, None, None] * (cov + outer)
    return stats


def floor_eigenvalues(cov: torch.Tensor, floor: float) -> torch.Tensor:
    """Symmetric ``cov`` ``(..., d, d)`` with every eigenvalue raised to at least ``floor``
    (matrices already above it are returned unchanged, bit for bit).

    Example:
        >>> import torch
        >>> cov = torch.diag(torch.tensor([0.001, 2.0], dtype=torch.float64))
        >>> floor_eigenvalues(cov, 0.01).diagonal()
        tensor([0.0100, 2.0000], dtype=torch.float64)
    """
    cov = 0.5 * (cov + cov.transpose(-1, -2))
    vals, vecs = torch.linalg.eigh(cov)
    low = (vals < floor).any(-1)
    if not bool(low.any()):
        return cov
    fixed = (vecs * vals.clamp_min(floor).unsqueeze(-2)) @ vecs.transpose(-1, -2)
    fixed = 0.5 * (fixed + fixed.transpose(-1, -2))
    return torch.where(low[..., None, None], fixed, cov)


def _share(counts: torch.Tensor) -> torch.Tensor:
    """Whether each count is large enough to re-estimate its state from."""
    eps = torch.finfo(counts.dtype).eps
    return counts > eps * counts.sum().clamp_min(torch.finfo(counts.dtype).tiny)


def m_step(tree: LatentTree, stats: dict, previous: TreeParams, *, covariance: str = "full",
           alpha: float = 1.0, floor: float = 0.01, part: ParameterPart | None = None
           ) -> TreeParams:
    """The parameters maximising the expected complete-data log-likelihood of ``stats``.

    Args:
        tree: the structure.
        stats: sufficient statistics (sums or averages; see the module docstring).
        previous: the current parameters, kept for states with a negligible count.
        covariance: ``"full"`` (re-estimated, eigenvalues floored) or ``"fixed"``
            (``alpha * I``).
        alpha: the fixed covariances' scale.
        floor: the least eigenvalue of a learned covariance.
        part: re-estimate only these parameters and keep the others of ``previous`` (the
            M-step of a local EM; ``stats`` need only hold what
            :func:`batch_stats` gives for ``part``); ``None``: all of them.

    Returns:
        New :class:`TreeParams`.
    """
    if part is None:
        part = ParameterPart.everything(tree)
    if previous.tree is not tree and previous.tree != tree:
        raise ValueError("previous must be parameters of tree")
    root = None
    if part.root:
        root_counts = stats[f"node.{tree.root}"]
        root = root_counts / root_counts.sum()
    cpts, means, trils = {}, {}, {}
    for j in sorted(part.cpts):
        edge = stats[f"edge.{j}"]
        rows = edge.sum(-1, keepdim=True)
        ok = _share(rows.squeeze(-1)).unsqueeze(-1)
        cpts[j] = torch.where(ok, edge / rows.clamp_min(torch.finfo(edge.dtype).tiny),
                              previous.cpts[j])
    for b in sorted(part.pouches):
        block, p = tree.pouches[b], tree.pouch_parents[b]
        n = stats[f"node.{p}"]
        ok = _share(n)
        safe = n.clamp_min(torch.finfo(n.dtype).tiny)
        mean = torch.where(ok.unsqueeze(-1), stats[f"first.{b}"] / safe.unsqueeze(-1),
                           previous.means[b])
        means[b] = mean
        d = len(block)
        if covariance == "fixed":
            eye = torch.eye(d, dtype=mean.dtype, device=mean.device)
            trils[b] = (alpha ** 0.5 * eye).expand(n.shape[0], d, d).clone()
            continue
        outer = mean.unsqueeze(-1) * mean.unsqueeze(-2)
        cov = stats[f"second.{b}"] / safe[:, None, None] - outer
        cov = floor_eigenvalues(cov, floor)
        tril, info = torch.linalg.cholesky_ex(cov)
        if bool(((info != 0) & ok).any()):  # only when floor == 0 and a covariance is singular
            raise ValueError(f"the covariance of pouch {b} is singular; use floor > 0")
        trils[b] = torch.where(ok[:, None, None], tril, previous.scale_trils[b])
    # only the re-estimated tensors are checked again
    return previous.replace(root_probs=root, cpts=cpts, means=means, scale_trils=trils)


def params_to_dict(params: TreeParams) -> dict:
    """The parameters as a flat dict of tensors (what the EM engines carry): ``root_probs``,
    ``cpt.<name>``, ``means.<b>``, ``scale_tril.<b>``."""
    tree = params.tree
    out = {"root_probs": params.root_probs}
    for j, c in enumerate(params.cpts):
        if c is not None:
            out[f"cpt.{tree.names[j]}"] = c
    for b, (m, t) in enumerate(zip(params.means, params.scale_trils)):
        out[f"means.{b}"] = m
        out[f"scale_tril.{b}"] = t
    return out


def params_from_dict(tree: LatentTree, values: dict) -> TreeParams:
    """:class:`TreeParams` from :func:`params_to_dict`'s dict (checked by ``TreeParams``).

    Raises:
        ValueError: a missing entry (named).
    """
    if not isinstance(values, dict):
        raise TypeError(f"values must be a dict of parameter tensors, got "
                        f"{type(values).__name__}")
    keys = ["root_probs", *(f"cpt.{tree.names[j]}" for j, p in enumerate(tree.parents)
                            if p is not None),
            *(f"{kind}.{b}" for b in range(len(tree.pouches))
              for kind in ("means", "scale_tril"))]
    missing = [k for k in keys if k not in values]
    if missing:
        raise ValueError(f"values lacks the parameters {missing}")
    cpts = [None if p is None else values[f"cpt.{tree.names[j]}"]
            for j, p in enumerate(tree.parents)]
    nb = len(tree.pouches)
    return TreeParams(tree, values["root_probs"], cpts,
                      [values[f"means.{b}"] for b in range(nb)],
                      [values[f"scale_tril.{b}"] for b in range(nb)])
