"""A BHMC / RBHMC fit checks its data and state at the boundary, once per chain piece: the
sweeps' inner steps (paths, labels, components, weights, discriminants, augmentation
variables, the traced CDL and margins) take them as prepared, so the number of checks does not
grow with the number of sweeps."""

from contextlib import ExitStack
from unittest import mock

import pytest
import torch

import pyromodels.bhmc.augmentation as augmentation
import pyromodels.bhmc.joint as joint
import pyromodels.bhmc.regularised as regularised
import pyromodels.bhmc.sampler as sampler
import pyromodels.bhmc.state as state_module
from pyromodels.bhmc import BHMC, BHMCPrior

PRIOR = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=4)

#: every name a check is reached by, in each module that calls it
CHECKS = [(module, name)
          for module in (sampler, joint, regularised, state_module)
          for name in ("as_float_tensor", "check_inputs", "check_state")
          if hasattr(module, name)]
CHECKS += [(augmentation, "_as_float"), (augmentation, "_check_block"),
           (regularised, "check_rbhmc_state")]


def _checks_during_fit(x, sweeps: int, **kwargs) -> dict:
    with ExitStack() as stack:
        spies = {f"{m.__name__}.{n}": stack.enter_context(
            mock.patch.object(m, n, wraps=getattr(m, n))) for m, n in CHECKS}
        BHMC(PRIOR).fit(x, num_warmup=sweeps, num_samples=2, num_chains=1, seed=3,
                        progress=False, **kwargs)
    return {k: s.call_count for k, s in spies.items()}


@pytest.mark.parametrize("kwargs", [{}, {"C": 0.5, "eps0": 1.0}], ids=["bhmc", "rbhmc"])
def test_checks_do_not_grow_with_the_sweeps(kwargs):
    x = BHMC(PRIOR).simulate(12, 2, torch.Generator().manual_seed(1)).x
    few, many = _checks_during_fit(x, 1, **kwargs), _checks_during_fit(x, 9, **kwargs)
    assert few == many
    # and the boundary does check: the state once where the (one) chain starts
    assert few["pyromodels.bhmc.state.check_state"] == 1
