r"""BayesSCDC: semi-crowdsourced clustering with Bayesian globals, fitted by SVAE-style
natural-gradient SVI (Luo et al. 2018, §3).

The generative story is SCDC's with conjugate priors on the globals (eqs. 5-7):

.. math::

    \pi \sim \mathrm{Dir}(\alpha_0 1_K), \quad (\mu_k, \Sigma_k) \sim \mathrm{NIW}(m, \kappa, S,
    \nu), \quad \alpha_m \sim \mathrm{Beta}(\tau_\alpha), \quad \beta_m \sim
    \mathrm{Beta}(\tau_\beta),

then :math:`z_n \sim \mathrm{Cat}(\pi)`, :math:`x_n \sim N(\mu_{z_n}, \Sigma_{z_n})`,
:math:`o_n \sim p_\gamma(o_n \mid x_n)` (a decoder network) and the two-coin links.
The mean-field posterior :math:`q(\pi) \prod_k q(\mu_k, \Sigma_k) \prod_m q(\alpha_m)
q(\beta_m) \prod_n q(z_n) q(x_n)` has conjugate global factors, fitted by natural-gradient steps
(:func:`~pyromodels.core.run_natgrad`), and local factors found by message passing on a
recognition network's Gaussian potential (:mod:`.vmp`, :mod:`.bayes_elbo`); the networks take
an optimiser step on :math:`-J` (eq. 19) at each minibatch.

Defaults (spec §2.3). Priors, the paper's (Appendix B): :math:`\alpha_0 = 0.05 / K` (the
released code: concentration 1.05; pass ``weight_concentration=1.05``), :math:`m = 0`,
:math:`\kappa = 0.5`, :math:`S = (d + \kappa) I`, :math:`\nu = d + \kappa`, Beta(1, 1) for
every coin. Initial factors: Dirichlet concentrations :math:`\sim U(1, 2)`; NIW with
:math:`\kappa = 1`, :math:`m \sim N(0, 3^2 I)` (the code's standard deviation 3; the paper's
"N(0, 3)" is ambiguous), :math:`S = (d + \kappa_0) I`, :math:`\nu = d + \kappa_0`; Beta(10, 1)
for every coin. Four message-passing sweeps as the released code (the paper does not say), the
code's parallel z updates, q(z) started from normalised uniform draws as the code does
(``z_init="responsibilities"`` starts from the mixture responsibilities instead: deterministic,
but on the Pinwheel toy it left more runs with every item in one or two clusters). The paper
trains the networks with momentum 0.9 and learning rate 1e-3 and the globals at "learning
rate 1e-4" through the code's scaled momentum step; here the networks take Adam steps
(``optimizer="sgd"`` gives momentum 0.9) and the globals natural-gradient steps of
Robbins-Monro size :math:`(t + 1)^{-0.7}`, which move a
short run (the paper's Pinwheel is 200 steps) where 1e-4 would not.

Training schedule. With these defaults the globals move from the first step, before the
recognition network separates the items, and the sparse Dirichlet then tends to keep a single
component (on the standardised Pinwheel: one cluster, ACC 0.2). The Pinwheel toy needs the
globals held while the networks learn: ``warmup_epochs=40`` of ``num_epochs=60`` with
``step_size=0.01`` and ``lr=0.01`` (the settings of the tests). Held at the paper's random
draws, though, the globals are a poor place to resume from: the network has learnt to put the
items on the few drawn components near the data, and once the globals move the sparse
Dirichlet merges those few (two or three clusters for most seeds: the paper's "bad"
initialisations). So at the end of the warm-up the globals restart from the data
(``global_init="data"``, the default; :mod:`.bayes_start`): the components' means are put at
k-means++ centres of the encoded items and one full-data CAVI step on the network's current
potentials follows, which is what the paper's "good start" amounts to. The paper's literal
start is ``global_init="prior-draws"``. On twelve of the reproduction's Pinwheel seeds kept
out of the design (10-21) mean ACC rose from 0.78 to 0.90 with links (lowest 0.20 before,
0.78 after) and from 0.63 to 0.67 without, NMI from 0.79 to 0.90 with links (0.70 without,
unchanged), the learned clusters from 4.3 and 3.8 to 6.5 and 6.3 (the paper's 6 and 8);
results without links still vary much with the seed. After the restart every component
holds some weight, and at step 0.01 the sparse Dirichlet prunes only slowly. More CAVI steps
in the restart (``start_iterations``) let the sparse prior merge components before the
networks adapt, and did worse. With ``warmup_epochs=0`` the restart is the first step, on
the untrained network.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Sequence

import pandas as pd
import torch

from ..checks import as_float_tensor, check_bool, check_in, check_int, check_positive
from ..conjugate.beta_bernoulli import BetaBernoulli
from ..conjugate.dirichlet_categorical import DirichletCategorical
from ..conjugate.niw import niw_to_normal_wishart
from ..core.conjugate_factors import RobbinsMonro, like
from ..core.errors import ConvergenceWarning
from ..core.latent_activity import check_latent_activity, mixture_variance
from ..core.posterior import Posterior
from ..core.seeding import derive_seed, make_generator, resolve_seed
from ..nn.amortized import GaussianPotentialEncoder, ObservationDecoder
from ..nn.mlp import check_dims
from .bayes_elbo import WORKER_SCALINGS, BayesLocalStep, NetworkObservation
from .bayes_start import GLOBAL_INITS
from .data import SCDCData, id_coords, prepare_scdc
from .elbo import check_kl_warmup
from .links import worker_weights
from .vmp import SCHEDULES, Z_INITS, LocalPosterior, global_means, run_vmp

__all__ = ["BayesSCDC", "bayes_priors", "initial_globals", "prior_variance", "DEFAULT_LR",
           "NARROW_WIDTH"]

#: the networks' Adam step of :meth:`BayesSCDC.fit` (the paper's 1e-3, safe at every width)
DEFAULT_LR = 1e-3
#: the widest layer (units) for which :meth:`BayesSCDC.schedule_lr` takes the larger step 0.01
NARROW_WIDTH = 64


def bayes_priors(num_clusters: int, num_workers: int, loc: torch.Tensor, kappa: float,
                 scale: torch.Tensor, df: float, weight_concentration: float,
                 alpha_prior=(1.0, 1.0), beta_prior=(1.0, 1.0)) -> dict:
    """The priors as conjugate factors: ``"weights"`` Dirichlet ``(K,)``, ``"components"``
    ``K`` Normal-Wisharts from the paper's NIW ``(m, kappa, S, nu)`` and, with workers,
    ``"alpha"`` and ``"beta"`` Betas ``(M,)``.

    Args:
        num_clusters: ``K``.
        num_workers: ``M`` (0: no worker factors).
        loc: ``(d,)`` ``m``; its dtype and device are the factors'.
        kappa, df: ``kappa > 0``, ``nu > d - 1``.
        scale: ``(d, d)`` ``S``.
        weight_concentration: ``alpha_0 > 0``.
        alpha_prior, beta_prior: Beta concentrations ``(a, b)``.
    """
    K, d = num_clusters, loc.shape[-1]
    opts = {"dtype": loc.dtype, "device": loc.device}
    priors = {
        "weights": DirichletCategorical(torch.full((K,), float(weight_concentration), **opts)),
        "components": niw_to_normal_wishart(loc.expand(K, d), torch.full((K,), float(kappa), **opts),
                                            scale.expand(K, d, d),
                                            torch.full((K,), float(df), **opts)),
    }
    if num_workers:
        for name, (a, b) in (("alpha", alpha_prior), ("beta", beta_prior)):
            priors[name] = BetaBernoulli(torch.full((num_workers,), float(a), **opts),
                                         torch.full((num_workers,), float(b), **opts))
    return priors


def initial_globals(priors: dict, generator: torch.Generator, kappa0: float,
                    loc_std: float = 3.0, coin_init=(10.0, 1.0)) -> dict:
    """The paper's initial factors (Appendix B): Dirichlet concentrations ``U(1, 2)``; NIW with
    ``kappa = 1``, ``m ~ N(0, loc_std^2 I)``, ``S = (d + kappa0) I``, ``nu = d + kappa0``; every
    coin ``Beta(*coin_init)``."""
    comps = priors["components"]
    K, d = comps.loc.shape
    opts = {"dtype": comps.loc.dtype, "device": comps.loc.device}
    conc = 1 + torch.rand(K, generator=generator, dtype=opts["dtype"]).to(opts["device"])
    loc = loc_std * torch.randn(K, d, generator=generator, dtype=opts["dtype"]).to(opts["device"])
    eye = torch.eye(d, **opts)
    init = {"weights": DirichletCategorical(conc),
            "components": niw_to_normal_wishart(loc, torch.ones(K, **opts),
                                                (d + kappa0) * eye.expand(K, d, d),
                                                torch.full((K,), d + kappa0, **opts))}
    for name in ("alpha", "beta"):
        if name in priors:
            M = priors[name].alpha.shape[0]
            init[name] = BetaBernoulli(torch.full((M,), float(coin_init[0]), **opts),
                                       torch.full((M,), float(coin_init[1]), **opts))
    return init


class BayesSCDC:
    """Semi-crowdsourced clustering with conjugate globals and amortised local message passing.

    Args:
        n_clusters: ``K``, the initial number of components (the sparse Dirichlet prunes).
        latent_dim: ``d``.
        hidden: hidden widths of the recognition network (paper: 2 x 40 for Pinwheel, 2 x 500
            for MNIST).
        decoder_hidden: hidden widths of the decoder (default: ``hidden``).
        likelihood: ``"auto"``, ``"bernoulli"`` or ``"normal"`` (the decoder's).
        activation: of the networks.
        weight_concentration: ``alpha_0`` (default ``0.05 / K``, the paper's).
        mean_precision: ``kappa`` of the NIW prior (0.5).
        degrees_of_freedom: ``nu`` (default ``d + kappa``).
        covariance_scale: ``S`` as a number times the identity (default ``d + kappa``).
        alpha_prior, beta_prior: Beta priors of the coins (``(1, 1)``).

    Example:
        >>> from pyromodels.data import simulate_pinwheel
        >>> o, truth = simulate_pinwheel(points_per_cluster=20, seed=0)
        >>> post = BayesSCDC(6, 2).fit(o, num_epochs=1, batch_size=50, seed=0, progress=False)
        >>> post.params["cluster_probs"].shape
        torch.Size([100, 6])
    """

    #: the one fitting method (natural-gradient SVI), named as the registry names engines
    engines = ("natgrad",)
    #: names of each site's axes in ArviZ groups (the draws of the fitted global factors)
    site_dims = {
        "weights": ("cluster",),
        "locs": ("cluster", "latent"),
        "precisions": ("cluster", "latent", "latent_col"),
        "alpha": ("worker",),
        "beta": ("worker",),
    }

    def __init__(self, n_clusters: int, latent_dim: int, hidden: Sequence[int] = (40, 40),
                 decoder_hidden: Sequence[int] | None = None, likelihood: str = "auto",
                 activation: str = "relu", weight_concentration: float | None = None,
                 mean_precision: float = 0.5, degrees_of_freedom: float | None = None,
                 covariance_scale: float | None = None, alpha_prior=(1.0, 1.0),
                 beta_prior=(1.0, 1.0)):
        self.n_clusters = check_int(n_clusters, "n_clusters", minimum=1)
        self.latent_dim = check_int(latent_dim, "latent_dim", minimum=1)
        self.hidden = check_dims(hidden, "hidden")
        self.decoder_hidden = self.hidden if decoder_hidden is None else check_dims(
            decoder_hidden, "decoder_hidden")
        self.likelihood = check_in(likelihood, "likelihood", ("auto", "bernoulli", "normal"))
        self.activation = check_in(activation, "activation", ("relu", "tanh", "elu", "leaky_relu"))
        d = self.latent_dim
        self.weight_concentration = check_positive(
            0.05 / self.n_clusters if weight_concentration is None else weight_concentration,
            "weight_concentration")
        self.mean_precision = check_positive(mean_precision, "mean_precision")
        self.degrees_of_freedom = check_positive(
            d + self.mean_precision if degrees_of_freedom is None else degrees_of_freedom,
            "degrees_of_freedom")
        if self.degrees_of_freedom <= d - 1:
            raise ValueError(f"degrees_of_freedom must be > latent_dim - 1 = {d - 1}, got "
                             f"{self.degrees_of_freedom}")
        self.covariance_scale = check_positive(
            d + self.mean_precision if covariance_scale is None else covariance_scale,
            "covariance_scale")
        self.alpha_prior = tuple(check_positive(v, "alpha_prior") for v in alpha_prior)
        self.beta_prior = tuple(check_positive(v, "beta_prior") for v in beta_prior)
        if len(self.alpha_prior) != 2 or len(self.beta_prior) != 2:
            raise ValueError("alpha_prior and beta_prior must be pairs (a, b)")

    def schedule_lr(self) -> float:
        """The networks' Adam step for a fit on the warm-up schedule (the globals held for
        the first two thirds of the epochs, as ``pyromodels fit bayes-scdc`` and the
        reproduction fit): 0.01 when no layer of the recognition network or the decoder is
        wider than :data:`NARROW_WIDTH` units (the Pinwheel toy's 2 x 40 networks learn to
        separate the arms within the warm-up only at that step), else the paper's 1e-3, the
        default of :meth:`fit` (at 0.01 the paper's 2 x 500 MNIST networks collapse within the
        first epoch: every digit encoded at one latent point). Only 40 and 500 units were
        checked; between them the smaller step is the safe side."""
        widest = max((*self.hidden, *self.decoder_hidden), default=0)
        return 1e-2 if widest <= NARROW_WIDTH else DEFAULT_LR

    def priors(self, num_workers: int, dtype=torch.float64, device=None) -> dict:
        """The prior factors for ``num_workers`` workers (:func:`bayes_priors`)."""
        d = self.latent_dim
        loc = torch.zeros(d, dtype=dtype, device=device)
        scale = self.covariance_scale * torch.eye(d, dtype=dtype, device=device)
        return bayes_priors(self.n_clusters, num_workers, loc, self.mean_precision, scale,
                            self.degrees_of_freedom, self.weight_concentration,
                            self.alpha_prior, self.beta_prior)

    def networks(self, width: int, likelihood: str, generator, dtype, device) -> NetworkObservation:
        """A fresh recognition network and decoder for observations of ``width`` columns."""
        enc = GaussianPotentialEncoder(width, self.latent_dim, self.hidden, self.activation,
                                       generator, dtype, device)
        dec = ObservationDecoder(self.latent_dim, width, likelihood, self.decoder_hidden,
                                 self.activation, generator, dtype, device)
        return NetworkObservation(enc, dec)

    def fit(self, o, pairs=None, *, num_epochs: int = 20, batch_size: int = 50,
            pair_batch_size: int | None = None, seed: int | None = None,
            correction: bool = False, step_size=None, lr: float = DEFAULT_LR,
            optimizer: str = "adam", num_sweeps: int = 4, schedule: str = "parallel",
            z_init: str = "random", worker_scaling: str = "paper",
            warmup_epochs: int = 0, global_init: str = "data", start_iterations: int = 1,
            kl_warmup_epochs: int = 0, progress: bool = True, callbacks=None, device=None,
            dtype: torch.dtype | None = None, checkpoint=None,
            checkpoint_every: int | None = None, resume=None,
            num_threads: int | None = None, num_samples: int = 1000,
            tol: float = 0.0, diagnostic_warnings: bool = True) -> Posterior:
        """Fit by natural-gradient SVI on the globals and optimiser steps on the networks.

        Args:
            o: ``(N, D)`` observations.
            pairs: ``None`` or the links (as for :meth:`SCDC.fit <pyromodels.scdc.SCDC.fit>`).
            num_epochs: passes over the data (paper's Pinwheel: 20).
            batch_size: ``|B|`` (paper's Pinwheel: 50; MNIST: 128).
            pair_batch_size: ``|S|``; default ``N_a |B| / N`` (the paper's balance). With
                ``|B| >= N`` and ``|S| = N_a`` every step is the joint full-data update. The
                link branch encodes the drawn links' distinct items, so a step costs about
                that many recognition passes: with many links per item (the 57,330 links on
                5,000 digits of the benchmark: ``|S| = 1,467``, some 1,700 items a step) a
                smaller ``|S|`` is the cheaper, noisier estimate of the same objective (the
                released code's ratio on 60,000 images: 122 links per 128 images).
            seed: the fit's seed (networks, initial factors, minibatches, draws).
            correction: add the eq. 17 correction to the natural gradients (the released
                code omits it). Early in a fit, with untrained networks, the correction can be
                large and a big ``step_size`` can take a global out of its family (the engine
                then says so): use small steps with it.
            step_size: the globals' step ``rho_t``: a number in (0, 1] or a schedule; default
                ``RobbinsMonro(tau=1, kappa=0.7)``.
            lr: the networks' learning rate (paper: 1e-3; :meth:`schedule_lr` gives the
                step for the warm-up schedule).
            optimizer: ``"adam"`` or ``"sgd"`` (momentum 0.9, the paper's).
            num_sweeps, schedule, z_init: message passing (:func:`~pyromodels.scdc.vmp.run_vmp`).
            worker_scaling: ``"paper"`` (``N_a / |S|``, unbiased) or ``"code"`` (the released
                code's, spec §9 item 9).
            warmup_epochs: epochs during which only the networks learn and the globals keep
                their initial factors (:class:`~pyromodels.scdc.bayes_elbo.BayesLocalStep`;
                not in the paper; the Pinwheel toy needs about two thirds of the run).
            global_init: ``"data"`` (default): at the end of the warm-up the globals restart
                from the data, k-means++ means on the encoded items and ``start_iterations``
                full-data CAVI sweeps on the recognition network's potentials
                (:mod:`.bayes_start`); ``"prior-draws"``: the paper's initial factors kept
                (:func:`initial_globals`), as before this option existed.
            start_iterations: CAVI sweeps of the data start (at least 1).
            kl_warmup_epochs: epochs over which the local KL terms of the networks'
                objective (eqs. 21-22) are weighted in, by a factor rising linearly, step by
                step, from ``1 / (kl_warmup_epochs * steps per epoch)`` to 1; the
                reconstruction and the links keep weight 1, and message passing and the
                globals' updates are the model's own
                (:class:`~pyromodels.scdc.bayes_elbo.BayesLocalStep`). ``0`` (default, the
                paper): the ELBO throughout. SCDC's remedy for posterior collapse
                (:class:`~pyromodels.scdc.SCDC`'s argument of the same name): while the
                weight is small the recognition network learns potentials that carry the
                items, before the KL terms can pull every item onto one component. Must be
                below ``num_epochs``, so that the fit ends on the ELBO itself; the ``losses``
                of the warm-up steps are those of the weighted objective. Not combinable
                with ``resume``.
            progress, callbacks, device, checkpoint, checkpoint_every, resume, num_threads:
                as for :func:`~pyromodels.core.run_natgrad` (a resumed fit rebuilds the same
                networks from ``seed`` and continues from the checkpoint's state).
            dtype: of the observations, networks and factors (default float64).
            tol: stop when the epoch mean of the ELBO estimate moves by less than ``tol``
                times its magnitude (:func:`~pyromodels.core.run_natgrad`); a fit that runs
                all ``num_epochs`` without meeting it warns with a
                :class:`~pyromodels.core.ConvergenceWarning`. ``0`` (default) runs every
                epoch and never warns.
            num_samples: draws of the fitted global factors stored as the posterior's one
                chain (drawn after the fit from their own seed: the fit does not depend on
                them; ``0``: none, and then no ArviZ conversion, summary or ``save``).
            diagnostic_warnings: ``False`` silences the
                :class:`~pyromodels.core.PosteriorCollapseWarning` of a fit whose training
                items' means :math:`E[x_i]` leave no latent unit active (each unit's scale
                the variance the fitted prior mixture gives it), or whose local posteriors
                :math:`q(x_i)` carry less than one bit about the items
                (:mod:`pyromodels.core.latent_activity`); the statistics are recorded either
                way.

        Returns:
            A :class:`~pyromodels.core.Posterior` (``method="natgrad"``, ``model`` this
            model): ``samples`` the draws of the fitted factors, ``weights`` ``(K,)``,
            ``locs`` ``(K, d)``, ``precisions`` ``(K, d, d)``, ``alpha`` and ``beta``
            ``(M,)`` (with links); ``losses`` the negative ELBO estimate of every step;
            ``params`` holds ``factors`` (the fitted Dirichlet, Normal-Wisharts and Betas),
            their natural parameters ``eta.*``, the networks' weights ``network.*``,
            ``cluster_probs`` ``(N, K)`` (q*(z) of the training items without links),
            ``expected_weights`` ``(K,)`` :math:`E[\\pi_k]` and ``elbo``, the ELBO estimate of
            the last epoch (the mean over its steps); ``diagnostics`` adds
            ``occupied_clusters`` (distinct argmax clusters of the training items),
            ``active_units`` and ``latent_dim`` (the latent units along which the items'
            means :math:`E[x_i]` vary, :func:`~pyromodels.core.active_units`),
            ``code_information`` (nats: a bound on what the items' :math:`q(x_i)` say about
            which item they encode, :mod:`pyromodels.core.latent_activity`) and
            ``collapsed`` (no active unit, or less than one bit of code: the fit warns),
            ``steps_per_epoch`` and ``time_per_epoch`` (seconds); ``attrs`` adds
            ``likelihood`` and ``num_features`` (what ``predict`` needs after
            ``Posterior.load``).
        """
        num_epochs = check_int(num_epochs, "num_epochs", minimum=1)
        correction = check_bool(correction, "correction")
        optimizer = check_in(optimizer, "optimizer", ("adam", "sgd"))
        num_sweeps = check_int(num_sweeps, "num_sweeps", minimum=1)
        schedule = check_in(schedule, "schedule", SCHEDULES)
        z_init = check_in(z_init, "z_init", Z_INITS)
        worker_scaling = check_in(worker_scaling, "worker_scaling", WORKER_SCALINGS)
        lr = check_positive(lr, "lr")
        warmup_epochs = check_int(warmup_epochs, "warmup_epochs", minimum=0)
        global_init = check_in(global_init, "global_init", GLOBAL_INITS)
        start_iterations = check_int(start_iterations, "start_iterations", minimum=1)
        kl_warmup_epochs = check_kl_warmup(kl_warmup_epochs, num_epochs, resume)
        num_samples = check_int(num_samples, "num_samples", minimum=0)
        diagnostic_warnings = check_bool(diagnostic_warnings, "diagnostic_warnings")
        data = prepare_scdc(o, pairs, likelihood=self.likelihood, batch_size=batch_size,
                            pair_batch_size=pair_batch_size,
                            dtype=torch.float64 if dtype is None else dtype, device=device)
        seed = resolve_seed(seed)
        opts = {"dtype": data.o.dtype, "device": data.o.device}
        net_gen = make_generator(derive_seed(seed, "networks"))
        observation = self.networks(data.o.shape[1], data.likelihood, net_gen, **opts)
        priors = self.priors(data.num_workers, **opts)
        init = initial_globals(priors, make_generator(derive_seed(seed, "init")),
                               self.mean_precision)
        params = list(observation.parameters())
        opt = (torch.optim.Adam(params, lr=lr) if optimizer == "adam"
               else torch.optim.SGD(params, lr=lr, momentum=0.9))
        step = BayesLocalStep(observation, data.o, data.i_idx, data.j_idx, data.worker_idx,
                              data.link, data.num_workers, data.pair_batch_size, num_sweeps,
                              schedule, z_init, worker_scaling, warmup_epochs, global_init,
                              priors, start_iterations,
                              kl_warmup_epochs * math.ceil(data.num_items / data.batch_size))
        from ..core.natgrad import run_natgrad

        start = time.perf_counter()
        post = run_natgrad(step, data.o, priors=priors, init=init, num_epochs=num_epochs,
                           batch_size=None if data.batch_size >= data.num_items else data.batch_size,
                           step_size=RobbinsMonro(1.0, 0.7) if step_size is None else step_size,
                           correction=correction, optimizer=opt, num_samples=num_samples, seed=seed,
                           progress=progress, callbacks=callbacks, device=device,
                           checkpoint=checkpoint, checkpoint_every=checkpoint_every,
                           resume=resume, num_threads=num_threads, tol=tol)
        elapsed = time.perf_counter() - start
        per_epoch = math.ceil(data.num_items / data.batch_size)
        if tol > 0 and not post.diagnostics["converged"] and (
                post.diagnostics["num_steps"] >= num_epochs * per_epoch):  # not a callback's stop
            history = post.diagnostics["epoch_objectives"]
            change = abs(history[-1] - history[-2]) if len(history) > 1 else float("nan")
            warnings.warn(f"BayesSCDC did not converge in {num_epochs} epochs (tol={tol:g}); last "
                          f"change of the epoch mean of the ELBO: {change:.3g}. Increase "
                          "num_epochs or loosen tol.", ConvergenceWarning, stacklevel=2)
        factors = post.params["factors"]
        local = self._local(factors, observation, data.o)
        probs = local.probs
        activity = check_latent_activity(
            local.x.mean(), fit="BayesSCDC.fit", scale=prior_variance(factors),
            scale_note="the fitted prior mixture's variance of that unit",
            covariances=local.x.covariance(),
            remedies="Weigh the local KL terms in gradually (kl_warmup_epochs), lower the "
                     "networks' learning rate lr, or hold the globals while the networks learn "
                     "(warmup_epochs, e.g. two thirds of num_epochs).",
            diagnostic_warnings=diagnostic_warnings)
        params = {**post.params, **{f"network.{k}": v.detach().clone()
                                    for k, v in observation.state_dict().items()},
                  "cluster_probs": probs, "expected_weights": factors["weights"].mean(),
                  "elbo": _final_elbo(post, per_epoch)}
        diagnostics = {**post.diagnostics, "steps_per_epoch": per_epoch,
                       "time_per_epoch": elapsed / max(1, post.diagnostics["num_steps"] / per_epoch),
                       "occupied_clusters": int(probs.argmax(-1).unique().numel()), **activity}
        attrs = {**post.attrs, "likelihood": data.likelihood, "num_features": int(data.o.shape[1])}
        return dataclasses.replace(post, samples=_site_names(post.samples), params=params,
                                   diagnostics=diagnostics, attrs=attrs, model=self, data=data)

    # --------------------------------------------------------------- results
    def _local(self, factors: dict, observation, o: torch.Tensor) -> LocalPosterior:
        """The local factors ``q(z)``, ``q(x)`` of observations ``o`` without links."""
        with torch.no_grad():
            h, lam = observation.potential(o)
            return run_vmp(h, lam, global_means(factors), None)

    def _probabilities(self, factors: dict, observation, o: torch.Tensor) -> torch.Tensor:
        return self._local(factors, observation, o).probs

    def _observation(self, posterior: Posterior) -> NetworkObservation:
        if not isinstance(posterior, Posterior):
            raise TypeError(f"posterior must be a Posterior from BayesSCDC.fit, got "
                            f"{type(posterior).__name__}")
        state = {k[len("network."):]: v for k, v in posterior.params.items()
                 if k.startswith("network.")}
        width, likelihood = posterior.attrs.get("num_features"), posterior.attrs.get("likelihood")
        if not state or width is None or likelihood is None:
            raise ValueError("posterior must come from BayesSCDC.fit: its params hold no "
                             "network weights ('network.*') or its attrs no 'num_features' "
                             "and 'likelihood'")
        weight = next(iter(state.values()))
        observation = self.networks(int(width), likelihood, None, dtype=weight.dtype,
                                    device=weight.device)
        observation.load_state_dict(state)
        return observation

    def _factors(self, posterior: Posterior) -> dict:
        """The fitted factors: ``params["factors"]``, or, for a fit read back by
        ``Posterior.load``, rebuilt from their natural parameters ``eta.*``."""
        if "factors" in posterior.params:
            return posterior.params["factors"]
        params = posterior.params
        alpha = params.get("eta.alpha")
        num_workers = int(alpha.shape[0]) if isinstance(alpha, torch.Tensor) else 0
        first = params.get("eta.weights")
        if not isinstance(first, torch.Tensor):
            raise ValueError("posterior must come from BayesSCDC.fit: its params hold neither "
                             "'factors' nor the natural parameters 'eta.*'")
        factors = {}
        for name, prior in self.priors(num_workers, dtype=first.dtype, device=first.device).items():
            template = prior.natural_params()
            if isinstance(template, torch.Tensor):
                tensors = [params[f"eta.{name}"]]
            else:
                tensors = [params[f"eta.{name}.{field}"] for field in type(template)._fields]
            factors[name] = type(prior).from_natural(like(template, tensors))
        return factors

    def cluster_probabilities(self, posterior: Posterior, o) -> torch.Tensor:
        """``(N, K)`` :math:`q^*(z)` for observations ``o``: message passing on the fitted
        recognition network's potentials at the fitted globals, without links (as the paper
        predicts). ``posterior`` is a fit of this model, also one read back by
        ``Posterior.load``."""
        observation = self._observation(posterior)
        width = int(posterior.attrs["num_features"])
        weight = next(observation.parameters())
        o = as_float_tensor(o, "o", ndim=2, dtype=weight.dtype, device=weight.device)
        if o.shape[1] != width:
            raise ValueError(f"o must have {width} columns, as the fitted data, got {o.shape[1]}")
        return self._probabilities(self._factors(posterior), observation, o)

    def predict_proba(self, posterior: Posterior, o) -> torch.Tensor:
        """``(N, K)`` cluster probabilities of observations ``o`` (:meth:`cluster_probabilities`)."""
        return self.cluster_probabilities(posterior, o)

    def predict(self, posterior: Posterior, o) -> torch.Tensor:
        """``(N,)`` long: each observation's most probable cluster."""
        return self.cluster_probabilities(posterior, o).argmax(-1)

    def site_coords(self, data) -> dict:
        """Labels of the ``worker`` axis of ``alpha`` and ``beta`` in ArviZ groups: the users'
        worker ids (:attr:`SCDCData.workers <pyromodels.scdc.data.SCDCData>`)."""
        return id_coords(workers=data.workers) if isinstance(data, SCDCData) else {}

    def worker_table(self, posterior: Posterior) -> pd.DataFrame:
        """Per worker: the posterior means ``alpha`` and ``beta`` and ``weight`` = logit alpha +
        logit beta at those means (Fig. 3c), indexed by worker id."""
        factors = self._factors(posterior)
        if "alpha" not in factors:
            raise ValueError("this fit had no links, so it has no worker parameters")
        alpha = factors["alpha"].mean().detach().cpu()
        beta = factors["beta"].mean().detach().cpu()
        return pd.DataFrame({"alpha": alpha.numpy(), "beta": beta.numpy(),
                             "weight": worker_weights(alpha, beta).numpy()},
                            index=_workers(posterior, len(alpha)))


#: the posterior's site of each draw of the fitted factors (the observed sub-model's names)
SITE_NAMES = {"weights": "weights", "components.mean": "locs", "components.precision": "precisions",
              "alpha": "alpha", "beta": "beta"}


def prior_variance(factors: dict) -> torch.Tensor:
    r"""``(d,)`` the variance of each latent unit under the fitted prior mixture, at the
    expected weights :math:`E[\pi]`, the means :math:`E[\Lambda_k]^{-1}E[\Lambda_k\mu_k]`
    and the covariances :math:`E[\Lambda_k]^{-1}` (the plug-in values message passing
    reads)."""
    g = global_means(factors)
    covariance = torch.linalg.inv(g.precision)
    locs = (covariance @ g.precision_mean.unsqueeze(-1)).squeeze(-1)
    return mixture_variance(factors["weights"].mean(), locs,
                            covariance.diagonal(dim1=-2, dim2=-1))


def _site_names(samples: dict) -> dict:
    """The engine's draws under the model's site names (:data:`SITE_NAMES`)."""
    return {SITE_NAMES.get(k, k): v for k, v in samples.items()}


def _workers(posterior: Posterior, num_workers: int) -> pd.Index:
    """The fit's worker ids (``0 .. M - 1`` for a fit read back without its data)."""
    data = posterior.data
    return data.workers if isinstance(data, SCDCData) else pd.RangeIndex(num_workers)


def _final_elbo(post: Posterior, per_epoch: int) -> torch.Tensor:
    """The ELBO estimate of the fit's last epoch: the mean of its steps' objectives (those of
    a last epoch a callback cut short, if it did)."""
    history = post.diagnostics["epoch_objectives"]
    partial = post.diagnostics["num_steps"] - len(history) * per_epoch
    if partial > 0 or not history:
        return -post.losses[-max(partial, 1):].mean()
    return torch.tensor(history[-1], dtype=torch.float64)
