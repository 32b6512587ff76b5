"""The ten small crowd-label data sets with gold, shipped inside the package.

Each set is stored as ``files/crowd/<name>/answers.csv.gz`` (one row per judgement: item,
worker, label) and ``gold.csv.gz`` (item, label); sources and licences are summarised in
``files/PROVENANCE.md``.
"""

from __future__ import annotations

import pandas as pd

from ..checks import check_in
from .paths import vendored

__all__ = ["list_crowd_datasets", "load_crowd", "load_ducks_species"]

_CROWD_SETS = (
    "rte", "temp", "bluebirds", "ducks", "dog", "web", "product", "adult", "face", "music_genre",
)


def list_crowd_datasets() -> tuple[str, ...]:
    """Names accepted by :func:`load_crowd`."""
    return _CROWD_SETS


def _read(name: str, file: str) -> pd.DataFrame:
    return pd.read_csv(vendored("crowd", name, file))


def load_crowd(name: str) -> tuple[pd.DataFrame, pd.Series]:
    """Load a vendored crowd-label data set.

    ============  ======  =======  ======  =======  ==========================================
    name          items   workers  labels  classes  notes
    ============  ======  =======  ======  =======  ==========================================
    rte           800     164      8,000   0, 1     textual entailment (Snow et al. 2008)
    temp          462     76       4,620   1, 2     temporal order of events (Snow et al.)
    bluebirds     108     39       4,212   0, 1     bird species (Welinder et al. 2010)
    ducks         240     53       9,600   0, 1     gold is binary, *derived* from species
    dog           807     109      8,070   0..3     dog breeds (Zhou et al. 2012)
    web           2,665   177      15,567  1..5     search relevance; gold for 2,653 items
    product       8,315   176      24,945  0, 1     entity resolution (Wang et al. 2012)
    adult         11,040  825      92,721  G P R X  site ratings; gold for 333 labelled items
    face          584     27       5,242   0..3     facial expression
    music_genre   700     44       2,945   10 names song genre (Rodrigues et al. 2013)
    ============  ======  =======  ======  =======  ==========================================

    Cautions:

    * **Label leaks.** ``product`` item ids end in ``_0`` / ``_1``, which *is* the gold label;
      ``music_genre`` item ids (``<genre>.<nnnnn>.mp3``) start with the gold genre. Never feed
      item ids (or anything derived from them) to a model.
    * ``ducks``: the source records species only; the binary gold (1 = Mallard or American
      Black Duck) is our reading of the question "is there a duck?". The species are in
      :func:`load_ducks_species`.
    * ``adult``: the gold file has 1,517 urls, of which only 333 have crowd labels; the crowd
      file has 2,922 repeated (item, worker) judgements (build an
      :class:`~pyromodels.data.annotations.AnnotationTable` with ``allow_repeats=True``).
    * ``web``: 12 of the 2,665 items have no gold (99.6 % covered).

    Args:
        name: one of :func:`list_crowd_datasets`.

    Returns:
        ``(answers, gold)``: ``answers`` is a DataFrame with columns ``task``, ``worker``,
        ``label`` (crowd-kit's layout) in the source's ids; ``gold`` is a Series named
        ``label`` indexed by ``task``.

    Example:
        >>> answers, gold = load_crowd("bluebirds")
        >>> answers.shape, gold.shape
        ((4212, 3), (108,))
    """
    check_in(name, "name", _CROWD_SETS)
    answers = _read(name, "answers.csv.gz").rename(columns={"item": "task"})
    gold = _read(name, "gold.csv.gz").rename(columns={"item": "task"})
    return answers, gold.set_index("task")["label"]


def load_ducks_species() -> pd.DataFrame:
    """True species of the 240 ``ducks`` images (the source's own gold).

    Returns:
        DataFrame indexed by ``task`` (the image index used in :func:`load_crowd`) with
        columns ``species_id``, ``species_name`` (Mallard, Canada Goose, American Black Duck,
        Non Bird, Red-necked Grebe) and ``orig_image_id``.
    """
    return _read("ducks", "gold_species.csv.gz").rename(columns={"item": "task"}).set_index(
        "task"
    )
