"""The compiled extensions; everything else about the package is in pyproject.toml.

Both are optional: where no C compiler is at hand the build goes on without them and the code
that uses them falls back to its numba or NumPy path (see ``pyromodels.native``).
"""

import sys

from setuptools import Extension, setup

FLAGS = [] if sys.platform == "win32" else ["-O3", "-std=c99"]

setup(ext_modules=[
    Extension("pyromodels.crowd.ds.kernels._cpass", ["pyromodels/crowd/ds/kernels/_cpass.c"],
              extra_compile_args=FLAGS, optional=True),
    Extension("pyromodels.data._ctable", ["pyromodels/data/_ctable.c"],
              extra_compile_args=FLAGS, optional=True),
])
