"""Small latent trees of several shapes shared by the tests of the trees part."""

import pytest
import torch

from pyromodels.trees import LatentTree, TreeParams

SHAPES = {
    # one latent node, three scalar leaves: a diagonal Gaussian mixture
    "single": lambda: LatentTree.single(3, 3),
    # a chain Y0 -> Y1 -> Y2 with pouches of sizes 1, 2 and 3
    "chain": lambda: LatentTree([2, 3, 2], [None, 0, 1], [[0], [1, 2], [3, 4, 5]], [0, 1, 2]),
    # a star: a root with three latent children, one pouch each, one on the root
    "star": lambda: LatentTree([3, 2, 2, 3], [None, 0, 0, 0], [[2], [0, 1], [3], [4, 5, 6]],
                               [0, 1, 2, 3]),
    # three levels, a root with no pouch of its own, a latent node F without pouches
    "three_level": lambda: LatentTree.from_edges(
        {"R": 2, "A": 3, "B": 2, "C": 2, "D": 3, "E": 2, "F": 2},
        [("R", "A"), ("R", "B"), ("A", "C"), ("A", "D"), ("B", "E"), ("B", "F")],
        [("C", [0, 3]), ("D", [1]), ("D", [2]), ("E", [4, 5, 6]), ("A", [7]), ("B", [8])]),
}


def random_case(shape: str, seed: int, num_points: int = 6):
    """(params, z) for a named shape: random parameters and points drawn partly from the model
    and partly far from it (so that some posteriors are sharp)."""
    tree = SHAPES[shape]()
    gen = torch.Generator().manual_seed(seed)
    params = TreeParams.random(tree, gen, concentration=0.7)
    z = 2.5 * torch.randn(num_points, tree.num_coordinates, generator=gen, dtype=torch.float64)
    return params, z


@pytest.fixture(params=sorted(SHAPES))
def shape(request):
    return request.param
