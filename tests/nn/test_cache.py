"""The weight cache: keys, hits and misses, where files go, corrupt files, and two processes
training the same key at once."""

import multiprocessing
import sys
from pathlib import Path

import platformdirs
import pytest
import torch

from pyromodels.nn import CacheWarning, WeightCache, cache_key, data_fingerprint, pretrain_autoencoder
from pyromodels.nn.cache import resolve_cache_dir

TINY = dict(dims=(8, 2), layerwise_epochs=2, finetune_epochs=3, batch_size=50, progress=False)


def same_weights(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def cached_files(directory):
    return sorted(p.name for p in Path(directory).iterdir() if not p.name.endswith(".lock"))


def test_the_key_changes_with_every_part_of_the_data_and_the_settings(manifold_data, monkeypatch):
    x = manifold_data
    torch_version = torch.__version__.split("+")[0]
    settings = {"dims": [8, 16, 2], "lr": 0.001, "seed": 0}
    key = cache_key(data_fingerprint(x), settings)
    assert key == cache_key(data_fingerprint(x.clone()), dict(settings))
    nudged = x.clone()
    nudged[17, 3] += 1e-12
    variants = [nudged, x.reshape(400, 4), x.float(), x[:-1]]
    assert all(cache_key(data_fingerprint(v), settings) != key for v in variants)
    for name, value in [("dims", [8, 16, 3]), ("lr", 0.002), ("seed", 1)]:
        assert cache_key(data_fingerprint(x), dict(settings, **{name: value})) != key
    assert cache_key(data_fingerprint(x), dict(settings, extra=None)) != key
    with monkeypatch.context() as m:
        m.setattr(torch, "__version__", "0.1.0")
        assert cache_key(data_fingerprint(x), settings) != key
        m.setattr(torch, "__version__", torch_version + "+cu999")  # the build tag is not in the key
        assert cache_key(data_fingerprint(x), settings) == key
    with pytest.raises(TypeError, match="settings must hold JSON-serialisable, finite values"):
        cache_key("abc", {"lr": float("nan")})


def test_a_second_call_loads_identical_weights(manifold_data, tmp_path):
    first = pretrain_autoencoder(manifold_data, cache=tmp_path, **TINY)
    second = pretrain_autoencoder(manifold_data, cache=tmp_path, **TINY)
    assert first.pretraining.from_cache is False and second.pretraining.from_cache is True
    assert same_weights(first, second)
    assert second.pretraining.finetune_losses == first.pretraining.finetune_losses
    assert second.pretraining.cache_path == first.pretraining.cache_path
    assert cached_files(tmp_path) == [Path(first.pretraining.cache_path).name]  # no temporary files
    # the cached weights are those an uncached run trains
    assert same_weights(second, pretrain_autoencoder(manifold_data, cache=False, **TINY))


@pytest.mark.parametrize("change", [{"seed": 1}, {"finetune_epochs": 4}, {"lr": 2e-3}, {"noise": 0.1},
                                    {"batch_size": 40}, {"dims": (8, 3)}, {"optimizer": "sgd"}])
def test_any_other_setting_is_a_miss(manifold_data, tmp_path, change):
    pretrain_autoencoder(manifold_data, cache=tmp_path, **TINY)
    other = pretrain_autoencoder(manifold_data, cache=tmp_path, **dict(TINY, **change))
    assert other.pretraining.from_cache is False
    assert len(cached_files(tmp_path)) == 2


def test_other_data_is_a_miss_and_device_and_progress_are_not_in_the_key(manifold_data, tmp_path):
    pretrain_autoencoder(manifold_data, cache=tmp_path, **TINY)
    other = manifold_data.clone()
    other[0, 0] += 1e-9
    assert pretrain_autoencoder(other, cache=tmp_path, **TINY).pretraining.from_cache is False
    again = pretrain_autoencoder(manifold_data, cache=tmp_path, device="cpu", **dict(TINY, progress=True))
    assert again.pretraining.from_cache is True


def test_where_the_files_go(manifold_data, tmp_path, monkeypatch):
    monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path / "root"))
    assert resolve_cache_dir(True, "autoencoders") == tmp_path / "root" / "autoencoders"
    ae = pretrain_autoencoder(manifold_data, cache=True, **TINY)
    assert Path(ae.pretraining.cache_path).parent == tmp_path / "root" / "autoencoders"
    explicit = pretrain_autoencoder(manifold_data, cache=str(tmp_path / "mine"), **TINY)
    assert Path(explicit.pretraining.cache_path).parent == tmp_path / "mine"
    monkeypatch.delenv("PYROMODELS_CACHE")
    expected = Path(platformdirs.user_cache_dir("pyromodels")) / "autoencoders"
    assert resolve_cache_dir(True, "autoencoders") == expected
    assert resolve_cache_dir(False, "autoencoders") is None
    with pytest.raises(ValueError, match="cache must be True, False or a directory path, got an empty path"):
        resolve_cache_dir("", "autoencoders")


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong shapes"])
def test_a_corrupt_file_is_reported_and_retrained(manifold_data, tmp_path, damage):
    first = pretrain_autoencoder(manifold_data, cache=tmp_path, **TINY)
    path = Path(first.pretraining.cache_path)
    if damage == "garbage":
        path.write_bytes(b"not a torch file")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    else:
        record = torch.load(path, weights_only=True)
        record["state_dict"]["encoder.0.0.weight"] = torch.zeros(3, 3, dtype=torch.float64)
        torch.save(record, path)
    with pytest.warns(CacheWarning, match="ignoring the unreadable cache file .* trained again"):
        second = pretrain_autoencoder(manifold_data, cache=tmp_path, **TINY)
    assert second.pretraining.from_cache is False and same_weights(first, second)
    third = pretrain_autoencoder(manifold_data, cache=tmp_path, **TINY)  # the file was replaced
    assert third.pretraining.from_cache is True and same_weights(first, third)


def test_an_unusable_directory_trains_without_the_cache(manifold_data, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.warns(CacheWarning, match="cannot be used"):
        ae = pretrain_autoencoder(manifold_data, cache=blocker / "sub", **TINY)
    assert ae.pretraining.from_cache is False and ae.pretraining.cache_path is None
    assert same_weights(ae, pretrain_autoencoder(manifold_data, cache=False, **TINY))


def test_weight_cache_records_round_trip(tmp_path):
    cache = WeightCache(tmp_path)
    calls = []

    def create():
        calls.append(1)
        return {"w": torch.arange(3.0), "note": "x", "losses": [1.0, 0.5]}

    record, hit = cache.load_or_create("abc", create)
    again, hit2 = cache.load_or_create("abc", create)
    assert (hit, hit2, len(calls)) == (False, True, 1)
    assert torch.equal(again["w"], torch.arange(3.0)) and again["losses"] == [1.0, 0.5]
    assert cache.load("other") is None
    with pytest.raises(ValueError, match="key must be a non-empty string of letters, digits"):
        cache.path("../escape")


def test_two_processes_at_once_train_once_and_agree(manifold_data, tmp_path, monkeypatch):
    here = str(Path(__file__).parent)
    monkeypatch.syspath_prepend(here)
    sys.modules.pop("cache_worker", None)
    import cache_worker

    # enough epochs that training (about a second) outlasts the start-up difference
    settings = dict(TINY, layerwise_epochs=20, finetune_epochs=60, batch_size=20)
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    x = manifold_data.numpy()
    procs = [ctx.Process(target=cache_worker.pretrain_after_barrier,
                         args=(barrier, queue, x, str(tmp_path), settings)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sorted(r["from_cache"] for r in results) == [False, True]  # one training, one load
    trained = next(r for r in results if not r["from_cache"])
    loaded = next(r for r in results if r["from_cache"])
    assert loaded["start"] < trained["end"]  # the two calls overlapped: the second waited on the lock
    for k, v in trained["state"].items():
        assert (v == loaded["state"][k]).all()
    assert len(cached_files(tmp_path)) == 1
