"""Saved fits: Posterior.save / Posterior.load round trips and Posterior.from_inference_data."""

import arviz as az
import numpy as np
import pytest
import torch

from pyromodels.core import Posterior
from pyromodels.core.monitor import ConvergenceMonitor
from pyromodels.crowd import DawidSkene
from pyromodels.data import simulate_annotations


def assert_same(a, b, where):
    """Equal values of the same type (tensors: same dtype and elements, NaN equal to NaN)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        assert torch.equal(a, b) or bool(((a == b) | (a.isnan() & b.isnan())).all()), where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def assert_same_dict(a: dict, b: dict, where: str):
    assert set(a) == set(b), f"{where}: {sorted(a)} != {sorted(b)}"
    for key in a:
        assert_same(a[key], b[key], f"{where}[{key!r}]")


def handmade_posterior():
    g = torch.Generator().manual_seed(0)
    return Posterior(
        samples={
            "mu": torch.randn(2, 7, 3, generator=g, dtype=torch.float64),
            "w": torch.rand(2, 7, generator=g),  # float32
            "z": torch.randint(0, 4, (2, 7, 5), generator=g),  # integer discrete site
        },
        method="gibbs",
        sample_stats={"lp": torch.randn(2, 7, dtype=torch.float64),
                      "diverging": torch.zeros(2, 7, dtype=torch.bool)},
        losses=torch.tensor([[1.0, 0.5, float("nan")], [2.0, 1.0, 0.25]], dtype=torch.float64),
        params={"probas": torch.rand(5, 4, generator=g), "labels": torch.arange(5),
                "mask": torch.tensor([True, False]), "log_likelihood": torch.tensor(-3.25),
                "weights": np.array([0.5, 0.25]), "history": [3, 1, 0], "step": 0.125},
        diagnostics={"converged": False, "n_iter": 12, "restart_objectives": [-1.5, -2.0],
                     "note": None, "monitor": ConvergenceMonitor(tol=1e-6)},
        attrs={"method": "gibbs", "seed": 11, "device": "cpu", "wall_time_s": 0.1 + 0.2,
               "converged": True, "label": None, "blocks": ["a", "b"], "nested": {"k": [1, 2]}},
    )


def test_save_then_load_gives_back_every_storable_part_exactly(tmp_path):
    post = handmade_posterior()
    path = post.save(tmp_path / "fit.nc")
    assert path == str(tmp_path / "fit.nc")
    back = Posterior.load(path)
    assert back.method == "gibbs" and back.model is None and back.data is None
    assert_same_dict(post.samples, back.samples, "samples")
    assert_same_dict(post.sample_stats, back.sample_stats, "sample_stats")
    assert_same(post.losses, back.losses, "losses")
    assert_same_dict(post.params, back.params, "params")
    storable = {k: v for k, v in post.diagnostics.items() if k != "monitor"}
    assert_same_dict(storable, back.diagnostics, "diagnostics")
    assert_same_dict(post.attrs, back.attrs, "attrs")
    # the monitor object cannot be written: the file says so
    idata = az.from_netcdf(path)
    assert "diagnostics.monitor" in idata.attrs["unsaved"]


def test_saved_file_is_an_arviz_file(tmp_path):
    post = handmade_posterior()
    post.save(tmp_path / "fit.nc")
    idata = az.from_netcdf(tmp_path / "fit.nc")
    assert idata.posterior["z"].dtype == np.int64 and idata.posterior["z"].shape == (2, 7, 5)
    assert idata.attrs["method"] == "gibbs" and idata.attrs["seed"] == 11
    assert az.summary(idata, var_names=["mu"]).shape[0] == 3


def test_loaded_em_and_gibbs_fits_predict_like_the_originals(tmp_path):
    table, _ = simulate_annotations(60, 4, 3, seed=1)
    for method, options in (("em", {}), ("gibbs", {"num_samples": 20, "num_warmup": 10})):
        post = DawidSkene().fit(table, method=method, seed=0, progress=False, **options)
        post.save(tmp_path / f"{method}.nc")
        back = Posterior.load(tmp_path / f"{method}.nc", model=DawidSkene(), data=table)
        assert_same_dict(post.samples, back.samples, "samples")
        assert_same(post.losses, back.losses, "losses")
        assert back.attrs == post.attrs
        torch.testing.assert_close(back.predict(table), post.predict(table), rtol=0, atol=0)
    assert back.samples["z"].dtype == torch.int64  # Gibbs' class draws stay integers


def test_from_inference_data_reads_a_converted_fit():
    post = handmade_posterior()
    back = Posterior.from_inference_data(post.to_inference_data())
    assert back.method == "gibbs"
    assert_same_dict(post.samples, back.samples, "samples")
    torch.testing.assert_close(back.sample_stats["lp"], post.sample_stats["lp"], rtol=0, atol=0)
    assert back.attrs["seed"] == 11 and "created_at" not in back.attrs


def test_from_inference_data_of_a_foreign_file_needs_a_method():
    idata = az.from_dict(posterior={"theta": np.zeros((2, 4, 3))})
    with pytest.raises(ValueError, match="records no 'method' attribute: pass method="):
        Posterior.from_inference_data(idata)
    post = Posterior.from_inference_data(idata, method="nuts")
    assert post.method == "nuts" and post.samples["theta"].shape == (2, 4, 3)
    named = az.from_dict(posterior={"theta": np.arange(24.0).reshape(2, 4, 3)},
                         dims={"theta": ["item"]}, coords={"item": ["a", "b", "c"]})
    reordered = named.posterior.transpose("item", "draw", "chain")
    idata = az.InferenceData(posterior=reordered)
    back = Posterior.from_inference_data(idata, method="nuts")
    np.testing.assert_array_equal(back.samples["theta"].numpy(), np.arange(24.0).reshape(2, 4, 3))
    with pytest.raises(TypeError, match="idata must be an arviz.InferenceData"):
        Posterior.from_inference_data({"posterior": {}})


def test_load_refuses_what_save_did_not_write(tmp_path):
    az.from_dict(posterior={"theta": np.zeros((1, 3))}).to_netcdf(tmp_path / "other.nc")
    with pytest.raises(ValueError, match="is not a fit saved by Posterior.save"):
        Posterior.load(tmp_path / "other.nc")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Posterior.load(tmp_path / "missing.nc")
    with pytest.raises(TypeError, match="path must be a str or os.PathLike"):
        handmade_posterior().save(3)
