"""The result every engine returns."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["Posterior", "stack_chains", "make_attrs"]


@dataclass
class Posterior:
    """Draws, traces and diagnostics from one fit.

    Attributes:
        samples: site name -> tensor shaped ``(chain, draw, *site_shape)``. Discrete sites keep an
            integer dtype. Point estimates (EM, MAP) are stored as one chain of one draw.
        method: the engine that produced it: ``"em"``, ``"gibbs"``, ``"svi"`` or ``"nuts"``.
        sample_stats: per-draw statistics shaped ``(chain, draw)``: ``lp`` (log joint),
            ``acceptance_rate``, ``diverging`` where meaningful.
        losses: the optimisation trace: the negative ELBO per step for SVI, the objective per
            iteration for EM (shaped ``(restart, iter)`` padded with NaN, or ``(iter,)``).
        params: fitted parameters (SVI guide parameters, EM point estimates, responsibilities).
        diagnostics: engine diagnostics (convergence flags, divergences, acceptance rates).
        attrs: metadata: method, seed, versions, wall time, device.
        model: the model object that produced the fit (used by ``predict`` and conversions).
        data: the data the model was fitted to.
    """

    samples: dict[str, torch.Tensor]
    method: str
    sample_stats: dict[str, torch.Tensor] = field(default_factory=dict)
    losses: torch.Tensor | None = None
    params: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    model: Any = None
    data: Any = None

    def __post_init__(self):
        shapes = {k: tuple(v.shape[:2]) for k, v in self.samples.items()}
        for name, v in self.samples.items():
            if not isinstance(v, torch.Tensor) or v.dim() < 2:
                raise ValueError(
                    f"samples[{name!r}] must be a tensor shaped (chain, draw, ...), "
                    f"got {getattr(v, 'shape', type(v))}"
                )
        if len(set(shapes.values())) > 1:
            raise ValueError(f"all samples must share (chain, draw) sizes, got {shapes}")

    @property
    def num_chains(self) -> int:
        """Number of chains (1 for SVI, EM and MAP)."""
        return next(iter(self.samples.values())).shape[0] if self.samples else 0

    @property
    def num_draws(self) -> int:
        """Number of draws per chain."""
        return next(iter(self.samples.values())).shape[1] if self.samples else 0

    def __getitem__(self, site: str) -> torch.Tensor:
        return self.samples[site]

    def mean(self, site: str) -> torch.Tensor:
        """Posterior mean of ``site`` over chains and draws (integers are averaged as floats)."""
        v = self.samples[site]
        return v.double().mean(dim=(0, 1)) if not v.is_floating_point() else v.mean(dim=(0, 1))

    def flat(self, site: str) -> torch.Tensor:
        """``site``'s draws with chains and draws merged: ``(chain * draw, *site_shape)``."""
        v = self.samples[site]
        return v.reshape((-1,) + tuple(v.shape[2:]))

    def to_inference_data(self, log_likelihood: bool = True, coords=None, dims=None):
        """Convert to ``arviz.InferenceData`` (see :func:`pyromodels.diagnostics.to_inference_data`)."""
        from ..diagnostics import to_inference_data

        return to_inference_data(self, log_likelihood=log_likelihood, coords=coords, dims=dims)

    def summary(self, var_names=None, **kwargs):
        """ArviZ summary table (mean, sd, HDI, ESS, R-hat) as a pandas DataFrame."""
        from ..diagnostics import summary

        return summary(self, var_names=var_names, **kwargs)

    def sample_discrete(self, temperature: int = 1, seed: int | None = None) -> Posterior:
        """Draw the model's enumerated discrete sites given each continuous draw.

        Returns a new ``Posterior`` with the discrete sites added (see
        :func:`pyromodels.core.enumeration.sample_discrete`).
        """
        from .enumeration import sample_discrete

        if self.model is None or self.data is None:
            raise ValueError("sample_discrete needs the posterior's model and data")
        extra = sample_discrete(
            self.model, self.data, self.samples, temperature=temperature, seed=seed
        )
        samples = {**self.samples, **extra}
        return Posterior(
            samples=samples,
            method=self.method,
            sample_stats=self.sample_stats,
            losses=self.losses,
            params=self.params,
            diagnostics=self.diagnostics,
            attrs=self.attrs,
            model=self.model,
            data=self.data,
        )

    def predict(self, new_data, **kwargs):
        """The model's posterior predictions for ``new_data`` (model-specific, see its docs)."""
        if self.model is None or not hasattr(self.model, "predict"):
            raise NotImplementedError("this posterior's model does not define predict()")
        return self.model.predict(self, new_data, **kwargs)

    def __repr__(self) -> str:
        sites = ", ".join(f"{k}{tuple(v.shape[2:])}" for k, v in self.samples.items())
        return (
            f"Posterior(method={self.method!r}, chains={self.num_chains}, "
            f"draws={self.num_draws}, sites=[{sites}])"
        )


def stack_chains(per_chain: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Stack a list of per-chain ``{site: (draw, ...)}`` dicts into ``{site: (chain, draw, ...)}``."""
    if not per_chain:
        return {}
    keys = per_chain[0].keys()
    return {k: torch.stack([c[k] for c in per_chain]) for k in keys}


def make_attrs(method: str, seed: int, device, start: float, **extra) -> dict:
    """The ``attrs`` every engine records: method, seed, device, wall time and versions."""
    import pyro

    return {
        "method": method,
        "seed": seed,
        "device": str(device),
        "wall_time_s": time.perf_counter() - start,
        "inference_library": "pyromodels",
        "pyro_version": str(pyro.__version__),
        "torch_version": str(torch.__version__),
        **extra,
    }
