"""The active-units statistic (Burda et al. 2016, Sec. 5.2) against hand computations, the
mixture variance that scales it for learned priors, and the collapse warning's rule."""

import math
import warnings

import pytest
import torch

from pyromodels.core import PosteriorCollapseWarning, active_units
from pyromodels.core.latent_activity import (
    ACTIVE_UNIT_THRESHOLD,
    check_latent_activity,
    mixture_variance,
    unit_activity,
)

# four items, three units: unit 0 varies by 1 (items at 1 and 3), unit 1 not at all, unit 2
# by 0.09^2 = 0.0081, below Burda et al.'s 0.01 on the scale 1 but above it on the scale 0.5
MEANS = torch.tensor([[1.0, 0.0, 0.09], [3.0, 0.0, 0.09], [1.0, 0.0, -0.09], [3.0, 0.0, -0.09]],
                     dtype=torch.float64)


def test_the_statistic_is_the_items_variance_of_each_unit():
    torch.testing.assert_close(unit_activity(MEANS),
                               torch.tensor([1.0, 0.0, 0.0081], dtype=torch.float64))
    assert ACTIVE_UNIT_THRESHOLD == 0.01
    assert active_units(MEANS) == 1
    assert active_units(MEANS, threshold=1e-3) == 2
    assert active_units(MEANS, threshold=2.0) == 0
    # a reference scale per unit: 0.0081 > 0.01 * 0.5, and 1 > 0.01 * 50 but not * 200
    assert active_units(MEANS, scale=torch.tensor([1.0, 1.0, 0.5])) == 2
    assert active_units(MEANS, scale=50.0) == 1 and active_units(MEANS, scale=200.0) == 0
    # one item: nothing varies
    assert active_units(MEANS[:1]) == 0


def test_the_mixture_variance_is_the_law_of_total_variance():
    """weights (1/4, 3/4), means (0, 2) and (4, -2), variances (1, 1) and (2, 1/2): unit 0 has
    mean 3 and second moment (1 + 0)/4 + 3 (2 + 16)/4 = 13.75, so variance 4.75; unit 1 mean
    -1, second moment (1 + 4)/4 + 3 (0.5 + 4)/4 = 4.625, variance 3.625."""
    got = mixture_variance(torch.tensor([0.25, 0.75]), torch.tensor([[0.0, 2.0], [4.0, -2.0]]),
                           torch.tensor([[1.0, 1.0], [2.0, 0.5]]))
    torch.testing.assert_close(got, torch.tensor([4.75, 3.625], dtype=torch.float64))


def test_the_warning_comes_on_full_collapse_only_and_can_be_silenced():
    remedies = "Lower lr."
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        same = check_latent_activity(torch.ones(5, 3), fit="Demo.fit", remedies=remedies,
                                     stacklevel=2)  # called here, not from inside a fit
        partial = check_latent_activity(MEANS, fit="Demo.fit", remedies=remedies)
        quiet = check_latent_activity(torch.ones(5, 3), fit="Demo.fit", remedies=remedies,
                                      diagnostic_warnings=False)
    assert same == quiet == {"active_units": 0, "latent_dim": 3}
    assert partial == {"active_units": 1, "latent_dim": 3}
    found = [w for w in caught if issubclass(w.category, PosteriorCollapseWarning)]
    assert len(found) == 1 and issubclass(PosteriorCollapseWarning, UserWarning)
    message = str(found[0].message)
    assert message.startswith("Demo.fit: posterior collapse: 0 of 3 latent units are active")
    assert message.endswith(remedies)
    assert found[0].filename == __file__


@pytest.mark.parametrize("call, error, match", [
    (lambda: active_units([[0.0, 1.0]]), TypeError, "means"),
    (lambda: active_units(torch.zeros(3)), ValueError, "means"),
    (lambda: active_units(torch.tensor([[0.0], [float("nan")]])), ValueError, "means"),
    (lambda: active_units(MEANS, threshold=0), ValueError, "threshold"),
    (lambda: active_units(MEANS, scale=torch.ones(2)), ValueError, "scale"),
    (lambda: active_units(MEANS, scale=0.0), ValueError, "scale"),
    (lambda: mixture_variance(torch.ones(2) / 2, torch.zeros(3, 1), torch.ones(3, 1)),
     ValueError, "weights"),
    (lambda: check_latent_activity(MEANS, fit="f", remedies="r", diagnostic_warnings="no"),
     TypeError, "diagnostic_warnings"),
])
def test_bad_input_is_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_code_information_is_the_gaussian_bound_on_what_the_code_says_about_the_item():
    """Two items at -a and a with posterior variance v in one unit: the aggregate variance is
    a^2 + v, so the bound is log((a^2 + v) / v) / 2; equal items give 0; the bound is the same
    after any invertible linear map of the latent space; diagonals equal full matrices."""
    from pyromodels.core.latent_activity import code_information

    means = torch.tensor([[-2.0, 0.0], [2.0, 0.0]], dtype=torch.float64)
    cov = torch.diag(torch.tensor([0.5, 3.0], dtype=torch.float64)).expand(2, 2, 2)
    assert code_information(means, cov) == pytest.approx(0.5 * math.log((4 + 0.5) / 0.5))
    assert code_information(means, cov.diagonal(dim1=-2, dim2=-1)) == pytest.approx(
        code_information(means, cov))
    assert code_information(torch.zeros(2, 2, dtype=torch.float64), cov) == pytest.approx(
        0.0, abs=1e-12)
    mix = torch.tensor([[2.0, 1.0], [-0.5, 3.0]], dtype=torch.float64)  # any invertible map
    assert code_information(means @ mix.T, mix @ cov @ mix.T) == pytest.approx(
        code_information(means, cov))
    # items whose own variances differ: the bound uses each one's log-determinant
    uneven = torch.tensor([[[1.0]], [[4.0]]], dtype=torch.float64)
    expected = 0.5 * (math.log(0.0 + 2.5) - 0.5 * (math.log(1.0) + math.log(4.0)))
    assert code_information(torch.zeros(2, 1, dtype=torch.float64), uneven) == pytest.approx(
        expected)
    with pytest.raises(ValueError, match="covariances must be"):
        code_information(means, torch.ones(3, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="positive definite"):
        code_information(means, -cov)
    with pytest.raises(TypeError, match="covariances"):
        code_information(means, [[1.0]])


def test_a_code_of_less_than_one_bit_warns_though_some_units_pass_the_count():
    """MEANS has one unit active by Burda et al.'s count; with posterior variance 10 in every
    unit the code says at most (log 1.1 + log 1.00081) / 2 = 0.048 nats about the item, below
    log 2, so the check warns (naming the count); with variance 0.01 it says more than a bit,
    and does not."""
    from pyromodels.core.latent_activity import MIN_CODE_INFORMATION, code_information

    assert MIN_CODE_INFORMATION == pytest.approx(math.log(2))
    wide = torch.full((4, 3), 10.0, dtype=torch.float64)
    narrow = torch.full((4, 3), 0.01, dtype=torch.float64)
    assert code_information(MEANS, wide) < math.log(2) < code_information(MEANS, narrow)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        weak = check_latent_activity(MEANS, fit="Demo.fit", remedies="Warm up.",
                                     covariances=wide, stacklevel=2)
        strong = check_latent_activity(MEANS, fit="Demo.fit", remedies="Warm up.",
                                       covariances=narrow, stacklevel=2)
    found = [w for w in caught if issubclass(w.category, PosteriorCollapseWarning)]
    assert weak["active_units"] == strong["active_units"] == 1
    assert weak["collapsed"] and not strong["collapsed"]
    assert weak["code_information"] == pytest.approx(code_information(MEANS, wide))
    (only,) = found
    message = str(only.message)
    assert message.startswith("Demo.fit: posterior collapse: the items' latent posteriors "
                              "carry at most")
    assert "1 of 3 latent units pass" in message and message.endswith("Warm up.")
