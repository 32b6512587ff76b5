"""With ``loc`` and ``scale`` left ``None``, BHMC finds the hierarchy of ``x`` in ``c x + b``.

The story then sees ``(x - mean) / (data_scale / sqrt 2)``, the same numbers up to rounding
for ``c x + b``; as in ``tests/ddpm/test_scale_defaults.py``, rounding of about 1e-16
relative changes a draw with probability about 1e-12 here, so the partitions and trees must
agree exactly.
"""

import pytest
import torch
from sklearn.metrics import adjusted_rand_score

from pyromodels.bhmc import BHMC, BHMCPrior

PRIOR = BHMCPrior(alpha=0.5, gamma=1.0, gamma0=0.85, depth=2, num_components=6)


def _blobs() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    x = 0.3 * torch.randn(30, 2, dtype=torch.float64, generator=g)
    x[10:20, 0] += 3.0
    x[20:, 1] += 3.0
    return 2.0 * x + 5.0


def _fit(x, prior=PRIOR):
    post = BHMC(prior).fit(x, num_warmup=20, num_samples=10, num_chains=1, seed=0,
                           progress=False)
    return post.params["c"], post.params["paths"]


def test_default_units_give_the_same_hierarchy_for_scaled_and_shifted_data():
    x = _blobs()
    labels, paths = _fit(x)
    # a partition to compare, not one cluster (after 20 sweeps the chain holds 2-5 clusters of
    # the three blobs, by seed; the comparison below is exact whatever it holds)
    assert labels.unique().numel() >= 2
    for name, other in {"times 1e-8": x * 1e-8, "times 1e8": x * 1e8, "plus 1e6": x + 1e6}.items():
        got, got_paths = _fit(other)
        assert adjusted_rand_score(labels, got) == 1.0, name
        assert torch.equal(got_paths, paths), name


def test_explicit_units_are_used_as_given():
    """The paper's literal units (loc 0, scale 1) see one cluster at x * 1e-8."""
    literal = BHMCPrior(alpha=0.5, gamma=1.0, gamma0=0.85, depth=2, num_components=6,
                        loc=0.0, scale=1.0)
    labels, _ = _fit(_blobs() * 1e-8, literal)
    assert labels.unique().numel() == 1
    assert BHMCPrior.paper_preset("animals").scale == 1.0


def test_units_are_recorded_and_checked():
    x = _blobs()
    post = BHMC(PRIOR).fit(x, num_warmup=1, num_samples=1, num_chains=1, seed=0, progress=False)
    loc, scale = post.params["units"]
    assert torch.allclose(loc, x.mean(0))
    assert scale == pytest.approx(float((x - x.mean(0)).pow(2).sum() / (29 * 2)) ** 0.5 / 2 ** 0.5)
    with pytest.raises(ValueError, match="scale must be > 0"):
        BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, scale=0.0)
    with pytest.raises(TypeError, match="loc must be a real number or None"):
        BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, loc="0")
    with pytest.raises(ValueError, match="data has no spread"):
        BHMC(PRIOR).fit(torch.ones(4, 2), progress=False)


def test_explicit_units_place_the_story_and_its_draws():
    unit = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=3, loc=0.0,
                     scale=1.0)
    moved = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=3, loc=3.0,
                      scale=2.0)
    a = BHMC(unit).simulate(6, 2, torch.Generator().manual_seed(1))
    b = BHMC(moved).simulate(6, 2, torch.Generator().manual_seed(1))
    assert torch.allclose(b.x, 3.0 + 2.0 * a.x)
    assert torch.allclose(BHMC(moved).standardize(b.x), a.x)
    assert torch.isclose(BHMC(moved).complete_log_joint(b.x, b.state),
                         BHMC(unit).complete_log_joint(a.x, a.state))
