"""Bad inputs that used to escape as another library's error: each now names its argument."""

import pandas as pd
import pytest

from pyromodels.core import Posterior
from pyromodels.crowd.estimators import DawidSkeneEstimator
from pyromodels.data import AnnotationTable


def _df():
    return pd.DataFrame({"task": [1, 1, 2, 2], "worker": [1, 2, 1, 2], "label": [0, 1, 1, 1]})


def test_an_unknown_device_names_device():
    with pytest.raises(ValueError, match="device must name a torch device.*'tpu'"):
        DawidSkeneEstimator(device="tpu").fit(_df())


def test_a_single_string_where_ids_are_expected_names_the_argument():
    with pytest.raises(TypeError, match=r"classes must be a list .* single string 'xy'"):
        AnnotationTable.from_dataframe(_df().assign(label=list("xyxy")), classes="xy")
    table = AnnotationTable.from_dataframe(_df())
    with pytest.raises(TypeError, match="single string"):
        table.encode_items("t1")


def test_a_bool_temperature_is_refused():
    from pyromodels.crowd.ds.model import DawidSkene

    table = AnnotationTable.from_dataframe(_df())
    post = DawidSkene().fit(table, method="gibbs", num_samples=2, num_warmup=1, num_chains=1,
                            seed=0, progress=False)
    with pytest.raises(TypeError, match="temperature must be the int 0 or 1, got True"):
        post.sample_discrete(temperature=True)


def test_loading_a_file_that_is_not_netcdf_names_the_path(tmp_path):
    path = tmp_path / "fit.nc"
    path.write_text("not a NetCDF file")
    with pytest.raises(ValueError, match="is not a readable NetCDF file"):
        Posterior.load(path)
