"""The C passes (``_cpass.c``), compiled when the package is installed, and whether they were.

A machine without a C compiler installs the package without them; the passes then run on
numba (see :mod:`.compiled`). Setting the environment variable ``PYROMODELS_NO_C`` (to anything
but an empty string) before the first fit makes a process run as if they had not been built.
"""

from __future__ import annotations

import functools
import importlib
import os

__all__ = ["C_MODULE", "NO_C", "have_c", "c_passes"]

#: the extension module
C_MODULE = "pyromodels.crowd.ds.kernels._cpass"
#: the environment variable that turns the C passes off
NO_C = "PYROMODELS_NO_C"


@functools.cache
def have_c() -> bool:
    """Whether the C passes were built with the package (and are not turned off by
    :data:`NO_C`)."""
    if os.environ.get(NO_C):
        return False
    try:
        importlib.import_module(C_MODULE)
    except ImportError:
        return False
    return True


def c_passes():
    """The extension module (``ImportError`` when it was not built)."""
    return importlib.import_module(C_MODULE)
