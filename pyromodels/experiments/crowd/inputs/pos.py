r"""Part-of-speech responses for Table I: ten taggers trained on Brown tag the Penn Treebank.

The paper trained :math:`M = 10` NLTK taggers "on subsets of the Brown corpus" and let them tag
the :math:`N = 100{,}676` words of the NLTK Penn Treebank sample in the :math:`K = 12` universal
tags, without naming the taggers or the subset sizes. We use ten cheap, deliberately diverse
taggers (:data:`POS_TAGGERS`): n-gram taggers with back-off chains, suffix taggers, a
supervised HMM, TnT, an averaged perceptron and a context-free logistic regression on word
shape. Each is trained on its own random subset of Brown sentences, drawn without replacement
with a seed derived from ``(seed, tagger name, scale)``; subsets of different taggers are drawn
independently and may overlap. The treebank's 6,613 empty elements (``*-1``, ``*T*-1``, ``0``
...; universal tag ``X``) stay in the data, as they are in the paper's :math:`N`; no tagger
trained on Brown knows them.

Training and tagging take about half a minute, so the responses are cached (see
:func:`~pyromodels.experiments.crowd.inputs.common.resolve_cache_dir`).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np
import torch

from ....checks import check_int
from ....core.seeding import derive_seed, seeded
from ....data import Sequences, load_nltk_brown, load_nltk_treebank
from ....data.nltk_sets import UNIVERSAL_TAGS
from .common import (
    CrowdTask,
    cache_key,
    check_scale,
    dense_table,
    load_cache,
    resolve_cache_dir,
    save_cache,
)

__all__ = ["TaggerSpec", "POS_TAGGERS", "POS_CLASSES", "SMALL_SENTENCES", "SMALL_DIVISOR",
           "build_pos", "train_sizes"]

POS_CLASSES = tuple(sorted(UNIVERSAL_TAGS))
SMALL_SENTENCES = 200
SMALL_DIVISOR = 5
_VERSION = 1  # bump when a tagger changes, so that stale caches are not read


@dataclass(frozen=True)
class TaggerSpec:
    """One tagger of the ensemble: its name, kind and Brown training sentences (paper scale)."""

    name: str
    kind: str
    train_sentences: int


#: The ten taggers. Sizes are Brown sentences at ``scale="paper"``.
POS_TAGGERS = (
    TaggerSpec("unigram", "unigram", 500),
    TaggerSpec("regexp-unigram", "regexp_unigram", 250),
    TaggerSpec("bigram", "bigram", 1000),
    TaggerSpec("trigram", "trigram", 2000),
    TaggerSpec("suffix3", "affix", 1000),
    TaggerSpec("bigram-suffix2", "bigram_affix", 500),
    TaggerSpec("hmm", "hmm", 500),
    TaggerSpec("perceptron", "perceptron", 1000),
    TaggerSpec("tnt", "tnt", 1000),
    TaggerSpec("shape-logreg", "shape_logreg", 500),
)

# Word-shape rules of the regexp tagger (first match wins); generic English, nothing specific
# to the treebank.
_PATTERNS = (
    (r"^-?[0-9]+([.,:/][0-9]+)*$", "NUM"),
    (r"^[^\w\s]+$", "."),
    (r"^(the|a|an|this|that|these|those)$", "DET"),
    (r"^(and|or|but|nor)$", "CONJ"),
    (r"^(of|in|on|at|by|for|with|from|to|into)$", "ADP"),
    (r"^(he|she|it|they|we|i|you|him|her|them|us|me)$", "PRON"),
    (r".*ing$", "VERB"),
    (r".*ed$", "VERB"),
    (r".*ly$", "ADV"),
    (r".*(ous|ful|ive|able|ible|al)$", "ADJ"),
    (r".*", "NOUN"),
)


def _nltk():
    try:
        import nltk  # noqa: F401 - imported for its tag subpackages below
        import nltk.tag.hmm
        import nltk.tag.perceptron
        import nltk.tag.tnt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "build_pos trains NLTK taggers and needs the nltk package: pip install nltk "
            "(no nltk data downloads are needed)"
        ) from exc
    return nltk


class _ShapeTagger:
    """Context-free multinomial logistic regression on a word's suffixes, prefix and shape."""

    def __init__(self, tagged_sents, seed: int):
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.linear_model import LogisticRegression

        words = [w for s in tagged_sents for w, _ in s]
        tags = [t for s in tagged_sents for _, t in s]
        from threadpoolctl import threadpool_limits  # a scikit-learn dependency

        self.vectorizer = DictVectorizer()
        x = self.vectorizer.fit_transform([self.features(w) for w in words])
        with threadpool_limits(limits=1):  # a small fit: BLAS threads only add overhead
            self.model = LogisticRegression(max_iter=2000, random_state=seed).fit(x, tags)

    @staticmethod
    def features(word: str) -> dict:
        low = word.lower()
        return {"s1=" + low[-1:]: 1, "s2=" + low[-2:]: 1, "s3=" + low[-3:]: 1,
                "p1=" + low[:1]: 1, "cap": float(word[:1].isupper()),
                "upper": float(word.isupper()), "digit": float(any(c.isdigit() for c in word)),
                "hyphen": float("-" in word), "alpha": float(word.isalpha())}

    def tag_sents(self, sentences):
        flat = [w for s in sentences for w in s]
        tags = self.model.predict(self.vectorizer.transform([self.features(w) for w in flat]))
        out, start = [], 0
        for s in sentences:
            out.append(list(zip(s, tags[start:start + len(s)])))
            start += len(s)
        return out


def _train(kind: str, sents, seed: int):
    """A trained tagger with a ``tag_sents`` method."""
    nltk = _nltk()
    tag = nltk.tag
    noun = tag.DefaultTagger("NOUN")
    if kind == "unigram":
        return tag.UnigramTagger(sents, backoff=noun)
    if kind == "regexp_unigram":
        return tag.UnigramTagger(sents, backoff=tag.RegexpTagger(list(_PATTERNS)))
    if kind == "bigram":
        return tag.BigramTagger(sents, backoff=tag.UnigramTagger(sents, backoff=noun))
    if kind == "trigram":
        uni = tag.UnigramTagger(sents, backoff=noun)
        return tag.TrigramTagger(sents, backoff=tag.BigramTagger(sents, backoff=uni))
    if kind == "affix":
        return tag.AffixTagger(sents, affix_length=-3, backoff=noun)
    if kind == "bigram_affix":
        return tag.BigramTagger(sents, backoff=tag.AffixTagger(sents, affix_length=-2,
                                                               backoff=noun))
    if kind == "hmm":
        def lidstone(fd, bins):
            return nltk.probability.LidstoneProbDist(fd, 0.1, bins)
        return tag.hmm.HiddenMarkovModelTrainer().train_supervised(sents, estimator=lidstone)
    if kind == "perceptron":
        tagger = tag.perceptron.PerceptronTagger(load=False)
        with seeded(seed):  # its training shuffles with Python's global RNG
            tagger.train(list(sents), nr_iter=5)
        return tagger
    if kind == "tnt":
        tagger = tag.tnt.TnT(unk=noun, Trained=True)
        tagger.train(sents)
        return tagger
    if kind == "shape_logreg":
        return _ShapeTagger(sents, seed)
    raise ValueError(f"unknown tagger kind {kind!r}")


def train_sizes(scale: str) -> dict[str, int]:
    """Brown training sentences of every tagger at ``scale`` (``"small"`` divides by
    :data:`SMALL_DIVISOR`)."""
    check_scale(scale)
    div = 1 if scale == "paper" else SMALL_DIVISOR
    return {s.name: max(20, s.train_sentences // div) for s in POS_TAGGERS}


def _tag_all(sentences, scale: str, seed: int, path) -> tuple[np.ndarray, np.ndarray]:
    """``(responses (T, M) int8, seconds (M, 2) train / tag)``."""
    brown = load_nltk_brown(path=path, tagset="universal")
    pairs = list(zip(brown.tokens["word"].to_numpy(dtype=object).tolist(),
                     brown.tokens["tag"].astype(str).to_numpy(dtype=object).tolist()))
    offsets = brown.sequences.offsets.tolist()
    sizes = train_sizes(scale)
    code = {t: k for k, t in enumerate(POS_CLASSES)}
    total = sum(map(len, sentences))
    responses = np.empty((total, len(POS_TAGGERS)), dtype=np.int8)
    seconds = np.zeros((len(POS_TAGGERS), 2))
    for m, spec in enumerate(POS_TAGGERS):
        tagger_seed = derive_seed(seed, "pos", spec.name, scale)
        rng = np.random.default_rng(tagger_seed)
        chosen = rng.choice(len(offsets) - 1, size=sizes[spec.name], replace=False)
        train = [pairs[offsets[i]:offsets[i + 1]] for i in chosen]
        start = time.perf_counter()
        tagger = _train(spec.kind, train, tagger_seed % 2**32)
        seconds[m, 0] = time.perf_counter() - start
        start = time.perf_counter()
        tags = [t for sent in tagger.tag_sents(sentences) for _, t in sent]
        seconds[m, 1] = time.perf_counter() - start
        unknown = sorted({t for t in tags if t not in code}, key=str)
        if unknown:
            raise ValueError(f"tagger {spec.name} produced tags outside the universal set: "
                             f"{unknown[:5]}")
        responses[:, m] = [code[t] for t in tags]
    return responses, seconds


def build_pos(scale: str = "small", seed: int = 0, cache_dir=None, use_cache: bool = True,
              path=None) -> CrowdTask:
    r"""The POS task of Table I: ten Brown-trained taggers on the Penn Treebank sample.

    Responses form a full :math:`N \times M` matrix (every tagger tags every word), one
    sequence per treebank sentence, gold = the treebank's universal tags.

    Args:
        scale: ``"paper"``: all 3,914 sentences (100,676 words), taggers trained on the sizes
            in :data:`POS_TAGGERS`; ``"small"``: the first :data:`SMALL_SENTENCES` sentences,
            taggers trained on a fifth of those sizes (for tests and demos).
        seed: seed of the Brown subsets (and of the perceptron's shuffles).
        cache_dir: cache folder (default: ``$PYROMODELS_CACHE`` or ``~/.cache/pyromodels``).
        use_cache: read the responses from the cache when present, and write them after a
            build; ``False`` always trains and tags, and writes nothing.
        path: ``nltk_data`` folder (default: ``$PYROMODELS_DATA/nltk_data`` or ``$NLTK_DATA``).

    Returns:
        :class:`CrowdTask` named ``"pos"``; ``info`` holds ``cached``, ``seconds`` (this call),
        ``tagger_seconds`` (``{name: (train, tag)}`` of the build that made the responses),
        ``train_sizes``, and ``cache_file``.

    Example:
        >>> task = build_pos(scale="small", seed=0)  # doctest: +SKIP
        >>> task.num_workers, task.num_classes  # doctest: +SKIP
        (10, 12)
    """
    check_scale(scale)
    seed = check_int(seed, "seed", minimum=0)
    if not isinstance(use_cache, bool):
        raise TypeError(f"use_cache must be a bool, got {use_cache!r}")
    start = time.perf_counter()
    corpus = load_nltk_treebank(path=path, tagset="universal")
    lengths = corpus.sequences.lengths
    num_sent = SMALL_SENTENCES if scale == "small" else len(lengths)
    lengths = lengths[:num_sent]
    total = int(lengths.sum())
    words = corpus.tokens["word"].iloc[:total].to_numpy(dtype=object).tolist()
    bounds = np.concatenate([[0], np.cumsum(lengths.numpy())])
    sentences = [words[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    digest = hashlib.sha256("\x00".join(words).encode()).hexdigest()
    key = cache_key("pos", _VERSION, scale, seed, POS_TAGGERS, train_sizes(scale), digest)
    file = resolve_cache_dir(cache_dir) / f"crowd_pos_{scale}_seed{seed}_{key}.npz"
    cached = load_cache(file) if use_cache else None
    if cached is None:
        responses, seconds = _tag_all(sentences, scale, seed, path)
        if use_cache:
            save_cache(file, {"responses": responses, "seconds": seconds})
    else:
        responses, seconds = cached["responses"], cached["seconds"]
        if responses.shape != (total, len(POS_TAGGERS)):
            raise ValueError(f"cache file {file} holds responses of shape {responses.shape}, "
                             f"expected {(total, len(POS_TAGGERS))}: delete it")
    gold_names = corpus.tokens["tag"].iloc[:total].astype(str).to_numpy()
    code = {t: k for k, t in enumerate(POS_CLASSES)}
    gold = torch.tensor([code[t] for t in gold_names], dtype=torch.long)
    table = dense_table(responses, [s.name for s in POS_TAGGERS], POS_CLASSES)
    notes = (
        f"{num_sent} Penn Treebank sentences ({total} words, empty elements included as X) "
        "tagged by ten taggers trained on independent random subsets of Brown sentences "
        "(universal tags). The paper names neither taggers nor subset sizes: ours are listed "
        "in POS_TAGGERS. Scored as the paper did: macro P / R / F (eq. 37) per sentence over "
        "all 12 tags (a tag absent from a sentence counts 0), averaged over sentences."
    )
    info = {"cached": cached is not None, "seconds": time.perf_counter() - start,
            "tagger_seconds": {s.name: (float(a), float(b))
                               for s, (a, b) in zip(POS_TAGGERS, seconds)},
            "train_sizes": train_sizes(scale), "cache_file": str(file) if use_cache else None,
            "scale": scale, "seed": seed}
    return CrowdTask(
        "pos", Sequences(table, lengths.clone()), gold, list(POS_CLASSES), notes=notes,
        metric={"scheme": "macro", "average": "sequence", "classes": "all"}, info=info,
    )
