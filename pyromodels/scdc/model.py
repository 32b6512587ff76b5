r"""SCDC: semi-crowdsourced deep clustering, fitted by amortised SVI (Luo et al. 2018, §2).

The generative story (eq. 3), with point estimates of the globals :math:`\pi, \mu, \Sigma,
\alpha, \beta` and of the decoder's weights :math:`\gamma`:

.. math::

    z_n &\sim \mathrm{Cat}(\pi), \qquad x_n \mid z_n \sim N(\mu_{z_n}, \Sigma_{z_n}), \qquad
    o_n \mid x_n \sim p_\gamma(o_n \mid x_n), \\
    L^{(m)}_{ij} \mid z_i, z_j &\sim \mathrm{Bern}(\alpha_m)^{z_i^\top z_j}\,
    \mathrm{Bern}(1 - \beta_m)^{1 - z_i^\top z_j} \quad\text{for each observed link (eq. 1-2)}.

The decoder :math:`p_\gamma(o \mid x)` is Bernoulli for binary observations and a Gaussian
with a mean and a log variance for real ones (:class:`~pyromodels.nn.ObservationDecoder`).
The paper states full covariances :math:`\Sigma_k`; the authors' released code uses diagonal
ones. ``covariance="diag"`` (default) follows the code, ``covariance="full"`` the paper.

The variational family ignores the links (§2.3): :math:`q(z_n, x_n \mid o_n) = q(z_n \mid o_n)
\, q(x_n \mid z_n, o_n)`, a categorical encoder and a diagonal Gaussian encoder on
``concat(o, onehot z)``. The ELBO is :math:`\mathcal{L}_\text{local} + \mathcal{L}_\text{rel}`:

* :math:`\mathcal{L}_\text{local}` is Pyro's ``TraceEnum_ELBO`` with the guide's ``z``
  enumerated (``infer={"enumerate": "parallel"}``): per item
  :math:`\sum_k q(k \mid o)\,\mathbb{E}_{q(x \mid k, o)}[\log \pi_k + \log N(x; \mu_k, \Sigma_k)
  + \log p(o \mid x) - \log q(x \mid k, o)] + H[q(z \mid o)]`, one reparameterised ``x`` per
  ``k`` (``K`` decoder passes per item), over a minibatch ``B`` of items scaled by
  :math:`N / |B|`.
* :math:`\mathcal{L}_\text{rel} = \sum_{(i, j, m)} \mathbb{E}_{q(z_i)q(z_j)} \log p(L^{(m)}_{ij}
  \mid z_i, z_j)`, which is linear in :math:`z_i^\top z_j` and so equals the two-coin
  log-likelihood at the co-clustering probability :math:`\rho_{ij} = q_i^\top q_j`
  (:func:`~pyromodels.scdc.links.link_log_prob`), over a minibatch ``S`` of links drawn
  uniformly without replacement with each data minibatch and scaled by :math:`N_a / |S|`;
  by default :math:`|S| = N_a |B| / N`, so links and items are fed in proportion.

The coins are stored as logits; their initial values are drawn per worker from
:math:`\mathrm{Beta}(1, 1)` as the paper says (the released code draws one value shared by
all workers), kept within ``1e-3`` of 0 and 1, or all set to ``coin_init``. :math:`\pi` is
stored as logits (initially :math:`0.1\,N(0, 1)`), the means :math:`\mu_k` start from
:math:`N(0, I)` and the scales from 1.

Posterior collapse. The objective has a stationary point at which the decoder ignores :math:`x`
(it predicts every item with the data's mean and variance), :math:`q(x \mid z, o)` is the prior
component and :math:`q(z \mid o) = \pi`: each item's local ELBO is then the log density of one
Gaussian fitted to all the data, and only the links reward informative clusters, on the
annotated items alone, at a cost of up to :math:`\log K` nats each. Early in a fit, before the
decoder has learned to read :math:`x`, the learned decoder variance grows to the data's and the
fit settles there. On the Pinwheel (500 points, ``K = 15``, ``d = 2``, widths ``(40, 40)``,
Adam at 1e-3, ``|B| = 50``, 980 links at :math:`\alpha = \beta = 0.9`, ``coin_init=0.9``) each
of three seeds enters it within about 20 epochs (the two seeds run on to 1000 epochs stayed
there): the entropy of :math:`q(z \mid o)` tends to :math:`\log 15`, the decoder's
reconstruction of ``o`` from the encoder's mean explains none of its variance, and the argmax
of the nearly flat :math:`q(z \mid o)` gives 1-4 sizeable clusters (accuracy 0.2-0.35), so more
epochs lower the accuracy. It is the optimiser's trap, not the objective's choice: the same
objective started from the five arms (the cluster encoder pulled to them for 50 epochs, then
150 epochs of the plain objective) keeps accuracy 0.97-0.99 at a whole-data loss (negative
ELBO, links included) 40-300 nats below the collapsed one after the same 200 epochs and still
falling, while the collapsed loss levels off (about 3975 after 1000 epochs, against 3500-3620
for the warm-up fits below). Adam at 1e-2 and 1000 epochs do not get out of it, nor does
standardising the features in most seeds; a long KL warm-up (``kl_warmup_epochs`` of
:meth:`SCDC.fit`, not in the paper: 300 of 400 epochs, accuracy 0.87-0.99 and five clusters
over three seeds) does, while a short one (50 epochs) does not: the decoder must learn to read
:math:`x` while the KL terms still weigh little. The guide on pairwise crowd clustering has the
figures. The paper's Pinwheel result (Fig. 2: six clusters, 96.6%) is BayesSCDC's; the paper
reports no SCDC fit of the Pinwheel.

Sample sites of :meth:`SCDC.model` (inside the plate ``"data"`` of size ``N``, subsampled to
``|B|``): ``z`` (categorical, ``{0..K-1}``, shape ``(|B|,)``), ``x`` (real, ``(|B|, d)``),
``o`` (observed, ``(|B|, D)``). Params: ``pi_logits`` ``(K,)``, ``locs`` ``(K, d)``,
``scales`` ``(K, d)`` (diag) or ``scale_tril`` ``(K, d, d)`` (full), ``alpha_logit`` and
``beta_logit`` ``(M,)`` and the networks' weights (``encoder_z.*``, ``encoder_x.*``,
``decoder.*``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence

import pandas as pd
import pyro
import pyro.distributions as dist
import torch
import torch.nn.functional as F
from pyro import poutine
from torch.distributions import constraints

from ..checks import as_float_tensor, check_bool, check_in, check_int
from ..core.latent_activity import check_latent_activity, mixture_variance
from ..core.model import Model
from ..core.posterior import Posterior
from ..nn.amortized import (
    CategoricalEncoder,
    ConditionalGaussianEncoder,
    ObservationDecoder,
    observation_distribution,
)
from ..nn.mlp import check_dims
from ..nn.param_network import ParamNetwork
from .data import SCDCData, id_coords, prepare_scdc, steps_per_epoch
from .elbo import KLWarmup, RelationalELBO, check_kl_warmup
from .links import co_cluster_probability, link_log_prob, logit_worker_logs, worker_weights

__all__ = ["SCDC"]

#: how far from 0 and 1 the Beta(1, 1) draws of the initial coins are kept (finite logits)
COIN_INIT_MARGIN = 1e-3


class SCDC(Model):
    """Semi-crowdsourced deep clustering (the module docstring has the model and its ELBO).

    Args:
        n_clusters: ``K``.
        latent_dim: ``d``, the dimension of ``x``.
        hidden: hidden widths of the encoders (paper: ``(40, 40)`` for small data, ``(500,
            500)`` for MNIST).
        decoder_hidden: hidden widths of the decoder (default: ``hidden``).
        likelihood: ``"auto"`` (Bernoulli when every observation is 0 or 1, else Normal),
            ``"bernoulli"`` or ``"normal"``.
        covariance: ``"diag"`` (the released code) or ``"full"`` (the paper) for
            :math:`\\Sigma_k`.
        activation: of the hidden layers (``"relu"``, ``"tanh"``, ``"elu"``, ``"leaky_relu"``).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> o = torch.cat([torch.randn(20, 2, generator=g) - 3, torch.randn(20, 2, generator=g) + 3])
        >>> pairs = pd.DataFrame({"item_a": [0, 0, 20], "item_b": [1, 21, 22],
        ...                       "worker": [0, 0, 1], "link": [1, 0, 1]})
        >>> model = SCDC(n_clusters=2, latent_dim=2, hidden=(16,))
        >>> post = model.fit(o, pairs=pairs, num_epochs=2, batch_size=20, seed=0, progress=False)
        >>> model.predict(post, o).shape, tuple(post["alpha"].shape)
        (torch.Size([40]), (1, 1, 2))
    """

    engines = ("svi",)
    max_plate_nesting = 1
    site_dims = {
        "pi": ("cluster",),
        "locs": ("cluster", "latent"),
        "scales": ("cluster", "latent"),
        "scale_tril": ("cluster", "latent", "latent_col"),
        "alpha": ("worker",),
        "beta": ("worker",),
    }

    def __init__(self, n_clusters: int, latent_dim: int, hidden: Sequence[int] = (500, 500),
                 decoder_hidden: Sequence[int] | None = None, likelihood: str = "auto",
                 covariance: str = "diag", activation: str = "relu"):
        self.n_clusters = check_int(n_clusters, "n_clusters", minimum=1)
        self.latent_dim = check_int(latent_dim, "latent_dim", minimum=1)
        self.hidden = check_dims(hidden, "hidden")
        self.decoder_hidden = (self.hidden if decoder_hidden is None
                               else check_dims(decoder_hidden, "decoder_hidden"))
        self.likelihood = check_in(likelihood, "likelihood", ("auto", "bernoulli", "normal"))
        self.covariance = check_in(covariance, "covariance", ("diag", "full"))
        self.activation = check_in(activation, "activation", ("relu", "tanh", "elu", "leaky_relu"))
        self._networks: dict = {}
        self._warmup: KLWarmup | None = None  # set only while a fit with a KL warm-up runs

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_networks"] = {}  # rebuilt on use (they hold only the architecture)
        state["_warmup"] = None
        return state

    def _kl_scale(self):
        """The scale of the ``z`` and ``x`` sites: the KL warm-up's weight during a fit that
        has one, else none (the plain ELBO)."""
        if self._warmup is None or self._warmup.weight == 1.0:
            return contextlib.nullcontext()
        return poutine.scale(scale=self._warmup.weight)

    # ------------------------------------------------------------------ data
    def prepare(self, data, device=None) -> SCDCData:
        """``data`` as :class:`~pyromodels.scdc.data.SCDCData` on ``device``: an ``SCDCData``
        is moved, observations alone (array-like ``(N, D)``) are prepared without links and
        with ``batch_size=128`` (see :func:`~pyromodels.scdc.data.prepare_scdc`)."""
        if isinstance(data, SCDCData):
            return data if device is None or data.o.device == torch.device(device) else data.to(device)
        return prepare_scdc(data, likelihood=self.likelihood, device=device)

    # -------------------------------------------------------------- networks
    def networks(self, data: SCDCData) -> dict[str, ParamNetwork]:
        """The three networks for observations of ``data``'s width and likelihood, their
        weights in the param store (:class:`~pyromodels.nn.param_network.ParamNetwork`)."""
        key = (int(data.o.shape[1]), data.likelihood)
        if key not in self._networks:
            width, likelihood = key
            K, d, act = self.n_clusters, self.latent_dim, self.activation
            self._networks[key] = {
                "encoder_z": self._encoder_z(width),
                "encoder_x": ParamNetwork("encoder_x", lambda g, dt, dev: ConditionalGaussianEncoder(
                    width, K, d, self.hidden, act, g, dt, dev)),
                "decoder": ParamNetwork("decoder", lambda g, dt, dev: ObservationDecoder(
                    d, width, likelihood, self.decoder_hidden, act, g, dt, dev)),
            }
        return self._networks[key]

    def _globals(self, o: torch.Tensor):
        K, d = self.n_clusters, self.latent_dim
        opts = {"dtype": o.dtype, "device": o.device}
        pi_logits = pyro.param("pi_logits", lambda: 0.1 * torch.randn(K, **opts))
        locs = pyro.param("locs", lambda: torch.randn(K, d, **opts))
        if self.covariance == "diag":
            scale = pyro.param("scales", lambda: torch.ones(K, d, **opts),
                               constraint=constraints.positive)
        else:
            scale = pyro.param("scale_tril", lambda: torch.eye(d, **opts).expand(K, d, d).clone(),
                               constraint=constraints.lower_cholesky)
        return pi_logits, locs, scale

    def _coin_logits(self, data: SCDCData):
        opts = {"dtype": data.o.dtype, "device": data.o.device}
        M = data.num_workers

        def draw():
            if data.coin_init is not None:
                return torch.full((M,), data.coin_init, **opts).logit()
            u = torch.distributions.Beta(torch.ones(M, **opts), torch.ones(M, **opts)).sample()
            return torch.logit(u.clamp(COIN_INIT_MARGIN, 1 - COIN_INIT_MARGIN))

        return pyro.param("alpha_logit", draw), pyro.param("beta_logit", draw)

    def _x_distribution(self, locs, scale, z):
        if self.covariance == "diag":
            return dist.Normal(locs[z], scale[z]).to_event(1)
        return dist.MultivariateNormal(locs[z], scale_tril=scale[z])

    # -------------------------------------------------------------- program
    def model(self, data):
        """The local story ``z -> x -> o`` over a minibatch of items (module docstring)."""
        data = self.prepare(data)
        pi_logits, locs, scale = self._globals(data.o)
        decoder = self.networks(data)["decoder"]
        with pyro.plate("data", data.num_items, subsample_size=data.batch_size) as idx:
            with self._kl_scale():
                z = pyro.sample("z", dist.Categorical(logits=pi_logits))
                x = pyro.sample("x", self._x_distribution(locs, scale, z))
            pyro.sample("o", observation_distribution(data.likelihood, decoder(x)),
                        obs=data.o[idx])

    def guide(self, data):
        """``q(z | o) q(x | z, o)`` over the same minibatch, ``z`` enumerated."""
        data = self.prepare(data)
        nets = self.networks(data)
        with pyro.plate("data", data.num_items, subsample_size=data.batch_size) as idx:
            o = data.o[idx]
            with self._kl_scale():
                z = pyro.sample("z", dist.Categorical(logits=nets["encoder_z"](o)),
                                infer={"enumerate": "parallel"})
                loc, log_scale = nets["encoder_x"](o, F.one_hot(z, self.n_clusters))
                pyro.sample("x", dist.Normal(loc, log_scale.exp()).to_event(1))

    # ----------------------------------------------------------- relational term
    def relational_term(self, data: SCDCData, rows: torch.Tensor | None = None) -> torch.Tensor:
        """The closed-form relational ELBO term on the links ``rows``, scaled by ``N_a / |S|``.

        Args:
            data: prepared data.
            rows: ``(|S|,)`` long indices of links (default: all of them, scale 1).

        Returns:
            A scalar: :math:`\\frac{N_a}{|S|}\\sum_{l \\in S} \\mathbb{E}_{q(z_i)q(z_j)} \\log
            p(L_l \\mid z_i, z_j)`, differentiable in the encoder ``q(z | o)`` and the coins
            (zero when there are no links).
        """
        if data.num_links == 0:
            return data.o.new_zeros(())
        if rows is None:
            rows = torch.arange(data.num_links, device=data.o.device)
        i, j = data.i_idx[rows], data.j_idx[rows]
        items, where = torch.unique(torch.cat([i, j]), return_inverse=True)
        q = torch.softmax(self.networks(data)["encoder_z"](data.o[items]), dim=-1)
        rho = co_cluster_probability(q, where[:len(rows)], where[len(rows):])
        logs = logit_worker_logs(*self._coin_logits(data))
        total = link_log_prob(data.link[rows], rho, logs, data.worker_idx[rows]).sum()
        return total * (data.num_links / len(rows))

    def minibatch_relational_term(self, data) -> torch.Tensor:
        """:meth:`relational_term` on ``|S|`` links drawn uniformly without replacement
        (from torch's global generator, seeded by the fit)."""
        data = self.prepare(data)
        if data.num_links == 0:
            return data.o.new_zeros(())
        rows = torch.randperm(data.num_links, device=data.o.device)[:data.pair_batch_size]
        return self.relational_term(data, rows)

    def svi_elbo(self, num_particles: int = 1) -> RelationalELBO:
        """The objective :func:`~pyromodels.core.run_svi` uses: the enumerated ELBO plus the
        minibatch relational term (:class:`~pyromodels.scdc.elbo.RelationalELBO`)."""
        return RelationalELBO(self.minibatch_relational_term, warmup=self._warmup,
                              max_plate_nesting=1,
                              num_particles=num_particles)

    # ------------------------------------------------------------------ fit
    def fit(self, o, pairs=None, *, method: str = "svi", num_epochs: int = 20, batch_size: int = 128,
            pair_batch_size: int | None = None, coin_init: float | None = None,
            kl_warmup_epochs: int = 0, lr: float = 1e-3, optim=None,
            num_particles: int = 1, seed: int | None = None, progress: bool = True,
            callbacks=None, device=None, dtype: torch.dtype | None = None, checkpoint=None,
            checkpoint_every: int | None = None, resume=None,
            num_threads: int | None = None, diagnostic_warnings: bool = True) -> Posterior:
        """Fit by amortised SVI (:func:`~pyromodels.core.run_svi` with :meth:`svi_elbo`).

        Args:
            o: ``(N, D)`` observations.
            pairs: the links: ``None``, a :class:`~pyromodels.data.pairwise.PairwiseAnnotations`
                or a DataFrame with columns ``item_a``, ``item_b``, ``worker``, ``link``; its
                items list the ``N`` rows of ``o`` in order (``items=``), or its item ids are
                row numbers of ``o``.
            method: ``"svi"``, the only engine.
            num_epochs: passes over the data; an epoch is ``ceil(N / batch_size)`` steps,
                each on a data minibatch drawn uniformly without replacement (independently
                from step to step).
            batch_size: ``|B|`` (paper: 128 for MNIST, 10 for Face).
            pair_batch_size: ``|S|``; default ``N_a |B| / N`` rounded, at least 1.
            coin_init: the workers' initial sensitivity and specificity: ``None`` (default)
                draws each from Beta(1, 1) as the paper does; a number in (0, 1) starts every
                worker there. Random starts give some workers a weight below chance, and when
                the features alone favour another partition than the workers' the fit can
                settle on it with every weight near 0 (see the tests' four-blob example);
                starting the workers as reliable (``0.9``, as BayesSCDC's Beta(10, 1)
                initial posteriors do) lets the links pull the clusters first.
            kl_warmup_epochs: epochs over which the local KL terms (the ``z`` and ``x`` sites
                of the model and the guide: :math:`\\log \\pi_z + \\log N(x; \\mu_z, \\Sigma_z)
                - \\log q(z, x \\mid o)`) are weighted by a factor rising linearly, step by
                step, from ``1 / (kl_warmup_epochs * steps per epoch)`` to 1; the
                reconstruction and the links keep weight 1. ``0`` (default, the paper): the
                ELBO throughout. Not in the paper; a standard remedy for posterior collapse
                (Bowman et al. 2016, Sonderby et al. 2016): while the weight is small the
                decoder learns to read ``x`` before the KL terms can flatten ``q(z | o)``
                (module docstring). Must be below ``num_epochs``, so that the fit ends on the
                ELBO itself; the ``losses`` of the warm-up steps are those of the weighted
                objective. Not combinable with ``resume``.
            lr: Adam's learning rate (paper: 1e-3), unless ``optim`` is given.
            optim: a ``pyro.optim`` optimiser instead of ``Adam({"lr": lr})``.
            num_particles: samples of ``x`` per cluster per item.
            seed, progress, callbacks, device, checkpoint, resume, num_threads: as for
                :func:`~pyromodels.core.run_svi` (``callbacks`` are called per step).
            dtype: of the observations and parameters (default: ``o``'s floating dtype, else
                torch's default).
            checkpoint_every: epochs between checkpoint writes (``None``: only the end).
            diagnostic_warnings: ``False`` silences the
                :class:`~pyromodels.core.PosteriorCollapseWarning` of a fit whose training
                items' means :math:`E_q[x \\mid o]` leave no latent unit active
                (:mod:`pyromodels.core.latent_activity`, each unit's scale the variance the
                fitted prior mixture gives it); the count is recorded either way.

        Returns:
            A :class:`~pyromodels.core.Posterior` (``method="svi"``) whose samples are the
            point estimates as one chain of one draw: ``pi`` ``(K,)``, ``locs`` ``(K, d)``,
            ``scales`` ``(K, d)`` or ``scale_tril`` ``(K, d, d)``, ``alpha`` and ``beta``
            ``(M,)``; ``params`` holds every fitted tensor (the networks' weights included),
            ``losses`` the loss per step; ``diagnostics`` adds ``steps_per_epoch``,
            ``active_units`` and ``latent_dim`` (the latent units along which the training
            items' means :math:`E_q[x \\mid o]` vary, :func:`~pyromodels.core.active_units`).
        """
        check_in(method, "method", self.engines)
        num_epochs = check_int(num_epochs, "num_epochs", minimum=1)
        kl_warmup_epochs = check_kl_warmup(kl_warmup_epochs, num_epochs, resume)
        diagnostic_warnings = check_bool(diagnostic_warnings, "diagnostic_warnings")
        data = prepare_scdc(o, pairs, likelihood=self.likelihood, batch_size=batch_size,
                            pair_batch_size=pair_batch_size, coin_init=coin_init, dtype=dtype,
                            device=device)
        per_epoch = steps_per_epoch(data)
        every = None if checkpoint_every is None else per_epoch * check_int(
            checkpoint_every, "checkpoint_every", minimum=1)
        if optim is None:
            optim = pyro.optim.Adam({"lr": lr})
        from ..core.svi import run_svi

        self._warmup = KLWarmup(kl_warmup_epochs * per_epoch) if kl_warmup_epochs else None
        try:
            post = run_svi(self, data, num_steps=num_epochs * per_epoch, optim=optim, lr=lr,
                           num_particles=num_particles, num_samples=1, seed=seed,
                           progress=progress, callbacks=callbacks, device=device,
                           checkpoint=checkpoint, checkpoint_every=every, resume=resume,
                           num_threads=num_threads)
        finally:
            self._warmup = None
        estimates = self.point_estimates(post.params)
        samples = {k: v.unsqueeze(0).unsqueeze(0) for k, v in estimates.items()}
        activity = check_latent_activity(
            self._latent_means(post.params, data), fit="SCDC.fit",
            scale=self._prior_variance(estimates),
            scale_note="the fitted prior mixture's variance of that unit",
            remedies="Weigh the KL terms in gradually (kl_warmup_epochs, e.g. three quarters of "
                     "num_epochs) or lower the learning rate lr.",
            diagnostic_warnings=diagnostic_warnings)
        diagnostics = {**post.diagnostics, "steps_per_epoch": per_epoch, **activity}
        return dataclasses.replace(post, samples=samples, diagnostics=diagnostics)

    def _latent_means(self, params: dict, data: SCDCData, chunk: int = 1024) -> torch.Tensor:
        """``(N, d)`` the recognition means :math:`E_q[x \\mid o] = \\sum_k q(k \\mid o)\\,
        m(o, k)` of the items, from the fitted networks' ``params`` (in chunks of rows)."""
        nets = self.networks(data)
        enc_z, enc_x = nets["encoder_z"], nets["encoder_x"]
        z_params, x_params = enc_z.stored(params), enc_x.stored(params)
        onehot = torch.eye(self.n_clusters, dtype=data.o.dtype, device=data.o.device)
        out = []
        with torch.no_grad():
            for rows in data.o.split(chunk):
                q = torch.softmax(enc_z(rows, params=z_params), dim=-1)
                loc, _ = enc_x(rows.unsqueeze(-2), onehot, params=x_params)  # (n, K, d)
                out.append((q.unsqueeze(-1) * loc).sum(-2))
        return torch.cat(out)

    def _prior_variance(self, estimates: dict) -> torch.Tensor:
        """``(d,)`` each latent unit's variance under the fitted prior mixture."""
        if self.covariance == "diag":
            variances = estimates["scales"].square()
        else:
            tril = estimates["scale_tril"]
            variances = (tril @ tril.mT).diagonal(dim1=-2, dim2=-1)
        return mixture_variance(estimates["pi"], estimates["locs"], variances)

    # --------------------------------------------------------------- results
    def point_estimates(self, params: dict) -> dict[str, torch.Tensor]:
        """The globals in their natural form from a fit's ``params``: ``pi`` (softmax of the
        logits), ``locs``, ``scales`` or ``scale_tril``, ``alpha`` and ``beta`` (sigmoids)."""
        out = {"pi": torch.softmax(params["pi_logits"], -1), "locs": params["locs"]}
        key = "scales" if self.covariance == "diag" else "scale_tril"
        out[key] = params[key]
        if "alpha_logit" in params:
            out["alpha"] = torch.sigmoid(params["alpha_logit"])
            out["beta"] = torch.sigmoid(params["beta_logit"])
        return {k: v.detach() for k, v in out.items()}

    def cluster_probabilities(self, posterior: Posterior, o) -> torch.Tensor:
        """``(N, K)`` :math:`q(z \\mid o)` of the fitted encoder for observations ``o``.

        ``posterior`` is a fit of this model, also one read back by ``Posterior.load`` (the
        encoder's weights are among its ``params``).
        """
        if not isinstance(posterior, Posterior):
            raise TypeError(f"posterior must be a Posterior from SCDC.fit, got "
                            f"{type(posterior).__name__}")
        first = f"encoder_z.{self._encoder_first_weight()}"
        weight = posterior.params.get(first)
        if not isinstance(weight, torch.Tensor):
            raise ValueError("posterior must come from SCDC.fit: its params hold no encoder "
                             f"weights ({first!r})")
        width = int(weight.shape[-1])
        o = as_float_tensor(o, "o", ndim=2, dtype=weight.dtype, device=weight.device)
        if o.shape[1] != width:
            raise ValueError(f"o must have {width} columns, as the fitted data, got {o.shape[1]}")
        net = self._encoder_z(width)
        with torch.no_grad():
            return torch.softmax(net(o, params=net.stored(posterior.params)), dim=-1)

    def _encoder_z(self, width: int) -> ParamNetwork:
        K, act = self.n_clusters, self.activation
        return ParamNetwork("encoder_z", lambda g, dt, dev: CategoricalEncoder(
            width, K, self.hidden, act, g, dt, dev))

    def _encoder_first_weight(self) -> str:
        """The name of the encoder's first weight matrix (its input width is the data's)."""
        skeleton = self._encoder_z(1).skeleton
        return next(name for name, p in skeleton.named_parameters() if p.dim() == 2)

    def predict_proba(self, posterior: Posterior, o) -> torch.Tensor:
        """``(N, K)`` cluster probabilities of observations ``o`` (:meth:`cluster_probabilities`)."""
        return self.cluster_probabilities(posterior, o)

    def predict(self, posterior: Posterior, o) -> torch.Tensor:
        """``(N,)`` long: each observation's most probable cluster, argmax :math:`q(z \\mid o)`."""
        return self.cluster_probabilities(posterior, o).argmax(-1)

    def site_coords(self, data) -> dict:
        """Labels of the ``worker`` axis of ``alpha`` and ``beta`` in ArviZ groups: the users'
        worker ids (:attr:`SCDCData.workers <pyromodels.scdc.data.SCDCData>`)."""
        return id_coords(workers=self.prepare(data).workers)

    def worker_table(self, posterior: Posterior) -> pd.DataFrame:
        """The fitted coins per worker, indexed by worker id: ``alpha`` (sensitivity),
        ``beta`` (specificity) and ``weight`` = logit alpha + logit beta (Fig. 3c)."""
        if "alpha" not in posterior.samples:
            raise ValueError("this fit had no links, so it has no worker parameters")
        alpha = posterior.samples["alpha"][0, 0].cpu()
        beta = posterior.samples["beta"][0, 0].cpu()
        return pd.DataFrame({"alpha": alpha.numpy(), "beta": beta.numpy(),
                             "weight": worker_weights(alpha, beta).numpy()},
                            index=posterior.data.workers)
