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

* **the conjugate update** of ``theta`` reads its coefficients as ``c_0 + A^T onehot(z)``,
  where ``c_0`` sums the statistics of the terms that read ``theta`` but not ``z`` (its
  prior), read with the same probes: an element no entry reads keeps exactly its prior's
  coefficients (a concentration of 1 stays 1, on the same side of the Gamma sampler's switch
  as the program's reading);
* **the discrete update** of ``z``, when every term that changes with ``z`` reads at most one
  such ``theta`` besides ``z``, has logits ``b + A T(theta)``, with ``b`` the rest of the
  program's own logits at the traced state (the terms that read only ``z`` and the data).

**Sites read together.** Conjugate sites read by the same terms (a change-point's two rates,
each count reading one of them according to the change point) are read as one group: each
element of each site moved alone, and at the check value every element of every site at its
own random point, so the sites' parts of an entry's log density must add up (a mean and a
precision drawn apart do not: the precision multiplies the mean's statistics, and they keep
reading the program). Each site then has its own table, and the discrete site's logits add
them up.

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
import weakref

import torch

from .compiled import signature
from .exponential import _check_point, _coefficients
from .families import family_of, unwrap
from .trace import _reduce_rows, _shifted_plates, element_logits, site_choice, tolerance, values_terms

__all__ = ["StatisticsTable", "TableLogits", "NoTable", "DataCheck", "SiteFeatures", "build_tables",
           "build_logits", "read_entries", "solve_entries", "sparse_rows", "owner_map", "support_index",
           "entry_rows", "one_at_a_time", "PROBE_BUDGET"]

#: the most entries x elements x statistics a table reads at plan time (memory and time)
PROBE_BUDGET = 2 ** 26
#: the most entries of a table's ``A`` held dense (8 MiB in float64); larger ones are sparse
DENSE_ENTRIES = 2 ** 20


class NoTable(ValueError):
    """The site's conditional is not read by a statistics table (the reason is the message)."""


def support_index(value: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """The index into ``support`` ``(K, *event)`` of each element of ``value``, flattened:
    ``(N,)`` long."""
    k = support.shape[0]
    flat = value.reshape(-1, max(1, support[0].numel()))
    rows = support.reshape(k, -1).to(flat.dtype)
    return (flat[:, None, :] == rows[None]).all(-1).to(torch.int8).argmax(-1)


def _counting(support: torch.Tensor) -> bool:
    """Whether the support is ``0 .. K - 1`` (a value is then its own index)."""
    return support.dim() == 1 and bool(torch.equal(
        support.to(torch.float64), torch.arange(len(support), dtype=torch.float64, device=support.device)))


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
        self.seen = [_seen(t) for t in _tensors((args, kwargs))]

    def same(self, args, kwargs) -> bool:
        now = _tensors((args, kwargs))
        if len(now) != len(self.kept):
            return False
        if not all(_still(self.seen[i], t) for i, t in enumerate(now)) \
                and signature((args, kwargs), identity=False) != self.layout:
            return False  # other shapes or plain values
        for i, (t, kept) in enumerate(zip(now, self.kept, strict=True)):
            if _still(self.seen[i], t):
                continue
            if t.shape != kept.shape or t.dtype != kept.dtype or not torch.equal(t, kept.to(t.device)):
                return False
            self.seen[i] = _seen(t)
        return True

    def __getstate__(self):
        return {**self.__dict__, "seen": [None] * len(self.seen)}  # identities are per process


def _seen(t: torch.Tensor) -> tuple:
    """A tensor found equal to the kept data: a weak reference (an id alone could be a freed
    tensor's, reused by other data) and its in-place version."""
    return weakref.ref(t), t._version


def _still(seen, t: torch.Tensor) -> bool:
    """Whether ``t`` is the tensor ``seen`` and unchanged since."""
    return seen is not None and seen[0]() is t and seen[1] == t._version


class SiteFeatures:
    """``T`` of one conjugate site at a state, ``(E, p)`` float64, by its prior's family; and
    the random value of every element the checks use."""

    def __init__(self, site: str, fn):
        self.site, self.fn, self.sites = site, fn, (site,)
        self.event = tuple(unwrap(fn).event_shape)

    def __call__(self, state: dict) -> torch.Tensor:
        value = state[self.site].to(torch.float64).reshape((-1,) + self.event)
        return family_of(self.fn).features(value)

    def random_values(self, state: dict) -> dict:
        base = unwrap(self.fn)
        points = family_of(self.fn).points(base.event_shape, state[self.site])
        value = _check_point(points, base.batch_shape, base.event_shape, state[self.site])
        return {self.site: value.to(state[self.site].dtype).reshape(state[self.site].shape)}


class StatisticsTable:
    """The nonzero statistics of a conjugate site's entries gathered by one discrete site (see
    the module docs); built by :func:`build_tables`.

    The statistics form a sparse matrix ``A`` of ``N K`` rows (element of ``z``, value) by
    ``E p`` columns (element of ``theta``, statistic): the terms' part of the log joint is
    ``onehot(z) . A . T(theta)``. So ``theta``'s coefficients are ``A^T onehot(z)`` (the sum
    of the rows of the values taken) and ``z``'s logits ``A T(theta)``, two sparse products;
    a small ``A`` (up to :data:`DENSE_ENTRIES` entries) is held dense, where these cost less.

    Attributes:
        features: the statistics ``T`` of the table's sites at a state (:class:`SiteFeatures`,
            or a joint one for sites drawn together); ``sites``: their names.
        z: the discrete site; ``support``: its values ``(K, *event)``.
        rows, cols, values: the nonzero entries of ``A`` (summed over the terms' entries).
        shape: ``(N K, E p)``; ``stat_size``: ``p``.
        entries: how many log-density entries the statistics were read from.
        data: the :class:`DataCheck` of the arguments they were read from.
        base: ``(E p,)`` the coefficients of the terms that do not read ``z`` (the priors').
    """

    def __init__(self, features, z, support, rows, cols, values, shape, stat_size, entries, data=None):
        self.features, self.z, self.support, self.data = features, z, support, data
        self.sites = features.sites
        self.rows, self.cols, self.values, self.shape = rows, cols, values, shape
        self.stat_size, self.entries = stat_size, entries
        self.base = torch.zeros(shape[1], dtype=torch.float64, device=values.device)
        self.group = frozenset(self.sites)  # the sites whose statistics were read together
        self.counting = _counting(support)
        self._matrices = None
        self._rows_of = None

    def __getstate__(self):
        return {**self.__dict__, "_matrices": None, "_rows_of": None}  # rebuilt where used

    @property
    def dense(self) -> bool:
        """Whether ``A`` is held dense: at most :data:`DENSE_ENTRIES` entries, where a dense
        product (and a gather of rows) costs less than a sparse one."""
        return self.shape[0] * self.shape[1] <= DENSE_ENTRIES

    def _matrix(self):
        """``A`` dense, or ``(A, A^T)`` in compressed sparse rows, built at the first use in
        this process."""
        if self._matrices is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # torch's notice that CSR is beta
                coo = torch.sparse_coo_tensor(torch.stack([self.rows, self.cols]), self.values,
                                              self.shape, check_invariants=False).coalesce()
                self._matrices = (coo.to_dense() if self.dense else
                                  (coo.to_sparse_csr(), coo.t().coalesce().to_sparse_csr()))
        return self._matrices

    def dense_matrix(self) -> torch.Tensor:
        """``A`` as a dense ``(N K, E p)`` tensor (a table held dense, see :attr:`dense`)."""
        if not self.dense:
            raise ValueError("the table is held sparse")
        return self._matrix()

    def _index(self, z_value: torch.Tensor) -> torch.Tensor:
        """``(N,)`` the index of each element's value of ``z`` in the support."""
        return z_value.reshape(-1).long() if self.counting else support_index(z_value, self.support)

    def _first_rows(self, index: torch.Tensor) -> torch.Tensor:
        """``(N,)`` the row of each element's first value in ``A`` (kept for the next call)."""
        rows = getattr(self, "_rows_of", None)
        if rows is None or rows.shape != index.shape or rows.device != index.device:
            rows = torch.arange(len(index), device=index.device) * self.support.shape[0]
            self._rows_of = rows
        return rows

    def onehot(self, z_value: torch.Tensor) -> torch.Tensor:
        """``(N K,)`` the indicator of each element's value of ``z``."""
        k = self.support.shape[0]
        index = self._index(z_value)
        out = torch.zeros(len(index), k, dtype=torch.float64, device=self.values.device)
        return out.scatter_(1, index[:, None], 1.0).reshape(-1)

    def taken_rows(self, z_value: torch.Tensor) -> torch.Tensor:
        """``(N,)`` the row of ``A`` of each element's value of ``z``."""
        index = self._index(z_value)
        return self._first_rows(index) + index

    def coefficients(self, state: dict) -> torch.Tensor:
        """``(E, p)`` the conjugate coefficients of ``theta`` at ``state``."""
        matrix = self._matrix()
        if self.dense:  # the rows of the values taken, summed: A^T onehot(z) without onehot
            part = matrix.index_select(0, self.taken_rows(state[self.z])).sum(0)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                part = matrix[1] @ self.onehot(state[self.z])
        return (self.base + part).reshape(-1, self.stat_size)

    def logit_part(self, features: torch.Tensor) -> torch.Tensor:
        """``(N K,)``: ``A T(theta)`` (``features``: ``(E, p)``, ``T`` of each element)."""
        matrix = self._matrix()
        if self.dense:
            return matrix @ features.reshape(-1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return matrix[0] @ features.reshape(-1)


def _probe_values(points, count: int, batch_shape, event_shape, ref) -> list:
    """The values of ``theta`` scored at each value of ``z``: every element at the family's
    first point, then each element alone at each of the next ``p`` points, then the mixed
    check value (every element at its own random point)."""
    full = tuple(batch_shape) + tuple(event_shape)
    first = points[0].to(ref.dtype).expand(full).clone()
    flat = first.reshape((count,) + tuple(event_shape))
    check = _check_point(points, batch_shape, event_shape, ref).to(ref.dtype)
    return [first] + one_at_a_time(flat, points[1:-1], count, full) + [check]


def one_at_a_time(first: torch.Tensor, points: torch.Tensor, count: int, shape) -> list:
    """Each element alone at each of ``points``, the others as in ``first`` (``(E, *event)``),
    element-major, each reshaped to ``shape``."""
    out = []
    for e in range(count):
        for point in points:
            v = first.clone()
            v[e] = point.to(v.dtype)
            out.append(v.reshape(shape))
    return out


def solve_entries(design, first, moves, count: int, scale):
    """``(stats (..., E, T, p), reads (..., E, T))``: each entry's statistics on each element
    from its log densities with every element at the first point (``first``, ``(..., T)``) and
    with each element alone at each of the other ``p`` points (``moves``, ``(..., E p, T)``,
    element-major); ``design``: ``(p + 1, p)`` the statistics at the points (the first one
    first); an entry reads an element where a move changed it by more than ``scale``
    (``(..., T)``). The leading dimensions, if any, are values of the discrete site."""
    p = design.shape[1]
    phi = torch.cat([design, torch.ones(p + 1, 1, dtype=torch.float64, device=design.device)], -1)
    batch, size = tuple(first.shape[:-1]), first.shape[-1]
    moves = moves.reshape(batch + (count, p, size))
    first = first[..., None, None, :]
    reads = ((moves - first).abs() > scale[..., None, None, :]).any(-2)         # (..., E, T)
    rhs = torch.cat([first.expand(batch + (count, 1, size)), moves], -2)       # (..., E, p + 1, T)
    stats = torch.linalg.solve(phi, rhs)[..., :p, :].transpose(-1, -2)        # (..., E, T, p)
    return torch.where(reads[..., None], stats, torch.zeros_like(stats)), reads


def read_entries(design, y, count: int, check_features, tol):
    """:func:`solve_entries` from the probes' log densities ``y`` ``(E p + 2, T)`` (the first
    point, the moves, then every element at its own check point), checked at the last:
    ``check_features`` ``(E, p)`` are the statistics there. Raises :class:`NoTable`."""
    scale = tol * (1.0 + y.abs().amax(0))
    stats, reads = solve_entries(design, y[0], y[1:-1], count, scale)
    predicted = y[0] + torch.einsum("etp,ep->t", stats, check_features - design[:1])
    if not bool(((predicted - y[-1]).abs() <= scale).all()):
        raise NoTable("at a random value of every element an entry's log density is not what "
                      "its statistics predict")
    return stats, reads


def sparse_rows(stats, reads, owner, k, k_count: int) -> tuple:
    """``(rows, cols, values)`` of the table's matrix from the statistics at the values ``k``
    (``(V,)``) of the discrete site: ``stats`` ``(V, E, T, p)``, ``reads`` ``(V, E, T)``."""
    value, element, entry = reads.nonzero(as_tuple=True)
    p = stats.shape[-1]
    j = torch.arange(p, device=element.device)
    return ((owner[entry] * k_count + k[value])[:, None].expand(-1, p).reshape(-1),
            (element[:, None] * p + j).reshape(-1), stats[value, element, entry].reshape(-1))


def _reads(deps: dict, latent: set, site: str) -> dict:
    """``{term: the latent sites it reads}`` for the terms that read ``site``."""
    return {name: frozenset(r) & latent for name, r in deps.items() if site in r}


def build_tables(model, args, kwargs, state: dict, group: dict, z: str, support: torch.Tensor,
                 deps: dict, latent: set) -> dict:
    """The :class:`StatisticsTable` of each conjugate site of ``group`` (``{site: prior}``:
    the sites read together by the terms of discrete site ``z``, ``support`` ``(K, *event)``,
    a change-point's two rates say), built at ``state`` and each checked at a random value of
    ``z`` against the program's own coefficients; ``deps``: ``{term: sites it reads}``
    (:func:`~.markov.term_dependencies`), ``latent``: the latent sites. The entries'
    statistics are read one element of one site at a time and checked together, every element
    of every site at its own random point, so the sites' parts must add up. Returns ``{site:
    table}``; raises :class:`NoTable` with the reason where no table applies."""
    terms = {}
    for site in group:
        terms.update(_reads(deps, latent, site))
    gathered = [name for name, r in terms.items() if z in r]
    priors = [name for name, r in terms.items() if z not in r]   # read once, the tables' base
    scored = gathered + priors
    others = {s for r in terms.values() for s in r} - set(group) - {z}
    if not gathered:
        raise NoTable(f"no term reads both {sorted(group)} and {z!r}")
    if others:
        raise NoTable(f"its terms also read {sorted(others)}, which change every sweep")
    z_value = state[z]
    z_shape = z_value.shape[:z_value.dim() - (support.dim() - 1)]
    maps, z_plates = _shifted_plates(model, args, kwargs, state, z, z_shape)
    sites = {}
    for site, fn in group.items():
        base_fn = unwrap(fn)
        points = family_of(fn).points(base_fn.event_shape, state[site]).to(torch.float64)
        count = max(1, base_fn.batch_shape.numel())
        probes = _probe_values(points, count, base_fn.batch_shape, base_fn.event_shape, state[site])
        features = family_of(fn).features(
            probes[-1].reshape((count,) + tuple(base_fn.event_shape)).to(torch.float64))
        sites[site] = (fn, count, probes, family_of(fn).features(points[:-1]), features)
    firsts = {site: v[2][0] for site, v in sites.items()}
    checks = {site: v[2][-1] for site, v in sites.items()}
    k_count, owner, parts, bases = support.shape[0], None, {site: [] for site in group}, {}
    tol = tolerance(state[next(iter(group))].dtype)
    z_values = [support[k].to(z_value.dtype).expand(z_value.shape).clone() for k in range(k_count)]
    for ks, rows, check_rows, shapes in _row_chunks(model, args, kwargs, state, z, z_values, sites,
                                                    firsts, checks, scored):
        if owner is None:
            owner = torch.cat([owner_map(shapes[name], z_shape, maps.get(name, {}), z_plates)
                               for name in gathered]).to(z_value.device)
            if sum(v[1] * (len(v[2]) - 2) for v in sites.values()) * len(owner) > PROBE_BUDGET:
                raise NoTable(f"{len(owner)} entries are too many to read for {sorted(group)}")
        scale = tol * (1.0 + torch.cat([r.abs().amax(0) for r in rows.values()] + [check_rows.abs()])
                       .reshape(-1, *check_rows.shape).amax(0))                   # (V, T)
        predicted = next(iter(rows.values()))[0].clone()  # every site at its first point
        for site, (_, count, _, design, features) in sites.items():
            stats, reads = solve_entries(design, rows[site][0], rows[site][1:].transpose(0, 1),
                                         count, scale)
            predicted += torch.einsum("vetp,ep->vt", stats, features - design[:1])
            mine = len(owner)
            parts[site].append(sparse_rows(stats[..., :mine, :], reads[..., :mine], owner, ks, k_count))
            if int(ks[0]) == 0:
                bases[site] = stats[0, :, mine:].sum(1).reshape(-1)
        if not bool(((predicted - check_rows).abs() <= scale).all()):
            if len(group) > 1:
                raise NoTable(f"{', '.join(map(repr, group))} are read by the same terms, whose log "
                              f"densities are not a sum of one part per site (one scales the other's "
                              f"statistics)")
            raise NoTable("at a random value of every element an entry's log density is not what "
                          "its statistics predict")
    tables, data = {}, DataCheck(args, kwargs)  # one check (and one copy of the data) per group
    for site, (fn, count, _, design, _) in sites.items():
        rows, cols, values = (torch.cat(part) for part in zip(*parts[site]))
        p = design.shape[1]
        table = StatisticsTable(SiteFeatures(site, fn), z, support, rows, cols, values,
                                (max(1, z_shape.numel()) * k_count, count * p), p, len(owner), data)
        base_fn = unwrap(fn)
        table.base = bases[site]
        table.group = frozenset(group)
        _check_table(model, args, kwargs, state, table, family_of(fn), base_fn.batch_shape,
                     base_fn.event_shape, support)
        tables[site] = table
    return tables


def _scored_rows(found: dict, scored: list) -> torch.Tensor:
    if any(name not in found for name in scored):
        raise NoTable("a term of the sites was not scored")
    return entry_rows(found, scored)


def _rows_at(model, args, kwargs, at_k: dict, sites: dict, checks: dict, scored: list) -> tuple:
    """At one value of ``z`` (in ``at_k``, the sites at their first points): ``({site: (P, T)
    the entries at its probes}, (1, T) the entries at the check point, {term: entry shape})``,
    one batched trace over each site's probes and one for the check."""
    rows, shapes = {}, {}
    for site, (_, _, probes, _, _) in sites.items():
        found = values_terms(model, args, kwargs, at_k, site, probes[:-1])
        rows[site] = _scored_rows(found, scored)
        shapes = {name: tuple(t.shape[1:]) for name, t in found.items()}
    last = next(reversed(sites))
    at_check = {**at_k, **{s: v for s, v in checks.items() if s != last}}
    return rows, _scored_rows(values_terms(model, args, kwargs, at_check, last, [checks[last]]),
                              scored), shapes


def _row_chunks(model, args, kwargs, state, z, z_values, sites, firsts, checks, scored):
    """The probes' log-density entries at runs of values of ``z``: ``(ks (V,), {site: (P, V,
    T)}, (V, T) at the check point, {term: entry shape})``, all values in one run where they
    are read over ``z`` (:func:`_rows_over_z`), else one value of ``z`` at a time
    (:func:`_rows_at`) gathered into runs of at most :data:`PROBE_BUDGET` entries."""
    device = z_values[0].device
    over_z = _rows_over_z(model, args, kwargs, state, z, z_values, sites, firsts, checks, scored)
    if over_z is not None:
        yield (torch.arange(len(z_values), device=device),) + over_z
        return
    run, size = [], 0
    for k, z_value in enumerate(z_values):
        rows, check, shapes = _rows_at(model, args, kwargs, {**state, **firsts, z: z_value}, sites,
                                       checks, scored)
        run.append((k, rows, check))
        size += check.numel() * (1 + sum(r.shape[0] for r in rows.values()))
        if size > PROBE_BUDGET or k == len(z_values) - 1:
            yield (torch.tensor([r[0] for r in run], device=device),
                   {site: torch.stack([r[1][site] for r in run], 1) for site in sites},
                   torch.cat([r[2] for r in run]), shapes)
            run, size = [], 0


def _rows_over_z(model, args, kwargs, state, z, z_values, sites, firsts, checks, scored):
    """What :func:`_rows_at` gives at every value of ``z`` at once, ``({site: (P, K, T)}, (K, T),
    shapes)``, from one batched trace over ``z``'s values per probe (and one for the check):
    fewer traces than one per value of ``z`` when ``z`` has more values than the sites have
    probes (a change point's). ``None`` where that is not so, where ``z``'s values are not
    scored in one trace, or where the rows would pass :data:`PROBE_BUDGET`."""
    choice = site_choice(model, z, args, kwargs)
    probes = sum(len(v[2]) - 1 for v in sites.values()) + 1
    if choice is None or not choice.batched or probes >= len(z_values) * (len(sites) + 1):
        return None
    rows, shapes = {}, {}
    for site, (_, _, site_probes, _, _) in sites.items():
        rows[site] = []
        for probe in site_probes[:-1]:
            found = values_terms(model, args, kwargs, {**state, **firsts, site: probe}, z, z_values)
            rows[site].append(_scored_rows(found, scored))
            shapes = {name: tuple(t.shape[1:]) for name, t in found.items()}
            if probes * rows[site][-1].numel() > PROBE_BUDGET:
                return None
        rows[site] = torch.stack(rows[site])
    check = _scored_rows(values_terms(model, args, kwargs, {**state, **firsts, **checks}, z, z_values),
                         scored)
    return rows, check, shapes


def entry_rows(found: dict, names: list) -> torch.Tensor:
    """``(m, T)`` the entries of the terms ``names`` at each scored value, float64."""
    return torch.cat([found[n].reshape(found[n].shape[0], -1) for n in names], 1).to(torch.float64)


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
        if not all(s in tables for s in rest) or len({tables[s].group for s in rest}) != 1:
            raise NoTable(f"the term of {name!r} reads {sorted(rest)}, not the sites of one table")
        for table in (tables[s] for s in sorted(rest)):
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
