"""The stepwise EM engine on a toy model (the mean of points): step-size schedules, running
statistics, callbacks and bad settings."""

import pytest
import torch

from pyromodels.core import Model, RobbinsMonro, run_stepwise_em
from pyromodels.core.stepwise_em import blend_stats, step_sizes

torch.set_num_threads(1)


class MeanModel(Model):
    """The mean of points ``x`` ``(N,)``: statistics ``(count, sum)``, M-step ``sum / count``."""

    engines = ("em",)

    def __init__(self, implied=True):
        if implied:
            self.em_model_stats = lambda data, params: {"n": torch.ones((), dtype=data.dtype),
                                                        "sum": params["mean"]}

    def model(self, data):  # pragma: no cover - the engines here never run the program
        raise NotImplementedError

    def em_init(self, data, generator):
        return {"mean": torch.zeros((), dtype=data.dtype)}

    def em_batch_stats(self, data, params, index):
        x = data[index]
        loglik = -0.5 * ((x - params["mean"]) ** 2).sum()
        return {"n": torch.tensor(float(len(x)), dtype=x.dtype), "sum": x.sum()}, loglik

    def em_m_step(self, data, stats, params):
        return {"mean": stats["sum"] / stats["n"]}

    def em_objective(self, data, params):
        return float(-0.5 * ((data - params["mean"]) ** 2).sum())


def test_robbins_monro_with_tau_zero_and_kappa_one_is_the_running_mean():
    # eta_t = 1/t: after each batch the statistics average every batch seen so far
    x = torch.arange(12, dtype=torch.float64) ** 2
    fit = run_stepwise_em(MeanModel(), x, batch_size=3, step_size=RobbinsMonro(tau=0.0,
                          kappa=1.0), shuffle=False, seed=0, progress=False)
    assert float(fit.params["mean"]) == pytest.approx(float(x.mean()), rel=1e-14)
    assert fit.diagnostics["step_sizes"] == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4])


def test_a_constant_step_size_forgets_geometrically():
    x = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    fit = run_stepwise_em(MeanModel(), x, batch_size=1, step_size=0.5, shuffle=False,
                          seed=0, progress=False)
    # s starts at the start's implied statistics (mean 0, count 1)
    s_n, s_sum = 1.0, 0.0
    for v in x.tolist():
        s_n, s_sum = 0.5 * s_n + 0.5, 0.5 * s_sum + 0.5 * v
    assert float(fit.params["mean"]) == pytest.approx(s_sum / s_n, rel=1e-14)


def test_without_implied_statistics_the_first_batch_starts_the_running_statistics():
    x = torch.tensor([3.0, 5.0, 9.0, 11.0], dtype=torch.float64)
    fit = run_stepwise_em(MeanModel(implied=False), x, batch_size=2, step_size=0.25,
                          shuffle=False, seed=0, progress=False)
    assert float(fit.params["mean"]) == pytest.approx(0.75 * 4.0 + 0.25 * 10.0)
    with pytest.raises(ValueError, match="em_model_stats"):
        run_stepwise_em(MeanModel(implied=False), x, batch_size=2, running="rebuilt",
                        progress=False)


def test_callbacks_see_each_step_and_can_stop():
    x = torch.randn(40, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    seen = []

    def stop_at_three(step, info):
        seen.append((step, info["step_size"], info["epoch"]))
        return step == 3

    fit = run_stepwise_em(MeanModel(), x, batch_size=4, num_epochs=2, callbacks=stop_at_three,
                          seed=1, progress=False)
    assert [s for s, _, _ in seen] == [1, 2, 3]
    assert fit.diagnostics["stopped_by_callback"] and len(fit.losses) == 3
    assert len(fit.diagnostics["epoch_objectives"]) == 1


def test_shuffled_batches_depend_on_the_seed_only():
    x = torch.randn(30, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    runs = [run_stepwise_em(MeanModel(), x, batch_size=7, step_size=0.3, seed=s,
                            progress=False) for s in (5, 5, 6)]
    assert torch.equal(runs[0].params["mean"], runs[1].params["mean"])
    assert not torch.equal(runs[0].params["mean"], runs[2].params["mean"])


@pytest.mark.parametrize("bad, error, match", [
    (0.0, ValueError, "step_size"),
    (1.5, ValueError, r"step_size must be in \(0, 1\]"),
    (-0.1, ValueError, "step_size"),
    (float("nan"), ValueError, "step_size"),
    ("0.1", TypeError, "step_size"),
    (True, TypeError, "step_size"),
])
def test_bad_step_sizes_are_named(bad, error, match):
    with pytest.raises(error, match=match):
        step_sizes(3, bad)
    with pytest.raises(error, match=match):
        run_stepwise_em(MeanModel(), torch.ones(4, dtype=torch.float64), step_size=bad,
                        progress=False)


def test_bad_settings_are_named():
    x = torch.ones(4, dtype=torch.float64)
    with pytest.raises(ValueError, match="batch_size"):
        run_stepwise_em(MeanModel(), x, batch_size=0, progress=False)
    with pytest.raises(ValueError, match="num_epochs"):
        run_stepwise_em(MeanModel(), x, num_epochs=0, progress=False)
    with pytest.raises(ValueError, match="running"):
        run_stepwise_em(MeanModel(), x, running="online", progress=False)
    with pytest.raises(ValueError, match="kappa"):
        step_sizes(2, RobbinsMonro(kappa=0.3))
    with pytest.raises(ValueError, match="differ"):
        blend_stats({"a": torch.zeros(1)}, {"b": torch.zeros(1)}, 0.5)
