r"""A variational autoencoder with a pluggable prior on the latent features, fitted by the ELBO
or the IWAE bound (the VAE and IWAE baselines of the LTVAE paper, Table 1, §4.2).

The story, for each data point :math:`x_n \in \mathbb{R}^D` (or :math:`\{0, 1\}^D`):

.. math::

    z_n \sim p(z), \qquad x_n \mid z_n \sim p_\theta(x_n \mid z_n),

with :math:`z_n \in \mathbb{R}^J`; the decoder :math:`p_\theta` is an
:class:`~pyromodels.nn.ObservationDecoder`: Bernoulli logits for binary data, a Gaussian mean
and log variance for real data. The guide is amortised, :math:`q_\phi(z_n \mid x_n) =
N(\mu_\phi(x_n), \mathrm{diag}\,\sigma^2_\phi(x_n))` (:class:`~pyromodels.nn.GaussianEncoder`).

The prior :math:`p(z)` is pluggable:

* ``None``: :math:`N(0, I)`, the plain VAE and IWAE;
* a ``torch.distributions.Distribution`` of event shape ``(J,)`` and batch shape ``()``: the
  site ``z`` is drawn from it;
* a callable ``log_density(z) -> (...)`` taking ``(..., J)`` values: the log density of a
  prior such as the LTVAE's latent tree model, :math:`\log p_S(z)` by message passing. The
  site ``z`` is then a masked :math:`N(0, I)` (its log density counts zero; its draws, used only
  where the program runs without the guide, are placeholders) and ``pyro.factor("z_prior",
  log_density(z))`` adds the prior. Whatever parameters the callable holds are not Pyro
  params, so SVI leaves them alone (the LTVAE updates them by EM).

Sample sites, inside the plate ``"data"`` of size ``N`` (subsampled to ``B`` in a fit): ``z``
(real, ``(B, J)``), with a callable prior the factor ``z_prior`` (``(B,)``), and ``x``
(observed, ``(B, D)``). Params: the networks' weights, ``encoder.*`` and ``decoder.*``.

:func:`vae_model` and :func:`vae_guide` are the program and the guide as plain functions of the
networks, which :class:`VAE` runs with the networks' weights in the param store during a fit and
with a fit's weights afterwards (:meth:`VAE.importance_log_likelihood`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import pyro
import pyro.distributions as dist
import torch
from pyro.infer import Trace_ELBO

from ..checks import as_float_tensor, check_in, check_int
from ..core.latent_activity import check_latent_activity
from ..core.model import Model
from ..core.posterior import Posterior
from ..nn.amortized import GaussianEncoder, ObservationDecoder, observation_distribution, resolve_likelihood
from ..nn.autoencoder import StackedAutoencoder
from ..nn.mlp import check_dims
from ..nn.param_network import ParamNetwork
from ..nn.warm_start import init_from_autoencoder
from .bounds import ImportanceEstimate, IWAEBound, importance_log_likelihood

__all__ = ["VAE", "VAEData", "vae_model", "vae_guide", "latent_site", "check_prior", "OBJECTIVES"]

#: the training objectives of :meth:`VAE.fit`
OBJECTIVES = ("elbo", "iwae")
#: what a posterior-collapse warning of :meth:`VAE.fit` and the LTVAE's fit suggests
COLLAPSE_REMEDIES = ("Lower the learning rate lr, or start the networks from a pretrained "
                     "autoencoder (autoencoder=).")


def check_prior(prior, latent_dim: int):
    """``prior`` if it is ``None``, a distribution of event shape ``(latent_dim,)`` and batch
    shape ``()``, or a callable log density; else a ``TypeError``/``ValueError``."""
    if prior is None:
        return None
    if isinstance(prior, torch.distributions.Distribution):
        if tuple(prior.event_shape) != (latent_dim,) or tuple(prior.batch_shape) != ():
            raise ValueError(f"prior must have event shape ({latent_dim},) and batch shape (), got "
                             f"event shape {tuple(prior.event_shape)} and batch shape "
                             f"{tuple(prior.batch_shape)}")
        return prior
    if callable(prior):
        return prior
    raise TypeError(f"prior must be None, a torch Distribution or a callable log density of z, "
                    f"got {type(prior).__name__}")


def latent_site(name: str, prior, latent_dim: int, like: torch.Tensor) -> torch.Tensor:
    """Sample the latent site ``name`` of width ``latent_dim`` from ``prior`` (module
    docstring), inside the caller's plates; ``like`` gives the dtype and device of
    :math:`N(0, I)`."""
    if isinstance(prior, torch.distributions.Distribution):
        return pyro.sample(name, prior)
    standard = dist.Normal(like.new_zeros(latent_dim), like.new_ones(latent_dim)).to_event(1)
    if prior is None:
        return pyro.sample(name, standard)
    z = pyro.sample(name, standard.mask(False))
    log_p = prior(z)
    if not isinstance(log_p, torch.Tensor) or tuple(log_p.shape) != tuple(z.shape[:-1]):
        raise ValueError(f"the prior's log density must return a tensor of shape "
                         f"{tuple(z.shape[:-1])} for z of shape {tuple(z.shape)}, got "
                         f"{tuple(getattr(log_p, 'shape', ())) or type(log_p).__name__}")
    pyro.factor(f"{name}_prior", log_p)
    return z


def vae_model(x: torch.Tensor, decoder: Callable, likelihood: str, prior, latent_dim: int,
              batch_size: int | None = None) -> None:
    """The program: ``z ~ prior``, ``x ~ decoder(z)`` over the rows of ``x`` (``(N, D)``), in
    the plate ``"data"`` subsampled to ``batch_size`` rows (``None``: all)."""
    with pyro.plate("data", x.shape[0], subsample_size=batch_size) as idx:
        z = latent_site("z", prior, latent_dim, x)
        pyro.sample("x", observation_distribution(likelihood, decoder(z)), obs=x[idx])


def vae_guide(x: torch.Tensor, encoder: Callable, batch_size: int | None = None) -> None:
    """The guide :math:`q(z \\mid x) = N(\\mu(x), \\mathrm{diag}\\,\\sigma^2(x))` over the same
    plate; ``encoder(x_rows)`` returns the mean and the log scale."""
    with pyro.plate("data", x.shape[0], subsample_size=batch_size) as idx:
        loc, log_scale = encoder(x[idx])
        pyro.sample("z", dist.Normal(loc, log_scale.exp()).to_event(1))


@dataclasses.dataclass(frozen=True, eq=False)
class VAEData:
    """Prepared data of a VAE fit.

    Attributes:
        x: ``(N, D)`` finite floating observations (0 or 1 each with a Bernoulli decoder).
        likelihood: ``"bernoulli"`` or ``"normal"``.
        batch_size: ``B``, the rows of one step (``N``: the full data).
        autoencoder: a pretrained :class:`~pyromodels.nn.StackedAutoencoder` whose weights
            start the networks (:func:`~pyromodels.nn.init_from_autoencoder`), or ``None``.
    """

    x: torch.Tensor
    likelihood: str
    batch_size: int
    autoencoder: StackedAutoencoder | None = None

    @property
    def num_items(self) -> int:
        """``N``."""
        return int(self.x.shape[0])

    @property
    def steps_per_epoch(self) -> int:
        """``ceil(N / B)``."""
        return math.ceil(self.num_items / self.batch_size)

    def to(self, device) -> VAEData:
        """A copy with ``x`` on ``device``."""
        return dataclasses.replace(self, x=self.x.to(device))


class VAE(Model):
    """A VAE with a pluggable prior (the module docstring has the model), fitted by SVI on the
    ELBO (the VAE) or the IWAE bound (the IWAE).

    Args:
        latent_dim: ``J``, the dimension of ``z`` (paper: 10 for clustering, 20 for Table 1).
        hidden: hidden widths of the encoder (paper: ``(500, 500, 2000)``; the authors'
            likelihood runs ``(400, 400)``).
        decoder_hidden: hidden widths of the decoder (default: ``hidden`` reversed).
        likelihood: ``"auto"`` (Bernoulli when every value is 0 or 1, else Normal),
            ``"bernoulli"`` or ``"normal"``.
        prior: ``None`` (:math:`N(0, I)`), a distribution of event shape ``(J,)`` or a callable
            log density of ``z`` (module docstring).
        activation: of the hidden layers.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x = torch.randn(40, 3, generator=g)
        >>> vae = VAE(latent_dim=2, hidden=(8,))
        >>> post = vae.fit(x, num_epochs=2, batch_size=20, seed=0, progress=False)
        >>> vae.encode(post, x)[0].shape
        torch.Size([40, 2])
        >>> round(vae.importance_log_likelihood(post, x, k=10).mean) < 0
        True
    """

    engines = ("svi",)
    max_plate_nesting = 1

    def __init__(self, latent_dim: int, hidden: Sequence[int] = (500, 500, 2000),
                 decoder_hidden: Sequence[int] | None = None, likelihood: str = "auto",
                 prior=None, activation: str = "relu"):
        self.latent_dim = check_int(latent_dim, "latent_dim", minimum=1)
        self.hidden = check_dims(hidden, "hidden")
        self.decoder_hidden = (tuple(reversed(self.hidden)) if decoder_hidden is None
                               else check_dims(decoder_hidden, "decoder_hidden"))
        self.likelihood = check_in(likelihood, "likelihood", ("auto", "bernoulli", "normal"))
        self.prior = check_prior(prior, self.latent_dim)
        self.activation = check_in(activation, "activation", ("relu", "tanh", "elu", "leaky_relu"))
        self._networks: dict = {}

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_networks"] = {}  # rebuilt on use (they hold only the architecture)
        return state

    # ------------------------------------------------------------------ data
    def prepare(self, data, device=None, *, batch_size: int | None = None,
                dtype: torch.dtype | None = None, autoencoder: StackedAutoencoder | None = None
                ) -> VAEData:
        """``data`` as :class:`VAEData`: a ``VAEData`` is moved to ``device``; an array-like
        ``(N, D)`` is checked (finite, binary for a Bernoulli decoder) and takes
        ``batch_size`` rows per step (``None``: all ``N``), the networks starting from
        ``autoencoder``'s weights when given."""
        if isinstance(data, VAEData):
            return data if device is None or data.x.device == torch.device(device) else data.to(device)
        x = as_float_tensor(data, "x", ndim=2, dtype=dtype, device=device)
        n = x.shape[0]
        size = n if batch_size is None else min(check_int(batch_size, "batch_size", minimum=1), n)
        if autoencoder is not None:
            self._check_autoencoder(autoencoder, x.shape[1])
        return VAEData(x, resolve_likelihood(self.likelihood, x, "x"), size, autoencoder)

    def _check_autoencoder(self, autoencoder, width: int) -> None:
        if not isinstance(autoencoder, StackedAutoencoder):
            raise TypeError(f"autoencoder must be a StackedAutoencoder, got "
                            f"{type(autoencoder).__name__}")
        wanted = (width, *self.hidden, self.latent_dim)
        if tuple(autoencoder.dims) != wanted or self.decoder_hidden != tuple(reversed(self.hidden)):
            raise ValueError(f"autoencoder must have the widths {wanted} of this VAE's encoder "
                             f"(and a mirrored decoder), got {tuple(autoencoder.dims)}")
        if self.activation != "relu":
            raise ValueError(f"an autoencoder start needs activation='relu' (the autoencoder's), "
                             f"got {self.activation!r}")

    # -------------------------------------------------------------- networks
    def networks(self, width: int, likelihood: str,
                 autoencoder: StackedAutoencoder | None = None) -> dict[str, ParamNetwork]:
        """The encoder and the decoder for data of ``width`` columns and ``likelihood``, their
        weights in the param store (:class:`~pyromodels.nn.param_network.ParamNetwork`);
        weights missing there start from ``autoencoder``'s when given, the rest (the
        encoder's log-scale head, a Gaussian decoder's log-variance head) started at zero."""
        key = (int(width), likelihood, None if autoencoder is None else id(autoencoder))
        if key not in self._networks:
            J, act = self.latent_dim, self.activation

            def encoder(g, dt, dev):
                net = GaussianEncoder(width, J, self.hidden, act, g, dt, dev)
                if autoencoder is not None:
                    init_from_autoencoder(autoencoder, encoder=net)
                return net

            def decoder(g, dt, dev):
                net = ObservationDecoder(J, width, likelihood, self.decoder_hidden, act, g, dt, dev)
                if autoencoder is not None:
                    init_from_autoencoder(autoencoder, decoder=net)
                return net

            self._networks[key] = {"encoder": ParamNetwork("encoder", encoder),
                                   "decoder": ParamNetwork("decoder", decoder)}
        return self._networks[key]

    # -------------------------------------------------------------- program
    def model(self, data):
        """The program over a minibatch of rows (module docstring)."""
        data = self.prepare(data)
        decoder = self.networks(data.x.shape[1], data.likelihood, data.autoencoder)["decoder"]
        vae_model(data.x, decoder, data.likelihood, self.prior, self.latent_dim, data.batch_size)

    def guide(self, data):
        """The amortised guide over the same minibatch."""
        data = self.prepare(data)
        vae_guide(data.x, self.networks(data.x.shape[1], data.likelihood, data.autoencoder)["encoder"],
                  data.batch_size)

    # ------------------------------------------------------------------ fit
    def fit(self, x, *, method: str = "svi", objective: str = "elbo", num_particles: int = 1,
            num_epochs: int = 20, batch_size: int = 128, lr: float = 1e-3, optim=None,
            autoencoder: StackedAutoencoder | None = None, seed: int | None = None,
            progress: bool = True, callbacks=None, device=None,
            dtype: torch.dtype | None = None, num_threads: int | None = None,
            diagnostic_warnings: bool = True) -> Posterior:
        """Fit the networks by SVI (:func:`~pyromodels.core.run_svi`) on minibatches.

        Args:
            x: ``(N, D)`` observations.
            method: ``"svi"``, the only engine.
            objective: ``"elbo"`` (``Trace_ELBO``, the VAE) or ``"iwae"``
                (:class:`~pyromodels.ltvae.bounds.IWAEBound`, the IWAE).
            num_particles: draws per point: averaged in the ELBO, inside the log-mean of the
                IWAE bound (its ``k``; the authors' code trains the IWAE with 50).
            num_epochs: passes over the data, each ``ceil(N / batch_size)`` steps on
                minibatches drawn uniformly without replacement.
            batch_size: rows per step (paper: 128).
            lr: Adam's learning rate (paper: 1e-3), unless ``optim`` is given.
            optim: a ``pyro.optim`` optimiser instead of ``Adam({"lr": lr})``.
            autoencoder: a pretrained :class:`~pyromodels.nn.StackedAutoencoder` of widths
                ``(D, *hidden, latent_dim)`` (ReLU, decoder mirrored) whose weights start the
                encoder's mean head and hidden layers and the decoder's (the paper initialises
                every network so, from DEC-style pretraining,
                :func:`~pyromodels.nn.pretrain_autoencoder`); ``None``: random weights.
            seed, progress, callbacks, device, num_threads: as for
                :func:`~pyromodels.core.run_svi`.
            dtype: of the data and the networks (default: ``x``'s floating dtype).
            diagnostic_warnings: ``False`` silences the
                :class:`~pyromodels.core.PosteriorCollapseWarning` of a fit whose encoder
                means of ``x`` leave no latent unit active (Burda et al.'s rule, threshold
                0.01 on the scale of an :math:`N(0, I)` prior whatever the prior;
                :mod:`pyromodels.core.latent_activity`); the count is recorded either way.

        Returns:
            A :class:`~pyromodels.core.Posterior` (``method="svi"``) with no draws: its
            ``params`` hold the networks' weights, ``losses`` the loss per step,
            ``attrs["objective"]`` the objective and ``diagnostics["active_units"]`` (of
            ``diagnostics["latent_dim"]``) the units along which the encoder means of ``x``
            vary (:func:`~pyromodels.core.active_units`).
        """
        check_in(method, "method", self.engines)
        check_in(objective, "objective", OBJECTIVES)
        num_particles = check_int(num_particles, "num_particles", minimum=1)
        num_epochs = check_int(num_epochs, "num_epochs", minimum=1)
        data = self.prepare(x, device, batch_size=batch_size, dtype=dtype, autoencoder=autoencoder)
        elbo = (IWAEBound(num_particles, max_plate_nesting=1) if objective == "iwae"
                else Trace_ELBO(num_particles=num_particles, max_plate_nesting=1,
                                vectorize_particles=num_particles > 1))
        from ..core.svi import run_svi

        post = run_svi(self, data, num_steps=num_epochs * data.steps_per_epoch,
                       optim=optim if optim is not None else pyro.optim.Adam({"lr": lr}), lr=lr,
                       elbo=elbo, num_particles=num_particles, num_samples=1, seed=seed,
                       progress=progress, callbacks=callbacks, device=device,
                       num_threads=num_threads)
        attrs = {**post.attrs, "objective": objective, "num_particles": num_particles}
        encoder, _ = self._bound_networks(post.params, data.x.shape[1], data.likelihood)
        with torch.no_grad():
            means = torch.cat([encoder(rows)[0] for rows in data.x.split(1024)])
        activity = check_latent_activity(means, fit="VAE.fit", remedies=COLLAPSE_REMEDIES,
                                         diagnostic_warnings=diagnostic_warnings)
        diagnostics = {**post.diagnostics, "steps_per_epoch": data.steps_per_epoch, **activity}
        return dataclasses.replace(post, samples={}, attrs=attrs, diagnostics=diagnostics)

    # --------------------------------------------------------------- results
    def _fitted(self, fitted, x, name: str = "x"):
        """The fit's weights and ``x`` checked against them: ``(params, x, likelihood)``."""
        params = fitted.params if isinstance(fitted, Posterior) else fitted
        if not isinstance(params, dict):
            raise TypeError(f"posterior must be a Posterior from VAE.fit or its params dict, got "
                            f"{type(fitted).__name__}")
        probe = self.networks(1, "normal")["encoder"]
        first = next(f"encoder.{n}" for n, p in probe.skeleton.named_parameters() if p.dim() == 2)
        weight = params.get(first)
        if not isinstance(weight, torch.Tensor):
            raise ValueError(f"posterior must come from VAE.fit: its params hold no encoder "
                             f"weights ({first!r})")
        width = int(weight.shape[-1])
        x = as_float_tensor(x, name, ndim=2, dtype=weight.dtype, device=weight.device)
        if x.shape[1] != width:
            raise ValueError(f"{name} must have {width} columns, as the fitted data, got {x.shape[1]}")
        last = list(self.networks(1, "normal")["decoder"].skeleton.state_dict())[-1]
        outputs = params.get(f"decoder.{last}")
        if not isinstance(outputs, torch.Tensor):
            raise ValueError(f"posterior's weights do not fit this VAE (hidden={self.hidden}, "
                             f"decoder_hidden={self.decoder_hidden}): its params hold no "
                             f"'decoder.{last}'")
        # a Bernoulli decoder has D outputs, a Normal one a mean and a log variance (2D)
        likelihood = "bernoulli" if int(outputs.shape[0]) == width else "normal"
        if likelihood == "bernoulli":
            resolve_likelihood(likelihood, x, name)
        return params, x, likelihood

    def _bound_networks(self, params: dict, width: int, likelihood: str):
        nets = self.networks(width, likelihood)
        enc, dec = nets["encoder"], nets["decoder"]
        try:
            enc_params, dec_params = enc.stored(params), dec.stored(params)
        except KeyError as err:
            raise ValueError(f"posterior's weights do not fit this VAE: {err.args[0]}") from None
        for net, stored in ((enc, enc_params), (dec, dec_params)):
            for key, p in net.skeleton.named_parameters():
                if tuple(stored[key].shape) != tuple(p.shape):
                    raise ValueError(f"posterior's weights do not fit this VAE (latent_dim="
                                     f"{self.latent_dim}, hidden={self.hidden}): "
                                     f"'{net.name}.{key}' has shape {tuple(stored[key].shape)}, "
                                     f"the network's is {tuple(p.shape)}")
        return (lambda o: enc(o, params=enc_params)), (lambda z: dec(z, params=dec_params))

    def encode(self, posterior, x) -> tuple[torch.Tensor, torch.Tensor]:
        """The fitted encoder's mean and standard deviation of :math:`q(z \\mid x)`, each
        ``(N, J)``, for rows ``x``; ``posterior`` is a fit of this model or its ``params``."""
        params, x, likelihood = self._fitted(posterior, x)
        encoder, _ = self._bound_networks(params, x.shape[1], likelihood)
        with torch.no_grad():
            loc, log_scale = encoder(x)
        return loc, log_scale.exp()

    def importance_log_likelihood(self, posterior, x, *, k: int = 5000, batch_size: int = 500,
                                  row_batch_size: int | None = None, seed: int = 0
                                  ) -> ImportanceEstimate:
        """The importance-sampled log-likelihood :math:`\\mathcal{L}_k` of each row of ``x``
        under the fitted model (the LTVAE paper's Table 1 measure, ``k = 5000``); see
        :func:`~pyromodels.ltvae.bounds.importance_log_likelihood` for the arguments.

        Args:
            posterior: a fit of this model, or its ``params`` (the networks' weights).
            x: ``(N, D)`` rows, finite, of the fitted data's width (binary for a Bernoulli
                decoder).
        """
        params, x, likelihood = self._fitted(posterior, x)
        encoder, decoder = self._bound_networks(params, x.shape[1], likelihood)

        def model(rows):
            vae_model(rows, decoder, likelihood, self.prior, self.latent_dim)

        def guide(rows):
            vae_guide(rows, encoder)

        return importance_log_likelihood(model, guide, x, k=k, batch_size=batch_size,
                                         row_batch_size=row_batch_size, seed=seed)
