"""The tree figure: a matplotlib Figure with one text label per seated datum at its leaf."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from pyromodels.bnp import NEW, Tree, plot_tree

NAMES = ["cat", "lion", "tiger", "trout", "salmon", "eagle"]
PATHS = [[0, 1, 2, 3], [0, 1, 2, 4], [0, 1, 2, 4], [0, 5, 6, 7], [0, 5, 6, 7], [0, 5, 8, 9]]


def _labels(fig: Figure) -> list[str]:
    return sorted(t.get_text() for t in fig.axes[0].texts)


@pytest.mark.parametrize("collapse", [True, False])
@pytest.mark.parametrize("orientation", ["horizontal", "vertical"])
def test_figure_has_one_label_per_datum(collapse, orientation):
    fig = plot_tree(Tree.from_paths(PATHS), names=NAMES, collapse=collapse,
                    orientation=orientation)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    assert _labels(fig) == sorted(NAMES)


def test_labels_sit_beside_their_leaf_and_unseated_data_are_left_out():
    paths = PATHS[:5] + [[NEW] * 4]
    fig = plot_tree(Tree.from_paths(paths), names=NAMES)
    texts = {t.get_text(): t.get_position() for t in fig.axes[0].texts}
    assert sorted(texts) == sorted(NAMES[:5])
    # horizontal layout: one breadth slot per datum, the data of a leaf next to each other,
    # cat first (depth-first order of the nodes)
    order = sorted(texts, key=lambda k: -texts[k][1])
    assert order == ["cat", "lion", "tiger", "trout", "salmon"]
    assert len({round(y, 6) for _, y in texts.values()}) == 5
    assert len(plot_tree(Tree(2, 3)).axes[0].texts) == 0  # nothing seated: nothing to name


def test_node_ids_and_default_names():
    fig = plot_tree(Tree.from_paths(PATHS), collapse=False, show_ids=True)
    labels = _labels(fig)
    assert [str(i) for i in range(6)] == sorted(set(labels) & {str(i) for i in range(6)})
    assert len(labels) == 6 + 10  # six data, ten nodes


@pytest.mark.parametrize("kwargs, error, match", [
    ({"names": ["a", "b"]}, ValueError, "names must hold 6 labels"),
    ({"names": "abcdef"}, TypeError, "names must be a sequence of 6 labels"),
    ({"orientation": "diagonal"}, ValueError, r"orientation must be one of \[.horizontal., .vertical.\]"),
    ({"collapse": 1}, TypeError, "collapse must be a bool"),
])
def test_bad_input_messages(kwargs, error, match):
    with pytest.raises(error, match=match):
        plot_tree(Tree.from_paths(PATHS), **kwargs)
    with pytest.raises(TypeError, match="tree must be a pyromodels.bnp.Tree"):
        plot_tree(PATHS)
