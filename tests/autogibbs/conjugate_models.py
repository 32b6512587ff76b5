"""Small float64 Pyro programs, one per conjugate pair the automatic Gibbs plan reads off the
log density, and programs it must refuse with a clear error."""

import pyro
import pyro.distributions as dist
import torch

from .models import f64

COV = f64([[1.0, 0.3], [0.3, 0.5]])         # a known likelihood covariance
PRIOR_COV = f64([[4.0, -1.0], [-1.0, 2.0]])  # a prior covariance
PRIOR_LOC = f64([0.5, -1.0])


def beta_geometric(y):
    p = pyro.sample("p", dist.Beta(f64(2.0), f64(3.0)))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Geometric(p), obs=y)


def dirichlet_multinomial(y):
    theta = pyro.sample("theta", dist.Dirichlet(f64([1.0, 2.0, 0.5])))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Multinomial(5, theta), obs=y)


def gamma_exponential(y):
    rate = pyro.sample("rate", dist.Gamma(f64(2.0), f64(0.5)))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Exponential(rate), obs=y)


def exponential_poisson(c):
    """An Exponential prior (a Gamma of shape 1) on a Poisson rate."""
    lam = pyro.sample("lam", dist.Exponential(f64(0.5)))
    with pyro.plate("obs", len(c)):
        pyro.sample("c", dist.Poisson(lam), obs=c)


def gamma_gamma(y):
    """A Gamma rate of Gamma children of known shape 1.7."""
    rate = pyro.sample("rate", dist.Gamma(f64(2.0), f64(0.5)))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Gamma(f64(1.7), rate), obs=y)


def normal_precision(y):
    """A Gamma precision of Normal children of known mean 0.3."""
    tau = pyro.sample("tau", dist.Gamma(f64(2.0), f64(0.5)))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Normal(f64(0.3), tau.rsqrt()), obs=y)


def normal_variance(y):
    """An InverseGamma variance of Normal children of known mean 0.3."""
    v = pyro.sample("v", dist.InverseGamma(f64(3.0), f64(2.0)))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Normal(f64(0.3), v.sqrt()), obs=y)


def normal_mean(y):
    mu = pyro.sample("mu", dist.Normal(f64(1.0), f64(3.0)))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Normal(mu, f64(0.7)), obs=y)


def mvn_mean(y):
    mu = pyro.sample("mu", dist.MultivariateNormal(PRIOR_LOC, PRIOR_COV))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.MultivariateNormal(mu, COV), obs=y)


def independent_means(y):
    """A vector of Normal means declared with ``to_event``, seen coordinate by coordinate."""
    mu = pyro.sample("mu", dist.Normal(f64(1.0), f64(3.0)).expand([y.shape[-1]]).to_event(1))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Normal(mu, f64(0.7)).to_event(1), obs=y)


def independent_precisions(y):
    tau = pyro.sample("tau", dist.Gamma(f64(2.0), f64(0.5)).expand([y.shape[-1]]).to_event(1))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Normal(f64(0.3), tau.rsqrt()).to_event(1), obs=y)


def wishart_precision(y):
    """A precision matrix with a Wishart prior, the MultivariateNormal's mean known."""
    lam = pyro.sample("lam", dist.Wishart(f64(4.0), covariance_matrix=PRIOR_COV))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.MultivariateNormal(PRIOR_LOC, precision_matrix=lam), obs=y)


def wishart_scaled_tril(y):
    """The likelihood reads ``2 * lam`` through the Cholesky factor of its inverse (as a
    mixture's component covariances are often written)."""
    lam = pyro.sample("lam", dist.Wishart(f64(3.5), scale_tril=torch.linalg.cholesky(PRIOR_COV)))
    tril = torch.linalg.cholesky(torch.linalg.inv(2.0 * lam))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.MultivariateNormal(PRIOR_LOC, scale_tril=tril), obs=y)


def wishart_as_covariance(y):
    """A Wishart matrix used as the covariance: its log conditional is linear in ``lam^-1``,
    not in ``lam``; not conjugate."""
    lam = pyro.sample("lam", dist.Wishart(f64(4.0), covariance_matrix=PRIOR_COV))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.MultivariateNormal(PRIOR_LOC, covariance_matrix=lam), obs=y)


def gathered_wishart(y, group, num_groups=2):
    """One precision matrix per group, each datum's picked by its group."""
    with pyro.plate("groups", num_groups):
        lam = pyro.sample("lam", dist.Wishart(f64(4.0), covariance_matrix=PRIOR_COV))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.MultivariateNormal(PRIOR_LOC, precision_matrix=lam[group]), obs=y)


def correlated_means(y):
    """Normal means declared with ``to_event`` under a correlated likelihood: each coordinate is
    conjugate given the others, but drawing all from those conditionals at once is wrong."""
    mu = pyro.sample("mu", dist.Normal(f64(0.0), f64(2.0)).expand([2]).to_event(1))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.MultivariateNormal(mu, COV), obs=y)


def mvn_mixture(x, num_components=3):
    """Component means of shape (K, D) in a plate, each datum's picked by its assignment."""
    w = pyro.sample("w", dist.Dirichlet(torch.ones(num_components, dtype=torch.float64)))
    with pyro.plate("components", num_components):
        locs = pyro.sample("locs", dist.MultivariateNormal(PRIOR_LOC, PRIOR_COV))
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Categorical(w))
        pyro.sample("x", dist.MultivariateNormal(locs[z], COV), obs=x)


def normal_gamma_mixture(x, num_components=2):
    """Each component's mean and precision, each datum's picked by its assignment."""
    w = pyro.sample("w", dist.Dirichlet(torch.ones(num_components, dtype=torch.float64)))
    with pyro.plate("components", num_components):
        locs = pyro.sample("locs", dist.Normal(f64(1.0), f64(3.0)))
        taus = pyro.sample("taus", dist.Gamma(f64(2.0), f64(0.5)))
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Categorical(w))
        pyro.sample("x", dist.Normal(locs[z], taus[z].rsqrt()), obs=x)


def gathered_beta(y, group, num_groups=3):
    """One success probability per group, each datum's picked by its (known) group."""
    with pyro.plate("groups", num_groups):
        p = pyro.sample("p", dist.Beta(f64(2.0), f64(3.0)))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Bernoulli(p[group]), obs=y)


def gathered_rates(c, group, num_groups=3):
    with pyro.plate("groups", num_groups):
        lam = pyro.sample("lam", dist.Gamma(f64(2.0), f64(0.5)))
    with pyro.plate("obs", len(c)):
        pyro.sample("c", dist.Poisson(lam[group]), obs=c)


def gathered_dirichlet(y, group, num_groups=2):
    """One row of category probabilities per group, each datum's picked by its group."""
    with pyro.plate("groups", num_groups):
        theta = pyro.sample("theta", dist.Dirichlet(f64([1.0, 2.0, 0.5])))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Categorical(theta[group]), obs=y)


def plated_binomial(k, n):
    """A Beta per column of ``k`` (shape (N, G)), its column's counts in a nested plate."""
    with pyro.plate("groups", k.shape[1], dim=-1):
        p = pyro.sample("p", dist.Beta(f64(2.0), f64(3.0)))
        with pyro.plate("obs", k.shape[0], dim=-2):
            pyro.sample("k", dist.Binomial(n, p), obs=k)


def plated_precision(y):
    """A Gamma precision per column of ``y`` (shape (N, G)), known mean 0.3."""
    with pyro.plate("groups", y.shape[1], dim=-1):
        tau = pyro.sample("tau", dist.Gamma(f64(2.0), f64(0.5)))
        with pyro.plate("obs", y.shape[0], dim=-2):
            pyro.sample("y", dist.Normal(f64(0.3), tau.rsqrt()), obs=y)


def affine_mean(y, a, b):
    """A Normal mean seen through ``a + b * theta`` with known, per-observation ``a`` and ``b``."""
    theta = pyro.sample("theta", dist.Normal(f64(1.0), f64(3.0)))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Normal(a + b * theta, f64(0.7)), obs=y)


def regression(y, x):
    """Bayesian linear regression: a MultivariateNormal weight vector seen through ``x @ beta``."""
    beta = pyro.sample("beta", dist.MultivariateNormal(PRIOR_LOC, PRIOR_COV))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Normal(x @ beta, f64(0.7)), obs=y)


def hierarchical(y, group, a, b, num_groups=3):
    """Group means ``theta_j ~ Normal(mu, tau^-1/2)`` seen through ``a + b * theta[group]``;
    ``mu`` and the precision ``tau`` are conjugate given the group means."""
    mu = pyro.sample("mu", dist.Normal(f64(0.0), f64(5.0)))
    tau = pyro.sample("tau", dist.Gamma(f64(2.0), f64(1.0)))
    with pyro.plate("groups", num_groups):
        theta = pyro.sample("theta", dist.Normal(mu, tau.rsqrt()))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Normal(a + b * theta[group], f64(0.8)), obs=y)


def variance_as_scale(y):
    """An InverseGamma site used as the scale (not the variance): not conjugate."""
    v = pyro.sample("v", dist.InverseGamma(f64(3.0), f64(2.0)))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Normal(f64(0.3), v), obs=y)


def logistic_regression(y, x):
    """MultivariateNormal weights seen through a logistic link: not conjugate."""
    beta = pyro.sample("beta", dist.MultivariateNormal(PRIOR_LOC, PRIOR_COV))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Bernoulli(logits=x @ beta), obs=y)


def poisson_latent(y):
    n = pyro.sample("n", dist.Poisson(f64(3.0)))
    pyro.sample("y", dist.Normal(n, f64(1.0)), obs=y)


def geometric_latent(y):
    n = pyro.sample("n", dist.Geometric(f64(0.3)))
    pyro.sample("y", dist.Normal(n, f64(1.0)), obs=y)


def one_hot_latent(y):
    z = pyro.sample("z", dist.OneHotCategorical(f64([0.2, 0.3, 0.5])))
    pyro.sample("y", dist.Normal((z * f64([-1.0, 0.0, 1.0])).sum(), f64(1.0)), obs=y)


def bernoulli_to_event(y):
    z = pyro.sample("z", dist.Bernoulli(f64(0.3)).expand([3]).to_event(1))
    pyro.sample("y", dist.Normal(z.sum(), f64(1.0)), obs=y)


class NoSupport(dist.Normal):
    """A distribution that declares no support (as a user's own distribution may not)."""

    @property
    def support(self):
        raise NotImplementedError


def no_support_latent(y):
    mu = pyro.sample("mu", NoSupport(f64(0.0), f64(1.0), validate_args=False))
    pyro.sample("y", dist.Normal(mu, f64(1.0)), obs=y)


def random_size(y):
    """The number of component means is itself random: their shape changes between runs."""
    k = pyro.sample("k", dist.Poisson(f64(20.0)))
    with pyro.plate("components", int(k) + 1):
        locs = pyro.sample("locs", dist.Normal(f64(0.0), f64(1.0)))
    pyro.sample("y", dist.Normal(locs.sum(), f64(1.0)), obs=y)


class EveryOtherRun:
    """A program with a site that only every other run reaches (random control flow, made
    deterministic for the test)."""

    def __init__(self):
        self.runs = 0

    def __call__(self, y):
        self.runs += 1
        mu = pyro.sample("mu", dist.Normal(f64(0.0), f64(1.0)))
        if self.runs % 2:
            mu = mu + pyro.sample("extra", dist.Normal(f64(0.0), f64(1.0)))
        pyro.sample("y", dist.Normal(mu, f64(1.0)), obs=y)


def no_sample_sites():
    return f64(0.0)
