r"""BHMC's generative story as a Pyro program, and the model class.

The story (RBHMC paper, Algorithm 1 with the finite-``K`` root of Fig. 1), for ``N``
data in ``D`` dimensions and a tree of depth ``L``::

    o_k            ~ Beta(1, gamma0),  k < K - 1        root sticks; beta_{z0} = GEM_K(o)
    theta_k        ~ N(0, I_D),        k < K            global components
    for n in 0..N-1, for l in 1..L:                     nested CRP, datum by datum
        v_{nl}     ~ CRP(alpha) among the children of v_{n,l-1}
        if v_{nl} is a new node z':  beta_{z'} ~ Dir(gamma * beta_{v_{n,l-1}})
    c_n            ~ Cat(beta_{v_{nL}})
    x_n            ~ N(theta_{c_n}, I_D)

Sample sites:

===================  =====================  ========  ==========================================
site                 support                shape     meaning
===================  =====================  ========  ==========================================
``o``                ``(0, 1)``             ``(K-1,)`` root sticks
``theta``            real                   ``(K, D)`` component means
``v_{n}_{l}``        ``{0, .., m}``         ``()``    child index of datum ``n`` at level ``l``
                                                      (``m`` = children so far: ``m`` opens one)
``beta_{j}``         simplex                ``(K,)``  weights of the ``j``-th node opened (j >= 1)
``c``                ``{0, .., K-1}``       ``(N,)``  component labels (plate ``data``)
``x``                real                   ``(N, D)`` observations (plate ``data``)
===================  =====================  ========  ==========================================

The program numbers nodes in the order they open (root 0), and a child index counts the
children of the parent in that order. :func:`program_values` turns a sampler state (any node
ids) into these site values by seating the data in index order, so that
``BHMC.log_joint(x, program_values(state))`` is the program's log joint at the state; the
tests check :func:`~pyromodels.bhmc.joint.complete_log_joint` and every hand-written
conditional against it.

Example:
    >>> import torch
    >>> from pyromodels.bhmc import BHMCPrior
    >>> unit = {"loc": 0.0, "scale": 1.0}  # the story applied to the data as they are
    >>> model = BHMC(BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=3, **unit))
    >>> draw = model.simulate(5, 2, torch.Generator().manual_seed(0))
    >>> draw.x.shape, draw.state.tree.depth
    (torch.Size([5, 2]), 2)
    >>> from pyromodels.bhmc import complete_log_joint
    >>> bool(torch.isclose(model.log_joint(draw.x, program_values(draw.state)),
    ...                    complete_log_joint(draw.x, draw.state, model.prior)))
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import pyro
import pyro.distributions as dist
import torch

from ..bnp import Tree, sample_ncrp_paths, sample_tree_weights
from ..checks import as_float_tensor, check_in, check_int
from ..conjugate.random import sample_categorical
from ..core.model import Model
from .joint import complete_log_joint
from .prior import BHMCPrior
from .state import BHMCState, check_state, node_arrays

__all__ = ["bhmc_program", "program_values", "stick_weights", "stick_fractions", "BHMC",
           "BHMCSample"]


def stick_weights(o: torch.Tensor) -> torch.Tensor:
    r"""``(K,)`` truncated GEM weights from ``K - 1`` sticks: :math:`\beta_k = o_k \prod_{j<k}
    (1 - o_j)`, the last cell the leftover :math:`\prod_{j<K-1}(1 - o_j)`.

    Example:
        >>> stick_weights(torch.tensor([0.5, 0.5])).tolist()
        [0.5, 0.25, 0.25]
    """
    rest = torch.cat([torch.ones_like(o[:1]), torch.cumprod(1 - o, 0)])
    return rest * torch.cat([o, torch.ones_like(o[:1])])


def stick_fractions(beta: torch.Tensor) -> torch.Tensor:
    r"""Inverse of :func:`stick_weights`: :math:`o_k = \beta_k / \sum_{j \ge k} \beta_j`, ``k < K - 1``.

    Example:
        >>> stick_fractions(torch.tensor([0.5, 0.25, 0.25])).tolist()
        [0.5, 0.5]
    """
    tail = torch.flip(torch.cumsum(torch.flip(beta, [0]), 0), [0])
    return beta[:-1] / tail[:-1]


def bhmc_program(num_points: int, dim: int, prior: BHMCPrior, x=None, dtype=torch.float64):
    """The BHMC generative story (module docstring) as a Pyro program.

    Args:
        num_points: ``N >= 1``.
        dim: ``D >= 1``.
        prior: the hyperparameters.
        x: ``(N, D)`` observations, or ``None`` to sample them.
        dtype: floating dtype of the sampled values when ``x`` is ``None``.

    Returns:
        ``x``, ``(N, D)``.
    """
    N = check_int(num_points, "num_points", minimum=1)
    D = check_int(dim, "dim", minimum=1)
    if not isinstance(prior, BHMCPrior):
        raise TypeError(f"prior must be a BHMCPrior, got {type(prior).__name__}")
    if x is not None:
        x = as_float_tensor(x, "x", ndim=2)
        if tuple(x.shape) != (N, D):
            raise ValueError(f"x must have shape ({N}, {D}), got {tuple(x.shape)}")
        dtype = x.dtype
    K, L = prior.num_components, prior.depth
    one = torch.ones(K - 1, dtype=dtype)
    o = pyro.sample("o", dist.Beta(one, prior.gamma0 * one).to_event(1))
    theta = pyro.sample("theta", dist.Normal(torch.zeros(K, D, dtype=dtype), 1.0).to_event(2))
    weights = [stick_weights(o)]
    children: list[list[int]] = [[]]
    counts = [0]
    leaves = []
    for n in range(N):
        z, path = 0, [0]
        for lv in range(1, L + 1):
            kids = children[z]
            probs = torch.tensor([float(counts[k]) for k in kids] + [prior.alpha], dtype=dtype)
            j = int(pyro.sample(f"v_{n}_{lv}", dist.Categorical(probs / probs.sum())))
            if j == len(kids):
                new = len(weights)
                weights.append(pyro.sample(f"beta_{new}", dist.Dirichlet(prior.gamma * weights[z])))
                children.append([])
                counts.append(0)
                kids.append(new)
            z = kids[j]
            path.append(z)
        for node in path:
            counts[node] += 1
        leaves.append(z)
    leaf_w = torch.stack([weights[z] for z in leaves])
    with pyro.plate("data", N, dim=-1):
        # logits, not probs: torch clamps probs at machine epsilon when it takes their log,
        # which would misstate the log density of a label with a tiny weight
        c = pyro.sample("c", dist.Categorical(logits=torch.log(leaf_w)))
        return pyro.sample("x", dist.Normal(theta[c], 1.0).to_event(1), obs=x)


def program_values(state: BHMCState) -> dict:
    """The site values of :func:`bhmc_program` for ``state`` (nodes renumbered in the order the
    data, seated ``0, 1, ...``, open them), for ``poutine.condition``."""
    state = check_state(state)
    tree = state.tree
    values = {"o": stick_fractions(state.weights[tree.root]), "theta": state.theta, "c": state.c}
    program_id = {tree.root: 0}
    kids: dict[int, list[int]] = {0: []}
    for n, row in enumerate(tree.paths.tolist()):
        for lv in range(1, len(row)):
            parent, z = program_id[row[lv - 1]], row[lv]
            if z not in program_id:
                program_id[z] = len(program_id)
                kids[program_id[z]] = []
                kids[parent].append(program_id[z])
                values[f"beta_{program_id[z]}"] = state.weights[z]
            values[f"v_{n}_{lv}"] = torch.tensor(kids[parent].index(program_id[z]))
    return values


@dataclass(frozen=True)
class BHMCSample:
    """A draw of the generative story: the data ``x`` ``(N, D)`` and the ``state`` that made it."""

    x: torch.Tensor
    state: BHMCState


class BHMC(Model):
    """Bayesian hierarchical mixture clustering (Huang et al. 2021; the RBHMC paper's BHMC).

    Args:
        prior: the :class:`~pyromodels.bhmc.BHMCPrior`. The story sees the data in the
            prior's units, ``x' = (x - loc) / scale`` (:meth:`standardize`); with ``loc`` and
            ``scale`` left ``None`` those are the data's own, so ``c x + b`` gets the
            hierarchy of ``x``. :meth:`model`, :meth:`complete_log_joint` and :meth:`fit` work
            on ``x'`` (a density of ``x`` is that of ``x'`` minus ``N D log(scale)``; the
            fit's ``theta`` are in ``x'``'s units and ``params["units"]`` holds
            ``(loc, scale)``).

    The tree of unbounded size is out of reach of SVI, NUTS and enumeration; the model's
    engine is the Metropolis-within-Gibbs sampler of :mod:`pyromodels.bhmc.sampler` (and of
    :mod:`pyromodels.bhmc.regularised` for RBHMC): :meth:`fit` with ``method="gibbs"``.

    Example:
        >>> model = BHMC(BHMCPrior.paper_preset("animals"))
        >>> model.prior.depth
        3
    """

    discrete_sites: tuple[str, ...] = ()
    max_plate_nesting = 1
    engines: tuple[str, ...] = ("gibbs",)
    #: names of the axes of the fit's draws after ``(chain, draw)``
    site_dims = {"nodes_per_level": ["level"]}

    def __init__(self, prior: BHMCPrior):
        if not isinstance(prior, BHMCPrior):
            raise TypeError(f"prior must be a BHMCPrior, got {type(prior).__name__}")
        self.prior = prior

    def prepare(self, data, device=None) -> torch.Tensor:
        """The observations as a finite ``(N, D)`` float tensor."""
        return as_float_tensor(data, "data", ndim=2, device=device)

    def standardize(self, data) -> torch.Tensor:
        """``(x - loc) / scale`` for the observations ``data`` ``(N, D)``, with ``(loc, scale)``
        = :meth:`BHMCPrior.units` of the data: the points the story sees."""
        x = self.prepare(data)
        loc, scale = self.prior.units(x)
        return (x - loc) / scale

    def model(self, data):
        """The generative story with ``data`` ``(N, D)`` observed (in the prior's units,
        :meth:`standardize`)."""
        x = self.standardize(data)
        return bhmc_program(x.shape[0], x.shape[1], self.prior, x)

    def fit(self, data, method: str = "gibbs", **kwargs):
        """Fit BHMC, or RBHMC with ``C=...``, by :func:`~pyromodels.bhmc.fit.fit_bhmc`
        (``C``, ``eps0``, ``num_warmup``, ``num_samples``, ``num_chains``, ``seed``,
        ``progress``, ``paper_literal``, ``device``, ``diagnostic_warnings``: ``False``
        silences the :class:`~pyromodels.core.SamplingWarning` after the chains); returns a
        :class:`~pyromodels.core.Posterior` of label-invariant draws and the best tree."""
        from .fit import fit_bhmc

        check_in(method, "method", self.engines)
        x = self.prepare(data)
        loc, scale = self.prior.units(x)
        posterior = fit_bhmc(self, (x - loc) / scale, method, **kwargs)
        posterior.params["units"] = (loc, scale)
        return posterior

    def complete_log_joint(self, data, state: BHMCState) -> torch.Tensor:
        """Closed-form CDL (:func:`~pyromodels.bhmc.joint.complete_log_joint`) of the data in
        the prior's units (:meth:`standardize`)."""
        return complete_log_joint(self.standardize(data), state, self.prior)

    @torch.no_grad()
    def simulate(self, num_points: int, dim: int, generator: torch.Generator) -> BHMCSample:
        """Draw a state and data from the story, all randomness from ``generator``.

        Args:
            num_points: ``N >= 1``.
            dim: ``D >= 1``.
            generator: a CPU ``torch.Generator``.

        Returns:
            :class:`BHMCSample` (float64), node ids in the order the data open them; ``x`` in
            the prior's units (``loc + scale * x'``, the given ones; the story's own for those
            left ``None``), the state in the story's.
        """
        N = check_int(num_points, "num_points", minimum=1)
        D = check_int(dim, "dim", minimum=1)
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        p = self.prior
        tree = Tree.from_paths(sample_ncrp_paths(N, p.depth, p.alpha, generator))
        ids, parent = node_arrays(tree)
        w = sample_tree_weights(parent, p.num_components, p.gamma0, p.gamma, generator, root="gem")
        theta = torch.randn(p.num_components, D, dtype=torch.float64, generator=generator)
        state = BHMCState(tree, dict(zip(ids, w)), theta, torch.zeros(N, dtype=torch.int64))
        state.c = sample_categorical(torch.log(state.leaf_weights()), generator)
        x = theta[state.c] + torch.randn(N, D, dtype=torch.float64, generator=generator)
        x = x * (1.0 if p.scale is None else p.scale) + (0.0 if p.loc is None else p.loc)
        return BHMCSample(x, state)
