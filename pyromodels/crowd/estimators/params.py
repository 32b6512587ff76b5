"""scikit-learn's parameter protocol for the facades, without importing scikit-learn.

``get_params``, ``set_params`` and a ``repr`` that shows the arguments changed from their
defaults: what ``sklearn.base.clone``, grid searches and notebooks use. The facades'
parameters are the keyword arguments of ``__init__``, stored unchanged under the same names
(checked at ``fit``), as scikit-learn's estimator rules ask. scikit-learn's ``BaseEstimator``
would give the same methods, but importing it costs about a second of every fresh process
(it loads ``scipy.stats``), more than a whole Dawid-Skene fit of 500,000 labels.

Example:
    >>> class Vote(EstimatorParams):
    ...     def __init__(self, ties="random", seed=None):
    ...         self.ties, self.seed = ties, seed
    >>> Vote(seed=3)
    Vote(seed=3)
    >>> Vote().set_params(ties="first").get_params()
    {'seed': None, 'ties': 'first'}
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd

from ...data.idmaps import is_tensor

__all__ = ["EstimatorParams", "is_default"]


def is_default(value, default) -> bool:
    """Whether a parameter still holds its constructor default: the same object, or an equal
    value of the same type (arrays, tensors and frames count as changed unless identical)."""
    if value is default:
        return True
    if (type(value) is not type(default) or is_tensor(value)
            or isinstance(value, (np.ndarray, pd.DataFrame, pd.Series))):
        return False
    try:
        return bool(value == default)
    except (TypeError, ValueError, RuntimeError):  # values without a single truth value
        return False


class EstimatorParams:
    """``get_params`` / ``set_params`` / ``repr`` over the keyword arguments of ``__init__``."""

    @classmethod
    def _param_names(cls) -> list[str]:
        """The names of ``__init__``'s arguments, sorted (scikit-learn's order)."""
        if cls.__init__ is object.__init__:
            return []
        names = []
        for p in inspect.signature(cls.__init__).parameters.values():
            if p.kind == p.VAR_POSITIONAL:
                raise TypeError(
                    f"{cls.__name__}.__init__ takes *{p.name}: estimator parameters must be "
                    "named keyword arguments"
                )
            if p.name != "self" and p.kind != p.VAR_KEYWORD:
                names.append(p.name)
        return sorted(names)

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments as stored; with ``deep``, also ``name__sub`` entries of
        arguments that are estimators themselves."""
        out = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{key}", v) for key, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params):
        """Set constructor arguments (``name__sub`` reaches an argument's own parameters);
        returns ``self``. An unknown name is a ``ValueError`` listing the valid ones."""
        valid = self._param_names()
        nested: dict[str, dict] = {}
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"invalid parameter {name!r} for {type(self).__name__}; valid parameters "
                    f"are {valid}"
                )
            if sep:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            getattr(self, name).set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        defaults = {
            p.name: p.default
            for p in inspect.signature(type(self).__init__).parameters.values()
        }
        changed = [
            f"{name}={value!r}"
            for name, value in self.get_params(deep=False).items()
            if defaults.get(name, inspect.Parameter.empty) is inspect.Parameter.empty
            or not is_default(value, defaults[name])
        ]
        return f"{type(self).__name__}({', '.join(changed)})"
