"""Links from accurate workers move SCDC's clusters to the workers' partition.

Four Gaussian blobs in 2-D at (+-1.5, +-5), sd 0.5, are pushed through a random fixed MLP
into 10-D. The true classes are left / right. The blobs of one side are 10 apart vertically
and those of one row 3 apart horizontally, so two clusters fitted to the features alone
merge the rows (top / bottom), which agrees with left / right no better than chance, or
settle on three blobs against one. Any partition that merges blobs across sides scores at
most 0.75 (three blobs against one; top / bottom is 0.5 up to the blobs' unequal sizes),
so without links the accuracy stays below 0.85, while the left / right partition separates
blobs 6 sd apart (Bayes error about 0.1%): with links it should be near 1, and 0.95 leaves
room for a few points near the boundary. Twenty workers, right 95% of the time, judge 49
random pairs each among 100 annotated items.
"""

import pandas as pd
import torch

from pyromodels.metrics import clustering_accuracy
from pyromodels.scdc import SCDC


def _blobs(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    side = torch.randint(2, (n,), generator=g)
    row = torch.randint(2, (n,), generator=g)
    x = torch.stack([(2 * side - 1) * 1.5, (2 * row - 1) * 5.0], -1)
    x = x + 0.5 * torch.randn(n, 2, generator=g)
    w1 = torch.randn(2, 16, generator=g)
    w2 = torch.randn(16, 10, generator=g) / 4
    o = torch.tanh(x @ w1 / 3) @ w2 + 0.05 * torch.randn(n, 10, generator=g)
    return ((o - o.mean(0)) / o.std(0)).double(), side, row


def _two_coin_links(labels, annotated=100, workers=20, per_worker=50, accuracy=0.95, seed=1):
    """Each worker takes ``per_worker`` of the annotated items in random order and links
    item ``p`` to a later one: ``per_worker - 1`` pairs, each flipped with prob 1 - accuracy."""
    g = torch.Generator().manual_seed(seed)
    items = torch.randperm(len(labels), generator=g)[:annotated]
    rows = []
    for m in range(workers):
        block = items[torch.randperm(annotated, generator=g)[:per_worker]].tolist()
        for p in range(per_worker - 1):
            q = p + 1 + int(torch.randint(per_worker - 1 - p, (), generator=g))
            i, j = block[p], block[q]
            flip = bool(torch.rand((), generator=g) > accuracy)
            rows.append((i, j, m, int(labels[i] == labels[j]) ^ flip))
    return pd.DataFrame(rows, columns=["item_a", "item_b", "worker", "link"])


def test_links_from_accurate_workers_raise_clustering_accuracy():
    o, side, row = _blobs()
    links = _two_coin_links(side)
    settings = dict(num_epochs=100, batch_size=100, lr=5e-3, seed=0, progress=False)
    alone = SCDC(2, 2, hidden=(16, 16), likelihood="normal")
    acc_alone = clustering_accuracy(side, alone.predict(alone.fit(o, **settings), o))
    guided = SCDC(2, 2, hidden=(16, 16), likelihood="normal")
    post = guided.fit(o, pairs=links, coin_init=0.9, **settings)
    acc_guided = clustering_accuracy(side, guided.predict(post, o))
    assert acc_alone < 0.85
    assert acc_guided > 0.95
    # every worker is judged better than chance (logit alpha + logit beta > 0)
    assert (guided.worker_table(post)["weight"] > 0).all()
