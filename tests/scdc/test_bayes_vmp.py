"""BayesSCDC's local message passing: coordinate ascent on the surrogate, the mixture
responsibilities without links, symmetry in the links, and the local KLs against Monte Carlo."""

import math

import pytest
import torch

from pyromodels.conjugate import NormalWishart
from pyromodels.mixture.variational import expected_log_density
from pyromodels.scdc.bayes import bayes_priors, initial_globals
from pyromodels.scdc.vmp import (
    LinkBatch,
    colour_classes,
    global_means,
    local_kl_x,
    local_kl_z,
    run_vmp,
    surrogate_objective,
    x_update,
)

F64 = torch.float64


def globals_and_potentials(num_items=12, num_clusters=4, dim=2, num_workers=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    priors = bayes_priors(num_clusters, num_workers, torch.zeros(dim, dtype=F64), 0.5,
                          2.5 * torch.eye(dim, dtype=F64), dim + 0.5, 0.3)
    factors = initial_globals(priors, g, 0.5, loc_std=2.0, coin_init=(6.0, 2.0))
    h = 2 * torch.randn(num_items, dim, generator=g, dtype=F64)
    lam = 0.5 + torch.rand(num_items, dim, generator=g, dtype=F64)
    return factors, h, lam, g


def random_links(num_items, num_links, num_workers, g):
    pairs = torch.combinations(torch.arange(num_items))
    pick = pairs[torch.randperm(len(pairs), generator=g)[:num_links]]
    return LinkBatch(pick[:, 0], pick[:, 1], torch.randint(num_workers, (num_links,), generator=g),
                     torch.randint(2, (num_links,), generator=g))


def surrogate_path(factors, h, lam, links, schedule):
    gm = global_means(factors)
    trace = []
    run_vmp(h, lam, gm, links, num_sweeps=12, schedule=schedule, z_init="random",
            generator=torch.Generator().manual_seed(5), trace=trace)
    values = []
    for probs, qx in trace:
        from pyromodels.scdc.vmp import LocalPosterior

        values.append(float(surrogate_objective(LocalPosterior(probs, probs.log(), qx), gm, h, lam,
                                                links)))
    return torch.tensor(values, dtype=F64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sequential_sweeps_never_decrease_the_surrogate(seed):
    factors, h, lam, g = globals_and_potentials(seed=seed)
    links = random_links(12, 30, 3, g)
    path = surrogate_path(factors, h, lam, links, "sequential")
    steps = path.diff()
    assert bool((steps >= -1e-9 * path.abs().max()).all()), steps


def test_parallel_updates_can_oscillate_where_sequential_ones_cannot():
    # two items in different clusters at the start, tied by confident must links: Jacobi
    # updates swap their clusters at every sweep, Gauss-Seidel puts them together
    factors, h, lam, _ = globals_and_potentials(num_items=2, num_clusters=2, num_workers=1)
    beta_type = type(factors["alpha"])
    confident = beta_type(torch.tensor([200.0], dtype=F64), torch.tensor([1.0], dtype=F64))
    factors["alpha"] = factors["beta"] = confident
    h, lam = 0 * h, torch.full_like(lam, 0.3)
    n = 8
    links = LinkBatch(torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=torch.long),
                      torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=torch.long))
    start = torch.tensor([[0.99, 0.01], [0.01, 0.99]], dtype=F64)
    gm = global_means(factors)
    paths = {}
    for schedule in ("parallel", "sequential"):
        trace = []
        run_vmp(h, lam, gm, links, num_sweeps=6, schedule=schedule, z_init=start, trace=trace)
        paths[schedule] = trace
    from pyromodels.scdc.vmp import LocalPosterior

    value = lambda probs, qx: float(surrogate_objective(  # noqa: E731
        LocalPosterior(probs, probs.log(), qx), gm, h, lam, links))
    seq = [value(*state) for state in paths["sequential"]]
    par = [value(*state) for state in paths["parallel"]]
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(seq, seq[1:], strict=False))
    assert float((paths["sequential"][-1][0][0] - paths["sequential"][-1][0][1]).abs().max()) < 1e-3
    swapped = paths["parallel"][-1][0].argmax(-1)
    assert swapped.tolist() in ([0, 1], [1, 0])  # still apart after six sweeps
    assert paths["parallel"][-2][0].argmax(-1).tolist() == swapped.flip(0).tolist()
    assert par[-1] < seq[-1] - 10


def test_without_links_the_z_update_is_the_mixture_responsibilities():
    factors, h, lam, _ = globals_and_potentials()
    gm = global_means(factors)
    trace = []
    run_vmp(h, lam, gm, None, num_sweeps=3, z_init="random",
            generator=torch.Generator().manual_seed(1), trace=trace)
    e = factors["components"].expected_stats()
    for (_, qx_before), (after, _) in zip(trace, trace[1:], strict=False):
        mean, cov = qx_before.mean(), qx_before.covariance()
        # E_q(x) E log N(x | k) = E log N(E x | k) - tr(E[Lambda_k] Cov) / 2
        eln = expected_log_density(mean, factors["components"]) - 0.5 * torch.einsum(
            "kab,nba->nk", e.precision, cov)
        log_weights = torch.digamma(factors["weights"].concentration) - torch.digamma(
            factors["weights"].concentration.sum())
        expected = torch.softmax(log_weights + eln, -1)
        torch.testing.assert_close(after, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("schedule", ["parallel", "sequential"])
def test_links_act_symmetrically(schedule):
    factors, h, lam, g = globals_and_potentials(seed=3)
    links = random_links(12, 25, 3, g)
    gm = global_means(factors)
    run = lambda lk: run_vmp(h, lam, gm, lk, num_sweeps=5, schedule=schedule)  # noqa: E731
    forward = run(links)
    swapped = run(LinkBatch(links.j, links.i, links.worker, links.link))
    torch.testing.assert_close(forward.probs, swapped.probs, rtol=1e-12, atol=1e-14)
    # relabelling the items relabels the result
    perm = torch.randperm(12, generator=g)
    inv = torch.argsort(perm)
    permuted = run_vmp(h[perm], lam[perm], gm, LinkBatch(inv[links.i], inv[links.j], links.worker,
                                                          links.link), num_sweeps=5,
                       schedule="parallel")
    if schedule == "parallel":
        torch.testing.assert_close(permuted.probs, forward.probs[perm], rtol=1e-10, atol=1e-12)
    # the links move the result (the test would pass trivially otherwise)
    assert float((forward.probs - run(None).probs).abs().max()) > 1e-3


def test_colour_classes_separate_linked_items():
    g = torch.Generator().manual_seed(0)
    links = random_links(15, 40, 1, g)
    classes = colour_classes(links.i, links.j, 15)
    colour = torch.empty(15, dtype=torch.long)
    for c, rows in enumerate(classes):
        colour[rows] = c
    assert sorted(torch.cat(classes).tolist()) == list(range(15))
    assert bool((colour[links.i] != colour[links.j]).all())


def test_local_kls_match_monte_carlo():
    factors, h, lam, _ = globals_and_potentials(num_items=3, num_clusters=3, seed=4)
    gm = global_means(factors)
    local = run_vmp(h, lam, gm, None, num_sweeps=2)
    g = torch.Generator().manual_seed(11)
    S = 200_000
    # eq. 21: E_{q(pi)} KL(q(z) || Cat(pi))
    torch.manual_seed(0)
    pis = torch.distributions.Dirichlet(factors["weights"].concentration).sample((S,))
    kl = (local.probs * local.log_probs).sum(-1, keepdim=True) - local.probs @ pis.log().T  # (N, S)
    mc, se = kl.mean(-1), kl.std(-1) / math.sqrt(S)
    assert bool(((local_kl_z(local, gm) - mc).abs() < 5 * se).all())
    # eq. 22: E_{q(z) q(mu, Lambda) q(x)}[log q(x) - log N(x | mu_z, Lambda_z^-1)]
    comps: NormalWishart = factors["components"]
    mu, prec = comps.sample(g, (S,))  # (S, K, d), (S, K, d, d)
    x = local.x.rsample(g, (S,))  # (S, N, d)
    log_q = local.x.log_prob(x)  # (S, N)
    logn = torch.distributions.MultivariateNormal(mu.unsqueeze(1), precision_matrix=prec.unsqueeze(1)
                                                  ).log_prob(x.unsqueeze(2))  # (S, N, K)
    terms = log_q - (local.probs * logn).sum(-1)
    mc, se = terms.mean(0), terms.std(0) / math.sqrt(S)
    assert bool(((local_kl_x(local, gm) - mc).abs() < 5 * se).all())


def test_x_update_is_eq_12():
    factors, h, lam, _ = globals_and_potentials(num_items=4)
    gm = global_means(factors)
    probs = torch.softmax(torch.randn(4, 4, generator=torch.Generator().manual_seed(0), dtype=F64), -1)
    qx = x_update(probs, gm, h, lam)
    comps = factors["components"]
    e_sigma_inv = comps.nu[:, None, None] * comps.scale  # nu S^-1 (paper's A.2)
    precision = torch.einsum("nk,kab->nab", probs, e_sigma_inv) + torch.diag_embed(lam)
    h_expected = torch.einsum("nk,kab,kb->na", probs, e_sigma_inv, comps.loc) + h
    torch.testing.assert_close(qx.precision(), precision)
    torch.testing.assert_close(qx.h, h_expected)


def test_a_precision_that_is_not_positive_is_named():
    factors, h, lam, _ = globals_and_potentials(num_items=5)
    lam = lam.clone()
    lam[2] = -1e6  # swamps the components' precisions: q(x_2) has no positive precision
    with pytest.raises(ValueError, match="precision of q\\(x\\)"):
        run_vmp(h, lam, global_means(factors), None, num_sweeps=2)
    lam[2] = float("nan")
    with pytest.raises(ValueError, match="precision of q\\(x\\)"):
        run_vmp(h, lam, global_means(factors), None, num_sweeps=2, z_init="random")
