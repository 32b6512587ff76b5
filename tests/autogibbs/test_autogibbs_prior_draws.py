"""A program with a Wishart prior: its prior draws (the plan's first trace, each chain's
start) show no "Singular sample detected." notice, which torch gives for valid draws."""

import warnings

import pyro
import pyro.distributions as dist
import torch

from pyromodels.autogibbs import fit_gibbs
from pyromodels.core import GibbsBlock, GibbsSweep, run_gibbs
from pyromodels.core.bound import quiet_prior_draws

F64 = torch.float64


def wishart_model(x):
    prec = pyro.sample("prec", dist.Wishart(torch.tensor(4.0, dtype=F64),
                                            torch.eye(2, dtype=F64)))
    mu = pyro.sample("mu", dist.MultivariateNormal(torch.zeros(2, dtype=F64),
                                                   precision_matrix=0.1 * prec))
    with pyro.plate("n", x.shape[0]):
        pyro.sample("x", dist.MultivariateNormal(mu, precision_matrix=prec), obs=x)


def _notices(run) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if "Singular sample" in str(w.message)]


def test_torch_gives_the_notice_for_valid_draws_and_the_fit_does_not():
    x = torch.randn(40, 2, generator=torch.Generator().manual_seed(0), dtype=F64)
    torch.manual_seed(0)
    draws = []
    law = dist.Wishart(torch.tensor(4.0, dtype=F64), torch.eye(2, dtype=F64))
    assert _notices(lambda: draws.append(law.sample((50,))))
    assert bool((torch.linalg.eigvalsh(draws[0]) > 0).all())  # valid draws...
    assert _notices(lambda: wishart_model(x))  # ...and torch's notice for them
    assert not _notices(lambda: fit_gibbs(wishart_model, x, num_samples=4, warmup=2,
                                          num_chains=1, seed=0, progress=False,
                                          diagnostic_warnings=False))


def test_the_notice_is_silenced_only_inside_the_block():
    x = torch.zeros(3, 2, dtype=F64)

    def quiet():
        with quiet_prior_draws():
            wishart_model(x)

    assert not _notices(quiet)
    assert _notices(lambda: wishart_model(x))


def test_a_hand_written_gibbs_run_starts_without_the_notice():
    x = torch.randn(30, 2, generator=torch.Generator().manual_seed(1), dtype=F64)

    def keep(state, data, generator):  # a block that leaves the state as it is
        return {"prec": state["prec"], "mu": state["mu"]}

    sweep = GibbsSweep([GibbsBlock("both", ("prec", "mu"), keep)])
    assert not _notices(lambda: run_gibbs(wishart_model, sweep, x, num_samples=2,
                                          num_warmup=0, num_chains=1, seed=0, progress=False,
                                          diagnostic_warnings=False))
