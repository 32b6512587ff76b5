"""Hungarian relabelling: optimality by brute force, recovery of scrambled labels."""

import itertools

import numpy as np
import pytest
import torch

from pyromodels.core import Posterior
from pyromodels.diagnostics import hungarian_relabel, occupied_clusters, relabel


def test_hungarian_permutations_are_optimal():
    rng = np.random.default_rng(0)
    k = 4
    z = torch.from_numpy(rng.integers(0, k, size=(2, 5, 12)))
    ref = torch.from_numpy(rng.integers(0, k, size=12))
    perms = hungarian_relabel(z, ref, k)
    assert perms.shape == (2, 5, k) and perms.dtype == torch.long
    for c in range(2):
        for d in range(5):
            p = perms[c, d]
            assert sorted(p.tolist()) == list(range(k))
            best = max(
                int((torch.tensor(q)[z[c, d]] == ref).sum())
                for q in itertools.permutations(range(k))
            )
            assert int((p[z[c, d]] == ref).sum()) == best


def _aligned_draws(chains, draws, n_per, k, seed):
    """Draws that all agree with one clustering up to two moved points, and matching parameters."""
    rng = np.random.default_rng(seed)
    base = np.repeat(np.arange(k), n_per)
    z = np.tile(base, (chains, draws, 1))
    for c in range(chains):
        for d in range(draws):
            moved = rng.choice(base.size, size=2, replace=False)
            z[c, d, moved] = rng.integers(0, k, size=2)
    locs = 5.0 * np.arange(k)[:, None] + 0.1 * rng.standard_normal((chains, draws, k, 2))
    weights = rng.dirichlet(np.arange(1, k + 1) * 10.0, size=(chains, draws))
    trans = rng.dirichlet(np.ones(k), size=(chains, draws, k))
    return {"z": z, "locs": locs, "weights": weights, "trans": trans}


def _scramble(values, rng):
    """Rename each draw's labels by a random permutation p (label k becomes p[k]), by loops."""
    out = {name: v.copy() for name, v in values.items()}
    chains, draws = values["z"].shape[:2]
    k = values["weights"].shape[-1]
    for c in range(chains):
        for d in range(draws):
            p = rng.permutation(k)
            out["z"][c, d] = p[values["z"][c, d]]
            for j in range(k):
                out["locs"][c, d, p[j]] = values["locs"][c, d, j]
                out["weights"][c, d, p[j]] = values["weights"][c, d, j]
                for m in range(k):
                    out["trans"][c, d, p[j], p[m]] = values["trans"][c, d, j, m]
    return out


def test_relabel_recovers_scrambled_labels_up_to_one_global_permutation():
    rng = np.random.default_rng(1)
    k = 3
    original = _aligned_draws(chains=3, draws=40, n_per=10, k=k, seed=2)
    scrambled = _scramble(original, rng)
    post = Posterior(
        samples={name: torch.from_numpy(v) for name, v in scrambled.items()},
        method="gibbs",
        sample_stats={"lp": torch.zeros(3, 40)},
        attrs={"seed": 5},
    )
    out = relabel(post, component_sites={"locs": 0, "weights": -1, "trans": (0, 1)})
    # The reference is the last draw of chain 0, so that draw keeps its labels.
    assert torch.equal(out["z"][0, -1], post["z"][0, -1])
    z = out["z"].numpy()
    g = np.empty(k, dtype=np.int64)  # the one global renaming: original label -> new label
    g[original["z"][0, 0]] = z[0, 0]
    assert sorted(g.tolist()) == list(range(k))
    np.testing.assert_array_equal(z, g[original["z"]])
    np.testing.assert_array_equal(out["locs"].numpy()[:, :, g], original["locs"])
    np.testing.assert_array_equal(out["weights"].numpy()[:, :, g], original["weights"])
    np.testing.assert_array_equal(out["trans"].numpy()[:, :, g][:, :, :, g], original["trans"])
    assert out["z"].dtype == post["z"].dtype
    assert out.diagnostics["relabel_permutations"].shape == (3, 40, k)
    assert out.attrs == {"seed": 5, "relabelled_site": "z"}
    assert torch.equal(out.sample_stats["lp"], post.sample_stats["lp"])
    assert torch.equal(occupied_clusters(out["z"]), occupied_clusters(post["z"]))


def test_relabel_with_an_explicit_reference():
    z = torch.tensor([[[0, 0, 1, 2], [2, 2, 0, 1]]])
    post = Posterior(samples={"z": z}, method="gibbs")
    out = relabel(post, reference=torch.tensor([1, 1, 2, 0]), num_classes=3)
    assert out["z"].tolist() == [[[1, 1, 2, 0], [1, 1, 2, 0]]]


def test_relabel_errors():
    z = torch.zeros(1, 2, 4, dtype=torch.long)
    post = Posterior(
        samples={"z": z, "locs": torch.zeros(1, 2, 3), "w": torch.zeros(1, 2, 2)}, method="gibbs"
    )
    with pytest.raises(ValueError, match="component axes of different sizes"):
        relabel(post, component_sites={"locs": 0, "w": 0})
    with pytest.raises(
        ValueError, match=r"component axes of \['w'\] must have size num_classes = 3"
    ):
        relabel(post, component_sites={"w": 0}, num_classes=3)
    with pytest.raises(ValueError, match="component_sites names 'mu'"):
        relabel(post, component_sites={"mu": 0})
    with pytest.raises(ValueError, match=r"component_sites\['locs'\] must be an integer <= 0"):
        relabel(post, component_sites={"locs": 1})
    with pytest.raises(ValueError, match="reference must have one label per point"):
        relabel(post, reference=torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"reference must lie in \[0, 2\]"):
        relabel(post, component_sites={"locs": 0}, reference=torch.tensor([0, 1, 2, 3]))
    floats = Posterior(samples={"z": torch.zeros(1, 2, 4)}, method="gibbs")
    with pytest.raises(TypeError, match=r"samples\['z'\] must hold integer labels"):
        relabel(floats)
    with pytest.raises(TypeError, match="component_sites must be a dict"):
        relabel(post, component_sites=["locs"])
