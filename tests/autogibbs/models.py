"""Small Pyro programs for the automatic Gibbs tests (float64 throughout)."""

import pyro
import pyro.distributions as dist
import torch


def f64(v):
    return torch.as_tensor(v, dtype=torch.float64)


def beta_binomial(k, n):
    p = pyro.sample("p", dist.Beta(f64(2.0), f64(3.0)))
    with pyro.plate("obs", len(k)):
        pyro.sample("k", dist.Binomial(n, p), obs=k)


def beta_bernoulli(y):
    p = pyro.sample("p", dist.Beta(f64(0.5), f64(1.5)))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Bernoulli(p), obs=y)


def gamma_poisson(c):
    lam = pyro.sample("lam", dist.Gamma(f64(2.0), f64(0.5)))
    with pyro.plate("obs", len(c)):
        pyro.sample("c", dist.Poisson(lam), obs=c)


def dirichlet_categorical(y):
    theta = pyro.sample("theta", dist.Dirichlet(f64([1.0, 2.0, 0.5])))
    with pyro.plate("obs", len(y)):
        pyro.sample("y", dist.Categorical(theta), obs=y)


def mixture(x, num_components=2):
    w = pyro.sample("w", dist.Dirichlet(torch.ones(num_components, dtype=torch.float64)))
    with pyro.plate("components", num_components):
        locs = pyro.sample("locs", dist.Normal(f64(1.0), f64(3.0)))
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Categorical(w))
        pyro.sample("x", dist.Normal(locs[z], f64(0.7)), obs=x)


def coupled(x):
    """The assignments meet outside their plate (through their sum): not separable."""
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Bernoulli(f64(0.3)))
        pyro.sample("x", dist.Normal(z, f64(1.0)), obs=x)
    pyro.sample("total", dist.Normal(z.sum(), f64(0.5)), obs=f64(1.0))


def shifted(x):
    """Each observation reads its neighbour's assignment: plate-shaped, yet not separable."""
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Bernoulli(f64(0.4)))
        pyro.sample("x", dist.Normal(3.0 * z.roll(1), f64(1.0)), obs=x)


def with_lognormal(c):
    lam = pyro.sample("lam", dist.Gamma(f64(2.0), f64(0.5)))
    s = pyro.sample("s", dist.LogNormal(f64(0.0), f64(1.0)))
    with pyro.plate("obs", len(c)):
        pyro.sample("c", dist.Poisson(lam * s), obs=c)


def squared_rate(c):
    lam = pyro.sample("lam", dist.Gamma(f64(2.0), f64(0.5)))
    with pyro.plate("obs", len(c)):
        pyro.sample("c", dist.Poisson(lam * lam), obs=c)


def coupled_means(y):
    """Two Normal means seen only through their sum: each is conjugate given the other, but
    the two are not independent, so drawing both at once from those conditionals is wrong."""
    with pyro.plate("pair", 2):
        m = pyro.sample("m", dist.Normal(f64(0.0), f64(1.0)))
    pyro.sample("y", dist.Normal(m.sum(), f64(0.5)), obs=y)


def uneven_binomial(y):
    with pyro.plate("obs", 2):
        k = pyro.sample("k", dist.Binomial(f64([3.0, 5.0]), f64(0.5)))
        pyro.sample("y", dist.Normal(k, f64(1.0)), obs=y)


def no_latents(y):
    pyro.sample("y", dist.Normal(f64(0.0), f64(1.0)), obs=y)


def mixture_vectorised(x, num_components=2):
    """:func:`mixture` indexing the means from the right (``locs[..., z]``), so that every
    site can be scored at many values in one batched trace."""
    w = pyro.sample("w", dist.Dirichlet(torch.ones(num_components, dtype=torch.float64)))
    with pyro.plate("components", num_components):
        locs = pyro.sample("locs", dist.Normal(f64(1.0), f64(3.0)))
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Categorical(w))
        pyro.sample("x", dist.Normal(locs[..., z], f64(0.7)), obs=x)


def grid(y):
    """Nested plates (rows at dim -2, columns at dim -1) and a per-row rate."""
    rows, cols = y.shape
    with pyro.plate("rows", rows, dim=-2):
        rate = pyro.sample("rate", dist.Gamma(f64(2.0), f64(1.0)))
        with pyro.plate("cols", cols, dim=-1):
            z = pyro.sample("z", dist.Bernoulli(f64(0.4)))
            pyro.sample("y", dist.Poisson(rate * (1.0 + 2.0 * z)), obs=y)


def item_rate(c):
    """Reads the latent rate with ``.item()``: not vectorisable."""
    lam = pyro.sample("lam", dist.Gamma(f64(2.0), f64(0.5)))
    with pyro.plate("obs", len(c)):
        pyro.sample("c", dist.Poisson(f64(lam.item())), obs=c)


def branching_mixture(x):
    """A Python branch on a latent value: not vectorisable."""
    w = pyro.sample("w", dist.Beta(f64(2.0), f64(2.0)))
    loc = f64(1.0) if w > 0.5 else f64(-1.0)
    with pyro.plate("data", len(x)):
        pyro.sample("x", dist.Normal(loc * w, f64(1.0)), obs=x)


def length_scaled(x):
    """Scales by ``len()`` of a latent tensor: runs batched, but gives other numbers."""
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Bernoulli(f64(0.3)))
        pyro.sample("x", dist.Normal(z * len(z) / len(x), f64(1.0)), obs=x)


def structural_zero(y):
    """A class that the prior rules out: its log densities are -inf."""
    with pyro.plate("data", len(y)):
        z = pyro.sample("z", dist.Categorical(logits=f64([0.0, float("-inf"), 0.0])))
        pyro.sample("y", dist.Normal(z.to(torch.float64), f64(1.0)), obs=y)


def eight_schools(y, sigma):
    """Non-centred eight schools: the effects are ``mu + tau * theta_tilde``."""
    mu = pyro.sample("mu", dist.Normal(f64(0.0), f64(5.0)))
    tau = pyro.sample("tau", dist.HalfCauchy(f64(5.0)))
    with pyro.plate("schools", len(y)):
        theta_tilde = pyro.sample("theta_tilde", dist.Normal(f64(0.0), f64(1.0)))
        pyro.sample("y", dist.Normal(mu + tau * theta_tilde, sigma), obs=y)


def lognormal_rate(c):
    s = pyro.sample("s", dist.LogNormal(f64(0.0), f64(1.0)))
    with pyro.plate("obs", len(c)):
        pyro.sample("c", dist.Poisson(s), obs=c)


def on_sphere(y):
    """A direction on the unit circle: Pyro has no bijection onto the sphere."""
    u = pyro.sample("u", dist.ProjectedNormal(f64([1.0, 0.5])))
    pyro.sample("y", dist.Normal(u[0], f64(0.3)), obs=y)


def noisy_factor(c):
    """Not a density: a factor drawn afresh at every run of the program."""
    s = pyro.sample("s", dist.LogNormal(f64(0.0), f64(1.0)))
    pyro.factor("noise", torch.randn((), dtype=torch.float64))
    with pyro.plate("obs", len(c)):
        pyro.sample("c", dist.Poisson(s), obs=c)


def bounded_by_scale(y):
    """``u``'s support ``(0, b)`` moves with the other NUTS site ``b``."""
    b = pyro.sample("b", dist.LogNormal(f64(0.0), f64(0.5)))
    u = pyro.sample("u", dist.Uniform(f64(0.0), b))
    pyro.sample("y", dist.Normal(u, f64(0.5)), obs=y)


def gamma_bounds_uniform(y):
    """``b`` is a Gamma site, but it also bounds ``u``: its conditional is not a Gamma."""
    b = pyro.sample("b", dist.Gamma(f64(2.0), f64(1.0)))
    u = pyro.sample("u", dist.Uniform(f64(0.0), b))
    pyro.sample("y", dist.Normal(u, f64(0.5)), obs=y)
