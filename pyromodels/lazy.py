"""Package attributes loaded on first use (PEP 562), so that importing a package costs nothing
until one of its names is used.

``import pyromodels.crowd`` used to import torch, Pyro, the sequence and graph models and
scikit-learn before the first line of a user's program ran; most programs use one name of a
package. A package lists where each public name lives and hands its module-level
``__getattr__`` and ``__dir__`` to :func:`lazy_attributes`; ``from package import name``,
``package.name`` and ``from package import *`` then import the defining module on first use
(and keep the value, so later uses are plain attribute reads).

Example:
    >>> get, names = lazy_attributes("pyromodels.core", {"ConvergenceMonitor": ".monitor"})
    >>> get("ConvergenceMonitor").__module__
    'pyromodels.core.monitor'
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, origins: dict[str, str]):
    """``(__getattr__, __dir__)`` for ``package`` whose public names live in other modules.

    Args:
        package: the package's ``__name__``.
        origins: ``{name: module}``; ``module`` is absolute, or relative to ``package`` when
            it starts with a dot (``".em"`` in ``pyromodels.core`` is ``pyromodels.core.em``).
            A name that is the module's own last component (``{"hmm": ".hmm"}``) is the
            module itself: a subpackage that ``package.hmm`` reaches without an import.
    """

    def __getattr__(name: str):
        module = origins.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded = importlib.import_module(module, package)
        value = loaded if module.rsplit(".", 1)[-1] == name else getattr(loaded, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(origins))

    return __getattr__, __dir__
