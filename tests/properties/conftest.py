"""Hypothesis profiles of the data-contract properties, and the bad-input oracle they share.

Profiles (pick one with ``PYROMODELS_PROPERTIES_PROFILE``; the tests read it through
``settings.get_profile("properties")``):

* ``fast`` (default): 60 examples per property, derandomized, so a run is deterministic and
  the whole folder stays well under a minute on one core;
* ``thorough``: 1000 random (not derandomized) examples per property, for a hunt by hand.

No example database is written, so a run leaves nothing behind in the working tree.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, settings

_COMMON = {"deadline": None, "database": None,
           "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
settings.register_profile("fast", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("thorough", max_examples=1000, derandomize=False, **_COMMON)
settings.register_profile(
    "properties", parent=settings.get_profile(os.environ.get("PYROMODELS_PROPERTIES_PROFILE", "fast"))
)


def _raises_naming(call, *names: str):
    """Run ``call()``: it must raise ``ValueError`` or ``TypeError`` (nothing else) whose
    message names at least one of ``names`` as a word. Returns the exception."""
    try:
        call()
    except (ValueError, TypeError) as err:
        message = str(err)
        if not any(re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", message) for n in names):
            raise AssertionError(
                f"{type(err).__name__} names none of {names}: {message!r}") from err
        return err
    except Exception as err:  # noqa: BLE001 - any other type is the failure reported
        raise AssertionError(
            f"expected ValueError/TypeError naming {names}, got {type(err).__name__}: {err}"
        ) from err
    raise AssertionError(f"expected ValueError/TypeError naming {names}; nothing was raised")


@pytest.fixture(scope="session")
def raises_naming():
    """``raises_naming(call, *names)``: ``call()`` raises ValueError/TypeError naming one of
    ``names`` (any other exception, or none, fails the test)."""
    return _raises_naming
