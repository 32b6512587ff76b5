"""Experiments: the demos and reproductions that the command line and the report run.

Each module fits one model on real data with every engine it supports, measures the fits
against the known truth and against each other, and registers a
:class:`~pyromodels.registry.ModelEntry` at import time. :mod:`pyromodels.models_index` imports
them all; importing this package imports none of them.
"""
