"""``Model.fit`` tells its settings (``method`` included) from the program's arguments by the
engines' rule: a keyword that names both is an error asking for ``model_kwargs=``."""

import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.core import Model

X = torch.tensor([0.3, -0.2, 1.1, 0.4], dtype=torch.float64)
SVI = {"num_steps": 2, "num_samples": 3, "progress": False}


def _story(x, shift):
    mu = pyro.sample("mu", dist.Normal(torch.tensor(shift, dtype=x.dtype), 1.0))
    with pyro.plate("n", x.shape[0]):
        pyro.sample("x", dist.Normal(mu, 1.0), obs=x)


class WithMethod(Model):
    """A program with an argument named like fit's ``method``; it shifts the prior mean."""

    engines = ("svi", "nuts")

    def model(self, x, method=None):
        _story(x, 0.0 if method is None else 50.0)


class WithSeed(Model):
    def model(self, x, seed=None):
        _story(x, 0.0)


class WithNumSamples(Model):
    def model(self, x, num_samples=None):
        _story(x, 0.0)


@pytest.mark.parametrize("cls, name, value", [(WithMethod, "method", "svi"), (WithSeed, "seed", 0),
                                              (WithNumSamples, "num_samples", 3)])
def test_a_setting_named_like_a_model_argument_asks_for_model_kwargs(cls, name, value):
    settings = {k: v for k, v in {**SVI, "seed": 0}.items() if k != name}
    with pytest.raises(TypeError, match=rf"fit: {name} is both a setting of fit and an argument "
                                        rf"of {cls.__name__}.model.*model_kwargs=\{{\.\.\.\}}"):
        cls().fit(X, **{name: value}, **settings)


def test_model_kwargs_carry_the_programs_arguments_and_the_settings_stay_fits():
    post = WithMethod().fit(X, method="svi", seed=1, model_kwargs={"method": "shifted"}, **SVI)
    assert post.method == "svi" and post.attrs["seed"] == 1
    assert post.model_kwargs == {"method": "shifted"}
    # the program saw method="shifted": its prior mean 50 holds the short fit's mu far above
    # the data (mean 0.4), where the unshifted program's stays within a few units of 0
    assert float(post.mean("mu")) > 20
    plain = WithMethod().fit(X, seed=1, **SVI)
    assert plain.method == "svi" and abs(float(plain.mean("mu"))) < 5


def test_without_a_clash_method_defaults_to_svi():
    class Plain(Model):
        def model(self, x):
            _story(x, 0.0)

    assert Plain().fit(X, seed=0, **SVI).method == "svi"
