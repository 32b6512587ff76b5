r"""The structure of a latent tree model with Gaussian "pouch" leaves.

A structure :math:`S` has discrete latent nodes :math:`Y_1, \dots, Y_l`, node :math:`j` with
:math:`K_j \ge 2` states, forming one tree (one root, every other node one latent parent), and
pouch leaves :math:`z_1, \dots, z_B`: disjoint blocks of the coordinates of
:math:`z \in \mathbb{R}^J` that together cover every coordinate, each with one latent parent.
With one latent node over every coordinate the model is a Gaussian mixture (LTVAE paper,
§2; spec ``ltvae.md`` §2.1).

A :class:`LatentTree` is immutable and holds no parameters
(:class:`~pyromodels.trees.params.TreeParams` does).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

from ..checks import check_bool, check_int

__all__ = ["LatentTree"]


def _name(value, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__} {value!r}")
    if not value or not value.replace("_", "a").isalnum():
        raise ValueError(f"{what} must be a non-empty name of letters, digits and '_', "
                         f"got {value!r}")
    return value


def _coordinates(block, b: int) -> tuple[int, ...]:
    what = f"pouches[{b}]"
    if isinstance(block, (str, bytes)) or not isinstance(block, Sequence):
        raise TypeError(f"{what} must be a sequence of coordinate indices, got "
                        f"{type(block).__name__}")
    if len(block) == 0:
        raise ValueError(f"{what} must hold at least one coordinate, got an empty block")
    coords = tuple(check_int(c, f"{what} entries", minimum=0) for c in block)
    if len(set(coords)) != len(coords):
        raise ValueError(f"{what} lists a coordinate twice: {list(coords)}")
    return coords


class LatentTree:
    r"""An immutable latent tree structure: discrete latent nodes and Gaussian pouch leaves.

    Args:
        cardinalities: :math:`K_j \ge 2` for each latent node ``j = 0 .. l-1``.
        parents: the parent of each latent node (an index into the latent nodes) or ``None``
            for the root; exactly one root.
        pouches: the pouch leaves, each a sequence of coordinate indices of ``z``; every
            coordinate ``0 .. J-1`` lies in exactly one pouch.
        pouch_parents: the latent parent (an index) of each pouch.
        names: the latent nodes' names (default ``Y0, Y1, ...``).
        num_coordinates: :math:`J`, if given checked against the pouches (default: the
            number of coordinates the pouches cover).

    Raises:
        TypeError, ValueError: a cardinality below 2, no root or several roots (a node not
            connected to the root), a cycle, a parent index out of range, a coordinate in two
            pouches or in none, duplicate names.

    Example:
        >>> tree = LatentTree([3, 2], [None, 0], [[0, 1], [2]], [0, 1], names=["A", "B"])
        >>> tree.num_latents, tree.num_coordinates, tree.order
        (2, 3, (0, 1))
    """

    __slots__ = ("_names", "_cards", "_parents", "_pouches", "_pouch_parents", "_order",
                 "_children", "_leaves", "_num_coordinates")

    def __init__(self, cardinalities: Sequence[int], parents: Sequence[int | None],
                 pouches: Sequence[Sequence[int]], pouch_parents: Sequence[int],
                 names: Sequence[str] | None = None, num_coordinates: int | None = None):
        for arg, value in (("cardinalities", cardinalities), ("parents", parents),
                           ("pouches", pouches), ("pouch_parents", pouch_parents)):
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise TypeError(f"{arg} must be a sequence, got {type(value).__name__}")
        num = len(cardinalities)
        if num == 0:
            raise ValueError("cardinalities must list at least one latent node, got none")
        cards = tuple(check_int(k, f"cardinalities[{j}]") for j, k in enumerate(cardinalities))
        for j, k in enumerate(cards):
            if k < 2:
                raise ValueError(f"cardinalities[{j}] must be >= 2 (a latent node needs two "
                                 f"states), got {k}")
        if names is None:
            names = [f"Y{j}" for j in range(num)]
        if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
            raise TypeError(f"names must be a sequence of strings, got {type(names).__name__}")
        if len(names) != num:
            raise ValueError(f"names must have one entry per latent node ({num}), "
                             f"got {len(names)}")
        names = tuple(_name(n, f"names[{j}]") for j, n in enumerate(names))
        if len(set(names)) != num:
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"names must be unique, got duplicates {dup}")
        if len(parents) != num:
            raise ValueError(f"parents must have one entry per latent node ({num}), "
                             f"got {len(parents)}")
        pars = tuple(None if p is None else check_int(p, f"parents[{j}]", 0, num - 1)
                     for j, p in enumerate(parents))
        roots = [j for j, p in enumerate(pars) if p is None]
        if not roots:
            raise ValueError("parents must have exactly one root (None); got none, so the "
                             "latent nodes form a cycle")
        if len(roots) > 1:
            raise ValueError(f"parents must have exactly one root (None); latent nodes "
                             f"{[names[j] for j in roots]} are all roots, so the tree is "
                             f"disconnected")
        for j, p in enumerate(pars):
            if p == j:
                raise ValueError(f"parents[{j}]: latent node {names[j]!r} is its own parent")
        children: list[list[int]] = [[] for _ in range(num)]
        for j, p in enumerate(pars):
            if p is not None:
                children[p].append(j)
        order = [roots[0]]
        for j in order:
            order.extend(children[j])
        if len(order) != num:
            lost = sorted(set(range(num)) - set(order))
            raise ValueError(f"parents: latent nodes {[names[j] for j in lost]} form a cycle "
                             f"not connected to the root {names[roots[0]]!r}")
        if len(pouch_parents) != len(pouches):
            raise ValueError(f"pouch_parents must have one entry per pouch ({len(pouches)}), "
                             f"got {len(pouch_parents)}")
        if len(pouches) == 0:
            raise ValueError("pouches must list at least one pouch leaf, got none")
        blocks = tuple(_coordinates(block, b) for b, block in enumerate(pouches))
        bpars = tuple(check_int(p, f"pouch_parents[{b}]", 0, num - 1)
                      for b, p in enumerate(pouch_parents))
        owner: dict[int, int] = {}
        for b, block in enumerate(blocks):
            for c in block:
                if c in owner:
                    raise ValueError(f"pouches: coordinate {c} is in two pouches "
                                     f"(pouches[{owner[c]}] and pouches[{b}])")
                owner[c] = b
        width = max(owner) + 1
        if num_coordinates is not None:
            num_coordinates = check_int(num_coordinates, "num_coordinates", minimum=1)
            if width > num_coordinates:
                raise ValueError(f"pouches use coordinate {width - 1}, beyond num_coordinates "
                                 f"= {num_coordinates}")
            width = num_coordinates
        missing = [c for c in range(width) if c not in owner]
        if missing:
            raise ValueError(f"pouches must cover every coordinate 0..{width - 1}: "
                             f"coordinates {missing} are in no pouch")
        leaves: list[list[int]] = [[] for _ in range(num)]
        for b, p in enumerate(bpars):
            leaves[p].append(b)
        self._names = names
        self._cards = cards
        self._parents = pars
        self._pouches = blocks
        self._pouch_parents = bpars
        self._order = tuple(order)
        self._children = tuple(tuple(c) for c in children)
        self._leaves = tuple(tuple(b) for b in leaves)
        self._num_coordinates = width

    # -- constructors ---------------------------------------------------------------------

    @classmethod
    def single(cls, cardinality: int, num_coordinates: int, pouch: bool = False,
               name: str = "Y") -> LatentTree:
        """One latent node over every coordinate: a Gaussian mixture.

        Args:
            cardinality: the number of mixture components ``K``.
            num_coordinates: ``J``.
            pouch: one pouch of all ``J`` coordinates (full covariance) if ``True``, else
                each coordinate its own leaf (diagonal covariance).
            name: the latent node's name.

        Example:
            >>> LatentTree.single(3, 2, pouch=True).pouches
            ((0, 1),)
        """
        num_coordinates = check_int(num_coordinates, "num_coordinates", minimum=1)
        blocks = [list(range(num_coordinates))] if check_bool(pouch, "pouch") else \
            [[c] for c in range(num_coordinates)]
        return cls([cardinality], [None], blocks, [0] * len(blocks), names=[name])

    @classmethod
    def from_edges(cls, cardinalities: Mapping[str, int], edges: Sequence[tuple[str, str]],
                   pouches: Sequence[tuple[str, Sequence[int]]],
                   num_coordinates: int | None = None) -> LatentTree:
        """A tree from named latent nodes, ``(parent, child)`` latent edges and pouches.

        Args:
            cardinalities: ``{name: K}`` in the order the nodes are to be indexed.
            edges: ``(parent name, child name)`` pairs between latent nodes.
            pouches: ``(parent name, coordinates)`` pairs.
            num_coordinates: ``J``, if given checked against the pouches.

        Example:
            >>> t = LatentTree.from_edges({"A": 2, "B": 3}, [("A", "B")],
            ...                           [("A", [0]), ("B", [1, 2])])
            >>> t.parents, t.pouch_parents
            ((None, 0), (0, 1))
        """
        if not isinstance(cardinalities, Mapping):
            raise TypeError(f"cardinalities must be a mapping {{name: K}}, got "
                            f"{type(cardinalities).__name__}")
        names = list(cardinalities)
        index = {n: j for j, n in enumerate(names)}

        def node(value, what):
            if value not in index:
                raise ValueError(f"{what} names an unknown latent node {value!r}; known: "
                                 f"{names}")
            return index[value]

        parents: list[int | None] = [None] * len(names)
        for e, edge in enumerate(edges):
            if not (isinstance(edge, Sequence) and not isinstance(edge, str) and len(edge) == 2):
                raise TypeError(f"edges[{e}] must be a (parent, child) pair, got {edge!r}")
            p, c = node(edge[0], f"edges[{e}]"), node(edge[1], f"edges[{e}]")
            if parents[c] is not None:
                raise ValueError(f"edges: latent node {edge[1]!r} has two parents "
                                 f"({names[parents[c]]!r} and {edge[0]!r})")
            parents[c] = p
        blocks, owners = [], []
        for b, item in enumerate(pouches):
            if not (isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2):
                raise TypeError(f"pouches[{b}] must be a (parent, coordinates) pair, got "
                                f"{item!r}")
            owners.append(node(item[0], f"pouches[{b}]"))
            blocks.append(item[1])
        return cls([cardinalities[n] for n in names], parents, blocks, owners, names=names,
                   num_coordinates=num_coordinates)

    # -- read-only views ------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """The latent nodes' names."""
        return self._names

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """:math:`K_j` of each latent node."""
        return self._cards

    @property
    def parents(self) -> tuple[int | None, ...]:
        """Each latent node's parent index (``None`` for the root)."""
        return self._parents

    @property
    def pouches(self) -> tuple[tuple[int, ...], ...]:
        """Each pouch's coordinates of ``z``."""
        return self._pouches

    @property
    def pouch_parents(self) -> tuple[int, ...]:
        """Each pouch's latent parent index."""
        return self._pouch_parents

    @property
    def root(self) -> int:
        """The root's index."""
        return self._order[0]

    @property
    def order(self) -> tuple[int, ...]:
        """The latent nodes in breadth-first order from the root (parents before children)."""
        return self._order

    @property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """Each latent node's latent children."""
        return self._children

    @property
    def leaves(self) -> tuple[tuple[int, ...], ...]:
        """Each latent node's pouch children (pouch indices)."""
        return self._leaves

    @property
    def num_latents(self) -> int:
        """:math:`l`, the number of latent nodes."""
        return len(self._cards)

    @property
    def num_coordinates(self) -> int:
        """:math:`J`, the width of ``z``."""
        return self._num_coordinates

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        """The latent edges ``(parent, child)`` in breadth-first order."""
        return tuple((self._parents[j], j) for j in self._order[1:])

    def index(self, node: int | str) -> int:
        """The index of a latent node given by index or name."""
        if isinstance(node, str):
            if node not in self._names:
                raise ValueError(f"node {node!r} is not a latent node; known: "
                                 f"{list(self._names)}")
            return self._names.index(node)
        if isinstance(node, bool) or not isinstance(node, numbers.Integral):
            raise TypeError(f"node must be a latent node's index or name, got "
                            f"{type(node).__name__} {node!r}")
        return check_int(node, "node", 0, self.num_latents - 1)

    def check_width(self, width: int, name: str = "z") -> None:
        """Raise unless data with ``width`` columns matches the pouches' coordinates."""
        if width != self._num_coordinates:
            raise ValueError(f"{name} must have {self._num_coordinates} columns (the tree's "
                             f"coordinates), got {width}")

    # -- serialisation, equality, display ---------------------------------------------------

    def to_dict(self) -> dict:
        """A JSON-ready description (plain lists, strings and ints)."""
        return {
            "latents": [{"name": n, "cardinality": k,
                         "parent": None if p is None else self._names[p]}
                        for n, k, p in zip(self._names, self._cards, self._parents)],
            "pouches": [{"parent": self._names[p], "coordinates": list(block)}
                        for block, p in zip(self._pouches, self._pouch_parents)],
            "num_coordinates": self._num_coordinates,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> LatentTree:
        """The inverse of :meth:`to_dict`.

        Raises:
            TypeError, ValueError: missing or malformed keys, and every structural error of
                the constructor.
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"data must be a mapping, got {type(data).__name__}")
        for key in ("latents", "pouches"):
            if key not in data:
                raise ValueError(f"data lacks the key {key!r}")
        latents = data["latents"]
        if not isinstance(latents, Sequence) or not all(
                isinstance(n, Mapping) and {"name", "cardinality", "parent"} <= set(n)
                for n in latents):
            raise ValueError("data['latents'] must be a list of {'name', 'cardinality', "
                             "'parent'} mappings")
        pouches = data["pouches"]
        if not isinstance(pouches, Sequence) or not all(
                isinstance(p, Mapping) and {"parent", "coordinates"} <= set(p) for p in pouches):
            raise ValueError("data['pouches'] must be a list of {'parent', 'coordinates'} "
                             "mappings")
        cards = {}
        for j, n in enumerate(latents):
            name = _name(n["name"], f"data['latents'][{j}]['name']")
            if name in cards:
                raise ValueError(f"data['latents'] names {name!r} twice")
            cards[name] = n["cardinality"]
        edges = [(n["parent"], n["name"]) for n in latents if n["parent"] is not None]
        return cls.from_edges(cards, edges, [(p["parent"], p["coordinates"]) for p in pouches],
                              num_coordinates=data.get("num_coordinates"))

    def _key(self):
        return (self._names, self._cards, self._parents, self._pouches, self._pouch_parents,
                self._num_coordinates)

    def __eq__(self, other) -> bool:
        if not isinstance(other, LatentTree):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __setattr__(self, name, value):
        if hasattr(self, "_num_coordinates"):
            raise AttributeError("LatentTree is immutable")
        object.__setattr__(self, name, value)

    def __reduce__(self):
        return (LatentTree, (self._cards, self._parents, self._pouches, self._pouch_parents,
                             self._names, self._num_coordinates))

    def __repr__(self) -> str:
        def render(j: int) -> str:
            parts = [f"z{list(self._pouches[b])}" for b in self._leaves[j]]
            parts += [render(c) for c in self._children[j]]
            return f"{self._names[j]}[K={self._cards[j]}]({', '.join(parts)})"

        return f"LatentTree({render(self.root)})"

    def draw(self, ax=None):
        """Draw the tree: latent nodes as circles labelled with their name and ``K``, pouch
        leaves as boxes labelled with their coordinates.

        Args:
            ax: a matplotlib ``Axes`` (default: a new figure's).

        Returns:
            The ``Axes`` drawn on.
        """
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(max(3.0, 1.2 * len(self._pouches) + 1), 3.0))
        pos: dict[tuple[str, int], tuple[float, float]] = {}
        slot = [0]

        def place(j: int, depth: int) -> float:
            xs = []
            for b in self._leaves[j]:
                pos[("z", b)] = (float(slot[0]), -(depth + 1.0))
                xs.append(float(slot[0]))
                slot[0] += 1
            xs += [place(c, depth + 1) for c in self._children[j]]
            x = sum(xs) / len(xs) if xs else float(slot[0])
            if not xs:
                slot[0] += 1
            pos[("y", j)] = (x, -float(depth))
            return x

        place(self.root, 0)
        for j, p in enumerate(self._parents):
            if p is not None:
                (x0, y0), (x1, y1) = pos[("y", p)], pos[("y", j)]
                ax.plot([x0, x1], [y0, y1], color="0.4", zorder=1)
        for b, p in enumerate(self._pouch_parents):
            (x0, y0), (x1, y1) = pos[("y", p)], pos[("z", b)]
            ax.plot([x0, x1], [y0, y1], color="0.6", zorder=1)
        for j in range(self.num_latents):
            x, y = pos[("y", j)]
            ax.text(x, y, f"{self._names[j]}\nK={self._cards[j]}", ha="center", va="center",
                    zorder=2, bbox={"boxstyle": "circle", "fc": "white", "ec": "black"})
        for b, block in enumerate(self._pouches):
            x, y = pos[("z", b)]
            ax.text(x, y, "z" + ",".join(str(c) for c in block), ha="center", va="center",
                    zorder=2, bbox={"boxstyle": "square", "fc": "0.9", "ec": "black"})
        depth = max(-y for _, y in pos.values())
        ax.set_xlim(-0.8, max(x for x, _ in pos.values()) + 0.8)
        ax.set_ylim(-depth - 0.6, 0.6)
        ax.set_axis_off()
        return ax
