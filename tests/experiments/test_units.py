"""The reproductions' unit store: a finished unit is computed once and read back."""

import json

from pyromodels import __version__
from pyromodels.experiments import units


def test_a_finished_unit_is_read_back_not_computed_again(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"acc": 0.5, "sizes": [3, 2]}

    key = {"protocol": "pinwheel", "seed": 0, "hidden": (40, 40)}
    first = units.cached_unit(tmp_path, key, compute)
    again = units.cached_unit(tmp_path, dict(reversed(list(key.items()))), compute)
    assert first == again == {"acc": 0.5, "sizes": [3, 2]}
    assert len(calls) == 1
    other = units.cached_unit(tmp_path, {**key, "seed": 1}, compute)
    assert other == first and len(calls) == 2
    records = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("*.json"))]
    assert len(records) == 2 and not list(tmp_path.glob("*.tmp"))
    for record in records:
        assert record["version"] == __version__
        assert record["wall_s"] >= 0 and record["finished"].endswith("+00:00")
    assert {r["key"]["seed"] for r in records} == {0, 1}
    assert records[0]["key"]["hidden"] == [40, 40]


def test_the_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path))
    assert units.cache_folder("scdc-reproduction") == tmp_path / "scdc-reproduction"
