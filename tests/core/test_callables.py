"""The engines on plain Pyro callables: the same draws as the same program written as a
``Model`` subclass, one shape per site across engines, and how settings are told apart from
the model's keyword arguments."""

import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import Predictive

from pyromodels.core import (
    CallableModel,
    GibbsBlock,
    Model,
    ModelArgs,
    ModelSpecError,
    run_em,
    run_gibbs,
    run_nuts,
    run_svi,
)

N = 6
X = torch.linspace(-1.0, 1.0, N, dtype=torch.float64)
Y = torch.tensor([0.3, -0.2, 1.1, 0.4, -0.7, 0.9], dtype=torch.float64)
Z = torch.tensor([0.5, -1.5], dtype=torch.float64)


def program(x, z, y=None):
    """Scalar ``mu``, vector ``loc`` (2,), plated ``s`` (N,)."""
    mu = pyro.sample("mu", dist.Normal(torch.tensor(0.0, dtype=x.dtype), 1.0))
    loc = pyro.sample("loc", dist.Normal(torch.zeros(2, dtype=x.dtype), 1.0).to_event(1))
    pyro.sample("z", dist.Normal(loc, 1.0).to_event(1), obs=z)
    with pyro.plate("n", x.shape[0]):
        s = pyro.sample("s", dist.Normal(mu, 1.0))
        pyro.sample("y", dist.Normal(s + 0.0 * x, 1.0), obs=y)


def _normal(mean, precision, generator):
    return mean + torch.randn(mean.shape, generator=generator, dtype=mean.dtype) * precision.rsqrt()


def _mu(state, data, gen):
    s = state["s"]
    return {"mu": _normal(s.sum() / (1 + len(s)), torch.tensor(1.0 + len(s), dtype=s.dtype), gen)}


def _s(state, data, gen):
    y = _observed(data)["y"]
    return {"s": _normal((state["mu"] + y) / 2, torch.tensor(2.0, dtype=y.dtype), gen)}


def _loc(state, data, gen):
    z = _observed(data)["z"]
    return {"loc": _normal(z / 2, torch.tensor(2.0, dtype=z.dtype), gen)}


def _observed(data):
    """The observations from either form of the data: a tuple ``(x, z, y)`` or ModelArgs."""
    if isinstance(data, tuple):
        return {"z": data[1], "y": data[2]}
    return {"z": data.args[1], "y": data.kwargs["y"]}


BLOCKS = [GibbsBlock("mu", ("mu",), _mu), GibbsBlock("s", ("s",), _s), GibbsBlock("loc", ("loc",), _loc)]


class OneArgument(Model):
    """The same program as a one-argument Model (the form the library's models take)."""

    engines = ("svi", "nuts", "gibbs", "em")

    def model(self, data):
        x, z, y = data
        return program(x, z, y=y)

    def init_state(self, data, generator):
        seed = int(torch.randint(0, 2**62, (), generator=generator))
        with pyro.poutine.block():
            pyro.set_rng_seed(seed % 2**32)
            tr = pyro.poutine.trace(self.model).get_trace(data)
        return {k: tr.nodes[k]["value"] for k in ("mu", "loc", "s")}

    def gibbs_sweep(self, data):
        from pyromodels.core import GibbsSweep

        return GibbsSweep(BLOCKS)

    # MAP by coordinate ascent: each update maximises the log joint in one site
    def em_init(self, data, generator):
        return {"mu": torch.tensor(0.0, dtype=X.dtype), "loc": torch.zeros(2, dtype=X.dtype),
                "s": torch.zeros(N, dtype=X.dtype)}

    def em_step(self, data, params):
        _, z, y = data
        s = (params["mu"] + y) / 2
        return {"mu": s.sum() / (1 + len(s)), "loc": z / 2, "s": s}

    def em_objective(self, data, params):
        return float(self.log_joint(data, params))


class Multi(Model):
    """The same program as a Model whose ``model`` takes the arguments the Pyro way."""

    def model(self, x, z, y=None):
        return program(x, z, y=y)


FAST_NUTS = {"num_samples": 5, "num_warmup": 5, "num_chains": 2, "progress": False}
FAST_SVI = {"num_steps": 5, "num_samples": 7, "progress": False}
FAST_GIBBS = {"num_samples": 5, "num_warmup": 2, "num_chains": 2, "progress": False}


def _same_draws(a, b):
    assert set(a.samples) == set(b.samples)
    for k in a.samples:
        assert a.samples[k].shape == b.samples[k].shape, k
        assert torch.equal(a.samples[k], b.samples[k]), k


def test_nuts_plain_callable_equals_model_subclass():
    plain = run_nuts(program, X, Z, y=Y, seed=4, **FAST_NUTS)
    _same_draws(plain, OneArgument().fit((X, Z, Y), method="nuts", seed=4, **FAST_NUTS))
    _same_draws(plain, Multi().fit(X, Z, y=Y, method="nuts", seed=4, **FAST_NUTS))
    assert torch.equal(plain.sample_stats["lp"],
                       OneArgument().fit((X, Z, Y), method="nuts", seed=4, **FAST_NUTS).sample_stats["lp"])


def test_svi_plain_callable_equals_model_subclass_and_names_its_guide():
    plain = run_svi(program, None, X, Z, y=Y, seed=2, **FAST_SVI)
    one = OneArgument().fit((X, Z, Y), method="svi", seed=2, **FAST_SVI)
    _same_draws(plain, one)
    assert torch.equal(plain.losses, one.losses)
    assert plain.attrs["guide"] == "AutoNormal"


def test_svi_plain_callable_with_its_own_guide():
    def guide(x, z, y=None):
        pyro.sample("mu", dist.Normal(pyro.param("m", torch.tensor(0.0, dtype=x.dtype)), 1.0))
        pyro.sample("loc", dist.Normal(torch.zeros(2, dtype=x.dtype), 1.0).to_event(1))
        with pyro.plate("n", x.shape[0]):
            pyro.sample("s", dist.Normal(torch.zeros(x.shape[0], dtype=x.dtype), 1.0))

    post = run_svi(program, guide, X, Z, y=Y, seed=0, **FAST_SVI)
    assert "m" in post.params and post.attrs["guide"].endswith("guide")
    assert post.samples["mu"].shape == (1, 7)


def test_gibbs_plain_callable_takes_blocks_and_matches_the_model_subclass():
    plain = run_gibbs(program, BLOCKS, X, Z, y=Y, seed=1, **FAST_GIBBS)
    _same_draws(plain, OneArgument().fit((X, Z, Y), method="gibbs", seed=1, **FAST_GIBBS))


def test_one_shape_per_site_across_engines():
    expected = {"mu": (), "loc": (2,), "s": (N,)}
    fits = {
        "svi": run_svi(program, None, X, Z, y=Y, seed=0, **FAST_SVI),
        "nuts": run_nuts(program, X, Z, y=Y, seed=0, **FAST_NUTS),
        "gibbs": run_gibbs(program, BLOCKS, X, Z, y=Y, seed=0, **FAST_GIBBS),
        "em": OneArgument().fit((X, Z, Y), method="em", seed=0, progress=False),
    }
    for method, post in fits.items():
        shapes = {k: tuple(v.shape[2:]) for k, v in post.samples.items()}
        assert shapes == expected, method


def test_enumerated_discrete_site_of_a_plain_callable_is_found_and_restored():
    data = torch.tensor([-2.1, -1.9, 2.0, 2.2, -2.0])

    def mixture(x):
        w = pyro.sample("w", dist.Dirichlet(torch.ones(2)))
        locs = pyro.sample("locs", dist.Normal(torch.zeros(2), 3.0).to_event(1))
        with pyro.plate("n", len(x)):
            c = pyro.sample("c", dist.Categorical(w), infer={"enumerate": "parallel"})
            pyro.sample("x", dist.Normal(locs[c], 1.0), obs=x)

    nuts = run_nuts(mixture, data, seed=0, **FAST_NUTS)
    svi = run_svi(mixture, None, data, seed=0, **FAST_SVI)
    for post in (nuts, svi):
        assert post.samples["c"].dtype == torch.long and post.samples["c"].shape[2:] == (5,)
        assert post.samples["locs"].shape[2:] == (2,) and post.samples["w"].shape[2:] == (2,)
    assert nuts.model.discrete_sites == ("c",) and nuts.model.max_plate_nesting == 1


def test_posterior_keeps_the_program_and_its_arguments_for_predictive():
    post = run_nuts(program, X, Z, y=Y, seed=0, **FAST_NUTS)
    assert post.model_fn is program
    assert post.model_args[0] is X and post.model_args[1] is Z and post.model_kwargs["y"] is Y
    draws = {k: post.flat(k) for k in ("mu", "loc", "s")}
    pred = Predictive(post.model_fn, posterior_samples=draws, return_sites=["y"])
    replicated = pred(*post.model_args, **{**post.model_kwargs, "y": None})["y"]
    assert replicated.shape == (10, N)
    legacy = OneArgument().fit((X, Z, Y), method="nuts", seed=0, **FAST_NUTS)
    assert legacy.model_args == ((X, Z, Y),) and legacy.model_kwargs == {}


def test_a_misspelt_setting_is_an_error_not_a_model_argument():
    with pytest.raises(TypeError, match="num_sample, which is neither a setting of run_nuts"):
        run_nuts(program, X, Z, y=Y, num_sample=5)
    with pytest.raises(TypeError, match="num_step, which is neither a setting of run_svi"):
        OneArgument().fit((X, Z, Y), method="svi", num_step=5)
    with pytest.raises(TypeError, match=r"fit takes the engine by keyword: fit\(data, method='nuts'\)"):
        OneArgument().fit((X, Z, Y), "nuts")


def test_a_model_argument_named_like_a_setting_needs_model_kwargs():
    def seeded_program(x, z, y=None, seed=None):
        return program(x, z, y=y)

    with pytest.raises(TypeError, match="seed is both a setting of run_nuts and an argument"):
        run_nuts(seeded_program, X, Z, y=Y, seed=3, **FAST_NUTS)
    post = run_nuts(seeded_program, X, Z, model_kwargs={"y": Y, "seed": 9}, seed=3, **FAST_NUTS)
    assert post.model_kwargs == {"seed": 9, "y": Y} and post.attrs["seed"] == 3
    with pytest.raises(TypeError, match="y given both as a keyword argument and in model_kwargs"):
        run_nuts(seeded_program, X, Z, y=Y, model_kwargs={"y": Y})
    with pytest.raises(TypeError, match="model_kwargs must be a dict"):
        run_nuts(seeded_program, X, Z, model_kwargs=[("y", Y)])


def test_plain_callable_errors_name_what_is_missing():
    with pytest.raises(TypeError, match=r"run_svi\(model, guide, \*args, \*\*kwargs\)"):
        run_svi(program)
    with pytest.raises(TypeError, match=r"run_gibbs\(model, blocks, \*args, \*\*kwargs\)"):
        run_gibbs(program)
    with pytest.raises(TypeError, match="guide= was given as well"):
        run_svi(program, None, X, Z, y=Y, guide=None)
    with pytest.raises(ModelSpecError, match="em_init"):
        run_em(program, X, Z, y=Y)
    with pytest.raises(ModelSpecError, match="gibbs_sweep"):
        run_gibbs(program, None, X, Z, y=Y)
    with pytest.raises(TypeError, match="do not fit program"):
        run_nuts(program, X, y=Y)
    with pytest.raises(TypeError, match="model must be a Pyro callable"):
        run_nuts(3, X)


def test_checkpoint_fingerprint_covers_keyword_arguments(tmp_path):
    path = tmp_path / "gibbs.ckpt"
    first = run_gibbs(program, BLOCKS, X, Z, y=Y, seed=5, checkpoint=path, **FAST_GIBBS)
    again = run_gibbs(program, BLOCKS, X, Z, y=Y, resume=path, **FAST_GIBBS)
    _same_draws(first, again)
    with pytest.raises(ValueError, match="written for other data"):
        run_gibbs(program, BLOCKS, X, Z, y=Y + 1, resume=path, **FAST_GIBBS)


def test_binding_a_plain_callable_leaves_global_state_alone():
    def with_param(x, z, y=None):
        pyro.param("offset", torch.tensor(0.0, dtype=x.dtype))
        return program(x, z, y=y)

    pyro.clear_param_store()
    pyro.set_rng_seed(11)
    before = torch.get_rng_state()
    bound = CallableModel(with_param, ModelArgs((X, Z), {"y": Y}))  # traces the program once
    assert torch.equal(torch.get_rng_state(), before)
    assert "offset" not in pyro.get_param_store()
    assert bound.discrete_sites == () and bound.max_plate_nesting == 1


def test_svi_on_a_plain_callable_extends_from_its_checkpoint_bit_for_bit(tmp_path):
    path = tmp_path / "svi.ckpt"
    settings = {"num_samples": 7, "progress": False, "seed": 3}
    run_svi(program, None, X, Z, y=Y, num_steps=4, checkpoint=path, **settings)
    extended = run_svi(program, None, X, Z, y=Y, num_steps=8, resume=path, **settings)
    whole = run_svi(program, None, X, Z, y=Y, num_steps=8, **settings)
    assert torch.equal(extended.losses, whole.losses)
    _same_draws(extended, whole)
    with pytest.raises(ValueError, match="checkpoint is of model"):
        run_svi(Multi(), X, Z, y=Y, num_steps=8, resume=path, **settings)


def test_inference_data_of_a_plain_callable_names_its_arguments():
    idata = run_nuts(program, X, Z, y=Y, seed=0, **FAST_NUTS).to_inference_data(predictive=False)
    assert list(idata.constant_data.data_vars) == ["x"]
    assert set(idata.observed_data.data_vars) == {"y", "z"}
    assert idata.log_likelihood["y"].shape == (2, 5, N)
