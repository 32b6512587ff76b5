r"""A latent tree model of fixed structure fitted by EM: batch EM through
:func:`~pyromodels.core.run_em` (restarts, convergence monitor, checkpoints) and stepwise EM
through :func:`~pyromodels.core.run_stepwise_em` (spec ``ltvae.md`` §3.4-3.5).

The engines carry the parameters as a flat dict of tensors (:func:`.em.params_to_dict`);
:meth:`LatentTreeModel.tree_params` turns a fit (or such a dict) back into
:class:`~pyromodels.trees.params.TreeParams`.
"""

from __future__ import annotations

import math

import torch

from ..checks import as_float_tensor
from ..core.kmeanspp import kmeanspp_indices
from ..core.model import Model
from . import em as kernels
from .bic import free_parameters
from .message_passing import TreePosterior, tree_log_likelihood, tree_posterior
from .params import TreeParams
from .structure import LatentTree

__all__ = ["LatentTreeModel"]


class LatentTreeModel(Model):
    r"""A latent tree model with Gaussian pouch leaves whose parameters EM fits.

    Args:
        tree: the structure (fixed).
        covariance: ``"full"``: each pouch's covariances are re-estimated, their eigenvalues
            floored at ``floor``; ``"fixed"``: held at ``alpha * I`` (how the LTVAE release
            trains), only the means, CPTs and root prior are learned.
        alpha: the fixed covariances' scale (also their start in ``"fixed"`` mode).
        floor: the least eigenvalue of a learned covariance (spec: 0.01; ``0`` disables it).

    Starting points (``em_init``): root prior and CPT rows from a flat Dirichlet; for each
    latent node, ``K_j`` data points chosen by k-means++ seeding on the columns of its pouches
    put the means of state ``k`` of every one of its pouches at point ``k``; the covariances
    start at the data's covariance of the pouch (floored), or at ``alpha * I``.

    Example:
        >>> import torch
        >>> from pyromodels.core import run_em
        >>> from pyromodels.trees import LatentTree, TreeParams, sample_tree
        >>> tree = LatentTree.single(2, 2, pouch=True)
        >>> z, _ = sample_tree(TreeParams.random(tree, mean_scale=4.0), 500)
        >>> model = LatentTreeModel(tree)
        >>> fit = run_em(model, z, n_init=3, seed=0, progress=False)
        >>> model.tree_params(fit).means[0].shape
        torch.Size([2, 2])
    """

    engines = ("em",)
    discrete_sites = ()

    def __init__(self, tree: LatentTree, covariance: str = "full", alpha: float = 1.0,
                 floor: float = 0.01):
        if not isinstance(tree, LatentTree):
            raise TypeError(f"tree must be a LatentTree, got {type(tree).__name__}")
        self.tree = tree
        self.covariance, self.alpha, self.floor = kernels.check_covariance_settings(
            covariance, alpha, floor)
        # the last two (values, TreeParams) handed out by em_start and the M-step
        self._recent: list[tuple[dict, TreeParams]] = []

    def __repr__(self) -> str:
        return (f"LatentTreeModel({self.tree!r}, covariance={self.covariance!r}, "
                f"alpha={self.alpha}, floor={self.floor})")

    def fit(self, *args, method: str | None = None, model_kwargs=None, **kwargs):
        """Fit by batch EM (:func:`~pyromodels.core.run_em`; ``method`` defaults to
        ``"em"``, the only engine); stepwise EM is
        :func:`~pyromodels.core.run_stepwise_em` ``(model, z, ...)``."""
        return super().fit(*args, method="em" if method is None else method,
                           model_kwargs=model_kwargs, **kwargs)

    # ----------------------------------------------------------------- data
    def prepare(self, data, device=None) -> torch.Tensor:
        """Check points ``(N, J)``: finite, the tree's width, at least two rows, floating
        (float64 unless a floating tensor is given)."""
        dtype = data.dtype if isinstance(data, torch.Tensor) and data.is_floating_point() \
            else torch.float64
        z = as_float_tensor(data, "z", ndim=2, dtype=dtype, device=device)
        self.tree.check_width(z.shape[1], "z")
        if z.shape[0] < 2:
            raise ValueError(f"z must have at least 2 rows to fit, got {z.shape[0]}")
        return z

    def model(self, data):
        """Not a Bayesian program: the parameters are point estimates (fit with ``em``; the
        Pyro program for given parameters is :func:`~pyromodels.trees.tree_model`)."""
        raise NotImplementedError("LatentTreeModel is fitted by EM only; for the Pyro program "
                                  "of given parameters use pyromodels.trees.tree_model")

    # ------------------------------------------------------------ parameters
    def tree_params(self, fit) -> TreeParams:
        """The :class:`TreeParams` of a fit's :class:`~pyromodels.core.Posterior` (or of the
        engines' parameter dict)."""
        values = getattr(fit, "params", fit)
        return self._params(values)

    def em_start(self, params: TreeParams) -> dict:
        """``params`` (checked :class:`TreeParams` of this tree) as the engines' ``init``
        dict; the model's first step then uses ``params`` as they are, unchecked again."""
        if not isinstance(params, TreeParams):
            raise TypeError(f"params must be TreeParams, got {type(params).__name__}")
        if params.tree != self.tree:
            raise ValueError(f"params must be parameters of the model's tree {self.tree!r}, "
                             f"got parameters of {params.tree!r}")
        values = kernels.params_to_dict(params)
        self._remember(values, params)
        return values

    def _remember(self, values: dict, params: TreeParams) -> None:
        self._recent = [*self._recent[-1:], (dict(values), params)]

    def _params(self, values: dict) -> TreeParams:
        """``values`` as :class:`TreeParams`: those of one of the last two M-steps (or of
        :meth:`em_start`) when ``values`` holds exactly its tensors (the engines hand each
        step's output to the next step and return the parameters of the step before the
        last), else built and checked."""
        for held, params in reversed(self._recent if isinstance(values, dict) else []):
            if all(values.get(k) is v for k, v in held.items()):
                return params
        return kernels.params_from_dict(self.tree, values)

    def _m_step(self, stats: dict, previous: TreeParams, part=None) -> dict:
        new = kernels.m_step(self.tree, stats, previous, covariance=self.covariance,
                             alpha=self.alpha, floor=self.floor, part=part)
        values = kernels.params_to_dict(new)
        self._remember(values, new)
        return values

    # ------------------------------------------------------------- batch EM
    def em_init(self, data, generator) -> dict:
        """A random start from the data (see the class docstring)."""
        z, tree = data, self.tree
        start = TreeParams.random(tree, generator, dtype=z.dtype, device=z.device)
        rows: list[torch.Tensor | None] = [None] * tree.num_latents
        for j, blocks in enumerate(tree.leaves):
            if blocks:  # one set of rows per node, shared by its pouches
                cols = [c for b in blocks for c in tree.pouches[b]]
                rows[j] = kmeanspp_indices(z[:, cols], tree.cardinalities[j], generator)
        means, trils = [], []
        for block, p in zip(tree.pouches, tree.pouch_parents):
            k, d = tree.cardinalities[p], len(block)
            x = z[:, list(block)]
            means.append(x[rows[p]].clone())
            if self.covariance == "fixed":
                cov = self.alpha * torch.eye(d, dtype=z.dtype, device=z.device)
            else:
                cov = kernels.floor_eigenvalues(torch.cov(x.T).reshape(d, d),
                                                max(self.floor, 1e-6))
            trils.append(torch.linalg.cholesky(cov).expand(k, d, d).clone())
        return kernels.params_to_dict(TreeParams(tree, start.root_probs, list(start.cpts),
                                                 means, trils))

    def em_step_with_objective(self, data, params: dict) -> tuple[dict, float]:
        """One EM step from ``params`` and the log-likelihood at ``params`` (one pass)."""
        current = self._params(params)
        stats, loglik = kernels.batch_stats(current, data)
        return self._m_step(stats, current), float(loglik.sum())

    def em_step(self, data, params: dict) -> dict:
        """One batch EM step: exact E-step, closed-form M-step."""
        return self.em_step_with_objective(data, params)[0]

    def em_objective(self, data, params: dict) -> float:
        r""":math:`\sum_n \log p(z_n)` (EM never decreases it)."""
        return float(tree_log_likelihood(self._params(params), data).sum())

    def em_outputs(self, data, params: dict) -> dict:
        """The posterior of every latent node (``"responsibilities.<name>"``, ``(N, K_j)``),
        the total log-likelihood and the BIC."""
        current = self._params(params)
        post = self._posterior(current, data)
        loglik = post.log_likelihood.sum()
        dim = free_parameters(self.tree, self.covariance)
        bic = loglik - 0.5 * dim * math.log(data.shape[0])
        out = {f"responsibilities.{name}": m
               for name, m in zip(self.tree.names, post.node_marginals)}
        return {**out, "log_likelihood": loglik, "bic": bic}

    def _posterior(self, params: TreeParams, data) -> TreePosterior:
        """The exact posterior at ``params`` (what :meth:`em_outputs` reports)."""
        return tree_posterior(params, data)

    # ---------------------------------------------------------- stepwise EM
    def em_batch_stats(self, data, params: dict, index: torch.Tensor) -> tuple[dict, float]:
        """Expected statistics (sums) of the points ``index`` and their log-likelihood."""
        stats, loglik = kernels.batch_stats(self._params(params), data[index])
        return stats, float(loglik.sum())

    def em_m_step(self, data, stats: dict, params: dict) -> dict:
        """The closed-form M-step from (running) statistics."""
        return self._m_step(stats, self._params(params))

    def em_model_stats(self, data, params: dict) -> dict:
        """The statistics of one point expected under ``params``."""
        return kernels.model_stats(self._params(params))
