r"""The latent tree VAE (Li et al. 2019, LTVAE; spec ``ltvae.md`` §2-§4): a VAE whose prior on
the features :math:`z \in \mathbb{R}^J` is a latent tree model :math:`p_S(z; \Theta)`.

The story, for each data point :math:`x_n`:

.. math::

    y_n \sim p_S(y; \Theta), \qquad z_n \mid y_n \sim p_S(z \mid y_n; \Theta), \qquad
    x_n \mid z_n \sim p_\theta(x_n \mid z_n),

with the discrete :math:`y` summed out exactly: the program is
:func:`~pyromodels.ltvae.vae.vae_model` with the callable prior
:math:`\log p_S(z; \Theta)` (:class:`~pyromodels.ltvae.tree_prior.TreePrior`, message
passing, Eq. 2); the guide is :func:`~pyromodels.ltvae.vae.vae_guide`. Sample sites: ``z``
(real, ``(B, J)``), the factor ``z_prior`` (``(B,)``), ``x`` (observed, ``(B, D)``).

Learning alternates (Algorithm 1), per minibatch: one Adam step of the networks on the
batch mean of minus the ELBO (Eq. 4, one draw per point, :math:`\Theta` held; its gradient
in :math:`z` is Eq. 6), then one stepwise-EM update of :math:`\Theta` (Eq. 8, §3.4) on the
*same draws* :math:`z^{(i)}` the ELBO used (the paper: "Θ ← StepwiseEM(z^(i))"; the encoder
means instead with ``em_points="mean"``). Every ``search_every`` epochs a structure search
``search(mu_D, tree, params) -> (tree, params)`` runs on the encoder means of all the data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pyro
import torch
from pyro import poutine
from pyro.infer import SVI, Trace_ELBO

from ..checks import check_in, check_int, check_positive
from ..core.checkpoint import (
    Checkpointer,
    check_shapes,
    clone_tree,
    read_checkpoint,
    rng_states,
    set_rng_states,
)
from ..core.conjugate_factors import RobbinsMonro
from ..core.device import cuda_devices, resolve_device
from ..core.latent_activity import check_latent_activity
from ..core.posterior import Posterior, make_attrs
from ..core.progress import check_callbacks, progress_bar, run_callbacks
from ..core.seeding import derive_seed, make_generator, resolve_seed, seeded
from ..core.stepwise_em import step_sizes
from ..core.threads import with_fit_threads
from ..nn.autoencoder import StackedAutoencoder
from ..trees.em import check_covariance_settings, params_from_dict, params_to_dict
from ..trees.message_passing import tree_posterior
from ..trees.model import LatentTreeModel
from ..trees.params import TreeParams
from ..trees.structure import LatentTree
from .bounds import ImportanceEstimate
from .search import SEARCHES, StructureSearch, searched_quietly, warn_summaries
from .tree_prior import RUNNING_MODES, TreePrior, default_tree, kmeans_start, stepwise_update
from .vae import COLLAPSE_REMEDIES, VAE, VAEData

__all__ = ["LTVAE", "EM_POINTS"]

#: which codes of a minibatch the stepwise-EM update of Θ uses
EM_POINTS = ("sample", "mean")

_PREFIX = "tree."


class LTVAE:
    r"""The latent tree VAE (module docstring), fitted by the alternation of Algorithm 1.

    Args:
        latent_dim: ``J`` (paper: 10 for clustering, 20 for several facets).
        hidden: hidden widths of the encoder (paper: ``(500, 500, 2000)``).
        likelihood: ``"auto"``, ``"bernoulli"`` or ``"normal"`` (as :class:`VAE`).
        tree: the starting structure :math:`S^0`, a
            :class:`~pyromodels.trees.LatentTree` over ``latent_dim`` coordinates; ``None``:
            the spec's default, one latent node ``"Y"`` with ``cardinality`` states over every
            coordinate as its own leaf (a diagonal GMM prior).
        cardinality: ``K`` of the default tree (the release: 10, the number of classes).
        covariance: ``"fixed"`` (the release: every covariance held at ``alpha * I`` while
            the networks train, and reset so after a structure search) or ``"full"``
            (learned by the stepwise EM, eigenvalues floored at ``floor``).
        alpha: the fixed covariances' scale (release: 1, with pixels in [0, 5.1]). It should
            match the spread of the codes within a cluster: codes much tighter than
            ``alpha`` (e.g. from pixels in [0, 1]) let the components overlap and merge
            clusters.
        floor: the least eigenvalue of a learned covariance (release: 0.01).
        decoder_hidden, activation: as :class:`VAE`.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x = torch.cat([torch.randn(30, 2, generator=g) - 4, torch.randn(30, 2, generator=g) + 4])
        >>> m = LTVAE(latent_dim=2, hidden=(8,), cardinality=2)
        >>> post = m.fit(x, num_epochs=2, batch_size=20, seed=0, progress=False)
        >>> list(m.facets(post, x).columns)
        ['Y']
    """

    #: how :meth:`fit` fits: SVI steps of the networks (with stepwise EM of the tree)
    engines = ("svi",)

    def __init__(self, latent_dim: int = 10, hidden: Sequence[int] = (500, 500, 2000),
                 likelihood: str = "auto", tree: LatentTree | None = None,
                 cardinality: int = 10, covariance: str = "fixed", alpha: float = 1.0,
                 floor: float = 0.01, decoder_hidden: Sequence[int] | None = None,
                 activation: str = "relu"):
        self.latent_dim = check_int(latent_dim, "latent_dim", minimum=1)
        self.cardinality = check_int(cardinality, "cardinality", minimum=2)
        self.tree = default_tree(self.cardinality, self.latent_dim) if tree is None else \
            self._check_tree(tree, "tree")
        self.covariance, self.alpha, self.floor = check_covariance_settings(covariance, alpha, floor)
        # the networks and the argument checks are the VAE's
        self._vae = VAE(self.latent_dim, hidden, decoder_hidden, likelihood, None, activation)
        self.hidden, self.decoder_hidden = self._vae.hidden, self._vae.decoder_hidden
        self.likelihood, self.activation = likelihood, activation

    def __repr__(self) -> str:
        return (f"LTVAE(latent_dim={self.latent_dim}, hidden={self.hidden}, tree={self.tree!r}, "
                f"covariance={self.covariance!r})")

    def _check_tree(self, tree, name: str) -> LatentTree:
        if not isinstance(tree, LatentTree):
            raise TypeError(f"{name} must be a LatentTree, got {type(tree).__name__}")
        if tree.num_coordinates != self.latent_dim:
            raise ValueError(f"{name} must have latent_dim={self.latent_dim} coordinates in its "
                             f"pouches, got {tree.num_coordinates}")
        return tree

    def _check_params(self, params, tree: LatentTree, name: str, like: torch.Tensor) -> TreeParams:
        if not isinstance(params, TreeParams):
            raise TypeError(f"{name} must be TreeParams, got {type(params).__name__}")
        if params.tree != tree:
            raise ValueError(f"{name} must be parameters of the tree {tree!r}, got parameters "
                             f"of {params.tree!r}")
        return params.to(dtype=like.dtype, device=like.device)

    def vae(self, prior=None) -> VAE:
        """A :class:`VAE` with this model's networks and ``prior`` (e.g. a :class:`TreePrior`)."""
        return VAE(self.latent_dim, self.hidden, self.decoder_hidden, self.likelihood, prior,
                   self.activation)

    # ------------------------------------------------------------------ fit
    @with_fit_threads(data="x")
    def fit(self, x, *, num_epochs: int = 20, batch_size: int = 128, lr: float = 1e-3,
            optim=None, step_size: float | RobbinsMonro = 0.01, running: str = "rebuilt",
            em_points: str = "sample", autoencoder: StackedAutoencoder | None = None,
            tree_params: TreeParams | None = None,
            search: Callable | None = None, search_every: int = 5, seed: int | None = None,
            progress: bool = True, callbacks=None, device=None,
            dtype: torch.dtype | None = None, checkpoint=None, checkpoint_every: int | None = None,
            resume=None, num_threads: int | None = None,
            diagnostic_warnings: bool = True) -> Posterior:
        r"""Fit the networks and :math:`\Theta` by the alternation of Algorithm 1.

        Args:
            x: ``(N, D)`` finite observations (0/1 for a Bernoulli decoder).
            num_epochs: passes over the data, each ``ceil(N / batch_size)`` minibatches
                drawn without replacement.
            batch_size: rows per step (paper: 128).
            lr: Adam's learning rate (paper: 1e-3; the release's scripts 1e-4), unless
                ``optim`` (a ``pyro.optim`` optimiser) is given.
            step_size: the stepwise-EM step size :math:`\eta`: a constant in ``(0, 1]``
                (paper: 0.01) or a :class:`~pyromodels.core.RobbinsMonro` schedule.
            running: ``"rebuilt"`` (the release, spec §3.4: each batch is mixed with the
                statistics the current :math:`\Theta` implies) or ``"average"`` (textbook
                running statistics); see :func:`~pyromodels.ltvae.tree_prior.stepwise_update`.
            em_points: ``"sample"`` (the draws :math:`z^{(i)}` of the ELBO step, as the
                paper) or ``"mean"`` (the encoder means of that step).
            autoencoder: a pretrained :class:`~pyromodels.nn.StackedAutoencoder` whose
                weights start the networks (as :meth:`VAE.fit`; the paper's ``pretrain``).
            tree_params: :math:`\Theta^0` for the model's tree; ``None``: k-means on the
                encoder means of ``x`` (spec §2.3, :func:`~pyromodels.ltvae.tree_prior.kmeans_start`).
            search: ``None``; ``"east"``: PLTM-EAST's hill-climbing from the current tree
                (:class:`~pyromodels.ltvae.search.StructureSearch` with its defaults, seeded
                from ``seed``; :func:`~pyromodels.ltvae.structure_search` sets its
                settings); or a structure search ``search(z, tree, params) -> (tree,
                params)`` called with the encoder means ``z`` ``(N, J)`` of all of ``x``
                (:math:`D_z = \mu_D`), the current :class:`~pyromodels.trees.LatentTree` and
                :class:`~pyromodels.trees.TreeParams`, before epochs ``search_every``,
                ``2 * search_every``, ... (never after the last epoch, so the networks
                always train on the structure returned). With ``covariance="fixed"`` the
                returned covariances are reset to ``alpha * I`` (the release). The searches'
                warnings are shown once each at the end of the fit, with how many searches
                gave them; a ``max_steps`` given to
                :func:`~pyromodels.ltvae.structure_search` is a deliberate budget, not
                warned about.
            search_every: epochs between searches (paper: E = 5; the release: 10).
            seed: the fit's seed (networks, k-means, batches, draws); ``None`` draws one.
            progress: show a progress bar over the steps.
            callbacks: callables ``f(step, info)`` after each step (1, 2, ...) with
                ``info["loss"]`` (the batch mean of minus the ELBO), ``info["epoch"]``,
                ``info["step_size"]``, ``info["z"]`` (the codes the EM step used),
                ``info["tree_params"]`` (:math:`\Theta` after the step); ``True`` stops.
            device: ``"cpu"``, ``"cuda"`` or ``None`` (the data's device).
            dtype: of the data, the networks and :math:`\Theta` (default: ``x``'s).
            checkpoint: a file to write the run's state to at the end of an epoch (the
                networks' weights, the optimiser's state, the tree and :math:`\Theta`, the
                running statistics, the history and the random number generators; see
                :mod:`pyromodels.core.checkpoint`), every ``checkpoint_every`` epochs, at the
                end and on ``KeyboardInterrupt``.
            checkpoint_every: epochs between writes (``None``: only the end).
            resume: a checkpoint of a fit of the same model, seed, settings and data to
                continue from its last complete epoch; ``num_epochs`` may be larger than the
                checkpoint's. The result equals the uninterrupted run's bit for bit.
            num_threads: CPU threads of the fit (as :func:`~pyromodels.core.run_svi`).
            diagnostic_warnings: ``False`` silences the
                :class:`~pyromodels.core.PosteriorCollapseWarning` (as :meth:`VAE.fit`);
                ``diagnostics["active_units"]`` and ``["latent_dim"]`` are recorded either way.

        Returns:
            A :class:`~pyromodels.core.Posterior` (``method="svi"``, no draws): ``params``
            hold the networks' weights and :math:`\Theta` (keys ``"tree.<name>"``, read back
            by :meth:`tree_params`), ``attrs["tree"]`` the final structure
            (``LatentTree.to_dict``), ``losses`` the loss per step,
            ``diagnostics["tree_log_likelihood"]`` the batches' mean :math:`\log p_S(z)` and
            ``diagnostics["searches"]`` the epoch and structure of each search.
        """
        num_epochs = check_int(num_epochs, "num_epochs", minimum=1)
        search_every = check_int(search_every, "search_every", minimum=1)
        lr = check_positive(lr, "lr")
        running = check_in(running, "running", RUNNING_MODES)
        em_points = check_in(em_points, "em_points", EM_POINTS)
        if isinstance(search, str):
            search = check_in(search, "search", SEARCHES)
        elif search is not None and not callable(search):
            raise TypeError(f"search must be None, one of {list(SEARCHES)} or a callable "
                            f"search(z, tree, params), got {type(search).__name__}")
        callbacks = check_callbacks(callbacks)
        device = resolve_device(device, x)
        data = self._vae.prepare(x, device, batch_size=batch_size, dtype=dtype,
                                 autoencoder=autoencoder)
        etas = step_sizes(num_epochs * data.steps_per_epoch, step_size)
        config = {"num_epochs": num_epochs, "batch_size": data.batch_size, "lr": lr,
                  "step_size": repr(step_size), "running": running, "em_points": em_points,
                  "optim": None if optim is None else type(optim).__name__,
                  "search": search if search is None or isinstance(search, str) else
                  getattr(search, "__qualname__", type(search).__qualname__),
                  "search_every": search_every, "tree": self.tree.to_dict(),
                  "covariance": (self.covariance, self.alpha, self.floor),
                  "tree_params": tree_params is not None}
        saved = None
        if resume is not None:
            seed, saved = read_checkpoint(resume, engine="ltvae", model=self, seed=seed,
                                          config=config, data=data, extendable=("num_epochs",))
        seed = resolve_seed(seed)
        if isinstance(search, str):  # "east"
            search = StructureSearch(derive_seed(seed, "search"))
        ckpt = Checkpointer(checkpoint, checkpoint_every, engine="ltvae", model=self, seed=seed,
                            config=config, data=data, build=lambda snapshot: snapshot)
        start = time.perf_counter()
        store = pyro.get_param_store()
        with store.scope() as scope, seeded(seed, devices=cuda_devices(device)):
            vae = self.vae(None)  # its prior is set once Θ0 exists
            encoder = vae.networks(data.x.shape[1], data.likelihood, autoencoder)["encoder"]
            tree = self.tree
            if saved is not None:
                tree = LatentTree.from_dict(saved["tree"])
                params = params_from_dict(tree, saved["tree_params"])
            elif tree_params is None:
                params = kmeans_start(tree, self._means(encoder, data.x), self.alpha,
                                      derive_seed(seed, "kmeans"))
            else:
                params = self._check_params(tree_params, tree, "tree_params", data.x)
            prior = TreePrior(params)
            vae.prior = prior
            em_model = LatentTreeModel(tree, self.covariance, self.alpha, self.floor)
            record: dict = {}
            svi = SVI(_scaled(vae.model), _recording(vae.guide, record),
                      optim if optim is not None else pyro.optim.Adam({"lr": lr}),
                      loss=Trace_ELBO(max_plate_nesting=1))
            order_gen = make_generator(derive_seed(seed, "batches"), "cpu")
            losses, tree_ll, searches, stats, stopped = [], [], [], None, False
            search_warnings: list = []
            first = 0
            if saved is not None:
                _restore(saved, svi, data, store, order_gen)
                first, stats = saved["epoch"], saved["stats"]
                losses, tree_ll = list(saved["losses"]), list(saved["tree_ll"])
                searches = list(saved["searches"])
            with ckpt.guard(), progress_bar(len(etas), "ltvae", progress) as bar:
                bar.update(len(losses))
                for epoch in range(first, num_epochs):
                    if search is not None and epoch > 0 and epoch % search_every == 0:
                        (tree, params), caught = searched_quietly(
                            self._search, search, self._means(encoder, data.x), tree, params,
                            data.x)
                        search_warnings.append((epoch, caught))
                        em_model = LatentTreeModel(tree, self.covariance, self.alpha, self.floor)
                        prior.params, stats = params, None
                        searches.append({"epoch": epoch, "tree": tree.to_dict()})
                    order = torch.randperm(data.num_items, generator=order_gen).to(data.x.device)
                    for index in order.split(data.batch_size):
                        batch = VAEData(data.x[index], data.likelihood, len(index), autoencoder)
                        loss = float(svi.step(batch))
                        z = record["z"] if em_points == "sample" else record["loc"]
                        eta = etas[len(losses)]
                        params, stats, ll = stepwise_update(em_model, z, params, stats, eta,
                                                            running)
                        prior.params = params
                        losses.append(loss)
                        tree_ll.append(ll)
                        bar.update()
                        info = {"loss": loss, "epoch": epoch, "step_size": eta, "z": z,
                                "tree_params": params}
                        if callbacks and run_callbacks(callbacks, len(losses), info):
                            stopped = True
                            break
                    if stopped:
                        break
                    if ckpt.enabled:
                        ckpt.commit(epoch + 1, {
                            "epoch": epoch + 1, "tree": tree.to_dict(),
                            "tree_params": clone_tree(params_to_dict(params)),
                            "stats": clone_tree(stats), "losses": list(losses),
                            "tree_ll": list(tree_ll), "searches": clone_tree(searches),
                            "params": {k: v.detach().clone()
                                       for k, v in store.named_parameters()},
                            "optim": clone_tree(svi.optim.get_state()),
                            "rng": rng_states(order_gen)})
            ckpt.write()
            warn_summaries(search_warnings, stacklevel=3)  # from the caller of fit
            activity = check_latent_activity(self._means(encoder, data.x), fit="LTVAE.fit",
                                             remedies=COLLAPSE_REMEDIES, stacklevel=4,
                                             diagnostic_warnings=diagnostic_warnings)
            weights = {k: v.detach().clone() for k, v in store.items()}
        weights.update({_PREFIX + k: v.detach().clone()
                        for k, v in params_to_dict(params).items()})
        attrs = make_attrs("svi", seed, device, start, num_steps=len(losses),
                           objective="elbo", tree=tree.to_dict(), covariance=self.covariance,
                           em_points=em_points, running=running)
        diagnostics = {"num_steps": len(losses), "steps_per_epoch": data.steps_per_epoch,
                       "tree_log_likelihood": tree_ll, "searches": searches,
                       "step_sizes": etas[:len(losses)], "param_store": scope, **activity}
        return Posterior(samples={}, method="svi",
                         losses=torch.tensor(losses, dtype=torch.float64), params=weights,
                         diagnostics=diagnostics, attrs=attrs, model=self, data=data)

    def _means(self, encoder, x: torch.Tensor, chunk: int = 1024) -> torch.Tensor:
        """The encoder means of ``x``'s rows (the networks' current weights), in chunks."""
        with torch.no_grad():
            return torch.cat([encoder(rows)[0].detach() for rows in x.split(chunk)])

    def _search(self, search, z, tree, params, like) -> tuple[LatentTree, TreeParams]:
        out = search(z, tree, params)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"search must return a (tree, params) pair, got "
                            f"{type(out).__name__}")
        new_tree = self._check_tree(out[0], "the tree search returned")
        new = self._check_params(out[1], new_tree, "the params search returned", like)
        if self.covariance == "fixed":  # the release resets them after every search
            trils = [(self.alpha ** 0.5 * torch.eye(t.shape[-1], dtype=t.dtype,
                                                     device=t.device)).expand_as(t).clone()
                     for t in new.scale_trils]
            new = TreeParams(new_tree, new.root_probs, list(new.cpts), list(new.means), trils)
        return new_tree, new

    # --------------------------------------------------------------- results
    def tree_params(self, posterior) -> TreeParams:
        r"""The fitted :math:`\Theta` (and through it the fitted structure) of a fit."""
        if not isinstance(posterior, Posterior) or "tree" not in posterior.attrs:
            raise TypeError(f"posterior must be a Posterior from LTVAE.fit, got "
                            f"{type(posterior).__name__}")
        tree = LatentTree.from_dict(posterior.attrs["tree"])
        values = {k[len(_PREFIX):]: v for k, v in posterior.params.items() if k.startswith(_PREFIX)}
        return params_from_dict(tree, values)

    def encode(self, posterior, x) -> tuple[torch.Tensor, torch.Tensor]:
        """The fitted encoder's means and standard deviations ``(N, J)`` of ``x``'s rows."""
        self.tree_params(posterior)
        return self._vae.encode(posterior, x)

    def facet_probabilities(self, posterior, x) -> dict[str, torch.Tensor]:
        r""":math:`P(Y_j = k \mid \mu_x)` ``(N, K_j)`` for every latent node ``j`` (by name),
        at the encoder means (spec §2.1, the release's readout)."""
        params = self.tree_params(posterior)
        mu, _ = self.encode(posterior, x)
        post = tree_posterior(params, mu)
        return dict(zip(params.tree.names, post.node_marginals))

    def facets(self, posterior, x) -> pd.DataFrame:
        r"""One clustering per latent node (facet): a column per node, named as the node,
        holding :math:`\arg\max_k P(Y_j = k \mid \mu_x)` for each row of ``x``."""
        probs = self.facet_probabilities(posterior, x)
        return pd.DataFrame({name: p.argmax(-1).cpu().numpy() for name, p in probs.items()})

    def predict(self, posterior, x, facet: str | int | None = None) -> np.ndarray:
        """The cluster of each row of ``x`` in one facet: the latent node ``facet`` (a name
        or an index; ``None``: the root), as :meth:`facets`."""
        frame = self.facets(posterior, x)
        tree = LatentTree.from_dict(posterior.attrs["tree"])
        j = tree.root if facet is None else tree.index(facet)
        return frame[tree.names[j]].to_numpy()

    def importance_log_likelihood(self, posterior, x, *, k: int = 5000, batch_size: int = 500,
                                  row_batch_size: int | None = None, seed: int = 0
                                  ) -> ImportanceEstimate:
        r"""The importance-sampled :math:`\mathcal{L}_k` of each row of ``x`` with the fitted
        tree prior (Table 1, ``k = 5000``); arguments as
        :meth:`VAE.importance_log_likelihood`."""
        prior = TreePrior(self.tree_params(posterior))
        return self.vae(prior).importance_log_likelihood(
            posterior, x, k=k, batch_size=batch_size, row_batch_size=row_batch_size, seed=seed)


def _restore(saved: dict, svi: SVI, data: VAEData, store, order_gen) -> None:
    """Build the networks' weights (one loss evaluation), then put back the saved weights,
    optimiser state and random number generators."""
    with poutine.block():
        svi.evaluate_loss(VAEData(data.x[:1], data.likelihood, 1, data.autoencoder))
    current = dict(store.named_parameters())
    check_shapes(saved["params"], current, "network weight")
    params = {k: v.to(current[k].device).requires_grad_(True) for k, v in saved["params"].items()}
    store.set_state({"params": params, "constraints": store.get_state()["constraints"]})
    svi.optim.set_state(saved["optim"])
    set_rng_states(saved["rng"], order_gen)


def _scaled(model: Callable) -> Callable:
    """``model`` with its log densities divided by the batch's rows (a batch mean loss)."""
    def scaled(batch: VAEData):
        with poutine.scale(scale=1.0 / batch.num_items):
            model(batch)
    return scaled


def _recording(guide: Callable, record: dict) -> Callable:
    """``guide`` scaled as :func:`_scaled`, keeping the draws of ``z`` and the means of
    :math:`q` of its last run in ``record``."""
    def recorded(batch: VAEData):
        with poutine.scale(scale=1.0 / batch.num_items):
            trace = poutine.trace(guide).get_trace(batch)
        site = trace.nodes["z"]
        record["z"] = site["value"].detach()
        record["loc"] = site["fn"].base_dist.loc.detach()
    return recorded

