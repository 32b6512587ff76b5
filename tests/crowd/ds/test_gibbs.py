"""The Dawid-Skene Gibbs sweep: each block is the program's conditional, and the chain targets
the exact posterior (computed by enumerating the classes and Dirichlet conjugacy)."""

import itertools

import pytest
import torch

from pyromodels.core import GibbsBlock, GibbsSweep
from pyromodels.crowd.ds import gibbs as ds_gibbs
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import AnnotationTable, WorkerPopulation, simulate_annotations
from pyromodels.testing import (
    assert_mc_mean,
    check_conditional,
    check_discrete_conditional,
    geweke_test,
)


def small_table():
    """4 items, 2 workers, 2 classes; worker 1 skipped item 2."""
    return AnnotationTable.from_arrays([0, 0, 1, 1, 2, 3, 3], [0, 1, 0, 1, 0, 0, 1],
                                       [0, 0, 1, 0, 1, 1, 1], num_classes=2)


@pytest.fixture
def state_and_data():
    table, _ = simulate_annotations(12, WorkerPopulation(3, missing_rate=0.3), 3, seed=7)
    model = DawidSkene(prior_concentration=[1.0, 2.0, 0.5], confusion_concentration=0.8,
                       diagonal=1.5, allow_unlabelled=True)
    data = model.prepare(table)
    state = model.init_state(data, torch.Generator().manual_seed(0))
    return model, data, state


def test_every_block_is_the_programs_conditional(state_and_data):
    model, data, state = state_and_data
    for block in model.gibbs_sweep(data).blocks:
        spread = check_conditional(model, data, block, state, num_values=6, seed=1)
        assert spread < 1e-9, (block.name, spread)


def test_class_block_matches_brute_force_over_one_item(state_and_data):
    model, data, state = state_and_data
    block = model.gibbs_sweep(data).blocks[0]
    for n in (0, 5, 11):
        own, joint = check_discrete_conditional(model, data, block, state, "z", n, range(3))
        torch.testing.assert_close(own, joint, rtol=0, atol=1e-12)


def test_fixed_prior_sweep_has_no_prior_block():
    model = DawidSkene(update_prior=False)
    sweep = model.gibbs_sweep(model.prepare(small_table()))
    assert [b.name for b in sweep.blocks] == ["classes", "confusion"]
    post = model.fit(small_table(), method="gibbs", seed=0, num_samples=10, num_warmup=5,
                     progress=False)
    assert set(post.samples) == {"z", "confusion"} and torch.isfinite(post.sample_stats["lp"]).all()


def _geweke_setup():
    model = DawidSkene()
    data = model.prepare(small_table())
    mask = data.mask

    def stats(v):
        y, z = v["y"], v["z"]
        agree = ((y == z.unsqueeze(-1)) & mask).double().sum() / mask.sum()
        zero = (z == 0).double().mean()
        return torch.stack([
            v["prior"][0], v["prior"][0] ** 2,
            v["confusion"][0, 0, 0], v["confusion"][1, 1, 1], v["confusion"][0, 1, 0] ** 2,
            (y.double() * mask).sum() / mask.sum(), zero, agree,
            # couple the parameters with the classes: sensitive to blocks that ignore them
            v["prior"][0] * zero, v["confusion"][0, 0, 0] * agree,
        ])

    return model, data, stats, (lambda d, v: d.with_labels(v["y"]))


def test_gibbs_sweep_passes_geweke():
    model, data, stats, observed = _geweke_setup()
    result = geweke_test(model, data, stats, observed=observed, num_marginal=2000,
                         num_successive=3000, seed=0)
    assert result.passed, result


def test_geweke_detects_a_class_block_that_ignores_the_prior():
    model, data, stats, observed = _geweke_setup()
    good = model.gibbs_sweep(data).blocks

    def uniform_prior_classes(state, d, gen):
        flat = {**state, "prior": torch.full_like(state["prior"], 0.5)}
        return ds_gibbs.classes_block(flat, d, gen)

    broken = GibbsSweep([GibbsBlock("classes", ("z",), uniform_prior_classes), *good[1:]])
    result = geweke_test(model, data, stats, observed=observed, sweep=broken, num_marginal=2000,
                         num_successive=3000, seed=0)
    assert not result.passed, result


def _log_beta(a):
    return torch.lgamma(a).sum(-1) - torch.lgamma(a.sum(-1))


def exact_posterior_means(data):
    """E[prior | y], E[confusion | y] and P(z_n = k | y), by enumerating every z and
    integrating prior and confusion out with Dirichlet-multinomial conjugacy."""
    t, K, M, N = data.table, data.num_classes, data.num_workers, data.num_items
    alpha, B = data.prior_concentration, data.confusion_concentration
    rows = list(zip(t.item_idx.tolist(), t.worker_idx.tolist(), t.label_idx.tolist()))
    logs, prior_means, conf_means, onehots = [], [], [], []
    for z in itertools.product(range(K), repeat=N):
        n = torch.zeros(K, dtype=torch.float64)
        C = torch.zeros(M, K, K, dtype=torch.float64)
        for i in range(N):
            n[z[i]] += 1
        for i, m, y in rows:
            C[m, z[i], y] += 1
        log_confusion = (_log_beta(B + C) - _log_beta(B)).sum()
        logs.append(_log_beta(alpha + n) - _log_beta(alpha) + log_confusion)
        prior_means.append((alpha + n) / (alpha + n).sum())
        conf_means.append((B + C) / (B + C).sum(-1, keepdim=True))
        onehots.append(torch.nn.functional.one_hot(torch.tensor(z), K).double())
    w = torch.softmax(torch.stack(logs), 0)
    avg = lambda xs: torch.einsum("s,s...->...", w, torch.stack(xs))  # noqa: E731
    return avg(prior_means), avg(conf_means), avg(onehots)


def test_gibbs_draws_match_the_exact_posterior():
    # items 0-4, 2 workers, 2 classes; an asymmetric prior breaks the label symmetry
    table = AnnotationTable.from_arrays([0, 0, 1, 1, 2, 2, 3, 4, 4], [0, 1, 0, 1, 0, 1, 1, 0, 1],
                                        [0, 0, 1, 1, 0, 1, 1, 0, 1], num_classes=2)
    model = DawidSkene(prior_concentration=[2.0, 1.0], confusion_concentration=1.0, diagonal=1.5)
    data = model.prepare(table)
    prior_mean, conf_mean, z_marginal = exact_posterior_means(data)
    post = model.fit(table, method="gibbs", seed=3, num_chains=1, num_samples=5000,
                     num_warmup=200, lp_every=0, progress=False)

    def batch_means(x, batches=50):
        x = x[0].double()
        return x.reshape(batches, -1, *x.shape[1:]).mean(1).numpy()

    # Batch means of 100 sweeps are nearly independent on this quickly mixing chain, so each
    # exact mean must lie within 5 standard errors of their average.
    assert_mc_mean(batch_means(post.samples["prior"]), prior_mean.numpy(), n_se=5)
    assert_mc_mean(batch_means(post.samples["confusion"]), conf_mean.numpy(), n_se=5)
    z = torch.nn.functional.one_hot(post.samples["z"], 2)
    assert_mc_mean(batch_means(z), z_marginal.numpy(), n_se=5)
