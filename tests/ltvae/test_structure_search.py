"""The LTVAE's ready-made structure search: PLTM-EAST continued from the current tree, its
seeding, its use inside ``LTVAE.fit`` (also as ``search="east"``) and its checks."""

import warnings

import pytest
import torch

import pyromodels.ltvae.search as search_module
from pyromodels.core.errors import ConvergenceWarning
from pyromodels.data import simulate_two_facets
from pyromodels.ltvae import LTVAE, StructureSearch, structure_search
from pyromodels.ltvae.tree_prior import kmeans_start
from pyromodels.trees import LatentTree, TreeParams
from pyromodels.trees.message_passing import tree_log_likelihood

# tiny settings: one EM start, one refined candidate, short EM runs
_TINY = dict(em_restarts=1, refine_top=1, em_steps=50, screen_steps=5)


@pytest.fixture(scope="module")
def two_facets():
    x, truth = simulate_two_facets(200, seed=0)
    return x, truth["z"]


def _facet_blocks(tree: LatentTree) -> set:
    """The coordinates under each latent node (its own leaves only)."""
    return {frozenset(c for b in tree.leaves[j] for c in tree.pouches[b])
            for j in range(tree.num_latents)}


def test_it_continues_from_the_given_tree_and_finds_the_two_facets(two_facets):
    _, z = two_facets
    start = LatentTree.single(2, 4, name="Root")
    params = kmeans_start(start, z, 1.0, 0)
    search = structure_search(seed=0, **_TINY)
    tree, found = search(z, start, params)
    assert tree.num_latents == 2
    assert "Root" in tree.names                 # the start's node: the search began from it
    assert _facet_blocks(tree) == {frozenset({0, 1}), frozenset({2, 3})}
    assert isinstance(found, TreeParams) and found.tree == tree
    assert bool(torch.isfinite(tree_log_likelihood(found, z.double())).all())
    assert len(search.results) == 1 and search.results[0].tree == tree
    # a learned (full) covariance, not the start's alpha * I
    assert not all(torch.allclose(t, torch.eye(t.shape[-1], dtype=t.dtype).expand_as(t))
                   for t in found.scale_trils)


def test_a_call_is_seeded_by_the_base_seed_and_the_codes(two_facets):
    _, z = two_facets
    start = LatentTree.single(2, 4)
    params = kmeans_start(start, z, 1.0, 0)
    a = structure_search(seed=5, **_TINY)
    b = structure_search(seed=5, **_TINY)
    a(z, start, params)
    b(z, start, params)
    a(z[:150], start, params)
    seeds = [r.search.seed for r in a.results]
    assert seeds[0] == b.results[0].search.seed     # same base seed, same codes
    assert seeds[0] != seeds[1]                      # other codes: another stream
    assert a.results[0].tree == b.results[0].tree
    for u, v in zip(a.results[0].params.means, b.results[0].params.means):
        torch.testing.assert_close(u, v, rtol=0, atol=0)


def test_inside_a_fit_the_posterior_holds_the_searched_tree(two_facets):
    x, _ = two_facets
    model = LTVAE(latent_dim=4, hidden=(8,), cardinality=2)
    search = structure_search(seed=1, **_TINY)
    post = model.fit(x[:60], num_epochs=3, batch_size=30, search=search, search_every=1,
                     seed=0, progress=False)
    assert len(search.results) == 2
    searched = search.results[-1].tree
    assert post.attrs["tree"] == searched.to_dict()
    assert post.diagnostics["searches"][-1]["tree"] == searched.to_dict()
    assert [s["epoch"] for s in post.diagnostics["searches"]] == [1, 2]
    fitted = model.tree_params(post)
    assert fitted.tree == searched
    assert list(model.facets(post, x[:5]).columns) == list(searched.names)


def test_east_is_a_shorthand_seeded_by_the_fit(two_facets):
    x, _ = two_facets
    model = LTVAE(latent_dim=4, hidden=(8,), cardinality=2)
    # float32 data: the search works in float64 from the fit's float32 parameters
    runs = [model.fit(x[:40].float(), num_epochs=2, batch_size=20, search="east", search_every=1,
                      seed=3, progress=False) for _ in range(2)]
    assert len(runs[0].diagnostics["searches"]) == 1
    assert runs[0].attrs["tree"] == runs[0].diagnostics["searches"][0]["tree"]
    assert runs[0].attrs["tree"] == runs[1].attrs["tree"]
    torch.testing.assert_close(runs[0].losses, runs[1].losses, rtol=0, atol=0)
    assert model.tree_params(runs[0]).dtype == torch.float32


def test_bad_values_raise_clear_errors(two_facets):
    x, z = two_facets
    model = LTVAE(latent_dim=4, hidden=(4,), cardinality=2)
    with pytest.raises(ValueError, match=r"search must be one of \['east'\]"):
        model.fit(x[:20], num_epochs=1, search="bic", progress=False)
    with pytest.raises(TypeError, match="search must be None, one of"):
        model.fit(x[:20], num_epochs=1, search=3, progress=False)
    with pytest.raises(TypeError, match="'start'"):
        structure_search(start=LatentTree.single(2, 4))
    with pytest.raises(TypeError, match="'checkpoint'"):
        structure_search(checkpoint="s.ckpt")
    with pytest.raises(TypeError, match="unknown setting 'restarts'"):
        structure_search(restarts=2)
    with pytest.raises(ValueError, match="seed"):
        structure_search(seed=-1)
    search = StructureSearch(seed=0, **_TINY)
    start = LatentTree.single(2, 4)
    other = TreeParams.random(LatentTree.single(3, 4), dtype=torch.float64)
    with pytest.raises(ValueError, match="params must be parameters of the tree"):
        search(z, start, other)
    with pytest.raises(TypeError, match="tree must be a LatentTree"):
        search(z, "Y", other)
    with pytest.raises(TypeError, match="params must be TreeParams"):
        search(z, start, None)
    params = kmeans_start(start, z, 1.0, 0)
    with pytest.raises(ValueError, match="z"):
        search(torch.full((10, 4), float("nan")), start, params)



def test_a_fit_resumed_with_a_fresh_search_equals_the_uninterrupted_one(two_facets, tmp_path):
    x, _ = two_facets
    model = LTVAE(latent_dim=4, hidden=(6,), cardinality=2)
    settings = dict(batch_size=20, search_every=1, seed=4, progress=False)
    first = structure_search(seed=2, **_TINY)
    whole = model.fit(x[:40], num_epochs=3, search=first, **settings)
    path = tmp_path / "ltvae.ckpt"
    model.fit(x[:40], num_epochs=2, checkpoint=path, search=structure_search(seed=2, **_TINY),
              **settings)
    fresh = structure_search(seed=2, **_TINY)   # it has run no search before the resumption
    resumed = model.fit(x[:40], num_epochs=3, resume=path, search=fresh, **settings)
    assert len(first.results) == 2 and len(fresh.results) == 1   # the search at epoch 2
    assert fresh.results[0].search.seed == first.results[1].search.seed
    assert resumed.diagnostics["searches"] == whole.diagnostics["searches"]
    assert torch.equal(resumed.losses, whole.losses)


def _max_steps_warnings(caught) -> list:
    return [w for w in caught if "max_steps" in str(w.message)]

def _fit_recording_warnings(x, search) -> list:
    """A small LTVAE fit with ``search`` before each of its 3 epochs; the warnings it gave."""
    model = LTVAE(latent_dim=4, hidden=(8,), cardinality=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(x[:60], num_epochs=3, batch_size=30, search=search, search_every=1, seed=0,
                  progress=False)
    return caught



def test_a_fit_summarises_the_searches_max_steps_warnings_in_one(two_facets, monkeypatch):
    """Every search of a fit that stops at its default budget of moves would warn: the fit
    warns once, from the caller's line, saying how many searches stopped so."""
    x, _ = two_facets
    real = search_module.learn_structure
    # a budget of no moves, as if it were the default: every search stops at it
    monkeypatch.setattr(search_module, "learn_structure",
                        lambda *args, **kw: real(*args, **{**kw, "max_steps": 0}))
    search = structure_search(seed=1, **_TINY)
    caught = _fit_recording_warnings(x, search)
    assert [r.search.stopped for r in search.results] == ["max_steps", "max_steps"]
    found = _max_steps_warnings(caught)
    assert len(found) == 1
    assert issubclass(found[0].category, ConvergenceWarning)
    assert "2 of the fit's 2 structure searches warned this, before epochs 1, 2" in str(
        found[0].message)
    assert found[0].filename == __file__


def test_a_max_steps_given_to_the_search_is_deliberate_and_not_warned(two_facets):
    x, _ = two_facets
    search = structure_search(seed=1, max_steps=0, **_TINY)
    caught = _fit_recording_warnings(x, search)
    assert [r.search.stopped for r in search.results] == ["max_steps", "max_steps"]
    assert _max_steps_warnings(caught) == []
    # called on its own too
    z = x[:60, :4].double()
    start = LatentTree.single(2, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search(z, start, kmeans_start(start, z, 1.0, 0))
    assert search.results[-1].search.stopped == "max_steps"
    assert _max_steps_warnings(caught) == []
