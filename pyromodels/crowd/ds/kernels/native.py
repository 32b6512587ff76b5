"""The C passes (``_cpass.c``), compiled when the package is installed, and whether they were.

A machine without a C compiler installs the package without them; the passes then run on
numba (see :mod:`.compiled`).
"""

from __future__ import annotations

import functools
import importlib

__all__ = ["C_MODULE", "have_c", "c_passes"]

#: the extension module
C_MODULE = "pyromodels.crowd.ds.kernels._cpass"


@functools.cache
def have_c() -> bool:
    """Whether the C passes were built with the package."""
    try:
        importlib.import_module(C_MODULE)
    except ImportError:
        return False
    return True


def c_passes():
    """The extension module (``ImportError`` when it was not built)."""
    return importlib.import_module(C_MODULE)
