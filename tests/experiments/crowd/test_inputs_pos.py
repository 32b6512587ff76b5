"""POS responses of Table I: shapes, alignment with the treebank, a tagger re-derived by hand,
determinism and the response cache."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
import torch

from pyromodels.core.seeding import derive_seed
from pyromodels.data import load_nltk_brown, load_nltk_treebank
from pyromodels.experiments.crowd.inputs.common import (
    CACHE_ENV_VAR,
    load_cache,
    resolve_cache_dir,
    save_cache,
)
from pyromodels.experiments.crowd.inputs.pos import (
    POS_CLASSES,
    POS_TAGGERS,
    SMALL_SENTENCES,
    build_pos,
    train_sizes,
)
from pyromodels.experiments.crowd.scores import score_task

NLTK_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "nltk_data"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pos_cache")


@pytest.fixture(scope="module")
def small(cache_dir):
    return build_pos(scale="small", seed=0, cache_dir=cache_dir, path=NLTK_DATA)


@pytest.fixture(scope="module")
def treebank():
    return load_nltk_treebank(path=NLTK_DATA, tagset="universal")


def test_small_task_matches_the_treebank(small, treebank):
    # the paper's N: NLTK's treebank sample has 3,914 sentences and 100,676 words
    assert (treebank.sequences.num_sequences, treebank.sequences.total_length) == (3914, 100_676)
    lengths = treebank.sequences.lengths[:SMALL_SENTENCES]
    total = int(lengths.sum())
    assert small.name == "pos"
    assert small.sequences.lengths.tolist() == lengths.tolist()
    assert (small.num_items, small.num_workers, small.num_classes) == (total, 10, 12)
    assert small.classes == list(POS_CLASSES)
    assert list(small.table.workers) == [s.name for s in POS_TAGGERS]
    # every tagger tags every word once
    assert small.table.num_labels == 10 * total
    assert (small.table.to_dense() >= 0).all()
    gold_names = np.asarray(small.classes)[small.gold.numpy()]
    assert gold_names.tolist() == treebank.tokens["tag"].iloc[:total].astype(str).tolist()
    assert small.evaluation_mask().all()
    assert small.metric == {"scheme": "macro", "average": "sequence", "classes": "all"}


def test_unigram_tagger_equals_most_frequent_tag_of_its_brown_subset(small, treebank):
    """Oracle: the unigram tagger answers each word's most frequent tag in its own training
    sentences (first-seen tag on ties, as NLTK's FreqDist.max), NOUN for unseen words."""
    brown = load_nltk_brown(path=NLTK_DATA, tagset="universal")
    offsets = brown.sequences.offsets.tolist()
    words = brown.tokens["word"].to_numpy(dtype=object)
    tags = brown.tokens["tag"].astype(str).to_numpy(dtype=object)
    size = train_sizes("small")["unigram"]
    rng = np.random.default_rng(derive_seed(0, "pos", "unigram", "small"))
    counts: dict[str, Counter] = defaultdict(Counter)
    for s in rng.choice(len(offsets) - 1, size=size, replace=False):
        for w, t in zip(words[offsets[s]:offsets[s + 1]], tags[offsets[s]:offsets[s + 1]]):
            counts[w][t] += 1
    best = {w: max(c.items(), key=lambda kv: kv[1])[0] for w, c in counts.items()}
    total = small.num_items
    expected = [best.get(w, "NOUN") for w in treebank.tokens["word"].iloc[:total]]
    column = list(small.table.workers).index("unigram")
    got = np.asarray(small.classes)[small.table.to_dense()[:, column].numpy()]
    assert got.tolist() == expected


def test_taggers_are_better_than_chance_and_differ(small):
    dense = small.table.to_dense()
    accuracy = (dense == small.gold[:, None]).double().mean(0)
    # 12 classes: chance is at most the largest class share (NOUN, about 0.29 here)
    share = torch.bincount(small.gold, minlength=12).max() / small.num_items
    assert (accuracy > share).all()
    assert len({tuple(dense[:, m].tolist()) for m in range(10)}) == 10


def test_cache_round_trip_and_determinism(small, cache_dir):
    files = list(cache_dir.glob("crowd_pos_small_seed0_*.npz"))
    assert len(files) == 1 and not small.info["cached"]
    again = build_pos(scale="small", seed=0, cache_dir=cache_dir, path=NLTK_DATA)
    assert again.info["cached"]
    assert torch.equal(again.table.to_dense(), small.table.to_dense())
    assert again.info["tagger_seconds"] == small.info["tagger_seconds"]
    fresh = build_pos(scale="small", seed=0, use_cache=False, path=NLTK_DATA)
    assert not fresh.info["cached"] and fresh.info["cache_file"] is None
    assert torch.equal(fresh.table.to_dense(), small.table.to_dense())


def test_stale_cache_is_refused(small, cache_dir, tmp_path):
    file = Path(small.info["cache_file"])
    bad = tmp_path / file.name
    np.savez_compressed(bad, responses=np.zeros((3, 10), dtype=np.int8), seconds=np.zeros((10, 2)))
    with pytest.raises(ValueError, match=r"holds responses of shape \(3, 10\).*delete it"):
        build_pos(scale="small", seed=0, cache_dir=tmp_path, path=NLTK_DATA)


def test_perfect_tags_score_the_share_of_tags_present(small):
    """With all 12 tags averaged per sentence, even the gold scores only (#tags in the
    sentence) / 12, averaged over sentences: the reason the paper's POS scores sit near 0.23."""
    scores = score_task(small, small.gold)
    share = np.mean([len(set(g.tolist())) / 12 for g in small.sequences.split(small.gold)])
    assert scores.f_score == pytest.approx(share, abs=1e-12)
    assert scores.precision == pytest.approx(share, abs=1e-12) and scores.accuracy == 1.0


def test_cache_folder_and_files(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "env"))
    assert resolve_cache_dir() == tmp_path / "env"
    assert resolve_cache_dir(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv(CACHE_ENV_VAR)
    assert resolve_cache_dir() == Path.home() / ".cache" / "pyromodels"
    with pytest.raises(TypeError, match="cache_dir must be a path or None"):
        resolve_cache_dir(3)
    file = tmp_path / "sub" / "x.npz"
    assert load_cache(file) is None
    save_cache(file, {"a": np.arange(3), "names": np.array(["u", "v"])})
    back = load_cache(file)
    assert back["a"].tolist() == [0, 1, 2] and back["names"].tolist() == ["u", "v"]
    assert [p.name for p in file.parent.iterdir()] == ["x.npz"]  # no temporary file left
    with pytest.raises(TypeError, match="cache array 'b' must not have dtype object"):
        save_cache(file, {"b": np.array([None, 1])})


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"scale must be one of \['small', 'paper'\]"):
        build_pos(scale="medium")
    with pytest.raises(TypeError, match="seed must be an integer"):
        build_pos(seed=1.5)
    with pytest.raises(TypeError, match="use_cache must be a bool"):
        build_pos(use_cache="yes")
    assert train_sizes("paper") == {s.name: s.train_sentences for s in POS_TAGGERS}


@pytest.mark.slow
@pytest.mark.reproduction
def test_paper_scale_sizes(tmp_path):
    task = build_pos(scale="paper", seed=0, cache_dir=tmp_path, path=NLTK_DATA)
    assert task.summary() == {"name": "pos", "N": 100_676, "M": 10, "K": 12,
                              "labels": 1_006_760, "scored": 100_676, "sequences": 3_914}
