"""Statistics tables: conjugate and discrete updates that no longer run the program.

A conjugate site ``theta`` whose children are gathered by a discrete site ``z`` (a mixture's
weights read by ``z``, Dawid-Skene's confusion rows ``conf[worker, z]``) has log conditional
``c_e(z) . T(theta_e)`` per element ``e``, where ``c(z)`` adds up what each entry of the
children's log densities contributes. Each entry ``t`` (Dawid-Skene: an item's annotations)
belongs to one element ``n`` of ``z``; with ``z_n = k`` its log density is
``sum_e S[t, k, e] . T(theta_e) + const``, with ``S[t, k, e]`` zero for the elements it does
not read. The statistics are read off the program once, at plan time, for every entry, value
and element:

* with ``z`` at ``k`` everywhere and every element of ``theta`` at the family's first point,
  then each element alone moved to each of the family's next ``p`` points, one linear solve
  per entry and element gives ``S[t, k, e]`` (an entry whose log density did not move reads no
  such element);
* with every element at its own random point of the support, each entry's log density must be
  what its statistics predict: that checks the linearity and that an entry's elements add up,
  for every entry and value at once.

Each value of ``z`` is scored in one batched trace of ``E p + 2`` values of ``theta`` (in runs
of bounded size), ``K`` such traces in all. The nonzero statistics, summed over each element's
entries, form a sparse matrix ``A`` of ``N K`` rows (element of ``z``, value) and ``E p``
columns (element of ``theta``, statistic): these terms' part of the log joint is
``onehot(z) . A . T(theta)``. After that:

* **the conjugate update** of ``theta`` reads its coefficients as ``c(z_0) + A^T (onehot(z) -
  onehot(z_0))``, where ``c(z_0)`` is the program's own reading at the traced state;
* **the discrete update** of ``z``, when every term that changes with ``z`` reads at most one
  such ``theta`` besides ``z``, has logits ``b + A T(theta)``, with ``b`` the rest of the
  program's own logits at the traced state (the terms that read only ``z`` and the data).

Tables hold for the data they were read from: with other data (a Geweke test draws new data
every step) an update reads the program, as without a table. Both are checked where they are
built against the program's own reading: the conjugate
coefficients at a random ``z``, the logits at a random ``theta``. A table is built only where
the terms that read ``theta`` read no other latent site than ``theta`` and ``z``: a precision
read beside a mean (a scale beside a location) changes every sweep, and with it the mean's
statistics, so such a site keeps reading the program.
"""

from __future__ import annotations

import warnings

import torch

from .compiled import signature
from .exponential import _check_point, _coefficients
from .families import family_of, unwrap
from .trace import _reduce_rows, _shifted_plates, element_logits, tolerance, values_terms

__all__ = ["StatisticsTable", "TableLogits", "NoTable", "DataCheck", "SiteFeatures", "build_table",
           "build_logits", "read_entries", "sparse_rows", "owner_map", "support_index", "PROBE_BUDGET"]

#: the most entries x elements x statistics a table reads at plan time (memory and time)
PROBE_BUDGET = 2 ** 26


class NoTable(ValueError):
    """The site's conditional is not read by a statistics table (the reason is the message)."""


def support_index(value: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """The index into ``support`` ``(K, *event)`` of each element of ``value``, flattened:
    ``(N,)`` long."""
    k = support.shape[0]
    flat = value.reshape(-1, max(1, support[0].numel()))
    rows = support.reshape(k, -1).to(flat.dtype)
    return (flat[:, None, :] == rows[None]).all(-1).to(torch.int8).argmax(-1)


def owner_map(shape: tuple, z_shape: torch.Size, term_plates: dict, z_plates: dict) -> torch.Tensor:
    """``(prod(shape),)``: the element of ``z`` each entry of a term of ``shape`` belongs to."""
    probe = torch.zeros((1,) + tuple(shape))
    if _reduce_rows(probe, z_shape, term_plates, z_plates) is None:
        raise NoTable("a term is not indexed by the discrete site's plates")
    z_dims = list(z_shape)
    while len(z_dims) > len(shape):
        if z_dims[0] != 1:
            raise NoTable("a term has fewer dimensions than the discrete site")
        z_dims.pop(0)
    index = torch.arange(max(1, z_shape.numel())).reshape([1] * (len(shape) - len(z_dims)) + z_dims)
    return torch.broadcast_to(index, tuple(shape)).reshape(-1)


def _tensors(value, depth: int = 3) -> list:
    """The tensors among the program's arguments (inside tuples, lists, dicts and objects'
    attributes, ``depth`` levels deep), in a fixed order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if depth == 0 or isinstance(value, (int, float, str, bool, type(None))):
        return []
    if isinstance(value, (tuple, list)):
        items = value
    elif isinstance(value, dict):
        items = value.values()
    else:
        items = getattr(value, "__dict__", {}).values()
    return [t for v in items for t in _tensors(v, depth - 1)]


class DataCheck:
    """Whether the program's arguments are still the data a table was read from: the same
    tensors (by identity and in-place version, checked first) or equal ones (a copy, as in a
    worker process); any other data (a Geweke test's new draw) is not."""

    def __init__(self, args, kwargs):
        self.layout = signature((args, kwargs), identity=False)
        self.kept = [t.detach().clone() for t in _tensors((args, kwargs))]
        self.seen = [(id(t), t._version) for t in _tensors((args, kwargs))]

    def same(self, args, kwargs) -> bool:
        now = _tensors((args, kwargs))
        if len(now) != len(self.kept):
            return False
        if not all(self.seen[i] == (id(t), t._version) for i, t in enumerate(now)) \
                and signature((args, kwargs), identity=False) != self.layout:
            return False  # other shapes or plain values
        for i, (t, kept) in enumerate(zip(now, self.kept, strict=True)):
            if (id(t), t._version) == self.seen[i]:
                continue
            if t.shape != kept.shape or t.dtype != kept.dtype or not torch.equal(t, kept.to(t.device)):
                return False
            self.seen[i] = (id(t), t._version)
        return True

    def __getstate__(self):
        return {**self.__dict__, "seen": [None] * len(self.seen)}  # identities are per process


class SiteFeatures:
    """``T`` of one conjugate site at a state, ``(E, p)`` float64, by its prior's family; and
    the random value of every element the checks use."""

    def __init__(self, site: str, fn):
        self.site, self.fn, self.sites = site, fn, (site,)

    def __call__(self, state: dict) -> torch.Tensor:
        event = unwrap(self.fn).event_shape
        value = state[self.site].to(torch.float64).reshape((-1,) + tuple(event))
        return family_of(self.fn).features(value)

    def random_values(self, state: dict) -> dict:
        base = unwrap(self.fn)
        points = family_of(self.fn).points(base.event_shape, state[self.site])
        value = _check_point(points, base.batch_shape, base.event_shape, state[self.site])
        return {self.site: value.to(state[self.site].dtype).reshape(state[self.site].shape)}


class StatisticsTable:
    """The nonzero statistics of a conjugate site's entries gathered by one discrete site (see
    the module docs); built by :func:`build_table`.

    The statistics form a sparse matrix ``A`` of ``N K`` rows (element of ``z``, value) by
    ``E p`` columns (element of ``theta``, statistic): the terms' part of the log joint is
    ``onehot(z) . A . T(theta)``. So ``theta``'s coefficients are ``A^T onehot(z)`` and
    ``z``'s logits ``A T(theta)``, two sparse products.

    Attributes:
        features: the statistics ``T`` of the table's sites at a state (:class:`SiteFeatures`,
            or a joint one for sites drawn together); ``sites``: their names.
        z: the discrete site; ``support``: its values ``(K, *event)``.
        rows, cols, values: the nonzero entries of ``A`` (summed over the terms' entries).
        shape: ``(N K, E p)``; ``stat_size``: ``p``.
        entries: how many log-density entries the statistics were read from.
        data: the :class:`DataCheck` of the arguments they were read from.
        base: ``(E, p)`` the coefficients at the traced state less the table's part.
    """

    def __init__(self, features, z, support, rows, cols, values, shape, stat_size, entries, data=None):
        self.features, self.z, self.support, self.data = features, z, support, data
        self.sites = features.sites
        self.rows, self.cols, self.values, self.shape = rows, cols, values, shape
        self.stat_size, self.entries = stat_size, entries
        self.base = torch.zeros(shape[1], dtype=torch.float64, device=values.device)
        self._matrices = None

    def __getstate__(self):
        return {**self.__dict__, "_matrices": None}  # rebuilt where it is used

    def _sparse(self):
        """``(A, A^T)`` in compressed sparse rows, built at the first use in this process."""
        if self._matrices is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # torch's notice that CSR is beta
                coo = torch.sparse_coo_tensor(torch.stack([self.rows, self.cols]), self.values,
                                              self.shape, check_invariants=False).coalesce()
                self._matrices = (coo.to_sparse_csr(), coo.t().coalesce().to_sparse_csr())
        return self._matrices

    def onehot(self, z_value: torch.Tensor) -> torch.Tensor:
        """``(N K,)`` the indicator of each element's value of ``z``."""
        k = self.support.shape[0]
        index = support_index(z_value, self.support)
        out = torch.zeros(self.shape[0], dtype=torch.float64, device=self.values.device)
        out[torch.arange(len(index), device=index.device) * k + index] = 1.0
        return out

    def coefficients(self, state: dict) -> torch.Tensor:
        """``(E, p)`` the conjugate coefficients of ``theta`` at ``state``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            part = self._sparse()[1] @ self.onehot(state[self.z])
        return (self.base + part).reshape(-1, self.stat_size)

    def logit_part(self, features: torch.Tensor) -> torch.Tensor:
        """``(N K,)``: ``A T(theta)`` (``features``: ``(E, p)``, ``T`` of each element)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return self._sparse()[0] @ features.reshape(-1)


def _probe_values(points, count: int, batch_shape, event_shape, ref) -> list:
    """The values of ``theta`` scored at each value of ``z``: every element at the family's
    first point, then each element alone at each of the next ``p`` points, then the mixed
    check value (every element at its own random point)."""
    full = tuple(batch_shape) + tuple(event_shape)
    first = points[0].to(ref.dtype).expand(full).clone()
    flat = first.reshape((count,) + tuple(event_shape))
    moved = []
    for e in range(count):
        for point in points[1:-1]:
            v = flat.clone()
            v[e] = point.to(ref.dtype)
            moved.append(v.reshape(full))
    check = _check_point(points, batch_shape, event_shape, ref).to(ref.dtype)
    return [first] + moved + [check]


def read_entries(design, y, count: int, check_features, tol):
    """``(stats (E, T, p), reads (E, T))`` of one value of ``z`` from the probes' log
    densities ``y`` ``(E p + 2, T)``: every element at the first point, then each element
    alone at each of the other ``p`` points, then every element at its own check point.
    ``design``: ``(p + 1, p)`` the statistics at the points (the first one first);
    ``check_features``: ``(E, p)`` at the check points. Raises :class:`NoTable`."""
    p = design.shape[1]
    phi = torch.cat([design, torch.ones(p + 1, 1, dtype=torch.float64, device=design.device)], -1)
    first, moves, last = y[0], y[1:-1].reshape(count, p, -1), y[-1]
    scale = tol * (1.0 + y.abs().amax(0))
    reads = ((moves - first).abs() > scale).any(1)                             # (E, T)
    rhs = torch.cat([first.expand(count, 1, -1), moves], 1)                    # (E, p + 1, T)
    stats = torch.linalg.solve(phi, rhs)[:, :p].transpose(1, 2)                # (E, T, p)
    stats = torch.where(reads[..., None], stats, torch.zeros_like(stats))
    predicted = first + torch.einsum("etp,ep->t", stats, check_features - design[:1])
    if not bool(((predicted - last).abs() <= scale).all()):
        raise NoTable("at a random value of every element an entry's log density is not what "
                      "its statistics predict")
    return stats, reads


def sparse_rows(stats, reads, owner, k: int, k_count: int) -> tuple:
    """``(rows, cols, values)`` of the table's matrix from one value's statistics."""
    element, entry = reads.nonzero(as_tuple=True)
    p = stats.shape[-1]
    j = torch.arange(p, device=element.device)
    return ((owner[entry] * k_count + k)[:, None].expand(-1, p).reshape(-1),
            (element[:, None] * p + j).reshape(-1), stats[element, entry].reshape(-1))


def _reads(deps: dict, latent: set, site: str) -> dict:
    """``{term: the latent sites it reads}`` for the terms that read ``site``."""
    return {name: frozenset(r) & latent for name, r in deps.items() if site in r}


def build_table(model, args, kwargs, state: dict, theta: str, fn, z: str, support: torch.Tensor,
                deps: dict, latent: set) -> StatisticsTable:
    """The :class:`StatisticsTable` of conjugate site ``theta`` (prior ``fn``) over discrete
    site ``z`` (``support`` ``(K, *event)``), built at ``state`` and checked at a random value
    of ``z`` against the program's own coefficients; ``deps``: ``{term: sites it reads}``
    (:func:`~.markov.term_dependencies`), ``latent``: the latent sites. Raises
    :class:`NoTable` with the reason where no table applies."""
    family = family_of(fn)
    base_fn = unwrap(fn)
    batch_shape, event_shape = base_fn.batch_shape, base_fn.event_shape
    theta_terms = _reads(deps, latent, theta)
    gathered = [name for name, r in theta_terms.items() if z in r]
    others = {s for r in theta_terms.values() for s in r} - {theta, z}
    if not gathered:
        raise NoTable(f"no term reads both {theta!r} and {z!r}")
    if others:
        raise NoTable(f"its terms also read {sorted(others)}, which change every sweep")
    value, z_value = state[theta], state[z]
    points = family.points(event_shape, value).to(torch.float64)
    count = max(1, batch_shape.numel())
    z_shape = z_value.shape[:z_value.dim() - (support.dim() - 1)]
    maps, z_plates = _shifted_plates(model, args, kwargs, state, z, z_shape)
    probes = _probe_values(points, count, batch_shape, event_shape, value)
    check_features = family.features(probes[-1].reshape((count,) + tuple(event_shape)).to(torch.float64))
    design = family.features(points[:-1])
    k_count, p = support.shape[0], len(points) - 2
    parts, owner, entries = [], None, 0
    for k in range(k_count):
        at_k = {**state, z: support[k].to(z_value.dtype).expand(z_value.shape).clone()}
        found = values_terms(model, args, kwargs, at_k, theta, probes)
        if any(name not in found for name in gathered):
            raise NoTable("a gathered term was not scored")
        if owner is None:
            owner = torch.cat([owner_map(tuple(found[name].shape[1:]), z_shape, maps.get(name, {}), z_plates)
                               for name in gathered]).to(value.device)
            entries = len(owner)
            if count * entries * p > PROBE_BUDGET:
                raise NoTable(f"{count} elements x {entries} entries are too many to read")
        y = torch.cat([found[name].reshape(found[name].shape[0], -1) for name in gathered], 1)
        stats, reads = read_entries(design, y.to(torch.float64), count, check_features,
                                    tolerance(value.dtype))
        parts.append(sparse_rows(stats, reads, owner, k, k_count))
    rows, cols, values = (torch.cat(part) for part in zip(*parts))
    table = StatisticsTable(SiteFeatures(theta, fn), z, support, rows, cols, values,
                            (max(1, z_shape.numel()) * k_count, count * p), p, entries,
                            DataCheck(args, kwargs))
    coef = _coefficients(model, args, kwargs, state, theta, family, batch_shape, event_shape, False)
    table.base = coef.reshape(-1) - table.coefficients(state).reshape(-1)
    _check_table(model, args, kwargs, state, table, family, batch_shape, event_shape, support)
    return table


def _check_table(model, args, kwargs, state, table, family, batch_shape, event_shape, support):
    """The table's coefficients at a random value of ``z`` (a fixed seed, so the chain's
    stream is untouched) against the program's own."""
    z_value = state[table.z]
    shape = z_value.shape[:z_value.dim() - (support.dim() - 1)]
    gen = torch.Generator().manual_seed(1)
    k = torch.randint(0, support.shape[0], tuple(shape), generator=gen).to(z_value.device)
    moved = {**state, table.z: support[k].to(z_value.dtype)}
    own = _coefficients(model, args, kwargs, moved, table.sites[0], family, batch_shape, event_shape, False)
    mine = table.coefficients(moved)
    tol = tolerance(state[table.sites[0]].dtype) * (1.0 + float(own.abs().max()))
    if not bool(((mine - own).abs() <= tol).all()):
        raise NoTable(f"at a random {table.z!r} the table's coefficients differ from the program's")


class TableLogits:
    """The logits of a discrete site from the statistics tables of the conjugate sites its
    terms read (see the module docs); built by :func:`build_logits`.

    Attributes:
        z: the site; ``tables``: the tables its terms read; ``base``: ``(*shape, K)`` the
        logits' part from the other terms; ``data``: the :class:`DataCheck` of the arguments
        it was read from.
    """

    def __init__(self, z, tables, base, data=None):
        self.z, self.tables, self.base, self.data = z, tables, base, data

    def logits(self, state: dict) -> torch.Tensor:
        """``(*shape, K)`` the site's logits at ``state``."""
        out = self.base.reshape(-1)
        for table in self.tables:
            out = out + table.logit_part(table.features(state))
        return out.reshape(self.base.shape)


def build_logits(model, args, kwargs, state: dict, z: str, support: torch.Tensor, tables: dict,
                 deps: dict, latent: set) -> TableLogits:
    """The :class:`TableLogits` of discrete site ``z`` from ``tables`` (``{site: its
    StatisticsTable over z}``), checked against the program's own logits with every table's
    sites at a random point of their support. Raises :class:`NoTable` where a term that
    changes with ``z`` reads a latent site with no table, or the sites of two. (A table's
    terms read only its sites and ``z``, so they are exactly ``z``'s terms that read them.)"""
    used = []
    for name, reads in _reads(deps, latent, z).items():
        rest = reads - {z}
        if not rest:
            continue
        owners = {id(tables[s]) for s in rest if s in tables}
        if len(owners) != 1 or not all(s in tables for s in rest):
            raise NoTable(f"the term of {name!r} reads {sorted(rest)}, not the sites of one table")
        table = tables[next(iter(rest))]
        if all(t is not table for t in used):
            used.append(table)
    if not used:
        raise NoTable(f"no term of {z!r} reads a site with a table")
    own = element_logits(model, args, kwargs, state, z, support, skip_unchanged=False)
    if own is None:
        raise NoTable(f"the elements of {z!r} are not conditionally independent")
    logits = TableLogits(z, used, torch.zeros_like(own, dtype=torch.float64), DataCheck(args, kwargs))
    logits.base = own.to(torch.float64) - logits.logits(state)
    moved = dict(state)
    for table in used:
        moved.update(table.features.random_values(state))
    again = element_logits(model, args, kwargs, moved, z, support, skip_unchanged=False)
    if again is None:
        raise NoTable(f"the elements of {z!r} are not conditionally independent")
    a = torch.log_softmax(logits.logits(moved), -1)
    b = torch.log_softmax(again.to(torch.float64), -1)
    tol = tolerance(state[used[0].sites[0]].dtype) * (1.0 + float(again.abs().max()))
    if not bool(((a == b) | ((a - b).abs() <= tol)).all()):
        names = [s for t in used for s in t.sites]
        raise NoTable(f"at random values of {names} the table's logits differ from the program's")
    return logits
