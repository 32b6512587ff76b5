"""Links from accurate workers move SCDC's clusters to the workers' partition.

Four Gaussian blobs in 2-D at (+-1.5, +-5), sd 0.5, are pushed through a random fixed MLP
into 10-D. The true classes are left / right. The blobs of one side are 10 apart vertically
and those of one row 3 apart horizontally, so two clusters fitted to the features alone
merge the rows (top / bottom), which agrees with left / right no better than chance, or
settle on three blobs against one. The blobs hold 44, 55, 45 and 56 of the 200 points, so a
partition that merges whole blobs across sides scores at most 1 - 44/200 = 0.78 (three blobs
against one; top / bottom scores 0.5): without links the accuracy stays below 0.85, while the
left / right partition separates blobs 6 sd apart (Bayes error about 0.1%): with links it
should be near 1, and 0.95 leaves room for a few points near the boundary (over eight data
and fit seeds the fits gave 0.52-0.77 alone and 0.995-1.0 with links). Twenty workers, right
95% of the time, judge 49 pairs each among 100 annotated items (the Pinwheel protocol).
"""

import torch

from pyromodels.data import simulate_block_pairs
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


def test_links_from_accurate_workers_raise_clustering_accuracy():
    o, side, row = _blobs()
    links, _ = simulate_block_pairs(side, 20, 50, alpha=0.95, beta=0.95, annotated=100, seed=1)
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
