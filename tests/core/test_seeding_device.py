import warnings

import pytest
import torch

from pyromodels.core import DeviceFallbackWarning, derive_seed, make_generator, resolve_device, seeded
from pyromodels.core.seeding import resolve_seed


def test_derived_seeds_are_stable_and_distinct():
    a = [derive_seed(7, "chain", c) for c in range(4)]
    assert a == [derive_seed(7, "chain", c) for c in range(4)]
    assert len(set(a)) == 4 and derive_seed(8, "chain", 0) != a[0]


def test_generator_reproduces_draws():
    x = torch.rand(5, generator=make_generator(3))
    y = torch.rand(5, generator=make_generator(3))
    assert torch.equal(x, y)


def test_seeded_restores_global_state():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    with seeded(5):
        inside = torch.rand(3)
    after = torch.rand(3)
    assert torch.equal(after, expected)
    with seeded(5):
        assert torch.equal(torch.rand(3), inside)


def test_resolve_seed_validates():
    assert resolve_seed(4) == 4
    assert isinstance(resolve_seed(None), int)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        resolve_seed(-1)


def test_device_resolution_and_cpu_fallback():
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device(None, torch.zeros(1)) == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.warns(DeviceFallbackWarning, match="CUDA is not available"):
            assert resolve_device("cuda") == torch.device("cpu")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert resolve_device("cuda").type == "cuda"
    with pytest.raises(ValueError, match="device must name a torch device"):
        resolve_device("gpu0")
