"""Starts of the pairwise worker model: the start from the links' spectrum leaves the uniform
fixed point (every worker weight 0) that annealed random starts fall into on stratified links."""

import math

import pytest
import torch

from pyromodels.data.simulate_pairs import simulate_stratified_pairs
from pyromodels.metrics import clustering_accuracy
from pyromodels.scdc import pairwise_start
from pyromodels.scdc.pairwise_data import prepare_pairwise
from pyromodels.scdc.pairwise_model import PairwiseDawidSkene

ACCURACIES = [0.95, 0.9, 0.85, 0.8, 0.75]


def _face_like_pairs(seed):
    """The Face protocol's design on 600 items of 10 equal clusters: five workers, each
    judging 500 same-cluster and 500 different-cluster pairs."""
    z = torch.arange(600) % 10
    pairs, _ = simulate_stratified_pairs(z, 5, 500, alpha=ACCURACIES, beta=ACCURACIES,
                                         seed=seed)
    return pairs, z


# float32 bounds wobble by a rounding unit near convergence: run_em must not call that a
# decrease (its slack follows the parameters' precision, not torch's default dtype)
@pytest.mark.filterwarnings("error::pyromodels.core.errors.ConvergenceWarning")
def test_links_start_recovers_the_workers_where_random_starts_stop_at_chance():
    """Seed 0 of the stratified design: all five annealed random starts end at the uniform
    clustering with every weight 0 (the fixed point), the spectral start recovers the
    weights in the true order, each within 4 posterior standard deviations of
    2 logit(accuracy), and the clusters far above chance (0.1; one merged pair of clusters
    scores 0.9)."""
    pairs, z = _face_like_pairs(0)
    # float32, torch's default: there the annealing melts the random clusters to uniform
    # within rounding, and nothing is left to grow back (in float64 they regrow, to merged
    # clusterings)
    data = prepare_pairwise(pairs, 10, 1.0, (1.0, 1.0), (1.0, 1.0), dtype=torch.float32)
    fit = dict(seed=0, n_init=5, max_iter=200, progress=False)
    old = PairwiseDawidSkene(10, start="random").fit(data, **fit)
    assert bool((old.params["weights"].abs() < 0.05).all()), old.params["weights"]
    assert old.params["labels"].unique().numel() < 10 or float(
        old.params["probas"].max(-1).values.mean()) < 0.2  # one cluster, or spread evenly

    post = PairwiseDawidSkene(10).fit(data, **fit)
    weights = post.params["weights"]
    truth = torch.tensor([2 * math.log(a / (1 - a)) for a in ACCURACIES], dtype=torch.float32)
    a, b = post.params["alpha_concentration"], post.params["beta_concentration"]
    sd = (torch.polygamma(1, a).sum(-1) + torch.polygamma(1, b).sum(-1)).sqrt()
    assert bool((weights[:-1] > weights[1:]).all()), weights
    assert bool(((weights - truth).abs() < 4 * sd).all()), (weights, truth, sd)
    acc = clustering_accuracy(z.numpy(), post.params["labels"].numpy())
    assert acc > 0.8, acc
    assert post.params["elbo"] > old.params["elbo"]  # the bound also prefers it


def test_spectral_start_is_a_distribution_and_leaves_unlinked_items_at_the_prior(make_pairs):
    pairs, z = make_pairs(40, 3, [0.9, 0.8], 60, seed=4)
    model = PairwiseDawidSkene(3)
    # two more items that no link touches
    from pyromodels.data.pairwise import PairwiseAnnotations

    wider = PairwiseAnnotations.from_arrays(pairs.i_idx, pairs.j_idx, pairs.worker_idx,
                                            pairs.link, num_items=42,
                                            num_workers=pairs.num_workers)
    data = model.prepare(wider)
    for seed in range(2):
        q = pairwise_start.spectral_start(data, torch.Generator().manual_seed(seed))["q"]
        assert q.shape == (42, 3)
        assert bool((q >= 0).all())
        torch.testing.assert_close(q.sum(-1), torch.ones(42, dtype=q.dtype))
        torch.testing.assert_close(q[40:], torch.full((2, 3), 1 / 3, dtype=q.dtype))


def test_spectral_start_separates_two_clean_groups():
    """Two groups of five items, must links inside and cannot links across, one worker: the
    embedding puts each group on one point, so the start's labels are the groups."""
    from pyromodels.data.pairwise import PairwiseAnnotations

    i, j = torch.triu_indices(10, 10, offset=1)
    z = (torch.arange(10) >= 5).long()
    pairs = PairwiseAnnotations.from_arrays(i, j, torch.zeros_like(i), (z[i] == z[j]).long())
    data = PairwiseDawidSkene(2).prepare(pairs)
    q = pairwise_start.spectral_start(data, torch.Generator().manual_seed(0), sweeps=0)["q"]
    assert clustering_accuracy(z.numpy(), q.argmax(-1).numpy()) == 1.0
    assert float(q.max(-1).values.min()) == pytest.approx(0.75)  # half-way to uniform


def test_start_option_is_checked():
    with pytest.raises(ValueError, match="start must be one of"):
        PairwiseDawidSkene(2, start="spectral")
    with pytest.raises(ValueError, match="start must be one of"):
        PairwiseDawidSkene(2, start=None)
    with pytest.raises(ValueError, match="smoothing"):
        pairwise_start.spectral_start(None, None, smoothing=1.0)


def test_sparse_and_dense_eigensolvers_give_the_same_embedding(make_pairs, monkeypatch):
    """The embedding's rows are the eigenvectors up to a rotation of the basis, so their Gram
    matrix is what both solvers must agree on."""
    pairs, _ = make_pairs(80, 3, [0.9, 0.8], 300, seed=5)
    data = PairwiseDawidSkene(3).prepare(pairs)
    linked, dense = pairwise_start.link_embedding(data, 0)
    monkeypatch.setattr(pairwise_start, "DENSE_EIGEN_ITEMS", 0)
    monkeypatch.setattr(pairwise_start, "EIGEN_TOL", 0.0)  # full precision, as the dense one
    linked_sparse, sparse = pairwise_start.link_embedding(data, 0)
    assert (linked == linked_sparse).all() and dense.shape == sparse.shape == (len(linked), 3)
    torch.testing.assert_close(torch.from_numpy(sparse @ sparse.T),
                               torch.from_numpy(dense @ dense.T), atol=1e-6, rtol=0)


def test_restarts_of_one_fit_share_the_embedding(make_pairs, monkeypatch):
    pairs, _ = make_pairs(50, 3, [0.9, 0.8], 150, seed=6)
    calls = []
    embed = pairwise_start.link_embedding
    monkeypatch.setattr(pairwise_start, "link_embedding",
                        lambda data, seed: calls.append(seed) or embed(data, seed))
    PairwiseDawidSkene(3).fit(pairs, seed=0, n_init=3, max_iter=5, progress=False,
                              warn_not_converged=False)
    assert len(calls) == 1
    PairwiseDawidSkene(3).fit(pairs, seed=0, n_init=2, max_iter=5, progress=False,
                              warn_not_converged=False)
    assert len(calls) == 2  # a new fit prepares new data
