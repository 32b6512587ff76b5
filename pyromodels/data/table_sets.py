"""Small feature tables: the 33 animals (vendored) and scikit-learn's bundled data sets."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..checks import check_in
from .paths import vendored

__all__ = ["load_animals", "load_sklearn"]

_SKLEARN_SETS = ("digits", "iris", "wine", "breast_cancer")


def _read_lines(path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line]


def load_animals() -> pd.DataFrame:
    """The 33 animals x 102 binary features of Kemp & Tenenbaum (2008).

    Row order follows the source file, not Table 1 of the BHMC papers (rows 7-8 are Chimp,
    Gorilla; 11-13 are Tiger, Lion, Cat): join labels to rows by name, never by position.
    11 feature columns are exact copies of others; no column is constant.

    Returns:
        DataFrame of 0/1 ``int64`` values, shape ``(33, 102)``, indexed by animal name
        (index name ``animal``) with the feature names as columns (name ``feature``).

    Example:
        >>> animals = load_animals()
        >>> animals.shape, int(animals.loc["Penguin", "lays eggs"])
        ((33, 102), 1)
    """
    names = _read_lines(vendored("animals", "animal_names.txt"))
    features = _read_lines(vendored("animals", "feature_names.txt"))
    data = pd.read_csv(vendored("animals", "animals_data.csv.gz"), header=None).to_numpy()
    if data.shape != (len(names), len(features)):
        raise ValueError(
            f"vendored animals data has shape {data.shape}, expected "
            f"({len(names)}, {len(features)}); the installation is damaged"
        )
    return pd.DataFrame(
        data.astype(np.int64),
        index=pd.Index(names, name="animal"),
        columns=pd.Index(features, name="feature"),
    )


def load_sklearn(name: str) -> tuple[np.ndarray, np.ndarray]:
    """One of scikit-learn's bundled data sets (no download).

    ==============  ==========  ========  =======
    name            samples     features  classes
    ==============  ==========  ========  =======
    digits          1,797       64        10
    iris            150         4         3
    wine            178         13        3
    breast_cancer   569         30        2
    ==============  ==========  ========  =======

    Args:
        name: ``"digits"``, ``"iris"``, ``"wine"`` or ``"breast_cancer"``.

    Returns:
        ``(X, y)``: float64 features ``(n, d)`` and int64 class codes ``(n,)``.

    Example:
        >>> X, y = load_sklearn("iris")
        >>> X.shape, sorted(set(y.tolist()))
        ((150, 4), [0, 1, 2])
    """
    check_in(name, "name", _SKLEARN_SETS)
    from sklearn import datasets

    loader = getattr(datasets, f"load_{name}")
    X, y = loader(return_X_y=True)
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)
