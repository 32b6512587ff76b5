"""Stepwise EM of latent tree parameters: the textbook running statistics and the LTVAE
release's form (statistics rebuilt from the current parameters, spec ltvae.md §3.4)."""

import pytest
import torch

from pyromodels.core import run_stepwise_em
from pyromodels.trees import LatentTreeModel, sample_tree, tree_posterior
from pyromodels.trees.em import node_prior_marginals, params_to_dict

from .conftest import random_case

torch.set_num_threads(1)


def _case(shape="chain", n=120, seed=0, covariance="full"):
    params, _ = random_case(shape, seed)
    z, _ = sample_tree(params, n, torch.Generator().manual_seed(seed + 1))
    model = LatentTreeModel(params.tree, covariance=covariance)
    start = model.em_init(z, torch.Generator().manual_seed(seed + 2))
    return model, z, start


@pytest.mark.parametrize("running", ["average", "rebuilt"])
@pytest.mark.parametrize("covariance", ["full", "fixed"])
def test_step_size_one_on_one_full_batch_is_one_batch_em_step(shape, running, covariance):
    model, z, start = _case(shape, covariance=covariance)
    batch = model.em_step(z, start)
    fit = run_stepwise_em(model, z, batch_size=z.shape[0], num_epochs=1, step_size=1.0,
                          running=running, shuffle=False, init=start, seed=0, progress=False)
    assert fit.diagnostics["n_iter"] == 1
    for key, value in batch.items():
        torch.testing.assert_close(fit.params[key], value, rtol=1e-12, atol=1e-12)


def test_released_form_matches_the_spec_formula_for_cpts_and_means():
    model, z, start = _case("chain", n=50, covariance="fixed")
    eta, b = 0.3, z.shape[0]
    fit = run_stepwise_em(model, z, batch_size=b, step_size=eta, running="rebuilt",
                          shuffle=False, init=start, seed=0, progress=False)
    params = model.tree_params(start)
    tree = params.tree
    post = tree_posterior(params, z)
    prior = node_prior_marginals(params)
    for j in tree.order[1:]:
        p = tree.parents[j]
        # A[k',k] = [(1-eta) B P(k') A[k',k] + eta sum_i P(k',k|z_i)]
        #           / [(1-eta) B P(k') + eta sum_i P(k'|z_i)]
        num = (1 - eta) * b * prior[p].unsqueeze(-1) * params.cpts[j] \
            + eta * post.edge_marginals[j].sum(0)
        den = (1 - eta) * b * prior[p] + eta * post.node_marginals[p].sum(0)
        torch.testing.assert_close(fit.params[f"cpt.{tree.names[j]}"],
                                   num / den.unsqueeze(-1), rtol=1e-12, atol=1e-12)
    for i, (block, p) in enumerate(zip(tree.pouches, tree.pouch_parents)):
        w = post.node_marginals[p]
        num = (1 - eta) * b * prior[p].unsqueeze(-1) * params.means[i] \
            + eta * w.T @ z[:, list(block)]
        den = (1 - eta) * b * prior[p] + eta * w.sum(0)
        torch.testing.assert_close(fit.params[f"means.{i}"], num / den.unsqueeze(-1),
                                   rtol=1e-12, atol=1e-12)


def test_released_form_equals_the_textbook_form_unless_the_floor_acts():
    # the M-step inverts the statistics the parameters imply, so rebuilding them from the
    # parameters changes nothing ... until the eigenvalue floor moves a covariance
    model, z, start = _case("star", n=160)
    settings = {"batch_size": 40, "num_epochs": 2, "step_size": 0.5, "shuffle": False,
                "init": start, "seed": 0, "progress": False}
    for floor, same in ((0.0, True), (2.0, False)):
        floored = LatentTreeModel(model.tree, floor=floor)
        runs = [run_stepwise_em(floored, z, running=r, **settings)
                for r in ("average", "rebuilt")]
        close = all(torch.allclose(runs[0].params[k], runs[1].params[k], rtol=1e-9, atol=1e-9)
                    for k in start)
        assert close is same, floor


def test_stepwise_em_improves_the_fit_over_epochs():
    model, z, start = _case("star", n=600, seed=3)
    fit = run_stepwise_em(model, z, batch_size=50, num_epochs=4, init=start, seed=1,
                          progress=False)
    before = model.em_objective(z, start)
    after = fit.diagnostics["epoch_objectives"]
    assert len(after) == 4 and len(fit.losses) == 4 * 12
    assert after[-1] > before
    assert set(params_to_dict(model.tree_params(fit))) <= set(fit.params)
