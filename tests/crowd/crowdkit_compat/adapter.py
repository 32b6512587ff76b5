"""crowd-kit's class names over pyromodels' facades, with crowd-kit's settings.

The facades take crowd-kit's own argument and attribute names, so this module only fixes
the settings in which crowd-kit's estimators differ from the facades' defaults:

* ``DawidSkene``: maximum-likelihood EM (``diagonal=0``; the facade's default adds a
  diagonal prior, see :mod:`pyromodels.crowd.estimators.dawid_skene`);
* ``MajorityVote``: ties go to the smallest tied label (``ties="smallest"``; the facade breaks
  ties at random by default). crowd-kit's own rule is an artefact of pandas' ``value_counts``
  order: the first label seen wins a tie on toy tables, the sorted first on its test data;
  ``"smallest"`` agrees with it on every tie in these tests;
* both accept several labels from one worker on one task, as crowd-kit does.
"""

from pyromodels.crowd import DawidSkeneEstimator
from pyromodels.crowd import MajorityVote as MajorityVoteEstimator

__all__ = ["DawidSkene", "MajorityVote"]


def DawidSkene(n_iter=100, tol=1e-5, initial_error_strategy=None):  # noqa: N802 - crowd-kit's name
    """crowd-kit's ``DawidSkene(n_iter, tol, initial_error_strategy)``."""
    return DawidSkeneEstimator(n_iter=n_iter, tol=tol, initial_error_strategy=initial_error_strategy,
                               diagonal=0.0, allow_repeats=True)


def MajorityVote(on_missing_skill="error", default_skill=None):  # noqa: N802 - crowd-kit's name
    """crowd-kit's ``MajorityVote(on_missing_skill, default_skill)``."""
    return MajorityVoteEstimator(on_missing_skill=on_missing_skill, default_skill=default_skill,
                                 ties="smallest", allow_repeats=True)
