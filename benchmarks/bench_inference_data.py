r"""Building an ``arviz.InferenceData`` from a Pyro program's trace (no peer).

Problem: eight schools, non-centred (``mu``, ``tau``, ``theta_tilde`` over the plate
``school`` of 8), with ``chains x draws`` draws (full: 4 x 1,000; quick: 2 x 50) made up from
a fixed seed (the timing does not depend on their values).

* ``core.inference_data_from_trace`` (seconds per call): :func:`pyromodels.core.
  inference_data_from_trace` with every group: posterior, pointwise log_likelihood,
  observed_data, constant_data, ``prior`` and ``prior_predictive`` (``prior=500`` draws) and
  posterior_predictive.
* ``core.posterior_to_inference_data`` (seconds per call): the same groups through
  :meth:`pyromodels.core.Posterior.to_inference_data` of a user's
  :class:`~pyromodels.core.Model` subclass that defines no hooks.

Check: the ``log_likelihood`` group against ``Normal(mu + tau * theta_tilde, sigma)
.log_prob(y)`` written out (to 1e-12).
"""

from __future__ import annotations

import pyro
import pyro.distributions as dist
import torch

from pyromodels.core import Model, Posterior, inference_data_from_trace

from .harness import Case, agreement

__all__ = ["cases", "eight_schools", "EightSchools"]

SEED = 20261128
PRIOR_DRAWS = 500
Y = torch.tensor([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0], dtype=torch.float64)
SIGMA = torch.tensor([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0], dtype=torch.float64)


def eight_schools(J, sigma, y=None):
    """The non-centred eight-schools program."""
    mu = pyro.sample("mu", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 5.0))
    tau = pyro.sample("tau", dist.HalfCauchy(torch.tensor(5.0, dtype=torch.float64)))
    with pyro.plate("school", J):
        theta_tilde = pyro.sample("theta_tilde", dist.Normal(torch.zeros((), dtype=torch.float64), 1.0))
        pyro.sample("obs", dist.Normal(mu + tau * theta_tilde, sigma), obs=y)


class EightSchools(Model):
    """The same program as a user's model with no hooks."""

    def model(self, data):
        eight_schools(8, SIGMA, data)


def _draws(chains: int, draws: int) -> dict:
    g = torch.Generator().manual_seed(SEED)
    return {"mu": 5 * torch.randn(chains, draws, generator=g, dtype=torch.float64),
            "tau": 3 * torch.rand(chains, draws, generator=g, dtype=torch.float64),
            "theta_tilde": torch.randn(chains, draws, 8, generator=g, dtype=torch.float64)}


def _check(samples):
    def check():
        idata = inference_data_from_trace(eight_schools, (8, SIGMA), {"y": Y}, samples,
                                          num_prior_draws=PRIOR_DRAWS, seed=0)
        loc = samples["mu"][..., None] + samples["tau"][..., None] * samples["theta_tilde"]
        expected = dist.Normal(loc, SIGMA).log_prob(Y)
        return {"log_likelihood": agreement(idata.log_likelihood["obs"].values, expected, 1e-12,
                                            "Normal.log_prob written out")}
    return check


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """Both cases at one size; CPU runs only (the conversion is host work)."""
    if device is not None and device.type != "cpu":
        return []
    chains, draws = (2, 50) if quick else (4, 1000)
    samples = _draws(chains, draws)
    params = {"model": "eight_schools", "chains": chains, "draws": draws, "prior": PRIOR_DRAWS}
    post = Posterior(samples=samples, method="nuts", model=EightSchools(), data=Y, attrs={"seed": 0})
    repeats = 2 if quick else 5
    return [
        Case("core.inference_data_from_trace", params,
             ours=lambda: inference_data_from_trace(eight_schools, (8, SIGMA), {"y": Y}, samples,
                                                    num_prior_draws=PRIOR_DRAWS, seed=0),
             check=_check(samples), repeats=repeats),
        Case("core.posterior_to_inference_data", params,
             ours=lambda: post.to_inference_data(num_prior_draws=PRIOR_DRAWS), repeats=repeats),
    ]
