"""Batch EM for latent tree parameters: against scikit-learn, monotonicity, recovery of known
parameters, the eigenvalue floor and the fixed-covariance mode."""

import warnings

import pytest
import torch

from pyromodels.core import run_em
from pyromodels.trees import LatentTree, LatentTreeModel, TreeParams, sample_tree
from pyromodels.trees.em import (
    batch_stats,
    floor_eigenvalues,
    m_step,
    model_stats,
    params_from_dict,
    params_to_dict,
)
from pyromodels.trees.message_passing import tree_log_likelihood

from .conftest import random_case

torch.set_num_threads(1)


def _gmm_start(k=3, d=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    tree = LatentTree.single(k, d, pouch=True)
    start = TreeParams.random(tree, gen, concentration=3.0, mean_scale=2.0)
    z = torch.cat([torch.randn(60, d, generator=gen, dtype=torch.float64) * (0.5 + i) + 3 * i
                   for i in range(k)])
    return tree, start, z


def test_one_step_on_a_single_node_equals_sklearn_gaussian_mixture():
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    tree, start, z = _gmm_start()
    model = LatentTreeModel(tree, floor=1e-10)
    new = model.tree_params(model.em_step(z, params_to_dict(start)))
    precisions = torch.linalg.inv(start.covariances[0])
    gm = GaussianMixture(3, covariance_type="full", max_iter=1, n_init=1, reg_covar=0.0,
                         weights_init=start.root_probs.numpy(),
                         means_init=start.means[0].numpy(),
                         precisions_init=precisions.numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gm.fit(z.numpy())
    torch.testing.assert_close(new.root_probs, torch.from_numpy(gm.weights_),
                               rtol=0, atol=1e-8)
    torch.testing.assert_close(new.means[0], torch.from_numpy(gm.means_), rtol=0, atol=1e-8)
    torch.testing.assert_close(new.covariances[0], torch.from_numpy(gm.covariances_),
                               rtol=0, atol=1e-8)
    # sklearn's bound is the mean log-likelihood at the start of its last E-step
    start_loglik = model.em_objective(z, params_to_dict(start)) / z.shape[0]
    assert start_loglik == pytest.approx(gm.lower_bound_, abs=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("covariance", ["full", "fixed"])
def test_batch_em_never_decreases_the_log_likelihood(shape, seed, covariance):
    params, _ = random_case(shape, seed)
    z, _ = sample_tree(params, 300, torch.Generator().manual_seed(seed + 10))
    model = LatentTreeModel(params.tree, covariance=covariance)
    values = model.em_init(z, torch.Generator().manual_seed(seed))
    history = []
    for _ in range(25):
        values, loglik = model.em_step_with_objective(z, values)
        history.append(loglik)
    history.append(model.em_objective(z, values))
    steps = torch.tensor(history).diff()
    slack = 1e-9 * abs(history[-1])
    assert bool((steps >= -slack).all()), f"log-likelihood decreased: {steps.min():.3g}"
    assert history[-1] > history[0]


def test_m_step_maps_the_statistics_the_parameters_imply_back_to_them(shape):
    params, _ = random_case(shape, 3)
    again = m_step(params.tree, model_stats(params), params, floor=0.0)
    for a, b in zip(params.tensors(), again.tensors()):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_statistics_are_sums_of_posterior_expectations():
    params, _ = random_case("chain", 4)
    z, _ = sample_tree(params, 7, torch.Generator().manual_seed(5))
    whole, loglik = batch_stats(params, z)
    parts = [batch_stats(params, z[i:i + 1])[0] for i in range(7)]
    for key, value in whole.items():
        torch.testing.assert_close(value, sum(p[key] for p in parts))
    torch.testing.assert_close(loglik, tree_log_likelihood(params, z))


def _truth():
    tree = LatentTree.from_edges({"A": 2, "B": 2}, [("A", "B")],
                                 [("A", [0, 1]), ("B", [2]), ("B", [3])])
    covs = [torch.tensor([[[1.0, 0.4], [0.4, 0.8]], [[0.6, -0.2], [-0.2, 1.2]]]),
            torch.tensor([[[1.0]], [[0.5]]]), torch.tensor([[[0.7]], [[1.3]]])]
    means = [torch.tensor([[-4.0, -4.0], [4.0, 3.0]]), torch.tensor([[-4.0], [4.0]]),
             torch.tensor([[3.0], [-3.0]])]
    params = TreeParams.from_covariances(
        tree, torch.tensor([0.35, 0.65], dtype=torch.float64),
        [None, torch.tensor([[0.8, 0.2], [0.3, 0.7]], dtype=torch.float64)],
        [m.double() for m in means], [c.double() for c in covs])
    return tree, params


def test_em_recovers_known_parameters_within_a_few_standard_errors():
    tree, truth = _truth()
    n = 20_000
    z, y = sample_tree(truth, n, torch.Generator().manual_seed(11))
    # start near the truth (so the states keep their labels), not at it
    start = TreeParams(tree, torch.tensor([0.5, 0.5], dtype=torch.float64),
                       [None, torch.full((2, 2), 0.5, dtype=torch.float64)],
                       [m + 0.5 for m in truth.means],
                       [torch.eye(len(b), dtype=torch.float64).expand(2, -1, -1)
                        for b in tree.pouches])
    model = LatentTreeModel(tree)
    fit = run_em(model, z, init=params_to_dict(start), tol=1e-12, max_iter=500, seed=0,
                 progress=False)
    est = model.tree_params(fit)
    # complete-data standard errors (the states are nearly certain given z)
    counts = [torch.bincount(y[:, j], minlength=2).double() for j in range(2)]
    p = truth.root_probs
    assert (est.root_probs - p).abs().max() < 5 * (p * (1 - p) / n).sqrt().max()
    a = truth.cpts[1]
    se = (a * (1 - a) / counts[0].unsqueeze(-1)).sqrt()
    assert bool(((est.cpts[1] - a).abs() < 5 * se).all())
    for b, parent in enumerate(tree.pouch_parents):
        cov = truth.covariances[b]
        var = cov.diagonal(dim1=-2, dim2=-1)
        se_mean = (var / counts[parent].unsqueeze(-1)).sqrt()
        assert bool(((est.means[b] - truth.means[b]).abs() < 5 * se_mean).all()), b
        # Var of a sample covariance entry: (S_ij^2 + S_ii S_jj) / n
        se_cov = ((cov ** 2 + var.unsqueeze(-1) * var.unsqueeze(-2))
                  / counts[parent][:, None, None]).sqrt()
        assert bool(((est.covariances[b] - cov).abs() < 5 * se_cov).all()), b


def test_fixed_covariances_stay_at_alpha_and_only_means_move():
    tree, truth = _truth()
    z, _ = sample_tree(truth, 500, torch.Generator().manual_seed(1))
    model = LatentTreeModel(tree, covariance="fixed", alpha=2.5)
    values = model.em_init(z, torch.Generator().manual_seed(0))
    for _ in range(3):
        values = model.em_step(z, values)
    for cov in model.tree_params(values).covariances:
        eye = torch.eye(cov.shape[-1], dtype=cov.dtype)
        torch.testing.assert_close(cov, 2.5 * eye.expand_as(cov))


def test_the_eigenvalue_floor_holds_on_degenerate_pouches():
    tree = LatentTree.single(2, 3, pouch=True)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(200, 1, generator=gen, dtype=torch.float64)
    # collinear columns: every covariance of the pouch is singular before the floor
    z = torch.cat([x, 2 * x, 0.1 * x + 3 * (x > 0)], dim=1)
    for floor in (0.01, 0.3):
        model = LatentTreeModel(tree, floor=floor)
        values = model.em_init(z, torch.Generator().manual_seed(1))
        for _ in range(3):
            values = model.em_step(z, values)
            low = torch.linalg.eigvalsh(model.tree_params(values).covariances[0]).min()
            assert float(low) >= floor * (1 - 1e-9)


def test_floor_leaves_covariances_above_it_unchanged():
    a = torch.tensor([[[2.0, 0.3], [0.3, 1.0]], [[1e-4, 0.0], [0.0, 1.0]]],
                     dtype=torch.float64)
    out = floor_eigenvalues(a, 0.01)
    assert torch.equal(out[0], a[0])
    torch.testing.assert_close(torch.linalg.eigvalsh(out[1]),
                               torch.tensor([0.01, 1.0], dtype=torch.float64))


def test_run_em_restarts_keep_the_best_and_report_bic():
    tree, truth = _truth()
    z, _ = sample_tree(truth, 400, torch.Generator().manual_seed(2))
    model = LatentTreeModel(tree)
    fit = run_em(model, z, n_init=3, seed=4, max_iter=300, progress=False)
    objectives = fit.diagnostics["restart_objectives"]
    assert fit.losses[-1] == max(objectives)
    est = model.tree_params(fit)
    from pyromodels.trees import tree_bic
    assert float(fit.params["bic"]) == pytest.approx(tree_bic(est, z), rel=1e-12)
    assert fit.params["responsibilities.A"].shape == (400, 2)


def test_run_em_resumes_from_a_checkpoint_bit_for_bit(tmp_path):
    tree, truth = _truth()
    z, _ = sample_tree(truth, 200, torch.Generator().manual_seed(3))
    model = LatentTreeModel(tree)
    settings = {"seed": 5, "max_iter": 40, "progress": False, "warn_not_converged": False}
    whole = run_em(model, z, n_init=3, **settings)
    run_em(model, z, n_init=2, checkpoint=tmp_path / "em.pt", **settings)
    resumed = run_em(model, z, n_init=3, resume=tmp_path / "em.pt", **settings)
    for key in params_to_dict(model.tree_params(whole)):
        assert torch.equal(whole.params[key], resumed.params[key]), key


def test_params_round_trip_through_the_engine_dict(shape):
    params, _ = random_case(shape, 0)
    back = params_from_dict(params.tree, params_to_dict(params))
    for a, b in zip(params.tensors(), back.tensors()):
        assert torch.equal(a, b)



@pytest.mark.parametrize("name", ["single", "three_level"])  # nodes with several pouches
def test_start_puts_each_state_of_a_node_at_one_data_point_across_its_pouches(name):
    params, _ = random_case(name, 0)
    z, _ = sample_tree(params, 50, torch.Generator().manual_seed(1))
    model = LatentTreeModel(params.tree)
    start = model.tree_params(model.em_init(z, torch.Generator().manual_seed(2)))
    tree = params.tree
    for j, blocks in enumerate(tree.leaves):
        if not blocks:
            continue
        cols = [c for b in blocks for c in tree.pouches[b]]
        centres = torch.cat([start.means[b] for b in blocks], dim=1)  # (K_j, sum d_b)
        for centre in centres:  # each state's means are one row of z, in every pouch
            assert bool((z[:, cols] == centre).all(-1).any()), tree.names[j]


def test_fit_defaults_to_em():
    tree, truth = _truth()
    z, _ = sample_tree(truth, 300, torch.Generator().manual_seed(6))
    model = LatentTreeModel(tree)
    fit = model.fit(z, seed=3, progress=False)
    same = run_em(model, z, seed=3, progress=False)
    assert fit.method == "em"
    for key in params_to_dict(model.tree_params(fit)):
        assert torch.equal(fit.params[key], same.params[key])
