"""The reference mixture's hand-written paths against its Pyro program."""

import pyro.distributions as dist
import pytest
import torch

from pyromodels.core import make_generator, marginal_log_joint, sample_discrete
from pyromodels.core.enumeration import first_available_dim
from pyromodels.mixture import GaussianMixtureModel
from pyromodels.mixture import em as em_kernels
from pyromodels.testing import check_conditional, check_discrete_conditional

PARAMS = ("weights", "locs", "precisions")


def _state(make_blobs, K=3, n=10, seed=1):
    x, _ = make_blobs(6, n - 6, seed=seed, sep=1.0)
    model = GaussianMixtureModel(K)
    data = model.prepare(x)
    return model, data, model.init_state(data, make_generator(seed))


def test_em_objective_is_the_programs_marginal_log_joint(make_blobs):
    model, data, state = _state(make_blobs)
    params = {k: state[k] for k in PARAMS}
    ours = model.em_objective(data, params)
    program = float(marginal_log_joint(model, data, params))
    assert ours == pytest.approx(program, rel=1e-12, abs=1e-9)


def test_pointwise_log_likelihood_sums_to_the_enumerated_likelihood(make_blobs):
    model, data, state = _state(make_blobs)
    params = {k: state[k] for k in PARAMS}
    samples = {k: v[None, None] for k, v in params.items()}
    pointwise = model.log_likelihood_pointwise(data, samples)["x"]
    assert pointwise.shape == (1, 1, data.num_points)
    # brute force: sum over components with torch's own MultivariateNormal
    comps = dist.MultivariateNormal(params["locs"], precision_matrix=params["precisions"])
    brute = torch.logsumexp(comps.log_prob(data.x.unsqueeze(-2)) + params["weights"].log(), -1)
    assert torch.allclose(pointwise[0, 0], brute, atol=1e-10)
    # and the program: marginal log joint minus the log prior of the parameters
    prior_only = float(marginal_log_joint(model, data, params)) - float(brute.sum())
    assert prior_only == pytest.approx(model.em_objective(data, params) - float(brute.sum()))


@pytest.mark.parametrize("block", ["weights", "components"])
def test_continuous_gibbs_conditionals_by_condition_and_score(block, make_blobs):
    model, data, state = _state(make_blobs)
    blk = {b.name: b for b in model.gibbs_sweep(data).blocks}[block]
    # log q(theta) - log p(theta, rest) must not depend on theta: spread 0 up to rounding
    assert check_conditional(model, data, blk, state, num_values=6, seed=3) < 1e-9


def test_assignment_conditional_equals_brute_force_over_every_label(make_blobs):
    model, data, state = _state(make_blobs, K=3)
    blk = model.gibbs_sweep(data).blocks[0]
    assert blk.name == "assignments"
    for n in range(data.num_points):
        own, joint = check_discrete_conditional(model, data, blk, state, "z", n, range(3))
        assert torch.allclose(own, joint, atol=1e-12)


def test_condition_and_score_catches_a_wrong_conditional(make_blobs):
    # negative control: a weights conditional that forgets the prior must be detected
    from torch.distributions import Dirichlet

    from pyromodels.core import GibbsBlock

    model, data, state = _state(make_blobs)
    good = {b.name: b for b in model.gibbs_sweep(data).blocks}["weights"]

    def wrong_density(values, st, dt):
        counts = torch.bincount(st["z"], minlength=3).double()
        return Dirichlet(counts + 1e-3).log_prob(values["weights"])

    wrong = GibbsBlock("weights", ("weights",), good.update, wrong_density)
    assert check_conditional(model, data, wrong, state, num_values=6, seed=3) > 1e-3


def test_sample_discrete_map_vectorised_equals_loop_and_em_labels(make_blobs):
    x, _ = make_blobs(seed=2, sep=1.5)
    model = GaussianMixtureModel(2)
    data = model.prepare(x)
    gen = make_generator(0)
    draws = [model.init_state(data, gen) for _ in range(3)]
    samples = {k: torch.stack([d[k] for d in draws]).reshape(1, 3, *draws[0][k].shape) for k in PARAMS}
    vec = sample_discrete(model, data, samples, temperature=0, vectorize=True)["z"]
    loop = sample_discrete(model, data, samples, temperature=0, vectorize=False)["z"]
    assert vec.shape == (1, 3, data.num_points) and vec.dtype == torch.long
    assert torch.equal(vec, loop)
    for i, d in enumerate(draws):
        resp = em_kernels.responsibilities(data, d)
        assert torch.equal(vec[0, i], resp.argmax(-1))


def test_sample_discrete_draws_follow_the_responsibilities(make_blobs):
    x, _ = make_blobs(8, 4, seed=3, sep=0.5)
    model = GaussianMixtureModel(2)
    data = model.prepare(x)
    params = model.init_values(data, make_generator(0))
    S = 4000
    samples = {k: v.expand(1, S, *v.shape) for k, v in params.items()}
    z = sample_discrete(model, data, samples, seed=0)["z"][0].double()
    p1 = em_kernels.responsibilities(data, params)[:, 1]
    freq = z.mean(0)
    se = (p1 * (1 - p1) / S).sqrt().clamp_min(1e-6)
    # 12 points, each within 4.5 binomial standard errors (family-wise level about 1e-4)
    assert ((freq - p1).abs() <= 4.5 * se + 1e-12).all()


def test_first_available_dim():
    assert first_available_dim(1) == -2
    assert first_available_dim(1, particle_plate=True) == -3


def test_starting_values_keep_the_data_dtype_whatever_the_default(make_blobs):
    x, _ = make_blobs()
    torch.set_default_dtype(torch.float32)  # the autouse fixture restores float64 afterwards
    model = GaussianMixtureModel(2)
    state = model.init_state(model.prepare(x.double()), make_generator(0))
    assert all(state[k].dtype == torch.float64 for k in PARAMS)
