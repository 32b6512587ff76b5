"""The simulation-based-calibration suite: small plain Pyro programs (float64 throughout).

Each :class:`Case` holds a program, arguments that fix its sizes (their observed values are
replaced by simulated ones), ``observed`` (the program's arguments from one simulated draw of
every site) and ``quantities``: scalar functions of the latent sites, label-invariant wherever
the posterior is symmetric in the labels (sorted means, co-assignments, predictive
probabilities, occupied-cluster counts).
"""

from dataclasses import dataclass

import pyro
import pyro.distributions as dist
import torch


def f64(v):
    return torch.as_tensor(v, dtype=torch.float64)


def _same(z, i, j):
    """1.0 when items ``i`` and ``j`` share a label (label-invariant)."""
    return (z[..., i] == z[..., j]).to(torch.float64)


# -- beta-binomial: groups with their own rate, fixed hyperparameters ------------------------

def beta_binomial_groups(k, n):
    with pyro.plate("groups", len(n)):
        p = pyro.sample("p", dist.Beta(f64(2.0), f64(2.0)))
        pyro.sample("k", dist.Binomial(n, p), obs=k)


# -- beta-binomial hierarchy: the population mean and concentration are latent too -----------

def beta_binomial_hierarchy(k, n):
    mu = pyro.sample("mu", dist.Beta(f64(2.0), f64(2.0)))
    kappa = pyro.sample("kappa", dist.Gamma(f64(4.0), f64(0.5)))
    with pyro.plate("groups", len(n)):
        p = pyro.sample("p", dist.Beta(mu * kappa, (1 - mu) * kappa))
        pyro.sample("k", dist.Binomial(n, p), obs=k)


# -- eight schools (centred); the between-school spread as a scale, or as a precision ---------

SCHOOL_SE = f64([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]) / 10.0


def eight_schools(y, sigma):
    mu = pyro.sample("mu", dist.Normal(f64(0.0), f64(5.0)))
    tau = pyro.sample("tau", dist.HalfNormal(f64(5.0)))
    with pyro.plate("schools", len(sigma)):
        theta = pyro.sample("theta", dist.Normal(mu, tau))
        pyro.sample("y", dist.Normal(theta, sigma), obs=y)


def eight_schools_precision(y, sigma):
    mu = pyro.sample("mu", dist.Normal(f64(0.0), f64(5.0)))
    prec = pyro.sample("prec", dist.Gamma(f64(2.0), f64(2.0)))
    with pyro.plate("schools", len(sigma)):
        theta = pyro.sample("theta", dist.Normal(mu, prec.rsqrt()))
        pyro.sample("y", dist.Normal(theta, sigma), obs=y)


# -- Gaussian mixture with assignments -------------------------------------------------------

def gaussian_mixture(x, num_components=2):
    w = pyro.sample("w", dist.Dirichlet(torch.full((num_components,), 2.0, dtype=torch.float64)))
    with pyro.plate("components", num_components):
        locs = pyro.sample("locs", dist.Normal(f64(0.0), f64(2.0)))
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Categorical(w))
        pyro.sample("x", dist.Normal(locs[z], f64(1.0)), obs=x)


# -- Poisson change-point: a discrete switch time and two Gamma rates ------------------------

def change_point(y):
    t = torch.arange(len(y))
    switch = pyro.sample("switch", dist.Categorical(torch.ones(len(y), dtype=torch.float64)))
    early = pyro.sample("early", dist.Gamma(f64(3.0), f64(1.0)))
    late = pyro.sample("late", dist.Gamma(f64(3.0), f64(1.0)))
    with pyro.plate("time", len(y)):
        pyro.sample("y", dist.Poisson(torch.where(t < switch, early, late)), obs=y)


# -- latent Dirichlet allocation: topics, per-document mixes, per-token topics ---------------

def lda(words, num_topics=2, vocab=4):
    """``words``: ``(tokens, docs)`` word ids."""
    with pyro.plate("topics", num_topics):
        phi = pyro.sample("phi", dist.Dirichlet(torch.ones(vocab, dtype=torch.float64)))
    with pyro.plate("docs", words.shape[1]):
        theta = pyro.sample("theta", dist.Dirichlet(torch.ones(num_topics, dtype=torch.float64)))
        with pyro.plate("tokens", words.shape[0]):
            z = pyro.sample("z", dist.Categorical(theta))
            pyro.sample("w", dist.Categorical(phi[z]), obs=words)


# -- hidden Markov model written with pyro.markov --------------------------------------------

def hmm(y, num_states=2):
    with pyro.plate("rows", num_states):
        trans = pyro.sample("trans", dist.Dirichlet(torch.ones(num_states, dtype=torch.float64)))
        locs = pyro.sample("locs", dist.Normal(f64(0.0), f64(2.0)))
    state = pyro.sample("x_0", dist.Categorical(torch.ones(num_states, dtype=torch.float64)))
    pyro.sample("y_0", dist.Normal(locs[state], f64(1.0)), obs=y[0])
    for t in pyro.markov(range(1, len(y))):
        state = pyro.sample(f"x_{t}", dist.Categorical(trans[state]))
        pyro.sample(f"y_{t}", dist.Normal(locs[state], f64(1.0)), obs=y[t])


# -- Dawid-Skene: true classes, one confusion matrix per worker -------------------------------

def dawid_skene(labels, num_classes=2):
    num_items, num_workers = labels.shape
    eye = torch.eye(num_classes, dtype=torch.float64)
    pi = pyro.sample("pi", dist.Dirichlet(torch.ones(num_classes, dtype=torch.float64)))
    with pyro.plate("workers", num_workers, dim=-2), pyro.plate("classes", num_classes, dim=-1):
        conf = pyro.sample("conf", dist.Dirichlet(1.0 + 3.0 * eye))  # (workers, classes, labels)
    with pyro.plate("items", num_items, dim=-2):
        z = pyro.sample("z", dist.Categorical(pi))                  # (items, 1)
        with pyro.plate("raters", num_workers, dim=-1):
            pyro.sample("labels", dist.Categorical(conf[torch.arange(num_workers), z]), obs=labels)


# -- truncated Dirichlet-process mixture (stick-breaking) ------------------------------------

def stick_breaking(v):
    """Weights from ``K - 1`` Beta sticks (the last takes the rest)."""
    rest = torch.cumprod(1 - v, -1)
    return torch.cat([v, torch.ones_like(v[..., :1])], -1) * torch.cat(
        [torch.ones_like(v[..., :1]), rest], -1)


def dp_mixture(x, truncation=3):
    with pyro.plate("sticks", truncation - 1):
        v = pyro.sample("v", dist.Beta(f64(1.0), f64(1.0)))
    with pyro.plate("atoms", truncation):
        locs = pyro.sample("locs", dist.Normal(f64(0.0), f64(2.0)))
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Categorical(stick_breaking(v)))
        pyro.sample("x", dist.Normal(locs[z], f64(1.0)), obs=x)


# -- a Normal-Wishart pair: mean and precision matrix of 2-d points, each conjugate given the other

WISHART_SCALE = f64([[1.0, 0.3], [0.3, 0.5]])


def normal_wishart(x):
    lam = pyro.sample("lam", dist.Wishart(f64(4.0), covariance_matrix=WISHART_SCALE))
    mu = pyro.sample("mu", dist.MultivariateNormal(torch.zeros(2, dtype=torch.float64),
                                                   precision_matrix=0.5 * lam))
    with pyro.plate("data", x.shape[0]):
        pyro.sample("x", dist.MultivariateNormal(mu, precision_matrix=lam), obs=x)


@dataclass(frozen=True)
class Case:
    """One program of the suite, with its SBC settings.

    Attributes:
        name: the test id.
        model: the Pyro program.
        args: arguments that fix its sizes.
        observed: ``values -> args`` from one simulated draw of every site.
        quantities: ``latent values -> (Q,)`` scalar quantities.
        names: the quantities' names.
        thin: sweeps between kept draws (to make them close to independent).
        warmup: sweeps discarded first.
    """

    name: str
    model: object
    args: tuple
    observed: object
    quantities: object
    names: tuple
    thin: int
    warmup: int


HMM_STEPS = 3


def _hmm_states(v):
    return torch.stack([v[f"x_{t}"] for t in range(HMM_STEPS)])


CASES = [
    Case("beta_binomial_groups", beta_binomial_groups, (f64([0.0, 0.0, 0.0]), f64([4.0, 6.0, 2.0])),
         lambda v: (v["k"], f64([4.0, 6.0, 2.0])),
         lambda v: v["p"], ("p[0]", "p[1]", "p[2]"), thin=1, warmup=0),
    Case("beta_binomial_hierarchy", beta_binomial_hierarchy,
         (f64([0.0, 0.0, 0.0]), f64([4.0, 6.0, 2.0])),
         lambda v: (v["k"], f64([4.0, 6.0, 2.0])),
         lambda v: torch.stack([v["mu"], v["kappa"], v["p"][0]]), ("mu", "kappa", "p[0]"),
         thin=5, warmup=50),
    Case("eight_schools", eight_schools, (torch.zeros(8, dtype=torch.float64), SCHOOL_SE),
         lambda v: (v["y"], SCHOOL_SE),
         lambda v: torch.stack([v["mu"], v["tau"], v["theta"][0]]), ("mu", "tau", "theta[0]"),
         thin=5, warmup=50),
    Case("eight_schools_precision", eight_schools_precision,
         (torch.zeros(8, dtype=torch.float64), SCHOOL_SE), lambda v: (v["y"], SCHOOL_SE),
         lambda v: torch.stack([v["mu"], v["prec"], v["theta"][0]]), ("mu", "prec", "theta[0]"),
         thin=3, warmup=10),
    Case("gaussian_mixture", gaussian_mixture, (torch.zeros(4, dtype=torch.float64),),
         lambda v: (v["x"],),
         lambda v: torch.cat([v["locs"].sort().values, _same(v["z"], 0, 1)[None]]),
         ("min loc", "max loc", "z[0] == z[1]"), thin=3, warmup=10),
    Case("change_point", change_point, (torch.zeros(6, dtype=torch.float64),), lambda v: (v["y"],),
         lambda v: torch.stack([v["switch"].to(torch.float64), v["early"], v["late"]]),
         ("switch", "early", "late"), thin=2, warmup=5),
    Case("lda", lda, (torch.zeros(2, 3, dtype=torch.long),), lambda v: (v["w"],),
         lambda v: torch.stack([(v["theta"][0] @ v["phi"])[0], (v["theta"][1] @ v["phi"])[0],
                                _same(v["z"][0], 0, 1)]),
         ("p(word 0 | doc 0)", "p(word 0 | doc 1)", "z[0, 0] == z[0, 1]"), thin=3, warmup=10),
    Case("hmm", hmm, (torch.zeros(HMM_STEPS, dtype=torch.float64),),
         lambda v: (torch.stack([v[f"y_{t}"] for t in range(HMM_STEPS)]),),
         lambda v: torch.cat([v["locs"].sort().values, _same(_hmm_states(v), 0, HMM_STEPS - 1)[None]]),
         ("min loc", "max loc", "x_0 == x_2"), thin=2, warmup=6),
    Case("dawid_skene", dawid_skene, (torch.zeros(4, 2, dtype=torch.long),), lambda v: (v["labels"],),
         lambda v: torch.stack([_same(v["z"][:, 0], 0, 1),
                                (v["pi"] * v["conf"][0].diagonal()).sum()]),
         ("z[0] == z[1]", "accuracy of worker 0"), thin=3, warmup=10),
    Case("normal_wishart", normal_wishart, (torch.zeros(3, 2, dtype=torch.float64),),
         lambda v: (v["x"],),
         lambda v: torch.stack([v["lam"][0, 0], v["lam"][0, 1], v["mu"][0]]),
         ("lam[0, 0]", "lam[0, 1]", "mu[0]"), thin=3, warmup=10),
    Case("dp_mixture", dp_mixture, (torch.zeros(4, dtype=torch.float64),), lambda v: (v["x"],),
         lambda v: torch.stack([_same(v["z"], 0, 1), f64(float(len(v["z"].unique())))]),
         ("z[0] == z[1]", "occupied clusters"), thin=3, warmup=10),
]
