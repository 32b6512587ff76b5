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
The blobs are ``make_blobs`` of the conftest.
"""

import math
import warnings

import pytest

from pyromodels.core import PosteriorCollapseWarning
from pyromodels.data import simulate_block_pairs, simulate_pinwheel
from pyromodels.metrics import clustering_accuracy
from pyromodels.scdc import SCDC


def test_links_from_accurate_workers_raise_clustering_accuracy(make_blobs):
    o, side, row = make_blobs()
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


@pytest.mark.slow
def test_kl_warmup_keeps_the_pinwheel_arms_where_the_plain_fit_collapses():
    """The paper's Pinwheel protocol with ``K = 15``: the plain fit's ``q(z | o)`` flattens
    towards ``pi`` (posterior collapse). On the reproduction's three pinwheel seeds the plain
    fits' mean entropy after 200 epochs was 2.686-2.697 (``log 15`` = 2.708) at accuracy
    0.25-0.34, while with a 300-epoch KL warm-up of 400 epochs the fits kept the five arms
    (accuracy 0.87-0.99; mean entropy 0.10 and 0.24 where it was recorded). The thresholds
    sit between the two groups: entropy above 0.9 log 15 for the collapse, below 0.5 log 15
    and accuracy above 0.8 with the warm-up. The fits' own check agrees: the plain fit ends
    with no active latent unit (its items' means vary by 0.008 and 0.002, against thresholds
    of 0.018 and 0.014, 0.01 times the fitted prior's variances) and warns, the warmed fit
    keeps both (6.4 and 2.1 against 0.065 and 0.022). Slow: about five minutes on one
    thread."""
    x, truth = simulate_pinwheel(seed=0)
    z = truth["z"]
    links, _ = simulate_block_pairs(z, 20, 50, alpha=0.9, beta=0.9, annotated=100, seed=1)
    o = x.float()
    settings = dict(batch_size=50, lr=1e-3, coin_init=0.9, seed=0, progress=False)
    plain = SCDC(15, 2, hidden=(40, 40))
    with pytest.warns(PosteriorCollapseWarning, match="0 of 2 latent units"):
        collapsed = plain.fit(o, links, num_epochs=200, **settings)
    q_plain = plain.cluster_probabilities(collapsed, o)
    warmed = SCDC(15, 2, hidden=(40, 40))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PosteriorCollapseWarning)
        post = warmed.fit(o, links, num_epochs=400, kl_warmup_epochs=300, **settings)
    q_warm = warmed.cluster_probabilities(post, o)
    assert collapsed.diagnostics["active_units"] == 0 and post.diagnostics["active_units"] == 2

    def entropy(q):
        return float(-(q * q.clamp_min(1e-30).log()).sum(-1).mean())

    assert entropy(q_plain) > 0.9 * math.log(15)
    assert entropy(q_warm) < 0.5 * math.log(15)
    assert clustering_accuracy(z, q_warm.argmax(-1)) > 0.8
