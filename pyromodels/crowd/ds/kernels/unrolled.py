r"""The Dawid-Skene EM pass of :mod:`.ds_numba`, compiled once per number of classes.

The generic pass keeps item ``n``'s running product :math:`a_{n\cdot}` in a small array that
it reads and writes for every label; the compiler must assume that array may overlap the
confusion and count arrays, so every product goes through memory. Written out for a fixed
``K``, the ``K`` products are scalars that stay in registers, which makes the pass about 1.5
times faster. The source is generated from one template (``a0, a1, ...`` for the classes)
and compiled by numba on first use for each ``K`` in ``2 .. MAX_CLASSES`` (about a second,
once per process). It does the generic ``_em_counts``'s arithmetic item by item (only the
logs of the rescaling factors are summed in another order), and the tests hold the two to
each other.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

from . import compiled as ds_numba

__all__ = ["MAX_CLASSES", "em_counts_kernel"]

#: the largest ``K`` with a written-out pass; larger ``K`` use the generic one
MAX_CLASSES = 16

_TEMPLATE = """
def em_counts(ptr, workers, labels, prior, conf, counts, qsum):
    run, total = 1.0, 0.0
    {zero_totals}
    for n in range(ptr.shape[0] - 1):
        {start}
        for i in range(ptr[n], ptr[n + 1]):
            w = workers[i]
            y = labels[i]
            {multiply}
            top = max({classes})
            if top < SMALL and top > 0.0:
                {rescale}
                total += np.log(top)
        s = {sum}
        run, total = accumulate(s, run, total)
        inv = 1.0 / s
        {normalise}
        {add_totals}
        for i in range(ptr[n], ptr[n + 1]):
            w = workers[i]
            y = labels[i]
            {add_counts}
    {store_totals}
    return total + np.log(run)
"""


def _source(num_classes: int) -> str:
    ks = range(num_classes)

    def each(pattern: str) -> str:
        return "; ".join(pattern.format(k=k) for k in ks)

    return _TEMPLATE.format(
        zero_totals=each("t{k} = 0.0"),
        start=each("a{k} = prior[{k}]"),
        multiply=each("a{k} *= conf[w, y, {k}]"),
        classes=", ".join(f"a{k}" for k in ks),
        rescale=each("a{k} /= top"),
        sum=" + ".join(f"a{k}" for k in ks),
        normalise=each("a{k} *= inv"),
        add_totals=each("t{k} += a{k}"),
        add_counts=each("counts[w, y, {k}] += a{k}"),
        store_totals=each("qsum[{k}] += t{k}"),
    )


@functools.cache
def em_counts_kernel(num_classes: int):
    """The compiled pass for ``num_classes`` classes (same arguments and result as
    ``ds_numba._em_counts``), or the generic pass above :data:`MAX_CLASSES`."""
    if not 2 <= num_classes <= MAX_CLASSES:
        return ds_numba._em_counts
    namespace = {"np": np, "SMALL": ds_numba.SMALL, "accumulate": ds_numba._accumulate}
    exec(compile(_source(num_classes), f"<dawid-skene pass, K={num_classes}>", "exec"), namespace)
    return njit(error_model="numpy")(namespace["em_counts"])
