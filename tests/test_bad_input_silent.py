"""Inputs that used to be taken silently, or failed naming nothing: each is now refused with
a message naming the argument, warned about, or handled the same as its plain twin."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.bhmc import BHMC, BHMCPrior
from pyromodels.crowd import NetworkedDawidSkeneEstimator
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import AnnotationTable
from pyromodels.ddpm import DDPM, DPMixture, DPMixturePrior, TruncatedDPMixture
from pyromodels.ddpm.mcem import MCEMSettings
from pyromodels.report.crowd import GoldLabelWarning, crowd_outputs

PRIOR = DPMixturePrior(alpha0=2.0, beta0=1.0)


def _points():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, 3, dtype=torch.float64, generator=g)
    x[:20] += 3.0
    return x


def test_progress_must_be_a_bool():
    x = _points()
    with pytest.raises(TypeError, match="progress must be a bool, got str 'no'"):
        DPMixture(PRIOR).fit(x, settings=MCEMSettings(rounds=1, init_clusters=2), progress="no")
    with pytest.raises(TypeError, match="progress must be a bool, got int 0"):
        TruncatedDPMixture(PRIOR, truncation=3).fit(x, method="gibbs", num_samples=1,
                                                     num_warmup=0, num_chains=1, progress=0)


def _truncated_draws(x):
    model = TruncatedDPMixture(PRIOR, truncation=5)
    return model.fit(x, method="gibbs", num_samples=5, num_warmup=5, num_chains=1, seed=0,
                     progress=False).samples


@pytest.mark.parametrize("layout", ["column-major tensor", "column-major numpy"])
def test_the_memory_layout_of_the_data_does_not_change_the_draws(layout):
    """Sums over a column-major (200, 5) tensor run in another order and used to differ in
    the last bit, which changed the Gibbs draws; the data are now copied row-major first."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 5, dtype=torch.float64, generator=g)
    x[:100] += 2.0
    other = {"column-major tensor": x.T.contiguous().T,
             "column-major numpy": np.asfortranarray(x.numpy())}[layout]
    assert np.array_equal(np.asarray(other), x.numpy())
    plain, moved = _truncated_draws(x), _truncated_draws(other)
    for site in ("mu", "lam", "v", "c"):
        assert torch.equal(plain[site], moved[site]), site


def test_strided_code_arrays_reach_the_compiled_passes():
    codes = np.array([[0, 0, 0], [0, 1, 1], [1, 0, 1], [1, 1, 1], [2, 0, 0], [2, 1, 0]])
    strided = AnnotationTable.from_arrays(codes[:, 0], codes[:, 1], codes[:, 2])
    copied = AnnotationTable.from_arrays(*(np.ascontiguousarray(codes[:, j]) for j in range(3)))
    for a, b in zip(strided.label_statistics(), copied.label_statistics()):
        assert torch.equal(a, b)
    as_tensor = torch.as_tensor(codes)
    table = AnnotationTable.from_arrays(as_tensor[:, 0], as_tensor[:, 1], as_tensor[:, 2])
    fit = DawidSkene().fit(table, method="em", progress=False)
    assert torch.equal(fit.params["confusion"],
                       DawidSkene().fit(copied, method="em", progress=False).params["confusion"])


def _crowd():
    table = AnnotationTable.from_dataframe(pd.DataFrame(
        {"task": ["a", "a", "b", "b"], "worker": ["u", "v", "u", "v"],
         "label": ["cat", "cat", "dog", "cat"]}))
    probabilities = torch.tensor([[0.9, 0.1], [0.4, 0.6]], dtype=torch.float64)
    confusion = torch.full((2, 2, 2), 0.5, dtype=torch.float64)
    return table, probabilities, confusion


def test_gold_labels_that_no_worker_gives_are_warned_about():
    table, probabilities, confusion = _crowd()
    gold = pd.Series(["cat", "bird"], index=["a", "b"])
    with pytest.warns(GoldLabelWarning, match=r"gold holds labels that no worker gives, 'bird' "
                                              r"\(on 1 of the 2 scored tasks\).*'cat', 'dog'"):
        out = crowd_outputs(table, probabilities, confusion, gold=gold)
    assert out.metrics["gold"]["accuracy"] == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        crowd_outputs(table, probabilities, confusion, gold=pd.Series(["cat", "dog"],
                                                                      index=["a", "b"]))


def test_eps0_without_C_is_refused():
    prior = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=3)
    with pytest.raises(ValueError, match="eps0 is the margin of RBHMC and needs C"):
        BHMC(prior).fit(_points(), eps0=0.5, num_warmup=0, num_samples=1, num_chains=1,
                        progress=False)


def test_edge_ids_of_mixed_kinds_are_named():
    df = pd.DataFrame({"task": [0, 0, 1, 1], "worker": [0, 1, 0, 1], "label": [0, 1, 1, 1]})
    with pytest.raises(ValueError, match=r"edges\['source'\] mixes strings and non-strings"):
        NetworkedDawidSkeneEstimator().fit(df, pd.DataFrame({"source": ["0", 1], "target": [1, 0]}))
    with pytest.raises(ValueError, match=r"edges\['source'\] holds string ids \('0'\) but "
                                         r"df\['task'\] holds int ids \(0\)"):
        NetworkedDawidSkeneEstimator().fit(df, pd.DataFrame({"source": ["0"], "target": ["1"]}))


def test_ddpm_dtype_must_be_floating():
    with pytest.raises(TypeError, match="dtype must be a floating torch.dtype.*torch.int64"):
        DDPM(dtype=torch.int64)


def test_truncated_predict_refuses_another_models_fit():
    x = _points()
    other = DPMixture(PRIOR).fit(x, settings=MCEMSettings(rounds=1, init_clusters=2), seed=0,
                                 progress=False)
    model = TruncatedDPMixture(PRIOR, truncation=3)
    with pytest.raises(TypeError, match="posterior must be a fit of this TruncatedDPMixture "
                                        r"\(with draws of v, mu, lam\)"):
        model.predict(other, x)
    fit = model.fit(x, method="gibbs", num_samples=2, num_warmup=1, num_chains=1, seed=0,
                    progress=False)
    with pytest.raises(ValueError, match="posterior must be a fit with truncation 4"):
        TruncatedDPMixture(PRIOR, truncation=4).predict(fit, x)
