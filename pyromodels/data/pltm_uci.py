"""The twelve ARFF tables bundled with PLTM-EAST (Poon, Zhang et al.), the peer baseline of
pouch latent tree models: continuous attributes with a class label.

The files are read from ``path`` or ``$PYROMODELS_DATA/pltm_uci/`` with
``scipy.io.arff.loadarff``, which reads all twelve; the one fix-up is glass's attribute
``'K'``, whose quotes scipy keeps (:func:`_unquoted`). Each set's ``PROVENANCE.md`` row
(source, counts, licence) comes with it. The upstream repository carries no licence: the ten
UCI sets are public benchmarks, while ``nba_doug`` and ``synY1-0.6`` are for research use
only. Nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..checks import check_in
from .paths import locate
from .tables import check_numeric_table

__all__ = ["PLTM_UCI_SETS", "PLTMData", "load_pltm_uci"]

#: each set's class attribute (the last attribute of its file), as PROVENANCE.md states it
_CLASS_ATTRIBUTE: dict[str, str | None] = {
    "glass": "Type",
    "ionosphere-a2removed": "class",
    "iris": "class",
    "nba_doug": "PS",
    "segmentation.count-removed": "class",
    "sonar": "Class",
    "synY1-0.6": "Y1",
    "vechicle": "class",
    "wdbc": "diagnosis",
    "wine-reordered": "class",
    "yeast": "class",
    "zernike": "class",
}

#: the names :func:`load_pltm_uci` knows: the files' stems (upstream spelling ``vechicle``)
PLTM_UCI_SETS: tuple[str, ...] = tuple(_CLASS_ATTRIBUTE)

_SUBDIR = "pltm_uci"
_HOW_TO_GET = (
    "The files come from the data/ folder of github.com/kmpoon/pltm-east; put them in "
    "$PYROMODELS_DATA/pltm_uci/ or pass path= the folder (or the .arff file) holding them."
)


@dataclass(frozen=True)
class PLTMData:
    """One PLTM-EAST data set.

    Attributes:
        name: the set's name, one of :data:`PLTM_UCI_SETS`.
        features: the continuous attributes, float64, ``(N, D)``, in the file's column order
            and with its attribute names; the class attribute is never among them.
        classes: the class attribute as a categorical Series of length ``N`` named after the
            attribute, its categories the declared values in declared order (a declared value
            may not occur, e.g. one of glass's seven types); ``None`` for a set without one.
        relation: the ARFF ``@relation`` name, which records the Weka filters applied.
        provenance: the set's entry of ``PROVENANCE.md`` with the source and licence notes.
    """

    name: str
    features: pd.DataFrame
    classes: pd.Series | None
    relation: str
    provenance: str


def _unquoted(attribute: str) -> str:
    """An attribute name without enclosing quotes. scipy (1.17) strips the quotes of a quoted
    name only when it has two or more characters, so glass's ``'K'`` arrives quoted."""
    if len(attribute) >= 2 and attribute[0] == attribute[-1] and attribute[0] in "'\"":
        return attribute[1:-1]
    return attribute


def _read_arff(file: Path):
    from scipy.io import arff

    try:
        return arff.loadarff(file)
    except (arff.ArffError, NotImplementedError, ValueError) as exc:
        raise ValueError(f"{file} could not be read as ARFF: {exc}") from exc


def _class_series(column: np.ndarray, declared: tuple[str, ...], attribute: str,
                  file: Path) -> pd.Series:
    values = [v.decode("utf-8") for v in column]
    unknown = sorted(set(values) - set(declared))
    if unknown:
        n_bad = sum(v not in declared for v in values)
        raise ValueError(
            f"{file}: class attribute {attribute!r} has {n_bad} row(s) with value(s) "
            f"{unknown[:10]} outside its declared values {list(declared)} ('?' is a missing "
            "class, which this loader does not accept)"
        )
    codes = pd.Categorical(values, categories=list(declared))
    return pd.Series(codes, name=attribute)


def _provenance(file: Path) -> str:
    """The file's row of the table in ``PROVENANCE.md`` beside it, with the source and
    licence sections; a short note when that file is missing."""
    doc = file.parent / "PROVENANCE.md"
    if not doc.is_file():
        return (
            f"{file.name}: no PROVENANCE.md beside {file}. The twelve PLTM-EAST files come "
            "from github.com/kmpoon/pltm-east (folder data/), which has no licence file."
        )
    lines = doc.read_text(encoding="utf-8").splitlines()
    header = next((ln for ln in lines if ln.startswith("| file |")), None)
    row = next((ln for ln in lines if ln.startswith(f"| `{file.name}` |")), None)
    parts = []
    if header is not None and row is not None:
        keys = [c.strip() for c in header.strip("|").split("|")]
        cells = [c.strip() for c in row.strip("|").split("|")]
        parts.append("\n".join(f"{k}: {c}" for k, c in zip(keys, cells, strict=False)))
    else:
        parts.append(f"{file.name}: no row for this file in {doc}")
    for title in ("## Source", "## Licence"):
        if title in lines:
            start = lines.index(title) + 1
            stop = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")),
                        len(lines))
            parts.append(title[3:] + ":\n" + "\n".join(lines[start:stop]).strip())
    return "\n\n".join(parts)


def load_pltm_uci(name: str, path=None) -> PLTMData:
    """One of the twelve PLTM-EAST data sets, read from its ARFF file.

    ==========================  =====  ==========  =======
    name                        rows   continuous  classes
    ==========================  =====  ==========  =======
    glass                       214    9           6 of 7
    ionosphere-a2removed        351    33          2
    iris                        150    4           3
    nba_doug                    441    18          6
    segmentation.count-removed  2,310  18          7
    sonar                       208    60          2
    synY1-0.6                   1,000  9           3
    vechicle                    846    18          4
    wdbc                        569    30          2
    wine-reordered              178    13          3
    yeast                       1,484  8           10
    zernike                     2,000  47          10
    ==========================  =====  ==========  =======

    The class is each file's last attribute (PLTM-EAST's ``-c last``); every other attribute
    is continuous and becomes a feature. ``yeast``'s ``erl`` (two values) and ``pox`` (three)
    and glass's ``Ba`` and ``Fe`` (mostly 0) are near-degenerate for a Gaussian.

    Args:
        name: one of :data:`PLTM_UCI_SETS` (the file's stem, e.g. ``"vechicle"`` as spelt
            upstream).
        path: the folder holding ``<name>.arff``, or that file itself; by default
            ``$PYROMODELS_DATA/pltm_uci/``.

    Returns:
        :class:`PLTMData` with ``features`` (float64 DataFrame), ``classes`` (categorical
        Series), ``relation`` and ``provenance``.

    Raises:
        ValueError: an unknown ``name`` (the message lists the known ones); a file that is
            not ARFF, lacks the set's class attribute, holds an attribute other than the class
            that is not numeric, a class value outside the declared ones, or missing, infinite
            or constant feature values.
        FileNotFoundError: no ``<name>.arff`` where it was looked for (the message lists the
            places).

    Example:
        >>> data = load_pltm_uci("iris")  # doctest: +SKIP
        >>> data.features.shape, data.classes.value_counts().tolist()  # doctest: +SKIP
        ((150, 4), [50, 50, 50])
    """
    check_in(name, "name", PLTM_UCI_SETS)
    file = locate([f"{name}.arff"], path=path, subdir=_SUBDIR,
                  what=f"PLTM-EAST data set {name!r}", how_to_get=_HOW_TO_GET)
    records, meta = _read_arff(file)
    raw = {_unquoted(a): a for a in meta.names()}  # clean name -> scipy's field name
    attributes = list(raw)
    if len(attributes) != len(meta.names()):
        raise ValueError(f"{file} names an attribute twice: {meta.names()}")
    class_attribute = _CLASS_ATTRIBUTE[name]
    classes = None
    if class_attribute is not None:
        if class_attribute not in raw:
            raise ValueError(
                f"{file} has no attribute {class_attribute!r}, the class of {name!r}; its "
                f"attributes are {attributes}"
            )
        kind, declared = meta[raw[class_attribute]]
        if kind != "nominal":
            raise ValueError(
                f"{file}: the class attribute {class_attribute!r} must be nominal, got {kind}"
            )
        classes = _class_series(records[raw[class_attribute]], tuple(declared),
                                class_attribute, file)
    feature_names = [a for a in attributes if a != class_attribute]
    wrong = [f"{a!r} ({meta[raw[a]][0]})" for a in feature_names if meta[raw[a]][0] != "numeric"]
    if wrong:
        raise ValueError(
            f"{file}: every attribute but the class {class_attribute!r} must be numeric; "
            f"not numeric: {', '.join(wrong)}"
        )
    frame = pd.DataFrame({a: records[raw[a]] for a in feature_names}, index=range(len(records)))
    values, _ = check_numeric_table(frame, name=f"{file} (features)")
    features = pd.DataFrame(values, columns=pd.Index(feature_names))
    return PLTMData(
        name=name,
        features=features,
        classes=classes,
        relation=meta.name.strip("'\""),
        provenance=_provenance(file),
    )
