"""run_svi reads a model's own objective (the ``svi_elbo`` hook) and resumes a model whose
params live in the program and in that objective, not only in the guide."""

import pyro
import pyro.distributions as dist
import torch
from pyro.infer import Trace_ELBO

from pyromodels.core import Model, run_svi


class PenalisedELBO(Trace_ELBO):
    """Trace_ELBO plus a term on a param that only the objective reads."""

    def _term(self):
        shift = pyro.param("shift", torch.tensor(0.5, dtype=torch.float64))
        return -(shift - 2.0) ** 2

    def loss(self, model, guide, *args, **kwargs):
        return super().loss(model, guide, *args, **kwargs) - float(self._term())

    def loss_and_grads(self, model, guide, *args, **kwargs):
        loss = self.differentiable_loss(model, guide, *args, **kwargs) - self._term()
        loss.backward()
        return float(loss.detach())


class MapModel(Model):
    """``loc`` is a param of the program itself (a MAP estimate); the guide is empty."""

    engines = ("svi",)

    def __init__(self, own_objective: bool):
        self.own_objective = own_objective

    def model(self, data):
        loc = pyro.param("loc", torch.tensor(0.0, dtype=torch.float64))
        with pyro.plate("data", len(data)):
            pyro.sample("y", dist.Normal(loc, 1.0), obs=data)

    def guide(self, data):
        pass

    def svi_elbo(self, num_particles=1):
        return PenalisedELBO(num_particles=num_particles) if self.own_objective else None


def _data():
    return torch.randn(20, generator=torch.Generator().manual_seed(0), dtype=torch.float64) + 3


def test_run_svi_uses_the_model_s_own_objective():
    kw = dict(num_steps=30, num_samples=1, seed=0, progress=False)
    own = run_svi(MapModel(True), _data(), **kw)
    explicit = run_svi(MapModel(False), _data(), elbo=PenalisedELBO(), **kw)
    plain = run_svi(MapModel(False), _data(), **kw)
    assert torch.equal(own.losses, explicit.losses)
    assert "shift" in own.params and "shift" not in plain.params
    assert not torch.equal(own.losses, plain.losses)


def test_resume_builds_the_params_of_the_program_and_the_objective(tmp_path):
    model, path = MapModel(True), tmp_path / "map.ckpt"
    kw = dict(num_samples=1, seed=0, progress=False)
    whole = run_svi(model, _data(), num_steps=40, **kw)
    run_svi(model, _data(), num_steps=20, checkpoint=path, **kw)
    resumed = run_svi(model, _data(), num_steps=40, resume=path, **kw)
    assert torch.equal(resumed.losses, whole.losses)
    assert torch.equal(resumed.params["loc"], whole.params["loc"])
    assert torch.equal(resumed.params["shift"], whole.params["shift"])
