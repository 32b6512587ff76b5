"""Conjugate sites read together, drawn in one update.

Sites whose statistics tables were read together over one discrete site (a change point's two
rates, see :mod:`.tables`) are independent given it: the coefficients of each are a function
of the discrete site alone. Where they share a prior family, the size of its statistics and
their event shape, and their tables are held dense, one gather over the tables' matrices laid
side by side gives every site's coefficients, and one call of the family's sampler draws them
all, in the order the sites' own updates would (on the CPU, torch's samplers draw a tensor's
elements one after the other, so the draws are those of the sites' updates run in turn). That
takes about half the tensor operations of one update per site. Where it does not apply at a
call (an update not yet checked at its first sweep, other data, coefficients outside the
family), each site's own update runs, in program order.
"""

from __future__ import annotations

import torch

from .exponential import ConjugateUpdate
from .families import family_of, unwrap

__all__ = ["GroupedUpdate", "groupable"]


def groupable(updates: list, state: dict) -> bool:
    """Whether ``updates`` (the :class:`~.exponential.ConjugateUpdate` of each site of a group,
    each with its table) can draw in one update: two or more, one prior family, one size of
    statistics, one event shape, dtype and device, and tables held dense over the same
    discrete site."""
    if len(updates) < 2 or not all(isinstance(u, ConjugateUpdate) and u.table is not None for u in updates):
        return False
    first = updates[0]
    same = all(family_of(u.fn) is family_of(first.fn) and u.table.stat_size == first.table.stat_size
               and unwrap(u.fn).event_shape == unwrap(first.fn).event_shape
               and u.table.z == first.table.z and u.table.data is first.table.data
               and state[u.site].dtype == state[first.site].dtype
               and state[u.site].device == state[first.site].device for u in updates)
    return same and all(u.table.dense for u in updates)


class GroupedUpdate:
    """The update of conjugate sites read together (see the module docs; a picklable callable
    for a :class:`~pyromodels.core.GibbsBlock`).

    Args:
        updates: each site's :class:`~.exponential.ConjugateUpdate`, in program order, each with
            its statistics table (see :func:`groupable`).
    """

    def __init__(self, updates):
        self.updates = tuple(updates)
        self.sites = tuple(u.site for u in self.updates)
        first = self.updates[0]
        self.z, self.stat_size = first.table.z, first.table.stat_size
        self.shapes = [tuple(unwrap(u.fn).batch_shape) + tuple(unwrap(u.fn).event_shape)
                       for u in self.updates]
        self.sizes = [max(1, unwrap(u.fn).batch_shape.numel()) for u in self.updates]
        self._joined = None  # (A side by side, bases end to end), built at the first use

    def __getstate__(self):
        return {**self.__dict__, "_joined": None}  # rebuilt where used

    def _joined_tables(self) -> tuple:
        if self._joined is None:
            tables = [u.table for u in self.updates]
            self._joined = (torch.cat([t.dense_matrix() for t in tables], dim=1),
                            torch.cat([t.base for t in tables]))
        return self._joined

    def __call__(self, state: dict, data, generator: torch.Generator) -> dict:
        first = self.updates[0].table
        if not any(u.verify for u in self.updates) and first.data.same(data.args, data.kwargs):
            drawn = self._together(state, generator)
            if drawn is not None:
                return drawn
        out, current = {}, dict(state)
        for update in self.updates:  # one site after the other, each by its own update
            new = update(current, data, generator)
            current.update(new)
            out.update(new)
        return out

    def _together(self, state: dict, generator: torch.Generator) -> dict | None:
        """Every site's draw from one gather and one call of the sampler, or ``None`` where a
        coefficient is outside the family (each site's own update then reads the program)."""
        matrix, base = self._joined_tables()
        rows = self.updates[0].table.taken_rows(state[self.z])
        coef = (base + matrix.index_select(0, rows).sum(0)).reshape(-1, self.stat_size)
        family = family_of(self.updates[0].fn)  # looked up, not kept: a family does not pickle
        params = family.params(coef)
        if not bool(family.valid(params).all()):
            return None
        draws = family.sample(params, generator).split(self.sizes)
        return {u.site: d.reshape(shape).to(state[u.site].dtype)
                for u, d, shape in zip(self.updates, draws, self.shapes)}
