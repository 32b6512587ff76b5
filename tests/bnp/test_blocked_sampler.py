"""The whole blocked Gibbs sampler: the exact DP posterior over set partitions, the DP prior on
the number of clusters, float32 against float64, and CUDA against the CPU."""

import math

import pytest
import torch

from pyromodels.bnp import (
    blocked_init,
    blocked_labels,
    blocked_log_joint,
    blocked_sweep,
    component_posterior,
)
from pyromodels.bnp.blocked_assign import draw_labels
from pyromodels.conjugate import NormalGamma

LOG_2PI = math.log(2 * math.pi)


def set_partitions(n):
    """Every partition of range(n) as canonical labels (restricted growth strings)."""
    out = [[0]]
    for _ in range(n - 1):
        out = [p + [k] for p in out for k in range(max(p) + 2)]
    return [tuple(p) for p in out]


def log_marginal(prior, x):
    """log m(x) of the points ``x`` (n, d) under the Normal-Gamma base, from the normalisers."""
    post = prior.posterior(x.shape[0], x.sum(0), (x * x).sum())
    return post.log_normalizer() - prior.log_normalizer() - 0.5 * x.numel() * LOG_2PI


def exact_partition_posterior(z, prior, alpha):
    """p(partition | z) ∝ alpha^K prod_k (n_k - 1)! m(Z_k) (the DP's EPPF times marginals)."""
    parts = set_partitions(z.shape[0])
    scores = []
    for p in parts:
        labels = torch.tensor(p)
        s = 0.0
        for k in range(max(p) + 1):
            block = z[labels == k]
            s += math.log(alpha) + math.lgamma(block.shape[0]) + float(log_marginal(prior, block))
        scores.append(s)
    return parts, torch.softmax(torch.tensor(scores), 0)


def test_marginal_likelihood_is_the_chain_of_predictives():
    prior = NormalGamma(torch.tensor([0.2, -0.1]), 0.5, 2.0, 1.0)
    x = torch.tensor([[0.0, 0.3], [1.0, -0.4], [0.6, 0.6]])
    chain = sum(
        float(prior.posterior(i, x[:i].sum(0), (x[:i] ** 2).sum()).predictive_log_prob(x[i]))
        for i in range(3)
    )
    assert float(log_marginal(prior, x)) == pytest.approx(chain, abs=1e-12)


def batch_standard_errors(indicators, num_batches=50):
    """Batch-means standard errors of the column means of a (draws, categories) 0/1 matrix."""
    m = indicators.shape[0] // num_batches
    means = indicators[: m * num_batches].reshape(num_batches, m, -1).mean(1)
    return means.std(0) / math.sqrt(num_batches)


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_partition_frequencies_match_the_exact_dp_posterior():
    """N = 5, d = 2, alpha = 1, T = 20: the chain's partition frequencies against the exact
    DP posterior over the Bell(5) = 52 set partitions.

    Threshold. TV = (1/2) sum_k |f_k - p_k|. With standard errors se_k of the frequencies
    (batch means over 50 batches, floored by the independent-draws value
    sqrt(p_k (1 - p_k) / S)), |f_k - p_k| is about |N(0, se_k^2)|: mean sqrt(2/pi) se_k and
    standard deviation sqrt(1 - 2/pi) se_k, so sum_k |f_k - p_k| has mean 0.80 sum se_k and,
    whatever the correlations, a standard deviation at most 0.60 sum se_k. The bound is the
    mean plus 4 such standard deviations, halved: 1.6 sum se_k; plus the truncation error.

    Truncation. The truncated and the untruncated priors over partitions differ only when a
    point falls in the last component: eps <= N E[prod_{j<T} (1 - v_j)] = N (alpha / (1 +
    alpha))^(T-1) = 5 * 2^-19. Reweighting by the likelihood L turns this into at most
    2 eps max L / E_DP[L] on the posterior, computed below (about 1e-4).
    """
    z = torch.tensor([[0.0, 0.0], [0.4, 0.2], [2.0, 1.8], [2.3, 2.1], [-1.0, 2.0]])
    prior = NormalGamma(torch.zeros(2), 0.5, 2.0, 1.0)
    alpha, T, burn, S = 1.0, 20, 200, 16000
    parts, exact = exact_partition_posterior(z, prior, alpha)
    index = {p: i for i, p in enumerate(parts)}
    gen = torch.Generator().manual_seed(11)
    state = blocked_init(z, 1, prior, alpha, T, gen)
    visits = torch.empty(S, dtype=torch.long)
    for t in range(burn + S):
        state = blocked_sweep(z, state, prior, gen)
        if t >= burn:
            visits[t - burn] = index[tuple(blocked_labels(state).tolist())]
    onehot = torch.nn.functional.one_hot(visits, len(parts)).double()
    freq = onehot.mean(0)
    se = torch.maximum(batch_standard_errors(onehot), (exact * (1 - exact) / S).sqrt())
    # truncation allowance
    eps = z.shape[0] * (alpha / (1 + alpha)) ** (T - 1)
    prior_p = torch.tensor([alpha ** (max(p) + 1) for p in parts]) * torch.tensor(
        [math.prod(math.factorial(p.count(k) - 1) for k in set(p)) for p in parts]
    )
    prior_p = prior_p / prior_p.sum()
    # the likelihood of each partition, up to one constant, is exact / prior
    lik = exact / prior_p
    trunc = 2 * eps * float(lik.max() / (prior_p * lik).sum())
    assert trunc < 1e-3
    bound = 1.6 * float(se.sum()) + trunc
    tv = 0.5 * float((freq - exact).abs().sum())
    assert tv < bound, (tv, bound)
    # the test has power: a posterior for another concentration is far outside the bound
    _, other = exact_partition_posterior(z, prior, 3.0)
    assert 0.5 * float((freq - other).abs().sum()) > 2 * bound


def test_number_of_clusters_follows_the_dp_prior_without_likelihood():
    """Prior data: alternate a sweep with z ~ p(z | state) (a "successive-conditional" chain
    whose state has the prior as its stationary law). With N = 10, alpha = 1 the number of
    occupied components has E[K] = sum_i alpha / (alpha + i - 1) = H_10 = 2.929 (truncation
    error at T = 20 below N 2^-19 = 2e-5). The chain's mean must lie within 4 batch-means
    standard errors; E[K] at alpha = 1.5 (3.6) must not (power)."""
    n, alpha, T, S = 10, 1.0, 20, 6000
    prior = NormalGamma(torch.zeros(1), 1.0, 3.0, 2.0)
    gen = torch.Generator().manual_seed(4)
    z = torch.randn(n, 1, generator=gen)
    state = blocked_init(z, 1, prior, alpha, T, gen)
    ks = torch.empty(S)
    for t in range(S):
        state = blocked_sweep(z, state, prior, gen)
        lam = state.lam[state.labels]
        z = state.mu[state.labels] + torch.randn(n, 1, generator=gen) * lam.rsqrt().unsqueeze(1)
        ks[t] = state.num_occupied
    expected = sum(alpha / (alpha + i) for i in range(n))
    se = float(batch_standard_errors(ks.unsqueeze(1))[0])
    assert abs(float(ks.mean()) - expected) < 4 * se
    other = sum(1.5 / (1.5 + i) for i in range(n))
    assert abs(float(ks.mean()) - other) > 4 * se


def test_concentration_keeps_its_hyperprior_without_likelihood():
    """The same prior-data chain with the update alpha | v under a Gamma(2, 2) hyperprior: the
    truncated model's joint is the target, so alpha's marginal is exactly Gamma(2, 2) with mean
    1 and variance 1/2. The chain's mean must lie within 4 batch-means standard errors of 1,
    and not within 4 of 1.5 (power)."""
    n, T, S = 10, 20, 5000
    prior = NormalGamma(torch.zeros(1), 1.0, 3.0, 2.0)
    gen = torch.Generator().manual_seed(7)
    z = torch.randn(n, 1, generator=gen)
    state = blocked_init(z, 1, prior, 1.0, T, gen)
    alphas = torch.empty(S)
    for t in range(S):
        state = blocked_sweep(z, state, prior, gen, resample_alpha=(2.0, 2.0))
        lam = state.lam[state.labels]
        z = state.mu[state.labels] + torch.randn(n, 1, generator=gen) * lam.rsqrt().unsqueeze(1)
        alphas[t] = state.alpha
    se = float(batch_standard_errors(alphas.unsqueeze(1))[0])
    assert abs(float(alphas.mean()) - 1.0) < 4 * se
    assert abs(float(alphas.mean()) - 1.5) > 4 * se


def make_problem(n=300, d=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    centres = 3 * torch.randn(4, d, generator=gen)
    z = centres[torch.randint(4, (n,), generator=gen)] + torch.randn(n, d, generator=gen)
    prior = NormalGamma(torch.zeros(d), 0.2, 2.0, 1.0)
    return z, prior


def test_float32_sweep_agrees_with_float64():
    """Both dtypes draw the same uniforms and Gamma variates (the statistics and the parameter
    draws run in float64), so one sweep from one state and seed agrees up to float32 rounding.
    A label can differ only where its uniform lies within float32 rounding (~1e-6 relative) of
    a CDF step: for 300 points that has probability ~300 * 1e-6 per sweep, so all agree."""
    z64, prior64 = make_problem()
    z32 = z64.float()
    prior32 = NormalGamma(prior64.loc.float(), 0.2, 2.0, 1.0)
    s64 = blocked_init(z64, 4, prior64, 1.0, 15, torch.Generator().manual_seed(1))
    s32 = blocked_init(z32, s64.labels, prior32, 1.0, 15, torch.Generator().manual_seed(2))
    for s, z in ((s32, z32), (s64, z64)):
        s.v, s.mu, s.lam = s64.v.to(z.dtype), s64.mu.to(z.dtype), s64.lam.to(z.dtype)
    n64 = blocked_sweep(z64, s64, prior64, torch.Generator().manual_seed(3), resample_alpha=(1.0, 1.0))
    n32 = blocked_sweep(z32, s32, prior32, torch.Generator().manual_seed(3), resample_alpha=(1.0, 1.0))
    assert n32.mu.dtype == torch.float32 and n32.labels.dtype == torch.long
    for name in ("v", "mu", "lam", "alpha"):
        torch.testing.assert_close(getattr(n32, name).double(), getattr(n64, name), rtol=1e-5, atol=1e-6)
    assert n32.labels.tolist() == n64.labels.tolist()
    lj64 = float(blocked_log_joint(z64, n64, prior64))
    assert float(blocked_log_joint(z32, n32, prior32)) == pytest.approx(lj64, rel=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_sweep_agrees_with_cpu():
    """Given the same uniforms, the CUDA label draw and the component posterior equal the
    CPU's; a whole sweep on CUDA stays on the device and gives a finite log joint."""
    z, prior = make_problem(n=5000, d=4)
    state = blocked_init(z, 6, prior, 1.0, 30, torch.Generator().manual_seed(1))
    w = 1.0 - torch.rand(z.shape[0], generator=torch.Generator().manual_seed(2))
    log_pi = torch.log_softmax(torch.randn(30, generator=torch.Generator().manual_seed(3)), 0)
    cuda = torch.device("cuda")
    cpu_labels = draw_labels(z, log_pi, state.mu, state.lam, w, 1000)
    gpu_labels = draw_labels(
        z.to(cuda), log_pi.to(cuda), state.mu.to(cuda), state.lam.to(cuda), w.to(cuda), 1000
    )
    assert (gpu_labels.cpu() == cpu_labels).float().mean() > 0.999
    post_cpu = component_posterior(z, state.labels, prior, 30)
    post_gpu = component_posterior(z.to(cuda), state.labels.to(cuda), prior, 30)
    for name in ("loc", "kappa", "a", "b"):
        torch.testing.assert_close(getattr(post_gpu, name).cpu(), getattr(post_cpu, name))
    prior_gpu = NormalGamma(prior.loc.to(cuda), 0.2, 2.0, 1.0)
    gstate = blocked_init(z.to(cuda), 6, prior_gpu, 1.0, 30, torch.Generator(cuda).manual_seed(1))
    new = blocked_sweep(z.to(cuda), gstate, prior_gpu, torch.Generator(cuda).manual_seed(4), (1.0, 1.0))
    assert new.labels.device.type == "cuda" and new.mu.device.type == "cuda"
    assert math.isfinite(float(blocked_log_joint(z.to(cuda), new, prior_gpu)))


def test_sweep_is_reproducible_and_independent_of_chunking():
    z, prior = make_problem(n=257)
    state = blocked_init(z, 3, prior, 1.0, 12, torch.Generator().manual_seed(0))
    runs = [
        blocked_sweep(z, state, prior, torch.Generator().manual_seed(5), (1.0, 1.0), chunk_rows=c)
        for c in (None, 1, 100, 257)
    ]
    for other in runs[1:]:
        assert other.labels.tolist() == runs[0].labels.tolist()
        for name in ("v", "mu", "lam", "alpha", "log_1mv"):
            assert torch.equal(getattr(other, name), getattr(runs[0], name))
