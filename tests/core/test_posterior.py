"""The Posterior's own conversion to ArviZ: it needs nothing from the diagnostics package."""

import pytest
import torch

from pyromodels.core import Posterior
from pyromodels.core.posterior import check_posterior, summary, to_inference_data


def test_conversion_runs_without_importing_the_diagnostics_package(fresh_python):
    code = (
        "import sys, warnings, torch\n"
        "from pyromodels import Posterior\n"
        "post = Posterior(samples={'mu': torch.zeros(2, 4)}, method='nuts')\n"
        "idata = post.to_inference_data()\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        "    table = post.summary()\n"
        "print(tuple(idata.posterior['mu'].shape), list(table.index),\n"
        "      'pyromodels.diagnostics' in sys.modules)\n"
    )
    assert fresh_python(code).split() == ["(2,", "4)", "['mu']", "False"]


def test_methods_and_functions_agree():
    g = torch.Generator().manual_seed(1)
    post = Posterior(samples={"mu": torch.randn(2, 30, generator=g)}, method="nuts",
                     attrs={"seed": 4})
    via_method, via_function = post.to_inference_data(), to_inference_data(post)
    assert via_method.posterior["mu"].equals(via_function.posterior["mu"])
    stamp = "created_at"  # ArviZ's time of creation
    attrs = [{k: v for k, v in i.posterior.attrs.items() if k != stamp}
             for i in (via_method, via_function)]
    assert attrs[0] == attrs[1] and attrs[0]["seed"] == 4
    assert post.summary().equals(summary(post))


def test_check_posterior_names_the_argument():
    with pytest.raises(TypeError, match="fit must be a pyromodels Posterior, got dict"):
        check_posterior({}, "fit")
    with pytest.raises(ValueError, match="fit.samples is empty"):
        check_posterior(Posterior(samples={}, method="em"), "fit")
